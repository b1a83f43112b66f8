"""One events frame of many chunks, each chunk's columns copied in as it comes.

Collecting the chunks' frames and concatenating them at the end holds every chunk's columns
and then a second copy of all of them: for 20,000 histories (1.6 million events) half a gigabyte
more, every page of it new memory the kernel has to fault in and zero (about a tenth of the
read on this project's machine), and the chunks' arrays never reused. :class:`GrowingFrame`
copies each chunk into arrays sized for the whole read (estimated from the first chunk, grown
by half where the estimate falls short), so each chunk's own arrays are freed before the next
is decoded and their memory serves it again. The frame it gives is the one ``pd.concat`` of the
chunks gives, column for column and dtype for dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from toolkit.histories.events import COLUMNS, _frame

__all__ = ["GrowingFrame"]

_UTC = pd.DatetimeTZDtype("ns", "UTC")


class GrowingFrame:
    """Events frames of the loader appended one after another (see the module docstring).

    ``expected_chunks``: how many chunks are coming, for the first estimate of the rows.
    Frames of other columns or dtypes than the loader's are kept as they are and concatenated
    by ``pd.concat`` at the end, with everything appended before them.
    """

    def __init__(self, expected_chunks: int) -> None:
        self._expected = max(expected_chunks, 1)
        self._columns: list[list[np.ndarray]] | None = None  # per column: data (and mask)
        self._rows = 0
        self._chunks = 0
        self._others: list[pd.DataFrame] | None = None
        self._dtypes: pd.Series | None = None
        self._first: pd.DataFrame | None = None  # held as it is until a second one comes

    def append(self, frame: pd.DataFrame) -> None:
        """Add ``frame``'s rows after the rows appended so far (the first frame is held as it
        is: if no other comes, it is the frame, with nothing copied)."""
        if self._first is None and self._columns is None and self._others is None:
            self._first = frame
            return
        if self._first is not None:
            first, self._first = self._first, None
            self._copy(first)
        self._copy(frame)

    def _copy(self, frame: pd.DataFrame) -> None:
        self._chunks += 1
        if self._others is not None or not self._is_loader_frame(frame):
            if self._others is None:
                self._others = [self._rows_frame()] if self._columns is not None else []
            self._others.append(frame)
            return
        n = len(frame)
        if self._columns is None and not n:
            return  # nothing to copy, and nothing to estimate from
        pieces = [_storage(frame[name].array) for name in COLUMNS]
        if self._columns is None:
            # This chunk and every one still to come as large as it, a sixteenth to spare.
            expected = n * max(self._expected - self._chunks + 1, 1)
            capacity = expected + expected // 16
            self._columns = [[_empty(p, capacity) for p in piece] for piece in pieces]
        elif self._rows + n > len(self._columns[0][0]):
            # Rows beyond the estimate: half as much room again, or what this chunk needs.
            room = max(len(self._columns[0][0]) * 3 // 2, self._rows + n)
            self._columns = [[_grown(a, room, self._rows) for a in arrays]
                             for arrays in self._columns]  # fmt: skip
        for arrays, piece in zip(self._columns, pieces, strict=True):
            for target, values in zip(arrays, piece, strict=True):
                target[self._rows : self._rows + n] = values
        self._rows += n

    def frame(self) -> pd.DataFrame:
        """The frame of every row appended (views of the arrays grown for them)."""
        if self._first is not None:
            return self._first
        if self._others is not None:
            return pd.concat(self._others, ignore_index=True) if len(self._others) > 1 else (
                self._others[0])  # fmt: skip
        if self._columns is None:
            from toolkit.histories.events import empty_events_frame

            return empty_events_frame()
        return self._rows_frame()

    def _rows_frame(self) -> pd.DataFrame:
        assert self._columns is not None
        rows = self._rows
        stored = zip(COLUMNS.values(), self._columns, strict=True)
        arrays = [_column(dtype, [a[:rows] for a in kept]) for dtype, kept in stored]
        return _frame(arrays, rows)

    def _is_loader_frame(self, frame: pd.DataFrame) -> bool:
        if self._dtypes is None:
            if list(frame.columns) != list(COLUMNS):
                return False
            expected = pd.Series({name: pd.api.types.pandas_dtype(dtype)
                                  for name, dtype in COLUMNS.items()})  # fmt: skip
            if not all(frame.dtypes[name] == expected[name] for name in COLUMNS):
                return False
            self._dtypes = frame.dtypes
            return True
        return list(frame.columns) == list(COLUMNS) and frame.dtypes.equals(self._dtypes)


def _storage(array: Any) -> list[np.ndarray]:
    """The numpy arrays a column's values live in: its values, or data and mask."""
    if isinstance(array, (pd.arrays.IntegerArray, pd.arrays.BooleanArray)):
        return [array._data, array._mask]
    if isinstance(array, pd.arrays.DatetimeArray):
        return [array._ndarray]
    return [np.asarray(array)]


def _empty(like: np.ndarray, size: int) -> np.ndarray:
    # Object arrays come filled with None; numbers are left unwritten until a chunk's rows
    # arrive (pages never written are never faulted in).
    return np.empty(size, dtype=like.dtype)


def _grown(array: np.ndarray, size: int, used: int) -> np.ndarray:
    bigger = np.empty(size, dtype=array.dtype)
    bigger[:used] = array[:used]
    return bigger


def _column(dtype: str, stored: list[np.ndarray]) -> Any:
    """The column of ``dtype`` (one of the loader's) over its stored arrays."""
    if dtype == "Int64":
        return pd.arrays.IntegerArray(stored[0], stored[1])
    if dtype == "boolean":
        return pd.arrays.BooleanArray(stored[0], stored[1])
    if dtype.startswith("datetime64"):
        return pd.arrays.DatetimeArray._simple_new(stored[0], dtype=_UTC)
    return stored[0]
