"""Finished records, column by column, before they become a frame.

Records arrive two ways: one at a time from the line assembler (appended to plain lists), and a
block at a time from the JSON fast path (whole column lists, and :class:`Repeat` for columns that
hold one value throughout, such as the envelope columns of bare JSON lines). Both are kept as a
sequence of segments in emission order, so that no per-record work is needed to join them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pyarrow as pa

__all__ = ["COLUMNS", "TEXT_TS", "Columns", "Repeat", "Segment", "text_array"]

#: Record columns, in frame order (``source`` is added by the frame builder).
COLUMNS = ("ts", "level", "logger", "message", "fields", "line", "lines", "format", "envelope",
           "stream", "container", "host", "raw", "parse_error")


class Repeat(NamedTuple):
    """A column segment holding ``value`` ``count`` times."""

    value: Any
    count: int


#: One segment: every column name mapped to a list or tuple, a ``range`` (``line``), a
#: :class:`Repeat`, an object array (``level``, ``format``, ``fields``) or an Arrow string array
#: (``raw``; ``ts`` when ``TEXT_TS``).
Segment = dict[str, Any]
#: Segment key marking a ``ts`` piece that holds ISO text only (no per-value type check needed).
TEXT_TS = "ts is text"


def text_array(values: list[Any]) -> Any:
    """``values`` as an Arrow string array; the list itself when some text cannot be UTF-8
    (lone surrogates), for the frame builder's Python path."""
    try:
        return pa.array(values, type=pa.large_string())
    except (UnicodeEncodeError, pa.ArrowException):
        return values


class Columns:
    """Finished records: sealed segments, plus the rows the assembler is appending (``rows``).

    The assembler appends one tuple per record (in :data:`COLUMNS` order); they are turned into
    columns when sealed (one ``zip`` instead of a list append per column and record).
    """

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self._sealed: list[Segment] = []
        self._sealed_rows = 0

    def __len__(self) -> int:
        return self._sealed_rows + len(self.rows)

    def add_segment(self, segment: Segment, rows: int) -> None:
        """Append a block of ``rows`` records built column by column."""
        self._seal()
        self._sealed.append(segment)
        self._sealed_rows += rows

    def _seal(self) -> None:
        if self.rows:
            self._sealed_rows += len(self.rows)
            self._sealed.append(dict(zip(COLUMNS, zip(*self.rows, strict=True), strict=True)))
            self.rows = []

    def take(self) -> list[Segment]:
        """Hand over every finished segment (in emission order) and start empty."""
        self._seal()
        segments, self._sealed, self._sealed_rows = self._sealed, [], 0
        return segments
