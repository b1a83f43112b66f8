"""Cells that decode on first use.

The ``attributes`` and ``extra`` columns hold the complete event as the source wrote it, and the
payload columns hold decoded values. Building 51,200 dicts up front would cost more than parsing
the file, so each cell keeps its raw JSON bytes (or protobuf message) and decodes the first time it
is read. They compare equal to the plain value, print like it and pickle as it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any

import msgspec
import numpy as np
from google.protobuf import json_format
from google.protobuf.message import Message

__all__ = [
    "LazyAttributes",
    "LazyEventAttributes",
    "LazyEventExtra",
    "LazyEventPayloads",
    "LazyExtra",
    "LazyJSON",
    "LazyPayloads",
    "LazyProto",
    "lazy_json_cells",
]

_ENVELOPE = frozenset({"eventId", "eventTime", "eventType"})


class _Lazy:
    """Proxy of a value decoded on first access; subclasses define ``_decode``."""

    __slots__ = ("_value",)
    _UNSET: Any = object()

    def __init__(self) -> None:
        self._value = _Lazy._UNSET

    def _decode(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def value(self) -> Any:
        """The decoded value (a dict for mappings, a list for payloads)."""
        if self._value is _Lazy._UNSET:
            self._value = self._decode()
        return self._value

    def __getitem__(self, key: Any) -> Any:
        return self.value[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __contains__(self, item: object) -> bool:
        return item in self.value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Lazy):
            return bool(self.value == other.value)
        return bool(self.value == other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.value)

    def __reduce__(self) -> tuple[Any, ...]:
        value = self.value
        return (type(value), (value,))


class _LazyMapping(_Lazy):
    __slots__ = ()

    def get(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default)

    def keys(self) -> Any:
        return self.value.keys()

    def items(self) -> Any:
        return self.value.items()

    def values(self) -> Any:
        return self.value.values()


Mapping.register(_LazyMapping)


class LazyJSON(_LazyMapping):
    """A JSON object kept as bytes until read."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Any) -> None:
        self._value = _Lazy._UNSET
        self._raw = raw

    def _decode(self) -> dict[str, Any]:
        value = msgspec.json.decode(self._raw) if self._raw else {}
        return value if isinstance(value, dict) else {"value": value}


class LazyAttributes(_LazyMapping):
    """The ``*EventAttributes`` object of a raw JSON event (decoded on first use).

    Holds the history (whose ``json_events`` are the raw events) and the event's index, so no
    per-event bytes are split off until one is read.
    """

    __slots__ = ("_history", "_index", "_key")

    def __init__(self, history: Any, index: int, key: str | None) -> None:
        self._value = _Lazy._UNSET
        self._history = history
        self._index = index
        self._key = key

    @property
    def raw(self) -> Any:
        """The event's raw JSON bytes."""
        return self._history.json_events[self._index]

    def _decode(self) -> dict[str, Any]:
        event = msgspec.json.decode(self.raw)
        if self._key is None:
            return {}
        return event.get(self._key) or {}


class LazyExtra(LazyAttributes):
    """Every field of a raw JSON event but its id, time, type and attributes."""

    __slots__ = ()

    def _decode(self) -> dict[str, Any]:
        event = msgspec.json.decode(self.raw)
        return {k: v for k, v in event.items() if k not in _ENVELOPE and k != self._key}


def lazy_json_cells(history: Any, keys: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """The ``attributes`` and ``extra`` cells of every event of a raw JSON history."""
    n = len(keys)
    attributes = map(LazyAttributes, repeat(history), range(n), keys)
    extra = map(LazyExtra, repeat(history), range(n), keys)
    return (
        np.fromiter(attributes, dtype=object, count=n),
        np.fromiter(extra, dtype=object, count=n),
    )


class LazyProto(_LazyMapping):
    """A protobuf message shown as its proto3 JSON dict (camelCase names, like exported files)."""

    __slots__ = ("_message",)

    def __init__(self, message: Message) -> None:
        self._value = _Lazy._UNSET
        self._message = message

    def _decode(self) -> dict[str, Any]:
        return json_format.MessageToDict(self._message)

    @property
    def message(self) -> Message:
        """The protobuf message itself."""
        return self._message


class LazyProtoExtra(LazyProto):
    """The envelope fields of a protobuf ``HistoryEvent`` (``message`` is the whole event)."""

    __slots__ = ()

    def _decode(self) -> dict[str, Any]:
        value = super()._decode()
        return {
            k: v for k, v in value.items() if k not in _ENVELOPE and not k.endswith("Attributes")
        }


class LazyEventAttributes(LazyProto):
    """The attributes of event ``index`` of parsed protobuf ``events`` (wrapped on first use)."""

    __slots__ = ("_events", "_field", "_index")

    def __init__(self, events: Any, index: int, field: str) -> None:
        self._value = _Lazy._UNSET
        self._events = events
        self._index = index
        self._field = field

    @property
    def message(self) -> Message:
        """The ``*EventAttributes`` message itself."""
        return getattr(self._events[self._index], self._field)

    def _decode(self) -> dict[str, Any]:
        return json_format.MessageToDict(self.message)


class LazyEventExtra(LazyProtoExtra):
    """The envelope fields of event ``index`` of parsed protobuf ``events``."""

    __slots__ = ("_events", "_index")

    def __init__(self, events: Any, index: int) -> None:
        self._value = _Lazy._UNSET
        self._events = events
        self._index = index

    @property
    def message(self) -> Message:
        """The whole ``HistoryEvent``."""
        return self._events[self._index]

    def _decode(self) -> dict[str, Any]:
        value = json_format.MessageToDict(self.message)
        return {
            k: v for k, v in value.items() if k not in _ENVELOPE and not k.endswith("Attributes")
        }


class LazyPayloads(_Lazy):
    """Decoded payload values: a list per ``Payloads`` (a dict of lists for marker details)."""

    __slots__ = ("_codec", "_raw")

    def __init__(self, raw: Any, codec: Any = None) -> None:
        self._value = _Lazy._UNSET
        self._raw = raw
        self._codec = codec

    def _decode(self) -> Any:
        from toolkit.histories.payloads import decode_any

        return decode_any(self._raw, self._codec)


class LazyEventPayloads(LazyPayloads):
    """A payload field of event ``index``'s attributes, looked up in the parsed events when read."""

    __slots__ = ("_attributes", "_events", "_field", "_index")

    def __init__(self, events: Any, index: int, attributes: str, field: str, codec: Any) -> None:
        self._value = _Lazy._UNSET
        self._codec = codec
        self._events = events
        self._index = index
        self._attributes = attributes
        self._field = field

    def _decode(self) -> Any:
        from toolkit.histories.payloads import decode_any

        message = getattr(self._events[self._index], self._attributes)
        return decode_any(getattr(message, self._field), self._codec)
