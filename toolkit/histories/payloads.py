"""Payload decoding: what a Temporal payload holds, as a Python value, without executing anything.

A proto-JSON payload is ``{"metadata": {"encoding": <base64>, ...}, "data": <base64>}``. Handled:

============================  ==================================================================
encoding                      value
============================  ==================================================================
``json/plain``                the JSON value
``binary/null``               ``None``
``json/protobuf``             the message as a dict (proto3 JSON), type name in metadata
``binary/protobuf``           the message as a dict when its type is known to the installed
                              protobuf registry, otherwise an :class:`OpaquePayload`
``binary/encrypted``          an :class:`OpaquePayload`, unless a ``PayloadCodec`` is given
``binary/plain``              ``bytes``
anything else (gob, ...)      an :class:`OpaquePayload` describing it
============================  ==================================================================

UI "decoded" downloads put the decoded value in ``data`` and mark it (``encodingDecoded``, or a
plain-text ``encoding``); those values are taken as they are — never base64-decoded into garbage.
Nothing is unpickled or evaluated.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf import symbol_database
from temporalio.api.common.v1 import Payload

from toolkit.errors import PayloadError
from toolkit.event_loop import run_sync
from toolkit.histories.proto_json import message_to_dict

__all__ = [
    "OpaquePayload",
    "decode_any",
    "decode_payload",
    "decode_payloads",
    "decode_proto_payloads",
]

_KNOWN_ENCODINGS = frozenset(
    {
        "json/plain",
        "binary/null",
        "json/protobuf",
        "binary/protobuf",
        "binary/encrypted",
        "binary/plain",
        "binary/gob",
        "json",
    }
)


@dataclass(frozen=True)
class OpaquePayload:
    """A payload the toolkit does not (or may not) turn into a value.

    Attributes
    ----------
    encoding : str
        The payload's encoding (``binary/encrypted``, ``binary/gob``, ...).
    size : int
        Size of the data in bytes.
    metadata : dict
        The payload's other metadata, decoded to text where it is text.
    data : bytes
        The raw data, for a user who knows what to do with it.
    """

    encoding: str
    size: int
    metadata: Mapping[str, str] = field(default_factory=dict)
    data: bytes = field(default=b"", repr=False)

    def __repr__(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.metadata.items() if k != "encoding")
        return f"<{self.encoding} payload, {self.size} bytes{', ' + extra if extra else ''}>"


def _b64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError, TypeError):
        return None


def _metadata_text(value: Any) -> tuple[str, bool]:
    """Decode one metadata value; returns (text, was_base64)."""
    if not isinstance(value, str):
        return str(value), False
    raw = _b64(value)
    if raw is not None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and text.isprintable():
            return text, True
    return value, False


def decode_payload(payload: Any, codec: Any = None) -> Any:
    """Decode one proto-JSON payload (a dict) into the value it holds.

    Parameters
    ----------
    payload
        ``{"metadata": {...}, "data": ...}`` as in proto3 JSON or a UI decoded download; anything
        else (a bare number or string a UI put in place of a payload) is returned as it is.
    codec
        A ``temporalio.converter.PayloadCodec`` applied first (e.g. to decrypt).
    """
    done, value = _prepare(payload)
    if done:
        return value
    meta_in, encoding, metadata, raw = value
    if codec is not None:
        return decode_proto_payload(run_sync(codec.decode([_codec_input(meta_in, raw)]))[0])
    return _decode_bytes(encoding, metadata, raw)


def _prepare(payload: Any) -> tuple[bool, Any]:
    """``(True, value)`` for a payload that holds its value as it is; else ``(False, (metadata
    as given, encoding, metadata as text, data bytes))`` for a codec or :func:`_decode_bytes`.
    """
    if not isinstance(payload, Mapping) or ("metadata" not in payload and "data" not in payload):
        return True, payload
    meta_in = payload.get("metadata") or {}
    if not isinstance(meta_in, Mapping):
        return True, payload  # not a payload after all: kept as it is
    data = payload.get("data")
    if "encodingDecoded" in meta_in:
        # UI decoded download: the value is already in `data`.
        return True, data
    metadata: dict[str, str] = {}
    all_base64 = True
    for key, value in meta_in.items():
        text, was_b64 = _metadata_text(value)
        metadata[key] = text
        all_base64 = all_base64 and was_b64
    encoding = metadata.get("encoding", "")
    if meta_in and not all_base64 and encoding in _KNOWN_ENCODINGS:
        # Plain-text metadata: a decoded download whose data is the value itself.
        return True, data
    if data is None:
        raw = b""
    elif isinstance(data, str):
        decoded = _b64(data)
        if decoded is None:
            return True, data  # not base64: a decoded value
        raw = decoded
    else:
        return True, data  # a bare JSON value in place of base64 data
    return False, (meta_in, encoding, metadata, raw)


def _decode_bytes(encoding: str, metadata: Mapping[str, str], raw: bytes) -> Any:
    if encoding in ("json/plain", "json"):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw.decode("utf-8", errors="replace")
    if encoding == "binary/null":
        return None
    if encoding == "json/protobuf":
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return OpaquePayload(encoding, len(raw), metadata, raw)
    if encoding == "binary/protobuf":
        message = _known_message(metadata.get("messageType"))
        if message is not None:
            try:
                message.ParseFromString(raw)
                return message_to_dict(message)
            except Exception:  # a malformed message stays opaque rather than failing the load
                pass
        return OpaquePayload(encoding, len(raw), metadata, raw)
    if encoding == "binary/plain":
        return raw
    return OpaquePayload(encoding or "unknown", len(raw), metadata, raw)


def _known_message(type_name: str | None) -> Any:
    if not type_name:
        return None
    try:
        return symbol_database.Default().GetSymbol(type_name)()
    except KeyError:
        return None


def _codec_input(meta_in: Mapping[str, Any], raw: bytes) -> Payload:
    return Payload(
        metadata={k: (_b64(v) or b"") if isinstance(v, str) else b"" for k, v in meta_in.items()},
        data=raw,
    )


def _codec_decode_all(payloads: list[Payload], codec: Any) -> list[Payload]:
    """``codec.decode`` over a whole ``Payloads`` list in one call (one event loop, not one per
    payload); the codec's own error propagates."""
    if not payloads:
        return []
    decoded = list(run_sync(codec.decode(payloads)))
    if len(decoded) != len(payloads):
        raise PayloadError(f"the codec returned {len(decoded)} payloads for {len(payloads)}; "
                           "expected one decoded payload per payload")
    return decoded


