"""The protobuf ``ExportTraceServiceRequest`` of spans, encoded field by field.

:func:`toolkit.traces.otlp.otlp_protobuf` fills ``opentelemetry-proto`` messages and serializes
them; a dozen attribute messages per span make that the slowest part of an export.
:func:`encode_request` writes the same bytes directly: protobuf's wire format, fields in
field-number order as the runtime writes them, proto3 defaults left out (the status always
present: the message-filling code sets its code), each distinct ``KeyValue`` encoded once
however often it repeats. A value the message classes would refuse or change (an integer
beyond int64, a time before 1970, text that is no UTF-8) raises :class:`Unencodable`, and the
caller takes the message route, which raises as it always did.

Field numbers are those of ``opentelemetry/proto/trace/v1/trace.proto`` and
``common/v1/common.proto`` (the comments name each field).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

__all__ = ["Unencodable", "encode_columns", "encode_request", "events_fields"]

_INT64 = (-(1 << 63), (1 << 63) - 1)
_FIXED64 = struct.Struct("<Q")
_DOUBLE = struct.Struct("<d")


class Unencodable(ValueError):
    """A value this encoder does not write as the message classes would."""


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 as protobuf writes it: ten bytes, two's complement
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload."""
    return tag + _varint(len(payload)) + payload


def _text(value: Any) -> bytes:
    """A string field's bytes (a value that is no text, or no UTF-8, is the classes' error)."""
    if not isinstance(value, str):
        raise Unencodable(f"{type(value).__name__} for a string field")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise Unencodable(str(error)) from error


def _any_value(value: Any) -> bytes:
    """An ``AnyValue`` as :func:`toolkit.traces.otlp._any_value` fills it (b"" when unset)."""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"  # bool_value = 2
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise Unencodable(f"{value} is beyond int64")
        return b"\x18" + _varint(int(value))  # int_value = 3
    if isinstance(value, float):
        return b"\x21" + _DOUBLE.pack(value)  # double_value = 4 (fixed64)
    if isinstance(value, (list, tuple)):
        # array_value = 5 {values = 1}: set only once an item is added
        items = b"".join(_field(b"\x0a", _any_value(item)) for item in value)
        return _field(b"\x2a", items) if value else b""
    return _field(b"\x0a", _text(str(value)))  # string_value = 1


def _key_value(key: str, value: Any) -> bytes:
    """A ``KeyValue``: key = 1 (left out when empty), value = 2 (unless nothing set it: an
    empty list)."""
    body = _any_value(value)
    return ((_field(b"\x0a", _text(key)) if key else b"")
            + (_field(b"\x12", body) if body else b""))  # fmt: skip


class _KeyValues:
    """The ``KeyValue`` fields of attributes, each distinct (key, str, int or bool value)
    encoded once per field number."""

    def __init__(self) -> None:
        self.known: dict[tuple[bytes, str, type, Any], bytes] = {}

    def __call__(self, tag: bytes, attributes: Mapping[str, Any]) -> bytes:
        known, out = self.known, []
        for key, value in attributes.items():
            kind = type(value)
            if kind is str or kind is int or kind is bool:  # the type too: True == 1
                token = (tag, key, kind, value)
                entry = known.get(token)
                if entry is None:
                    entry = known[token] = _field(tag, _key_value(key, value))
            else:
                entry = _field(tag, _key_value(key, value))
            out.append(entry)
        return b"".join(out)


def _nanos(tag: bytes, value: int) -> bytes:
    """A fixed64 time (left out at 0); negative ones the message classes refuse."""
    if value < 0 or value >= 1 << 64:
        raise Unencodable(f"time {value} ns is no fixed64")
    return tag + _FIXED64.pack(value) if value else b""


def _id(tag: bytes, text: str) -> bytes:
    try:
        raw = bytes.fromhex(text)
    except (TypeError, ValueError) as error:
        raise Unencodable(str(error)) from error
    return _field(tag, raw) if raw else b""


