"""Cells that decode on first use.

The ``attributes`` and ``extra`` columns hold the complete event as the source wrote it, and the
payload columns hold decoded values. Building 51,200 dicts up front would cost more than parsing
the file, so each cell keeps a reference to its raw JSON bytes (or protobuf message) and decodes
the first time it is read. They compare equal to the plain value, print like it and pickle as it.

Cells are msgspec structs: a history makes two or three per event, and a struct is built by C code
in half the time of a Python ``__init__``. They are ``gc=False``: a cell refers to its source and
to its decoded value, neither of which ever refers back to a cell.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import repeat
from typing import Any

import msgspec
import numpy as np
from google.protobuf.message import Message

from toolkit.histories.proto_json import message_to_dict

__all__ = [
    "LazyAttributes",
    "LazyCell",
    "LazyEventAttributes",
    "LazyEventExtra",
    "LazyEventPayloads",
    "LazyExtra",
    "LazyPayloads",
    "LazyProto",
    "extra_of_attributes",
    "lazy_json_cells",
    "lazy_proto_cells",
    "without_extra_cells",
]

_ENVELOPE = frozenset({"eventId", "eventTime", "eventType"})
_UNSET: Any = object()


class LazyCell(msgspec.Struct, gc=False, kw_only=True):
    """Proxy of a value decoded on first access; subclasses define ``_decode``.

    (``kw_only``: the cache slot comes after the fields a subclass takes positionally.)
    """

    _cached: Any = _UNSET

    def _decode(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def value(self) -> Any:
        """The decoded value (a dict for mappings, a list for payloads)."""
        if self._cached is _UNSET:
            self._cached = self._decode()
        return self._cached

    def __getitem__(self, key: Any) -> Any:
        return self.value[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __contains__(self, item: object) -> bool:
        return item in self.value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyCell):
            return bool(self.value == other.value)
        return bool(self.value == other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.value)

    def __reduce__(self) -> tuple[Any, ...]:
        value = self.value
        return (type(value), (value,))


class _LazyMapping(LazyCell):
    def get(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default)

    def keys(self) -> Any:
        return self.value.keys()

    def items(self) -> Any:
        return self.value.items()

    def values(self) -> Any:
        return self.value.values()


Mapping.register(_LazyMapping)


class LazyAttributes(_LazyMapping):
    """The ``*EventAttributes`` object of a raw JSON event: ``LazyAttributes(history, index, key)``.

    Holds the history (whose ``json_events`` are the raw events) and the event's index, so no
    per-event bytes are split off until one is read.
    """

    _history: Any = None
    _index: int = 0
    _key: str | None = None

    @property
    def raw(self) -> Any:
        """The event's raw JSON bytes."""
        history = self._history
        one = getattr(history, "json_event", None)  # a RawHistory splits only as far as needed
        return one(self._index) if one is not None else history.json_events[self._index]

    def _decode(self) -> dict[str, Any]:
        if self._key is None:
            return {}
        # The event's top level only, its fields kept raw: the envelope is never decoded.
        found = _top_level.decode(self.raw).get(self._key)
        return (msgspec.json.decode(found) if found is not None else None) or {}


class LazyExtra(LazyAttributes):
    """Every field of a raw JSON event but its id, time, type and attributes."""

    def _decode(self) -> dict[str, Any]:
        # The attributes (payloads and all) are skipped as raw text, not decoded and dropped.
        event = _top_level.decode(self.raw)
        return {k: msgspec.json.decode(v) for k, v in event.items()
                if k not in _ENVELOPE and k != self._key}  # fmt: skip


_top_level = msgspec.json.Decoder(dict[str, msgspec.Raw])


#: Whether reads in this context leave the ``extra`` cells of raw JSON events empty (None): set
#: by :func:`without_extra_cells` for readers that never look at them.
_NO_EXTRA: ContextVar[bool] = ContextVar("toolkit_no_extra_cells", default=False)


@contextmanager
def without_extra_cells() -> Iterator[None]:
    """Inside the block, raw JSON histories are read with None for their ``extra`` cells (a
    reader that needs only the attributes, such as the history budget: ~5% of a read). An
    event's every other field is still in its ``attributes`` cell's raw text, from which
    :func:`extra_of_attributes` makes the cell when wanted."""
    token = _NO_EXTRA.set(True)
    try:
        yield
    finally:
        _NO_EXTRA.reset(token)


