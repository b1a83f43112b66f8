"""Lines in, records out: the state machine that joins multi-line records and partial lines.

Every input line ends up in exactly one record (``line`` = first line number, ``lines`` = how many
input lines it spans). The output is columnar (:class:`Columns`) so that frames are built without
per-record objects.
"""

from __future__ import annotations

from typing import Any

import orjson

from toolkit.logs.columns import COLUMNS, Columns
from toolkit.logs.envelopes import ANSI, Envelope, json_envelope, strip_prefix, strip_structural
from toolkit.logs.formats import ONE_LINE_FAMILIES, classify_json, otlp_records, parse_text
from toolkit.logs.formats.base import Parsed
from toolkit.logs.formats.jsonlog import loads_json
from toolkit.logs.multiline import continuation

__all__ = ["COLUMNS", "Assembler", "Columns"]

_MAX_PRETTY_JSON_LINES = 10_000
_MAX_OPEN = 64  # open records (one per container / program) before the oldest is closed
_NO_KEY: tuple[Any, ...] = (None, None, None, None)
_INITIAL_MODE = {"go_panic": "goroutine", "go_race": "race", "java_exception": "java"}


class _Record:
    """A record still open to continuation lines."""

    __slots__ = ("env", "family", "fields", "level", "line", "lines", "logger", "messages",
                 "mode", "one_line", "parse_error", "raws", "ts")

    def __init__(self, parsed: Parsed, env: Envelope | None, line: int, raws: list[str],
                 one_line: bool) -> None:
        family, ts, level, logger, message, fields = parsed
        self.family = family
        self.ts = ts if ts is not None else (env.ts if env else None)
        self.level = level or (env.level if env else None)
        self.logger = logger or (env.logger if env else None)
        self.messages = [message]
        self.fields = {**env.fields, **fields} if env and env.fields else fields
        self.line = line
        self.lines = len(raws)
        self.raws = raws
        self.env = env
        self.mode = _INITIAL_MODE.get(family)
        self.one_line = one_line
        self.parse_error: str | None = None