def events_fields(events: Any, key_values: _KeyValues) -> bytes:
    """A span's ``events`` fields (events = 11): tuples (time ns, name, attributes)."""
    return b"".join(_field(b"\x5a", b"".join((
        _nanos(b"\x09", when), _field(b"\x12", _text(label)) if label else b"",
        key_values(b"\x1a", attributes))))  # time = 1, name = 2, attributes = 3
        for when, label, attributes in events)  # fmt: skip


def _around(resource: Mapping[str, Any], scope: tuple[str, str],
            key_values: _KeyValues) -> tuple[bytes, bytes]:  # fmt: skip
    """The ``Resource``'s attributes fields and the ``InstrumentationScope``'s body."""
    name, version = scope
    scope_body = ((_field(b"\x0a", _text(name)) if name else b"")
                  + (_field(b"\x12", _text(version)) if version else b""))  # fmt: skip
    return key_values(b"\x0a", resource), scope_body  # Resource.attributes = 1


def encode_request(rows: Any, resource: Mapping[str, Any], scope: tuple[str, str],
                   kinds: Mapping[str, int], statuses: Mapping[str, int]) -> bytes:  # fmt: skip
    """The request of one resource and one scope (``(name, version)``) holding the spans
    ``rows``: tuples (trace id, span id, parent id, name, kind, start ns, end ns, attributes,
    status, status message, events), event times in ns."""
    key_values, spans = _KeyValues(), []
    for trace, span_id, parent, name, kind, start, end, attributes, status, message, events \
            in rows:  # fmt: skip
        code = statuses[status]
        status_body = ((_field(b"\x12", _text(message)) if message else b"")  # message = 2
                       + (b"\x18" + _varint(code) if code else b""))  # code = 3; fmt: skip
        kind_code = kinds[kind]
        span = b"".join((
            _id(b"\x0a", trace), _id(b"\x12", span_id),  # trace_id = 1, span_id = 2
            _id(b"\x22", parent) if parent else b"",  # parent_span_id = 4
            _field(b"\x2a", _text(name)) if name else b"",  # name = 5
            b"\x30" + _varint(kind_code) if kind_code else b"",  # kind = 6
            _nanos(b"\x39", start), _nanos(b"\x41", end),  # start = 7, end = 8 (fixed64)
            key_values(b"\x4a", attributes),  # attributes = 9
            events_fields(events, key_values),  # events = 11
            _field(b"\x7a", status_body),  # status = 15
        ))  # fmt: skip
        spans.append(_field(b"\x12", span))  # ScopeSpans.spans = 2
    attributes, scope_body = _around(resource, scope, key_values)
    scope_spans = _field(b"\x0a", scope_body) + b"".join(spans)  # scope = 1
    resource_spans = ((_field(b"\x0a", attributes) if attributes else b"")  # resource = 1
                      + _field(b"\x12", scope_spans))  # scope_spans = 2; fmt: skip
    return _field(b"\x0a", resource_spans)  # ExportTraceServiceRequest.resource_spans = 1


def encode_columns(columns: list[list[Any]], resource: Mapping[str, Any],
                   scope: tuple[str, str], kinds: Mapping[str, int],
                   statuses: Mapping[str, int]) -> bytes:  # fmt: skip
    """:func:`encode_request` of the rows the ``columns`` hold (its rows' fields as lists), by
    the compiled writer where it is built and takes every value (the same bytes), else by
    :func:`encode_request` itself."""
    if _otlpwire is not None:
        key_values = _KeyValues()
        try:  # what the compiled writer takes written: the few spans' events, the shell
            events = [events_fields(found, key_values) if found else None
                      for found in columns[-1]]  # fmt: skip
            attributes, scope_body = _around(resource, scope, key_values)
        except Unencodable:
            pass  # the reference below raises it, where it comes
        else:
            written = _otlpwire.request(attributes, scope_body, *columns[:-1], events, kinds,
                                        statuses)  # fmt: skip
            if written is not None:
                return written  # type: ignore[no-any-return]
    return encode_request(zip(*columns, strict=True), resource, scope, kinds, statuses)


try:  # the request written in C (setup.py builds it where a C compiler is)
    from toolkit.traces import _otlpwire
except ImportError:  # pragma: no cover - depends on the install
    _otlpwire = None
