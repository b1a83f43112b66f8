"""The fast path for runs of JSON log lines: decode only the header, a block at a time.

Lines of one layout (:mod:`toolkit.logs.jsonlayout`) are decoded together, one msgspec call per
sub-block, from the bytes of a :class:`~toolkit.logs.blocks.ByteBlock` or from a list of lines;
each sub-block's headers are then turned into columns right away, a column at a time (levels and
families taken from the few spellings met, times into an Arrow array), so that they are read while
still in the caches and freed before the next sub-block; ``fields`` stays a
:class:`~toolkit.logs.cells.LazyFields` over the line. Lines no decoder of their layout fits
(envelopes, OTLP, Rust tracing's nested ``fields``, non-objects, text) end the run; the line
assembler takes them one by one.

The result is the one :func:`~toolkit.logs.formats.jsonlog.classify_json` gives line by line
(same family, ts, level, logger, message; ``fields`` equal to its dict).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import orjson
import pyarrow as pa

from toolkit.logs import jsonlayout
from toolkit.logs.assemble import Assembler
from toolkit.logs.blocks import ByteBlock, TextLines, too_deep
from toolkit.logs.cells import LazyFields
from toolkit.logs.columns import TEXT_TS, Repeat, Segment, text_array
from toolkit.logs.formats.jsonlog import (
    SIGNATURE_KEYS,
    json_text,
    json_ts,
    loads_json,
    orjson_number,
)
from toolkit.logs.jsonlayout import (
    DECODE_ERRORS,
    DECODERS,
    NO_LITERALS,
    Layout,
    Literals,
    decode_batch,
    learned,
)
from toolkit.logs.normalize import epochs_to_ns, norm_level

__all__ = ["JsonRuns", "Lines"]

_SUB_BLOCK = 8192  # lines decoded per attempt: bounds the work redone when a run ends inside
_MESSAGE_MISSES = 2
Lines = TextLines | ByteBlock


def _by_level_family(level: Any) -> str:
    """slog and logrus JSON share their keys; slog spells levels in upper case."""
    if not isinstance(level, str):
        return "json"
    return "slog_json" if level[:1].isupper() else "logrus_json"


# Level spellings met so far -> canonical level / slog-or-logrus family (bounded: a log with ever
# new level values only costs a refill).
_LEVEL_OF: dict[Any, str | None] = {}
_FAMILY_OF: dict[Any, str] = {}
_MAX_SPELLINGS = 4096


def _take(values: list[Any], codes: np.ndarray) -> Any:
    """``values[c]`` for every code: an object array, or a :class:`Repeat` when all agree."""
    if len(set(values)) == 1:
        return Repeat(values[0], len(codes))
    table = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # element by element: a str must not become a sequence
        table[i] = value
    return table[codes]


def _levels(raw: list[Any], by_level: bool) -> tuple[Any, Any]:
    """Normalised levels and, for slog/logrus layouts, families (table lookups, C loops).

    Each comes back as an object array taken from the few spellings met, or as a
    :class:`Repeat` when every record has the same one.
    """
    try:
        spellings = set(raw)
    except TypeError:  # an unhashable level (a list or object): one by one
        families = [_by_level_family(v) for v in raw] if by_level else None
        return [norm_level(v) for v in raw], families
    new = spellings.difference(_LEVEL_OF)
    if new:
        if len(_LEVEL_OF) + len(new) > _MAX_SPELLINGS:
            _LEVEL_OF.clear()
            _FAMILY_OF.clear()
            new = spellings
        for value in new:
            _LEVEL_OF[value] = norm_level(orjson_number(value))
            _FAMILY_OF[value] = _by_level_family(value)
    order = list(spellings)
    if len(order) == 1:
        codes = np.zeros(len(raw), dtype=np.intp)
    else:  # one dict lookup per record, shared by both columns
        index = {value: i for i, value in enumerate(order)}
        codes = np.fromiter(map(index.__getitem__, raw), np.intp, len(raw))
    families = _take([_FAMILY_OF[v] for v in order], codes) if by_level else None
    return _take([_LEVEL_OF[v] for v in order], codes), families


def _loose_messages(layout: Layout, values: list[Any], lines: Lines, first: int) -> list[str]:
    """Message texts of any JSON values, as :func:`classify_json` spells them."""
    out = []
    for k, value in enumerate(values, first):
        if type(value) is dict or type(value) is list:  # spelled from orjson's values
            value = loads_json(lines.line(k))[layout.message_key]
        out.append(json_text(orjson_number(value)))
    return out


def _header_columns(layout: Layout, heads: list[Any], lines: Lines, first: int) -> list[Any]:
    """Columns ``format, ts, level, logger, message`` of decoded headers of one layout."""
    n = len(heads)
    ts: Any = Repeat(None, n)
    if layout.ts:
        ts = [h.ts for h in heads]  # comprehensions: faster than map(attrgetter) here
        if layout.numeric_ts:
            ts = epochs_to_ns(ts) or [json_ts(orjson_number(v)) for v in ts]
        elif not layout.strict:
            ts = [json_ts(orjson_number(v)) for v in ts]
        else:  # non-empty texts: into Arrow now, while they are in the caches, and freed
            ts = text_array(ts)
    family: Any = Repeat(layout.family, n)
    level: Any = Repeat(None, n)
    if layout.level:
        level, families = _levels([h.level for h in heads], layout.family is None)
        family = families if families is not None else family
    elif layout.family is None:
        family = Repeat("json", n)
    message: Any = Repeat("", n)
    if layout.message:
        message = [h.message for h in heads]
        if not layout.strict:
            message = _loose_messages(layout, message, lines, first)
    logger: Any = Repeat(None, n)
    if layout.logger:
        logger = [h.logger for h in heads]
        if not layout.strict or "" in logger:  # an empty logger is none (as records have it)
            logger = [g if isinstance(g, str) and g else None for g in logger]
    return [family, ts, level, logger, message]


def _cut(column: Any, n: int) -> Any:
    """The first ``n`` values of a column piece."""
    return Repeat(column.value, n) if type(column) is Repeat else column[:n]


def _last(column: Any) -> Any:
    if type(column) is Repeat:
        return column.value
    return column[-1].as_py() if isinstance(column, pa.Array) else column[-1]


class JsonRuns:
    """Feeds runs of JSON record lines to an :class:`Assembler`, remembering layouts met."""

    def __init__(self, asm: Assembler) -> None:
        self.asm = asm
        self._layouts: dict[Any, Layout | None] = {}
        self._current: Layout | None = None
        # Batches a layout with learned messages refused, by layout: past _MESSAGE_MISSES its
        # messages are decoded as any text (a vocabulary that keeps growing would otherwise
        # make every batch decode twice).
        self._message_misses: dict[tuple[str, ...], int] = {}

    def _layout(self, record: dict[str, Any], strict: bool, numeric_ts: bool) -> Layout | None:
        return self._built(tuple(key for key in record if key in SIGNATURE_KEYS), strict,
                           numeric_ts=numeric_ts)

    def _built(self, order: tuple[str, ...], strict: bool, literals: Literals = NO_LITERALS,
               numeric_ts: bool = False) -> Layout | None:
        key = (frozenset(order), strict, literals, numeric_ts)
        if key not in self._layouts:
            self._layouts[key] = jsonlayout.build_layout(order, strict, literals, numeric_ts)
        return self._layouts[key]

    def _narrowed(self, layout: Layout, heads: list[Any], known: Literals) -> Layout:
        """After a batch of a strict layout: the layout with the level, logger and message texts
        met so far (this batch's and ``known``) as Literals; itself when it has learned them
        already (or they are too many)."""
        if not layout.strict or layout.literals != NO_LITERALS:
            return layout
        levels = learned([h.level for h in heads] if layout.level else None, known[0])
        loggers = learned([h.logger for h in heads] if layout.logger else None, known[1])
        messages = None
        if layout.message and self._message_misses.get(layout.order, 0) < _MESSAGE_MISSES:
            messages = learned([h.message for h in heads], known[2])
        if levels is None and loggers is None and messages is None:
            return layout
        return self._built(layout.order, True, (levels, loggers, messages),
                           layout.numeric_ts) or layout

    def _widened(self, layout: Layout) -> Layout | None:
        """The layout that accepts any level / logger / message text (when a batch met a new
        one)."""
        if layout.literals == NO_LITERALS:
            return None
        if layout.literals[2] is not None:
            self._message_misses[layout.order] = self._message_misses.get(layout.order, 0) + 1
        return self._built(layout.order, True, NO_LITERALS, layout.numeric_ts)

    def _decode_one(self, line: str) -> tuple[Layout, Any] | None:
        """Decode one line, finding its layout when it is not the current one."""
        if too_deep(line):
            return None
        current = self._current
        if current is not None:
            try:
                return current, current.decode(line)
            except DECODE_ERRORS:
                pass
        try:
            d = loads_json(line)
        except orjson.JSONDecodeError:
            return None
        if type(d) is not dict:
            return None
        for strict, numeric_ts in DECODERS:
            layout = self._layout(d, strict, numeric_ts)
            if layout is None:
                return None
            try:
                head = layout.decode(line)
            except DECODE_ERRORS:
                continue
            self._current = layout
            return layout, head
        return None

    def _decode_run(self, lines: Lines, start: int) -> list[_Piece]:
        """Decode the JSON record lines from ``lines[start]`` on, into header columns.

        Each batch's headers become columns right after decoding (while they are in the CPU's
        caches, and freed before the next batch is decoded); headers decoded line by line are
        collected while their layout lasts.
        """
        pieces: list[_Piece] = []
        single: list[Any] = []  # headers decoded one by one, all of ``single_layout``
        single_layout: Layout | None = None
        single_first = start

        def flush() -> None:
            nonlocal single_layout
            if single:
                pieces.append(_piece(single_layout, single_first, single.copy(), lines))
                single.clear()
            single_layout = None

        pos, n = start, len(lines)
        while pos < n:
            layout = self._current
            if layout is not None:
                end = min(n, pos + _SUB_BLOCK)
                clean = lines.clean_prefix(pos, end)
                if clean > pos:
                    # One decode over many lines is ~3x cheaper than one call per line. Clean
                    # lines start with "{" and end with "}", so no value spans two lines (after
                    # "}" only ",", "]" or "}" continue one) and the count is one per line
                    # exactly when no line holds two values.
                    joined = lines.joined(pos, clean)
                    heads = decode_batch(layout, joined, clean - pos)
                    known = layout.literals
                    if heads is None and (wide := self._widened(layout)) is not None:
                        layout, heads = wide, decode_batch(wide, joined, clean - pos)
                    if heads is not None:
                        flush()
                        self._current = self._narrowed(layout, heads, known)
                        pieces.append(_piece(layout, pos, heads, lines))
                        pos = clean
                        continue
                else:
                    end = lines.dirty_end(pos, end)
            else:
                end = pos + 1  # no layout yet: find the first line's, then try whole blocks
            for k in range(pos, end):  # line by line, until a line that is no JSON record
                line = lines.line(k)
                found = self._decode_one(line) if line[:1] == "{" else None
                if found is None:
                    flush()
                    return pieces
                if found[0] is not single_layout:
                    flush()
                    single_layout, single_first = found[0], k
                single.append(found[1])
            pos = end
        flush()
        return pieces

    def feed(self, lines: Lines, start: int, first_line: int) -> int:
        """Consume the run of JSON record lines beginning at ``lines.line(start)``; return its
        end.

        Returns ``start`` when that line is no JSON record. The run's last record stays open in
        the assembler, for continuation lines (tracebacks, indented frames) after it.
        """
        pieces = self._decode_run(lines, start)
        if not pieces:
            return start
        last = pieces[-1]
        end = last.first + last.count
        asm = self.asm
        asm.begin_bare_record()  # every record of the run but the last is finished
        for piece in pieces:
            closed = piece.count - (piece is last)
            if closed:
                asm.out.add_segment(_segment(piece, closed, lines, first_line), closed)
        family, ts, level, logger, message = (_last(c) for c in last.columns)
        text = lines.line(end - 1)
        asm.open_bare_record((family, ts, level, logger, message, LazyFields(text)),  # type: ignore[arg-type]
                             first_line + end - 1, text)
        return end


class _Piece(NamedTuple):
    """Records ``first`` .. ``first + count - 1`` of a block, of one layout, as header columns
    (``format, ts, level, logger, message``)."""

    layout: Layout
    first: int
    count: int
    columns: list[Any]


def _piece(layout: Layout | None, first: int, heads: list[Any], lines: Lines) -> _Piece:
    assert layout is not None
    return _Piece(layout, first, len(heads), _header_columns(layout, heads, lines, first))


_NAMES = ("format", "ts", "level", "logger", "message")


def _segment(piece: _Piece, count: int, lines: Lines, first_line: int) -> Segment:
    """The first ``count`` records of a piece as a finished segment."""
    a, b = piece.first, piece.first + count
    segment: Segment = {"envelope": Repeat(None, count), "stream": Repeat(None, count),
                        "container": Repeat(None, count), "host": Repeat(None, count),
                        "parse_error": Repeat(None, count), "lines": Repeat(1, count)}
    for name, column in zip(_NAMES, piece.columns, strict=True):
        segment[name] = column if count == piece.count else _cut(column, count)
    segment["raw"] = lines.raws(a, b)
    layout = piece.layout
    if layout.strict and layout.ts and not layout.numeric_ts:
        segment[TEXT_TS] = True  # strict layouts decode the time as non-empty text
    segment["fields"] = lines.lazy_fields(a, b)
    segment["line"] = range(first_line + a, first_line + b)
    return segment