def extra_of_attributes(cell: Any) -> LazyExtra | None:
    """The ``extra`` cell of a raw JSON event read without it (:func:`without_extra_cells`),
    made from its ``attributes`` cell, which holds the same event's text; None for a cell of
    any other kind."""
    if type(cell) is LazyAttributes:
        return LazyExtra(cell._history, cell._index, cell._key)
    return None


def lazy_json_cells(history: Any, keys: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """The ``attributes`` and ``extra`` cells of every event of a raw JSON history (the latter
    None inside :func:`without_extra_cells`)."""
    n = len(keys)
    attributes = map(LazyAttributes, repeat(history), range(n), keys)
    if _NO_EXTRA.get():
        return np.fromiter(attributes, dtype=object, count=n), np.full(n, None, dtype=object)
    extra = map(LazyExtra, repeat(history), range(n), keys)
    return (
        np.fromiter(attributes, dtype=object, count=n),
        np.fromiter(extra, dtype=object, count=n),
    )


class LazyProto(_LazyMapping):
    """A protobuf message shown as its proto3 JSON dict (camelCase names, like exported files).

    ``LazyProto(message)``.
    """

    _message: Any = None

    def _decode(self) -> dict[str, Any]:
        return message_to_dict(self.message)

    @property
    def message(self) -> Message:
        """The protobuf message itself."""
        return self._message  # type: ignore[no-any-return]


class LazyProtoExtra(LazyProto):
    """The envelope fields of a protobuf ``HistoryEvent`` (``message`` is the whole event)."""

    def _decode(self) -> dict[str, Any]:
        value = super()._decode()
        return {
            k: v for k, v in value.items() if k not in _ENVELOPE and not k.endswith("Attributes")
        }


class LazyEventAttributes(LazyProto):
    """The attributes of event ``index`` of parsed protobuf ``events`` (looked up on first use).

    ``LazyEventAttributes(None, events, index, field)`` (the first slot is ``LazyProto``'s).
    """

    _events: Any = None
    _index: int = 0
    _field: str = ""

    @property
    def message(self) -> Message:
        """The ``*EventAttributes`` message itself."""
        return getattr(self._events[self._index], self._field)  # type: ignore[no-any-return]


class LazyEventExtra(LazyProtoExtra):
    """The envelope fields of event ``index`` of parsed protobuf ``events``."""

    _events: Any = None
    _index: int = 0

    @property
    def message(self) -> Message:
        """The whole ``HistoryEvent``."""
        return self._events[self._index]  # type: ignore[no-any-return]


def lazy_proto_cells(
    events: Any, fields: Sequence[str | None], without: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``attributes`` and ``extra`` cells of parsed protobuf events (``fields``: each event's
    attributes field; an event without attributes gets an empty dict, as the messages show it;
    ``without``: the positions of those events, when the caller knows them already).
    """
    n = len(fields)
    attributes = np.fromiter(
        map(LazyEventAttributes, repeat(None), repeat(events), range(n), fields),
        dtype=object,
        count=n,
    )
    if without is None:
        without = np.array([i for i, field in enumerate(fields) if not field], dtype=np.int64)
    for i in without.tolist():
        attributes[i] = {}
    extra = map(LazyEventExtra, repeat(None), repeat(events), range(n))
    return attributes, np.fromiter(extra, dtype=object, count=n)


class LazyPayloads(LazyCell):
    """Decoded payload values: a list per ``Payloads`` (a dict of lists for marker details).

    ``LazyPayloads(raw, codec)``: ``raw`` is proto-JSON bytes or a protobuf message.
    """

    _raw: Any = None
    _codec: Any = None

    def _decode(self) -> Any:
        from toolkit.histories.payloads import decode_any

        return decode_any(self._raw, self._codec)


class LazyEventPayloads(LazyPayloads):
    """A payload field of event ``index``'s attributes, looked up in the parsed events when read.

    ``LazyEventPayloads(None, codec, events, index, attributes_field, payload_field)``.
    """

    _events: Any = None
    _index: int = 0
    _attributes: str = ""
    _field: str = ""

    def _decode(self) -> Any:
        from toolkit.histories.payloads import decode_any

        message = getattr(self._events[self._index], self._attributes)
        return decode_any(getattr(message, self._field), self._codec)
