"""Frames as plain-text tables that fit the terminal, or as JSON for scripts."""

from __future__ import annotations

import datetime as dt
import shutil
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np
import orjson
import pandas as pd

from toolkit.datasets.arrow import _missing, json_text

__all__ = ["cell_text", "plain", "print_json", "print_table", "terminal_width"]

_MIN_WIDTH = 6
_GAP = "  "


def plain(value: Any) -> Any:
    """A cell as a JSON-ready value: lazy cells decoded, times ISO 8601, durations in seconds."""
    if type(value).__module__ == "toolkit.histories.lazy":
        value = value.value
    if _missing(value):
        return None
    if isinstance(value, pd.Timestamp | dt.datetime):
        return value.isoformat()
    if isinstance(value, pd.Timedelta | dt.timedelta):
        return value.total_seconds()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, pd.DataFrame):
        return [{str(k): plain(v) for k, v in row.items()} for row in value.to_dict("records")]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    return value


def _duration_text(seconds: float) -> str:
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds < 1e-3:
        return f"{sign}{seconds * 1e6:.0f}µs"
    if seconds < 1:
        return f"{sign}{seconds * 1e3:.1f}ms"
    if seconds < 60:
        return f"{sign}{seconds:.2f}s"
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    if hours:
        return f"{sign}{hours}:{minutes:02d}:{rest:06.3f}"
    return f"{sign}{minutes}m{rest:06.3f}s"


def cell_text(value: Any) -> str:
    """One cell as a single line of text (times in UTC to the millisecond, durations human)."""
    if isinstance(value, pd.Timestamp | dt.datetime) and not _missing(value):
        utc = pd.Timestamp(value).tz_convert("UTC") if pd.Timestamp(value).tzinfo else value
        return pd.Timestamp(utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    if isinstance(value, pd.Timedelta | dt.timedelta) and not _missing(value):
        return _duration_text(value.total_seconds())
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, bool | int):
        text = str(value)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        text = " ".join(value)
    else:
        text = json_text(value) or ""
    return text.replace("\r", "").replace("\n", " ⏎ ").replace("\t", " ")


def terminal_width(stream: TextIO = sys.stdout) -> int:
    """Columns available when writing to a terminal; 0 (no limit) when piped."""
    try:
        is_tty = stream.isatty()
    except (AttributeError, ValueError):
        is_tty = False
    return shutil.get_terminal_size((100, 24)).columns if is_tty else 0


def _fit(headers: list[int], contents: list[int], limit: int) -> list[int]:
    """Column widths that fit ``limit`` characters (0: no limit).

    Headers longer than their column's values give way first (down to a few characters), then
    the widest columns shrink, so short columns (ids, attempts) stay whole.
    """
    widths = [max(h, c) for h, c in zip(headers, contents, strict=True)]
    if limit <= 0:
        return widths
    budget = limit - len(_GAP) * (len(widths) - 1)
    for index, (header, content) in enumerate(zip(headers, contents, strict=True)):
        if sum(widths) <= budget:
            break
        if header > content:
            widths[index] = max(content, min(header, _MIN_WIDTH + 2))
    while sum(widths) > budget:
        widest = max(range(len(widths)), key=widths.__getitem__)
        if widths[widest] <= _MIN_WIDTH:
            break
        over = sum(widths) - budget
        second = sorted(widths)[-2] if len(widths) > 1 else _MIN_WIDTH
        step = max(1, min(over, widths[widest] - second))
        widths[widest] = max(_MIN_WIDTH, widths[widest] - step)
    return widths


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def print_table(
    frame: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    width: int | None = None,
    out: TextIO = sys.stdout,
) -> None:
    """Print ``frame`` as an aligned text table, cut to ``width`` (default: the terminal's)."""
    names = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    cells = [[cell_text(v) for v in frame[name].tolist()] for name in names]
    contents = [max([0, *(len(text) for text in column)]) for column in cells]
    limit = terminal_width(out) if width is None else width
    widths = _fit([len(name) for name in names], contents, limit)
    numeric = [pd.api.types.is_numeric_dtype(frame[n]) and not pd.api.types.is_bool_dtype(frame[n])
               for n in names]  # fmt: skip

    def line(values: Sequence[str]) -> str:
        parts = []
        for text, size, right in zip(values, widths, numeric, strict=True):
            clipped = _clip(text, size)
            parts.append(clipped.rjust(size) if right else clipped.ljust(size))
        return _GAP.join(parts).rstrip()

    out.write(line(names) + "\n")
    out.write(_GAP.join("-" * w for w in widths) + "\n")
    for row in zip(*cells, strict=True):
        out.write(line(row) + "\n")


def print_json(value: Any, out: TextIO = sys.stdout) -> None:
    """Print a frame (as a list of row objects) or any plain value as indented JSON."""
    value = plain(value)
    text = orjson.dumps(value, default=lambda v: json_text(v) or None, option=orjson.OPT_INDENT_2)
    out.write(text.decode("utf-8") + "\n")