def _brace_depth(text: str) -> int:
    """Net ``{``/``[`` nesting of a text, ignoring brackets inside JSON strings."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return depth


class Assembler:
    """Feed lines (``feed``), then ``finish``; finished records accumulate in ``out``."""

    def __init__(self) -> None:
        self.out = Columns()
        # Open records by envelope key: interleaved containers / programs each keep their own.
        self.open: dict[tuple[Any, ...], _Record] = {}
        self._partial: tuple[int, list[str], list[str], Envelope] | None = None
        self._pretty: list[tuple[int, str, str, Envelope | None]] | None = None
        self._pretty_depth = 0

    # -- emitting ---------------------------------------------------------------------------
    def flush(self) -> None:
        """Close every open record and append them to the output columns (in line order)."""
        records = sorted(self.open.values(), key=lambda r: r.line)
        self.open.clear()
        for rec in records:
            self._emit(rec)

    def _emit(self, rec: _Record) -> None:
        message = rec.messages[0] if len(rec.messages) == 1 else "\n".join(rec.messages).rstrip()
        raw = rec.raws[0] if len(rec.raws) == 1 else "\n".join(rec.raws)
        env = rec.env
        if env is None:
            row = (rec.ts, rec.level, rec.logger, message, rec.fields, rec.line, rec.lines,
                   rec.family, None, None, None, None, raw, rec.parse_error)
        else:
            row = (rec.ts, rec.level, rec.logger, message, rec.fields, rec.line, rec.lines,
                   rec.family, env.name, env.stream, env.container, env.host, raw,
                   rec.parse_error)
        self.out.rows.append(row)  # in COLUMNS order

    def _start(self, parsed: Parsed, env: Envelope | None, line: int, raws: list[str],
               one_line: bool | None = None) -> _Record:
        key = env.key() if env else _NO_KEY
        previous = self.open.pop(key, None)
        if previous is not None:
            self._emit(previous)
        if len(self.open) >= _MAX_OPEN:
            self._emit(self.open.pop(min(self.open, key=lambda k: self.open[k].line)))
        if one_line is None:
            one_line = parsed[0] in ONE_LINE_FAMILIES
        rec = self.open[key] = _Record(parsed, env, line, raws, one_line)
        return rec

    def _append(self, rec: _Record, text: str, raws: list[str], mode: str) -> None:
        rec.messages.append(text)
        rec.raws.extend(raws)
        rec.lines += len(raws)
        rec.mode = mode or None

    def begin_bare_record(self) -> None:
        """A record without envelope (a bare JSON line) starts: do what :meth:`_start` does first.

        The open record without envelope is finished; records of other containers stay open (a
        later line of theirs may still continue them).
        """
        previous = self.open.pop(_NO_KEY, None)
        if previous is not None:
            self._emit(previous)
        if len(self.open) >= _MAX_OPEN:
            self._emit(self.open.pop(min(self.open, key=lambda k: self.open[k].line)))

    def open_bare_record(self, parsed: Parsed, line: int, raw: str) -> None:
        """Keep a one-line record without envelope open: the next lines may continue it."""
        self._start(parsed, None, line, [raw])

    # -- feeding ----------------------------------------------------------------------------
    def idle(self) -> bool:
        """No partial line or pretty-printed object is being collected."""
        return self._pretty is None and self._partial is None

    def feed(self, line: int, raw: str, stream: str | None = None) -> None:
        """Consume one input line (without its line terminator).

        ``stream`` is the Docker multiplexed-stream frame the line came in, when there is one.
        """
        if self._pretty is not None:
            self._feed_pretty(line, raw)
            return
        self._feed(line, raw, allow_pretty=True, stream=stream)

    def _feed(self, line: int, raw: str, *, allow_pretty: bool, stream: str | None = None) -> None:
        text = ANSI.sub("", raw) if "\x1b" in raw else raw
        env: Envelope | None = Envelope("docker-stream", stream=stream) if stream else None
        decoded: Any = None
        for _ in range(4):  # envelopes nest (compose around CRI, CRI around docker JSON ...)
            if text[:1] == "{":
                try:
                    decoded = loads_json(text)
                except orjson.JSONDecodeError:
                    decoded = None
                stripped = json_envelope(decoded) if isinstance(decoded, dict) else None
            else:
                stripped = strip_structural(text)
            if stripped is None:
                break
            decoded = None
            inner_env, text = stripped
            env = env.wrap(inner_env) if env else inner_env
        raws = [raw]
        if env is not None and env.partial:
            if self._partial is None:
                self._partial = (line, [], [], env)
            self._partial[1].append(raw)
            self._partial[2].append(text)
            return
        if self._partial is not None:
            first, part_raws, texts, _ = self._partial
            self._partial = None
            line, raws, text = first, [*part_raws, raw], "".join(texts) + text
            decoded = None
            if text[:1] == "{":
                try:
                    decoded = loads_json(text)
                except orjson.JSONDecodeError:
                    decoded = None
        if isinstance(decoded, dict):
            self._start_json(decoded, env, line, raws)
            return
        if (text[:1] == "{" and decoded is None and allow_pretty and len(raws) == 1
                and _brace_depth(text) > 0):
            self._pretty = [(line, raw, text, env)]
            self._pretty_depth = _brace_depth(text)
            return
        parsed = parse_text(text)
        if parsed is not None:
            self._start(parsed, env, line, raws)
            return
        prefix = strip_prefix(text)
        if prefix is not None:
            prefix_env, inner = prefix
            full_env = env.wrap(prefix_env) if env else prefix_env
            if inner[:1] == "{":
                try:
                    decoded = loads_json(inner)
                except orjson.JSONDecodeError:
                    decoded = None
                if isinstance(decoded, dict):
                    self._start_json(decoded, full_env, line, raws)
                    return
            parsed = parse_text(inner)
            if parsed is not None:
                self._start(parsed, full_env, line, raws)
                return
            # The line has a header of its own (a timestamp): only real continuation shapes
            # (indented frames, tracebacks ...) or a multi-line family's body continue a record.
            if self._continue(inner, full_env, raws, headerless=False):
                return
            # A timestamped line is a header: headerless lines after it continue it.
            self._start(("text", None, None, None, inner, {}), full_env, line, raws, False)
            return
        if self._continue(text, env, raws):
            return
        self._start(("text", None, None, None, text, {}), env, line, raws)

    def _continue(self, text: str, env: Envelope | None, raws: list[str],
                  headerless: bool = True) -> bool:
        rec = self.open.get(env.key() if env else _NO_KEY)
        if rec is None:
            return False
        one_line = rec.one_line or not headerless
        mode = continuation(text, rec.family, rec.mode, one_line)
        if mode is None:
            return False
        self._append(rec, text, raws, mode)
        return True

    def _start_json(self, d: dict[str, Any], env: Envelope | None, line: int,
                    raws: list[str]) -> None:
        if "resourceLogs" in d:
            records = otlp_records(d)
            if records:
                self._start(records[0], env, line, raws)
                for extra in records[1:]:  # one OTLP line, several records: lines=0 for extras
                    self._start(extra, env, line, raws).lines = 0
                return
        self._start(classify_json(d), env, line, raws)

    def _feed_pretty(self, line: int, raw: str) -> None:
        assert self._pretty is not None
        text = ANSI.sub("", raw) if "\x1b" in raw else raw
        self._pretty.append((line, raw, text, None))
        self._pretty_depth += _brace_depth(text)
        if self._pretty_depth > 0 and len(self._pretty) < _MAX_PRETTY_JSON_LINES:
            return
        buffered, self._pretty = self._pretty, None
        try:
            d = loads_json("\n".join(t for _, _, t, _ in buffered)) if self._pretty_depth <= 0 \
                else None
        except orjson.JSONDecodeError:
            d = None
        if not isinstance(d, dict):
            self._replay(buffered)
            return
        first, env = buffered[0][0], buffered[0][3]
        raws = [r for _, r, _, _ in buffered]
        stripped = json_envelope(d)
        if stripped is not None:  # journalctl -o json-pretty
            inner_env, message = stripped
            parsed = parse_text(message) or ("text", None, None, None, message, {})
            self._start(parsed, env.wrap(inner_env) if env else inner_env, first, raws)
            return
        parsed = classify_json(d)
        rec = self.open.get(env.key() if env else _NO_KEY)
        if parsed[0] == "json" and rec is not None:
            # A pretty-printed object that is no log record belongs to the record before it.
            self._append(rec, "\n".join(t for _, _, t, _ in buffered), raws, rec.mode or "")
            return
        self._start(parsed, env, first, raws)

    def _replay(self, buffered: list[tuple[int, str, str, Envelope | None]]) -> None:
        """Not a pretty-printed object after all: process the buffered lines one by one."""
        (first, raw, _, _), rest = buffered[0], buffered[1:]
        self._feed(first, raw, allow_pretty=False)
        for line, raw_line, _, _ in rest:
            self.feed(line, raw_line)

    def finish(self) -> None:
        """End of input: close open buffers and the open record."""
        if self._pretty is not None:
            buffered, self._pretty = self._pretty, None
            self._replay(buffered)
            if self._pretty is not None:
                self.finish()
                return
        if self._partial is not None:
            first, raws, texts, env = self._partial
            self._partial = None
            env.partial = False
            parsed = parse_text("".join(texts)) or ("text", None, None, None, "".join(texts), {})
            rec = self._start(parsed, env, first, raws)
            rec.parse_error = "partial line never completed"
        self.flush()
