"""Protobuf messages as proto3 JSON dicts whose map entries come in a fixed order.

``json_format.MessageToDict`` lists a map field's entries in the order the protobuf runtime
(upb) iterates them, which changes from one process to the next: the ``details`` of a marker,
a header's or memo's ``fields``, search attributes. Cells, exported JSON and dataset text made
from binary histories then differed from run to run while meaning the same. Here every map's
entries (and every ``Struct``'s keys) are sorted by key, recursively, guided by the descriptor.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

__all__ = ["message_to_dict"]

_STRUCT = "google.protobuf.Struct"
_VALUE = "google.protobuf.Value"
_LIST = "google.protobuf.ListValue"


def message_to_dict(message: Message) -> dict[str, Any]:
    """``json_format.MessageToDict(message)`` with map entries sorted by key."""
    return _sort_message(message.DESCRIPTOR, json_format.MessageToDict(message))  # type: ignore[no-any-return]


def _sort_message(descriptor: Descriptor, value: Any) -> Any:
    """``value``, the JSON dict of a message of type ``descriptor``, with its maps sorted (in
    place; returned for the callers' convenience)."""
    if not isinstance(value, dict):
        return value  # a well-known type with a JSON form of its own (Timestamp, Duration, ...)
    for name, field, inner in _fields_holding_maps(descriptor):
        item = value.get(name)
        if item is None:
            continue
        if inner is not None:  # a map: entries by key, each value sorted inside
            if isinstance(item, dict):
                value[name] = {k: _sort_value(inner, v) for k, v in sorted(item.items())}
        elif isinstance(item, list):  # a repeated field (or a ListValue: sorted either way)
            value[name] = [_sort_value(field, element) for element in item]
        else:
            value[name] = _sort_value(field, item)
    return value


@cache
def _fields_holding_maps(
    descriptor: Descriptor,
) -> tuple[tuple[str, FieldDescriptor, FieldDescriptor | None], ...]:
    """``(JSON name, field, the map's value field or None)`` of the fields of ``descriptor``
    that are maps or ``Struct``s or hold one at any depth: the only ones worth a look (most of
    an event's hundred fields hold none)."""
    found = []
    for field in descriptor.fields:
        if _holds_maps(field.message_type, set()):
            entry = field.message_type
            inner = entry.fields_by_name["value"] if entry.GetOptions().map_entry else None
            found.append((field.json_name, field, inner))
    return tuple(found)


def _holds_maps(descriptor: Descriptor | None, seen: set[str]) -> bool:
    if descriptor is None or descriptor.full_name in seen:
        return False  # a scalar, or a message already being looked at (recursive types)
    if descriptor.GetOptions().map_entry or descriptor.full_name in (_STRUCT, _VALUE, _LIST):
        return True
    if descriptor.full_name.startswith("google.protobuf."):
        return False
    seen.add(descriptor.full_name)
    return any(_holds_maps(f.message_type, seen) for f in descriptor.fields)


def _sort_value(field: FieldDescriptor, item: Any) -> Any:
    """One value of ``field`` with the maps inside it sorted."""
    if field.message_type is None:
        return item
    name = field.message_type.full_name
    if name in (_STRUCT, _VALUE, _LIST):
        return _sort_plain(item)
    if name.startswith("google.protobuf."):
        return item
    return _sort_message(field.message_type, item)


def _sort_plain(value: Any) -> Any:
    """A ``Struct``/``Value`` in JSON form: objects' keys sorted, at every depth."""
    if isinstance(value, dict):
        return {k: _sort_plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_sort_plain(v) for v in value]
    return value