def _decode_list(items: list[Any], codec: Any) -> list[Any]:
    """:func:`decode_payload` of each proto-JSON payload, the codec called once for them all."""
    if codec is None:
        return [decode_payload(p) for p in items]
    prepared = [_prepare(p) for p in items]
    pending = [i for i, (done, _) in enumerate(prepared) if not done]
    inputs = [_codec_input(prepared[i][1][0], prepared[i][1][3]) for i in pending]
    out = [value for _, value in prepared]
    for i, payload in zip(pending, _codec_decode_all(inputs, codec), strict=True):
        out[i] = decode_proto_payload(payload)
    return out


def decode_payloads(payloads: Any, codec: Any = None) -> Any:
    """Decode a ``Payloads`` object (``{"payloads": [...]}``), a map of them, or a bare list.

    Returns a list of values for ``Payloads``, a dict of lists for a map (marker details), and
    ``None`` for ``None``.
    """
    if payloads is None:
        return None
    if isinstance(payloads, Mapping):
        if "payloads" in payloads:
            items = payloads.get("payloads") or []
            # A "payloads" that is no list is no Payloads: kept as it is.
            return _decode_list(items, codec) if isinstance(items, list) else payloads
        values = list(payloads.values())
        if values and all(isinstance(v, Mapping) and "payloads" in v for v in values):
            return {key: decode_payloads(value, codec) for key, value in payloads.items()}
        if "metadata" in payloads or set(payloads) <= {"data", "externalPayloads"}:
            return [decode_payload(payloads, codec)]
        return {key: decode_payloads(value, codec) for key, value in payloads.items()}
    if isinstance(payloads, list):
        return _decode_list(payloads, codec)
    return payloads


def decode_proto_payload(payload: Payload, codec: Any = None) -> Any:
    """Decode a protobuf ``Payload`` message (from a binary history or a live server)."""
    if codec is not None:
        payload = run_sync(codec.decode([payload]))[0]
    metadata = {k: v.decode("utf-8", errors="replace") for k, v in payload.metadata.items()}
    return _decode_bytes(metadata.get("encoding", ""), metadata, payload.data)


def decode_proto_payloads(payloads: Any, codec: Any = None) -> list[Any]:
    """Decode a protobuf ``Payloads`` message into a list of values."""
    if codec is not None:
        return [decode_proto_payload(p) for p in _codec_decode_all(list(payloads.payloads), codec)]
    return [decode_proto_payload(p) for p in payloads.payloads]


def decode_any(raw: Any, codec: Any = None) -> Any:
    """Decode what a payload column keeps: raw JSON, a protobuf ``Payloads``/``Payload``, a map.

    Returns a list of values for ``Payloads`` (and for a single ``Payload``), a dict of lists for
    a map of them (marker details), ``None`` for JSON null.
    """
    import msgspec

    if isinstance(raw, (bytes, msgspec.Raw)):
        return decode_payloads(msgspec.json.decode(raw), codec)
    if isinstance(raw, Payload):
        return [decode_proto_payload(raw, codec)]
    if hasattr(raw, "payloads"):
        return decode_proto_payloads(raw, codec)
    if hasattr(raw, "items"):  # protobuf map<string, Payloads>
        # A map's iteration order is not defined (it differed between two processes): by key,
        # so that every process gives the same dict, in the same order.
        return {key: decode_proto_payloads(raw[key], codec) for key in sorted(raw)}
    return raw
