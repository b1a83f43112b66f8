"""A protobuf message as sdk-core prints it with ``{:?}``: Rust's ``Debug`` of prost's structs.

Some sdk-core machines quote the whole history event they cannot handle (the child workflow
machine: ``Child workflow machine does not handle this event: HistoryEvent { event_id: 11,
event_time: Some(Timestamp { seconds: ..., nanos: ... }), event_type: ActivityTaskScheduled, ...
attributes: Some(ActivityTaskScheduledEventAttributes(ActivityTaskScheduledEventAttributes {
activity_id: "2", ... })) }``). prost derives that text from the message's fields, so it can be
written from the same field descriptors (temporalio's generated API, which is sdk-core's API of
the same release):

- fields in declaration order, then each ``oneof`` as ``name: Some(Variant(Message { ... }))``
  (variant named after the field, in UpperCamelCase) or ``None``;
- a message field ``Some(Type { ... })`` or ``None``; repeated fields ``[a, b]``; maps ``{k: v}``;
- enums by variant name, the enum's own name stripped from the value's (``EVENT_TYPE_ACTIVITY_
  TASK_SCHEDULED`` is ``ActivityTaskScheduled``), an unknown value as its number;
- strings quoted with Rust's escapes, bytes as a list of numbers, floats as Rust writes them;
- ``Payload`` with sdk-core's own ``Debug`` (``crates/common/src/protos/mod.rs``): ``[<base64 of
  data>]``, or the first and last 32 bytes, ``[<b64>..<b64>]``, for data over 64 bytes
  (``TEMPORAL_PRINT_FULL_PAYLOADS`` unset).

prost keeps maps in a ``HashMap``, whose order differs from run to run: a message with a map of
two or more entries is printed in one order of many, and :func:`debug_text` says it is not exact.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

__all__ = ["debug_text", "rust_float", "rust_string"]

_PAYLOAD = "temporal.api.common.v1.Payload"
#: Rust keywords: prost names such a field ``r#<name>`` and ``Debug`` prints it so.
_KEYWORDS = frozenset({
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
})  # fmt: skip
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def rust_string(text: str) -> str:
    """``text`` as Rust's ``{:?}`` of a ``String`` writes it (quoted, escaped)."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif not char.isprintable() and char != " ":
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def rust_float(value: float, *, single: bool = False) -> str:
    """A float as Rust's ``{:?}`` writes it (``2.0``, ``0.5``, ``1e-5``, ``1.5e16``, ``NaN``);
    ``single`` for an ``f32`` (its shortest digits, not the double's)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    if single:
        import numpy as np

        text = str(np.float32(value))
    else:
        text = repr(float(value))
    if "e" in text or "E" in text:
        mantissa, exponent = re.split("[eE]", text)
        return f"{mantissa.removesuffix('.0')}e{int(exponent)}"
    return text if "." in text else f"{text}.0"


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:].lower() for part in name.split("_") if part)


def _variant(enum: EnumDescriptor, number: int) -> str:
    value = enum.values_by_number.get(number)
    if value is None:
        return str(number)
    camel, prefix = _camel(value.name), _camel(_snake(enum.name))
    stripped = camel[len(prefix):] if camel.startswith(prefix) else camel
    return stripped if stripped and not stripped[0].isdigit() else camel


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _field_name(field: FieldDescriptor) -> str:
    return f"r#{field.name}" if field.name in _KEYWORDS else field.name


def _payload(message: Any) -> str:
    data = bytes(message.data)
    if len(data) > 64:
        first, last = base64.b64encode(data[:32]), base64.b64encode(data[-32:])
        return f"[{first.decode()}..{last.decode()}]"
    return f"[{base64.b64encode(data).decode()}]"


class _Printer:
    def __init__(self) -> None:
        self.exact = True

    def message(self, message: Any) -> str:
        descriptor: Descriptor = message.DESCRIPTOR
        if descriptor.full_name == _PAYLOAD:
            return _payload(message)
        parts = []
        oneofs = [o for o in descriptor.oneofs if not _synthetic(o)]
        for field in descriptor.fields:
            if field.containing_oneof is not None and not _synthetic(field.containing_oneof):
                continue
            parts.append(f"{_field_name(field)}: {self.field(message, field)}")
        for oneof in oneofs:
            chosen = message.WhichOneof(oneof.name)
            if chosen is None:
                parts.append(f"{oneof.name}: None")
                continue
            field = descriptor.fields_by_name[chosen]
            inner = self.single(getattr(message, chosen), field)
            parts.append(f"{oneof.name}: Some({_camel(chosen)}({inner}))")
        return f"{descriptor.name} {{ {', '.join(parts)} }}" if parts else descriptor.name

    def field(self, message: Any, field: FieldDescriptor) -> str:
        value = getattr(message, field.name)
        if _is_map(field):
            if len(value) > 1:
                self.exact = False  # a HashMap: its order is the process's own
            key_field, value_field = field.message_type.fields
            items = [f"{self.single(k, key_field)}: {self.single(value[k], value_field)}"
                     for k in value]  # fmt: skip
            return "{" + ", ".join(items) + "}"
        if field.is_repeated:
            return "[" + ", ".join(self.single(v, field) for v in value) + "]"
        if field.type == FieldDescriptor.TYPE_MESSAGE or field.containing_oneof is not None:
            if not message.HasField(field.name):
                return "None"
            return f"Some({self.single(value, field)})"
        return self.single(value, field)

    def single(self, value: Any, field: FieldDescriptor) -> str:
        kind = field.type
        if kind == FieldDescriptor.TYPE_MESSAGE:
            return self.message(value)
        if kind == FieldDescriptor.TYPE_ENUM:
            return _variant(field.enum_type, int(value))
        if kind == FieldDescriptor.TYPE_STRING:
            return rust_string(value)
        if kind == FieldDescriptor.TYPE_BYTES:
            return "[" + ", ".join(str(b) for b in bytes(value)) + "]"
        if kind == FieldDescriptor.TYPE_BOOL:
            return "true" if value else "false"
        if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            return rust_float(value, single=kind == FieldDescriptor.TYPE_FLOAT)
        return str(int(value))


def _is_map(field: FieldDescriptor) -> bool:
    options = field.message_type.GetOptions() if field.message_type is not None else None
    return bool(field.is_repeated and options and options.map_entry)


def _synthetic(oneof: Any) -> bool:
    """A proto3 ``optional`` field's own oneof (prost makes it an ``Option`` in place)."""
    fields = list(oneof.fields)
    return len(fields) == 1 and oneof.name == f"_{fields[0].name}"


def debug_text(message: Any) -> tuple[str, bool]:
    """``message`` (a protobuf message) as sdk-core's ``{:?}`` prints it, and whether that text
    is certain (False when a map of two or more entries could be printed in another order)."""
    printer = _Printer()
    text = printer.message(message)
    return text, printer.exact
