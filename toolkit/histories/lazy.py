"""Read-only mappings that decode on first use.

The ``attributes`` and ``extra`` columns hold the complete event as the source wrote it. Building
51,200 dicts up front would cost more than parsing the file, so each cell keeps its raw JSON bytes
(or protobuf message) and becomes a dict the first time it is read. They compare equal to dicts,
print like dicts and pickle as dicts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import msgspec
from google.protobuf import json_format
from google.protobuf.message import Message

__all__ = ["LazyJSON", "LazyProto"]


class _LazyMapping(Mapping[str, Any]):
    __slots__ = ("_value",)

    def __init__(self) -> None:
        self._value: dict[str, Any] | None = None

    def _decode(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def value(self) -> dict[str, Any]:
        """The decoded dict."""
        if self._value is None:
            self._value = self._decode()
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self.value[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _LazyMapping):
            return self.value == other.value
        if isinstance(other, Mapping):
            return self.value == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.value)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.value,))


class LazyJSON(_LazyMapping):
    """A JSON object kept as bytes until read; ``drop`` names keys to leave out."""

    __slots__ = ("_drop", "_raw")

    def __init__(self, raw: bytes, drop: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self._raw = raw
        self._drop = drop

    def _decode(self) -> dict[str, Any]:
        value = msgspec.json.decode(self._raw) if self._raw else {}
        if not isinstance(value, dict):
            return {"value": value}
        if self._drop:
            return {k: v for k, v in value.items() if k not in self._drop}
        return value


class LazyProto(_LazyMapping):
    """A protobuf message shown as its proto3 JSON dict (camelCase names, like exported files)."""

    __slots__ = ("_message",)

    def __init__(self, message: Message) -> None:
        super().__init__()
        self._message = message

    def _decode(self) -> dict[str, Any]:
        return json_format.MessageToDict(self._message)

    @property
    def message(self) -> Message:
        """The protobuf message itself."""
        return self._message
