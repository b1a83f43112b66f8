"""Log records in Go ``log/slog`` style: ``TextHandler`` and ``JSONHandler`` output.

The Go service of the duplicate-tool note logs through slog; the reconstruction writes the same
shapes so that the logs loader meets what an operator would paste:

* text: ``time=2026-09-27T10:00:00.123Z level=ERROR msg="agent run failed" error="agent run:
  duplicate tool: \\"get_weather\\""`` (values quoted, Go ``strconv.Quote`` style, when they hold
  a space, a quote, ``=`` or a control character);
* JSON: ``{"time":"2026-09-27T10:00:00.123456Z","level":"ERROR","msg":"agent run failed",...}``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any, Literal, TextIO

__all__ = ["SlogLogger", "format_text_value"]

_LEVELS = {"debug": "DEBUG", "info": "INFO", "warn": "WARN", "error": "ERROR"}


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def format_text_value(value: Any) -> str:
    """A value as ``slog.TextHandler`` prints it (quoted only when it needs to be)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = str(value)
    needs_quotes = not text or any(c in ' "=' or not c.isprintable() for c in text)
    return json.dumps(text, ensure_ascii=False) if needs_quotes else text


class SlogLogger:
    """A minimal slog ``Logger``: levels, key-value attributes, ``With`` for shared attributes.

    Parameters
    ----------
    stream
        Where records go (one per line, flushed after each).
    fmt
        ``text`` (``slog.TextHandler``) or ``json`` (``slog.JSONHandler``).
    clock
        Returns the record time (UTC); the wall clock by default.
    attrs
        Attributes every record carries (after ``msg``), as ``Logger.With`` sets them.
    """

    def __init__(self, stream: TextIO, *, fmt: Literal["text", "json"] = "text",
                 clock: Callable[[], dt.datetime] = _utc_now,
                 attrs: dict[str, Any] | None = None) -> None:
        if fmt not in ("text", "json"):
            from toolkit.errors import LabError

            raise LabError(f"SlogLogger: unknown format {fmt!r}; expected 'text' or 'json'")
        self.stream = stream
        self.fmt = fmt
        self.clock = clock
        self.attrs = dict(attrs or {})

    def with_attrs(self, **attrs: Any) -> SlogLogger:
        """A logger adding ``attrs`` to every record (Go's ``logger.With``)."""
        return SlogLogger(self.stream, fmt=self.fmt, clock=self.clock,
                          attrs={**self.attrs, **attrs})

    def log(self, level: str, msg: str, **attrs: Any) -> None:
        """Write one record at ``level`` (debug, info, warn, error)."""
        when = self.clock().astimezone(dt.UTC)
        merged = {**self.attrs, **attrs}
        if self.fmt == "json":
            record = {"time": when.isoformat(timespec="microseconds").replace("+00:00", "Z"),
                      "level": _LEVELS[level], "msg": msg, **merged}
            line = json.dumps(record, ensure_ascii=False, default=str, separators=(",", ":"))
        else:
            stamp = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            parts = [f"time={stamp}", f"level={_LEVELS[level]}", f"msg={format_text_value(msg)}"]
            parts += [f"{key}={format_text_value(value)}" for key, value in merged.items()]
            line = " ".join(parts)
        self.stream.write(line + "\n")
        self.stream.flush()

    def debug(self, msg: str, **attrs: Any) -> None:
        self.log("debug", msg, **attrs)

    def info(self, msg: str, **attrs: Any) -> None:
        self.log("info", msg, **attrs)

    def warn(self, msg: str, **attrs: Any) -> None:
        self.log("warn", msg, **attrs)

    def error(self, msg: str, **attrs: Any) -> None:
        self.log("error", msg, **attrs)
