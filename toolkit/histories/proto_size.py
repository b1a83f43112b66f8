"""The protobuf size of a message written as proto3 JSON, computed without building the message.

``json_format.ParseDict`` followed by ``ByteSize()`` costs ~100 us an event in pure Python;
walking the JSON value with the descriptor and adding up tags, varints and lengths costs a
fraction of that, and payload data (base64 in JSON) is measured by its length, never decoded.

Only canonical proto3 JSON is measured (what the server, the CLI and the SDKs write: camelCase or
proto field names, enums by name or number, 64-bit integers as strings or numbers, RFC 3339
times, base64 bytes). Anything else (an old dialect's enum spelling, a decoded payload, a field
of another shape) raises :class:`NotCanonical`, and the caller measures the normalized message
instead. Fields the installed API does not know are skipped, as ``ParseDict`` skips them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cache
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from toolkit.histories.write import is_decoded_payload

__all__ = ["NotCanonical", "message_size"]

_PAYLOAD = "temporal.api.common.v1.Payload"


class NotCanonical(ValueError):
    """The JSON value is not canonical proto3 JSON of its message type."""


_T = FieldDescriptor
_VARINT_TYPES = frozenset({_T.TYPE_INT32, _T.TYPE_INT64, _T.TYPE_UINT32, _T.TYPE_UINT64})
_FIXED = {_T.TYPE_DOUBLE: 8, _T.TYPE_FLOAT: 4, _T.TYPE_FIXED64: 8, _T.TYPE_FIXED32: 4,
          _T.TYPE_SFIXED64: 8, _T.TYPE_SFIXED32: 4}  # fmt: skip
_DURATION = re.compile(r"^(-)?(\d+)(?:\.(\d{1,9}))?s$")
# Compiled once: re.fullmatch/re.match look the pattern up in re's cache on every call, a
# measurable part of sizing every event of a fleet (several integers and a time per event).
_INTEGER_TEXT = re.compile(r"-?\d+")
_RFC3339 = re.compile(r"^(.*?)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")


def _varint(value: int) -> int:
    if value < 128:
        return 1 if value >= 0 else 10  # negative int32/int64 are sign-extended to 64 bits
    if value < 16384:
        return 2
    if value < 2097152:
        return 3
    return (value.bit_length() + 6) // 7


def _framed(size: int) -> int:
    if size < 128:
        return size + 1
    return _varint(size) + size


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise NotCanonical("a boolean where an integer belongs")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise NotCanonical(f"{value!r} is not an integer")


def _b64_size(value: Any) -> int:
    if not isinstance(value, str):
        raise NotCanonical("bytes not written as base64 text")
    return len(value.rstrip("=")) * 3 // 4


def _seconds_nanos_size(seconds: int, nanos: int) -> int:
    size = 0
    if seconds:
        size += 1 + _varint(seconds)
    if nanos:
        size += 1 + _varint(nanos)
    return size


def _timestamp_size(value: Any) -> int:
    if not isinstance(value, str):
        raise NotCanonical("a time not written as RFC 3339 text")
    text, nanos = value, 0
    match = _RFC3339.match(text)
    if match is None:
        raise NotCanonical(f"{value!r} is not an RFC 3339 time")
    head, fraction, zone = match.groups()
    if fraction:
        nanos = int(fraction.ljust(9, "0"))
    try:
        moment = datetime.fromisoformat(head + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        raise NotCanonical(f"{value!r} is not an RFC 3339 time") from None
    return _seconds_nanos_size(int(moment.timestamp() // 1), nanos)


def _duration_size(value: Any) -> int:
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        raise NotCanonical(f"{value!r} is not a proto3 JSON duration")
    sign, seconds, fraction = match.groups()
    nanos = int((fraction or "").ljust(9, "0") or 0)
    factor = -1 if sign else 1
    return _seconds_nanos_size(factor * int(seconds), factor * nanos)


def _json_value_size(value: Any) -> int:
    """Size of a ``google.protobuf.Value`` holding the JSON ``value``."""
    if value is None:
        return 2  # null_value = NULL_VALUE (0), set in its oneof: tag + one byte
    if isinstance(value, bool):
        return 2
    if isinstance(value, (int, float)):
        return 9
    if isinstance(value, str):
        return 1 + _framed(len(value.encode("utf-8")))
    if isinstance(value, list):
        return 1 + _framed(sum(1 + _framed(_json_value_size(v)) for v in value))
    if isinstance(value, Mapping):
        return 1 + _framed(_struct_size(value))
    raise NotCanonical(f"{type(value).__name__} in a JSON value")


def _struct_size(value: Any) -> int:
    if not isinstance(value, Mapping):
        raise NotCanonical("a Struct not written as a JSON object")
    return sum(
        1 + _framed(1 + _framed(len(k.encode("utf-8"))) + 1 + _framed(_json_value_size(v)))
        for k, v in value.items()
    )


_WELL_KNOWN: dict[str, Callable[[Any], int]] = {
    "google.protobuf.Timestamp": _timestamp_size,
    "google.protobuf.Duration": _duration_size,
    "google.protobuf.Struct": _struct_size,
    "google.protobuf.Value": _json_value_size,
    "google.protobuf.ListValue": lambda v: sum(1 + _framed(_json_value_size(x)) for x in v),
    "google.protobuf.Empty": lambda v: 0,
}


def _scalar_size(field: FieldDescriptor, value: Any) -> int | None:
    """Bytes of one scalar value (no tag); None where proto3 would not write it (a default)."""
    kind = field.type
    if kind == _T.TYPE_STRING:
        if not isinstance(value, str):
            raise NotCanonical(f"{field.name}: a string was expected")
        size = len(value.encode("utf-8"))
        return _framed(size) if size or field.has_presence else None
    if kind == _T.TYPE_BYTES:
        size = _b64_size(value)
        return _framed(size) if size or field.has_presence else None
    if kind == _T.TYPE_BOOL:
        if not isinstance(value, bool):
            raise NotCanonical(f"{field.name}: a boolean was expected")
        return 1 if value or field.has_presence else None
    if kind == _T.TYPE_ENUM:
        number = _enum_number(field, value)
        return _varint(number) if number or field.has_presence else None
    if kind in _VARINT_TYPES:
        number = _integer(value)
        return _varint(number) if number or field.has_presence else None
    if kind in (_T.TYPE_SINT32, _T.TYPE_SINT64):
        number = _integer(value)
        zigzag = (number << 1) ^ (number >> 63)
        return _varint(zigzag) if number or field.has_presence else None
    if kind in _FIXED:
        if not isinstance(value, (int, float, str)) or isinstance(value, bool):
            raise NotCanonical(f"{field.name}: a number was expected")
        return _FIXED[kind] if float(value) or field.has_presence else None
    raise NotCanonical(f"{field.name}: field type {kind} is not measured")


def _enum_number(field: FieldDescriptor, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    found = field.enum_type.values_by_name.get(value) if isinstance(value, str) else None
    if found is None:
        raise NotCanonical(f"{field.name}: {value!r} is not a {field.enum_type.name} name")
    return int(found.number)


def _single_size(field: FieldDescriptor, value: Any, payloads: list[int] | None) -> int | None:
    """Bytes of one value of ``field`` without its tag (None: not written)."""
    message = field.message_type
    if message is None:
        return _scalar_size(field, value)
    measure = _WELL_KNOWN.get(message.full_name)
    if measure is not None:
        return _framed(measure(value))
    return _framed(message_size(value, message, payloads))


_SCALAR, _MESSAGE, _KNOWN, _MAP, _REPEATED = range(5)


@cache
def _fields(descriptor: Descriptor) -> dict[str, tuple[FieldDescriptor, int, int, Any]]:
    """JSON and proto names of ``descriptor``'s fields -> (field, tag size, how it is written,
    what measures it): decided once per message type, not per value."""
    out: dict[str, tuple[FieldDescriptor, int, int, Any]] = {}
    for field in descriptor.fields:
        message = field.message_type
        if message is not None and message.GetOptions().map_entry:
            mode, extra = _MAP, None
        elif field.is_repeated:
            mode, extra = _REPEATED, None
        elif message is None:
            mode, extra = _SCALAR, None
        elif message.full_name in _WELL_KNOWN:
            mode, extra = _KNOWN, _WELL_KNOWN[message.full_name]
        else:
            mode, extra = _MESSAGE, message
        entry = (field, _varint(field.number << 3), mode, extra)
        out[field.json_name] = entry
        out[field.name] = entry
    return out


def message_size(value: Any, descriptor: Descriptor, payloads: list[int] | None = None) -> int:
    """The encoded size of the message of type ``descriptor`` that the proto3 JSON ``value``
    describes (what ``ParseDict(value, Message()).ByteSize()`` returns).

    Parameters
    ----------
    value, descriptor
        The JSON object and its message type.
    payloads
        When given, the encoded size of every ``temporal.api.common.v1.Payload`` met inside is
        appended to it.

    Raises
    ------
    NotCanonical
        Where ``value`` is not canonical proto3 JSON of that type, a payload written decoded
        (by a UI download) included.
    """
    if not isinstance(value, dict) and not isinstance(value, Mapping):
        raise NotCanonical(f"{descriptor.name}: a JSON object was expected")
    is_payload = descriptor.full_name == _PAYLOAD
    if is_payload and is_decoded_payload(value, check_data=False):
        raise NotCanonical("a payload written decoded")
    fields = _fields(descriptor)
    total = 0
    for key, item in value.items():
        found = fields.get(key)
        if found is None or item is None:
            continue  # unknown to the installed API, or an emit-defaults null
        field, tag, mode, extra = found
        if mode == _MESSAGE:
            total += tag + _framed(message_size(item, extra, payloads))
        elif mode == _SCALAR:
            size = _scalar_size(field, item)
            if size is not None:
                total += tag + size
        elif mode == _KNOWN:
            total += tag + _framed(extra(item))
        elif mode == _MAP:
            total += _map_size(field, tag, item, payloads)
        else:
            total += _repeated_size(field, tag, item, payloads)
    if is_payload and payloads is not None:
        payloads.append(total)
    return total


def _map_size(field: FieldDescriptor, tag: int, value: Any, payloads: list[int] | None) -> int:
    if not isinstance(value, Mapping):
        raise NotCanonical(f"{field.name}: a map was expected")
    key_field = field.message_type.fields_by_name["key"]
    value_field = field.message_type.fields_by_name["value"]
    total = 0
    for key, item in value.items():
        if item is None:
            continue
        key_size = _map_key_size(key_field, key)
        item_size = _single_size(value_field, item, payloads)
        # Map entries always carry both key and value, defaults included.
        if item_size is None:
            item_size = _framed(0) if value_field.type in (_T.TYPE_STRING, _T.TYPE_BYTES) else 1
        total += tag + _framed(1 + key_size + 1 + item_size)
    return total


def _map_key_size(field: FieldDescriptor, key: str) -> int:
    if field.type == _T.TYPE_STRING:
        return _framed(len(key.encode("utf-8")))
    if field.type == _T.TYPE_BOOL:
        return 1
    return _varint(_integer(key))


def _repeated_size(
    field: FieldDescriptor, tag: int, value: Any, payloads: list[int] | None
) -> int:
    if not isinstance(value, list):
        raise NotCanonical(f"{field.name}: a list was expected")
    if field.message_type is None and field.type not in (_T.TYPE_STRING, _T.TYPE_BYTES):
        if not value:
            return 0
        # Packed: one tag, one length, the values back to back (defaults included).
        sizes = [_scalar_size(_Always(field), item) for item in value]  # type: ignore[arg-type]
        return tag + _framed(sum(size or 0 for size in sizes))
    total = 0
    for item in value:
        size = _single_size(
            field if field.message_type is not None else _Always(field),  # type: ignore[arg-type]
            item,
            payloads,
        )
        total += tag + (size if size is not None else _framed(0))
    return total


class _Always:
    """A field descriptor seen as one with presence: elements of a repeated field are always
    written, even when they hold a default value."""

    def __init__(self, field: FieldDescriptor) -> None:
        self._field = field

    has_presence = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._field, name)
