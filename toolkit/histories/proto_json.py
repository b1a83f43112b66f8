"""Protobuf messages as proto3 JSON dicts whose map entries come in a fixed order.

``json_format.MessageToDict`` lists a map field's entries in the order the protobuf runtime
(upb) iterates them, which changes from one process to the next: the ``details`` of a marker,
a header's or memo's ``fields``, search attributes. Cells, exported JSON and dataset text made
from binary histories then differed from run to run while meaning the same. Here every map's
entries (and every ``Struct``'s keys) are sorted by key, recursively, guided by the descriptor.
"""

from __future__ import annotations

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
    for field in descriptor.fields:
        item = value.get(field.json_name)
        if item is None or field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if isinstance(item, dict):
                inner = field.message_type.fields_by_name["value"]
                value[field.json_name] = {k: _sort_value(inner, v) for k, v in sorted(item.items())}
        elif isinstance(item, list):  # a repeated field (or a ListValue: sorted either way)
            value[field.json_name] = [_sort_value(field, element) for element in item]
        else:
            value[field.json_name] = _sort_value(field, item)
    return value


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
