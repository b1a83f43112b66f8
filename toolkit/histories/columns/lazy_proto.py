"""The events of a binary ``History``, parsed by the protobuf library only when first read.

The binary loader reads its columns straight from the wire bytes
(:mod:`toolkit.histories.reading.wire`, which checks tags, wire types and lengths); the parsed
messages are needed only for the lazy ``attributes`` / ``extra`` / payload cells, the few failures
and nested updates the columns take from them, and the fallback reader. Parsing the whole history up
front cost about a fifth of a binary read, so it is deferred: one event at a time once the wire
reader has found each event's byte range, the whole history otherwise. Bytes the protobuf library
rejects then raise the same located ``HistoryFormatError`` as a damaged file at load, naming the
event where known. """

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from temporalio.api.history.v1 import History, HistoryEvent

from toolkit.errors import HistoryFormatError

__all__ = ["LazyHistoryEvents"]

_EXPECTED = "a serialized History or export message"


class LazyHistoryEvents:
    """A read-only sequence of ``HistoryEvent`` messages over the bytes of a ``History``."""

    def __init__(self, data: bytes, name: str) -> None:
        self._data = data
        self._name = name
        self._all: Any = None
        self._starts: np.ndarray | None = None
        self._ends: np.ndarray | None = None
        self._one: dict[int, HistoryEvent] = {}

    def set_bounds(self, starts: np.ndarray, ends: np.ndarray) -> None:
        """Each event's byte range (from the wire reader): events then parse one at a time."""
        self._starts, self._ends = starts, ends

    def parsed(self) -> Any:
        """All events (the repeated field of the parsed ``History``)."""
        if self._all is None:
            try:
                self._all = History.FromString(self._data).events
            except DecodeError as exc:
                raise HistoryFormatError(
                    self._name, f"damaged protobuf ({exc})", expected=_EXPECTED
                ) from None
        return self._all

    def __len__(self) -> int:
        return len(self._starts) if self._starts is not None else len(self.parsed())

    def __iter__(self) -> Iterator[HistoryEvent]:
        return iter(self.parsed())

    def __getitem__(self, index: Any) -> Any:
        if self._all is not None or self._starts is None or not isinstance(index, int):
            return self.parsed()[index]
        event = self._one.get(index)
        if event is None:
            start, end = int(self._starts[index]), int(self._ends[index])  # type: ignore[index]
            try:
                event = HistoryEvent.FromString(self._data[start:end])
            except DecodeError as exc:
                raise HistoryFormatError(
                    self._name, f"damaged protobuf ({exc})", position=f"event #{index}",
                    expected=_EXPECTED,
                ) from None  # fmt: skip
            self._one[index] = event
        return event
