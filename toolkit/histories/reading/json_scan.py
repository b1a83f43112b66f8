"""A ``{"events": [...]}`` proto-JSON document read by the compiled scanner (``_jsonscan.c``).

The scanner validates the document and returns its events and the attribute fields that feed a
column as arrays, like the binary reader (``_wirescan.c``), so no Python object is made per
field. It stands in for the typed msgspec decode (:mod:`toolkit.histories.views`) only where it
reads exactly what that decode would: anything else (a spelling of an event type that is not
proto3 JSON's, a repeated key, a value of an unexpected type, ...) makes :func:`scan_document`
return ``None``, and the caller decodes the document with msgspec as before. Everything that can
refuse the document happens here, at open time, so building the columns
(:mod:`toolkit.histories.columns.from_json_scan`) never has to go back.

Where the package was built without a C compiler, :func:`scan_document` always returns ``None``:
the msgspec path is the pure fallback, and ``tests/test_json_scan_equal.py`` holds both to the
same frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.histories.columns.common import type_info
from toolkit.histories.reading.wire import WireError, packed_strings
from toolkit.histories.views import ATTRIBUTE_VIEWS, TAGGED_EVENTS, AttrView

__all__ = ["SCAN_FROM_BYTES", "ScannedHistory", "compiled", "scan_document"]

_compiled: ModuleType | None
try:
    from toolkit.histories.reading import _jsonscan as _compiled
except ImportError:  # installed without a C compiler: msgspec decodes the document
    _compiled = None

#: Documents at least this large are scanned (smaller ones are decoded with msgspec, which a batch
#: of small files builds jointly); ``None``: never scan.
SCAN_FROM_BYTES: int | None = 1 << 20

# How the scanner treats a field (see _jsonscan.c).
SKIP, TEXT, NAMED, INT, FLAG, RAW, CHECK, CHECK_NAMED = range(8)

#: type code -> eventType spelling (proto3 JSON's), and its attributes key
SPELLINGS: tuple[str, ...] = tuple(TAGGED_EVENTS.values())
KEYS: tuple[str, ...] = tuple(
    next(f for f in cls.__struct_fields__ if f.endswith("EventAttributes")) for cls in TAGGED_EVENTS
)
#: field id -> AttrView field; a field's rows carry code ``field id + 1``
FIELDS: tuple[str, ...] = AttrView.__struct_fields__
_FIELD_TYPES = {f.name: f.type for f in msgspec.structs.fields(AttrView)}
_SHAPE_OF = {
    **dict.fromkeys(("activityId", "timerId", "signalName", "markerName", "identity"), TEXT),
    **dict.fromkeys(("activityType", "taskQueue"), NAMED),
    "workflowType": CHECK_NAMED,
    **dict.fromkeys(("scheduledEventId", "startedEventId", "initiatedEventId", "attempt",
                     "historySizeBytes", "workflowTaskCompletedEventId",
                     "decisionTaskCompletedEventId"), INT),
    "suggestContinueAsNew": FLAG,
    **dict.fromkeys(("workflowId", "namespace", "originalExecutionRunId", "protocolInstanceId"),
                    CHECK),
}  # fmt: skip
SHAPES = np.array([SKIP] + [_SHAPE_OF.get(name, RAW) for name in FIELDS], dtype=np.uint8)
#: RAW fields whose value is kept as JSON text (payloads): every other RAW field is decoded here
PAYLOADS = frozenset({"input", "result", "details"})


def slow_type(code: int) -> bool:
    """Whether events of type ``code`` are read through their msgspec view (their attributes
    handed over whole): updates and child workflows (nested columns), and the started event
    (whose view gives the run's facts)."""
    info = type_info(SPELLINGS[code])
    return info.category in ("update", "child_workflow") or info.short == "WorkflowExecutionStarted"


@cache
def _tables() -> tuple[tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...], bytes]:
    routes = np.zeros((len(SPELLINGS), len(FIELDS)), dtype=np.int16)
    for code, key in enumerate(KEYS):
        if slow_type(code):
            routes[code, :] = -1
            continue
        own = set(ATTRIBUTE_VIEWS[key].__struct_fields__)
        for field, name in enumerate(FIELDS):
            if name in own:
                routes[code, field] = field + 1
    encode = str.encode
    return (
        tuple(map(encode, SPELLINGS)), tuple(map(encode, KEYS)), tuple(map(encode, FIELDS)),
        routes.tobytes(),
    )  # fmt: skip


@cache
def _decoder(field: str) -> msgspec.json.Decoder:
    return msgspec.json.Decoder(_FIELD_TYPES[field])


@cache
def _view_decoder(key: str) -> msgspec.json.Decoder:
    return msgspec.json.Decoder(ATTRIBUTE_VIEWS[key] | None)


def compiled() -> bool:
    """Whether proto-JSON documents are read by the compiled scanner (``_jsonscan.c``)."""
    return _compiled is not None


@dataclass
class ScannedHistory:
    """What the scanner found in a document (arrays over its events; see ``_jsonscan.c``).

    ``rows`` is ``(event, value, start, length)``, sorted by code; code ``c`` (field
    ``FIELDS[c - 1]``) has rows ``bounds[c]`` to ``bounds[c + 1]``. ``texts`` are the decoded
    texts of the TEXT/NAMED rows in row order; ``decoded`` the values of the RAW rows that are
    not payloads, by code; ``views`` the msgspec views of the slow types' events, by type code
    (aligned with the events of that type, in order). ``times`` are datetime64 values where
    Arrow parsed every time, else the texts (None where absent) for the usual parser.
    """

    data: bytes
    starts: np.ndarray
    ends: np.ndarray
    ids: np.ndarray
    types: np.ndarray
    rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    bounds: np.ndarray
    texts: np.ndarray
    decoded: dict[int, list[Any]]
    views: dict[int, list[Any]]
    times: Any
    top: tuple[bytes | None, bytes | None, bytes | None]


def scan_document(data: bytes) -> ScannedHistory | None:
    """The scanned events of a ``{"events": [...]}`` document; ``None`` where the scanner is
    absent, the document is smaller than :data:`SCAN_FROM_BYTES`, or it declines the document
    (the caller then decodes it with msgspec)."""
    if _compiled is None or SCAN_FROM_BYTES is None or len(data) < SCAN_FROM_BYTES:
        return None
    try:
        found = _compiled.scan(data, *_tables(), SHAPES.tobytes())
    except ValueError:
        return None
    events, rows, bounds, text, offsets, times, time_offsets, top = found
    per_event = np.frombuffer(events, dtype=np.int64).reshape(6, -1)
    starts, ends, ids, types, attr_from, attr_to = per_event
    row_arrays = tuple(np.frombuffer(rows, dtype=np.int64).reshape(4, -1))
    bounds_array = np.frombuffer(bounds, dtype=np.int64)
    try:
        texts = packed_strings(text, np.frombuffer(offsets, dtype=np.int64))
        decoded = _decode_raw(data, row_arrays, bounds_array)
        views = _views(data, types, attr_from, attr_to)
    except (msgspec.MsgspecError, WireError):
        return None
    spans = np.frombuffer(top, dtype=np.int64).tolist()
    document_facts = tuple(
        data[spans[2 * k] : spans[2 * k + 1]] if spans[2 * k] >= 0 else None for k in range(3)
    )
    return ScannedHistory(
        data, starts, ends, ids, types, row_arrays, bounds_array,  # type: ignore[arg-type]
        texts, decoded, views, _times(times, np.frombuffer(time_offsets, dtype=np.int64)),
        document_facts,  # type: ignore[arg-type]
    )  # fmt: skip


def _decode_raw(
    data: bytes, rows: tuple[np.ndarray, ...], bounds: np.ndarray
) -> dict[int, list[Any]]:
    """The RAW rows' values (payloads apart), decoded as the typed path would: a value of an
    unexpected type raises ``MsgspecError`` (the document is then decoded the old way)."""
    _, _, starts, lengths = rows
    decoded = {}
    for field, name in enumerate(FIELDS):
        code = field + 1
        if SHAPES[code] != RAW or name in PAYLOADS or bounds[code] == bounds[code + 1]:
            continue
        decoder = _decoder(name)
        at = slice(int(bounds[code]), int(bounds[code + 1]))
        decoded[code] = [
            decoder.decode(data[s : s + n])
            for s, n in zip(starts[at].tolist(), lengths[at].tolist(), strict=True)
        ]
    return decoded


def _views(
    data: bytes, types: np.ndarray, attr_from: np.ndarray, attr_to: np.ndarray
) -> dict[int, list[Any]]:
    views = {}
    for code in np.unique(types).tolist():
        if not slow_type(code):
            continue
        decoder = _view_decoder(KEYS[code])
        at = np.flatnonzero(types == code)
        views[code] = [
            decoder.decode(data[s:e]) if s >= 0 else None
            for s, e in zip(attr_from[at].tolist(), attr_to[at].tolist(), strict=True)
        ]
    return views


# Steadier than Arrow's default pool here (see events._times).
_POOL = pa.system_memory_pool()


def _times(text: bytearray, offsets: np.ndarray) -> Any:
    """Event times as datetime64[ns] where Arrow's parser takes every one (as
    ``events._times`` would), else the texts (None where absent) for the usual path."""
    count = len(offsets) - 1
    present = np.diff(offsets) > 0
    validity = pa.py_buffer(np.packbits(present, bitorder="little"))
    array = pa.LargeStringArray.from_buffers(
        count, pa.py_buffer(offsets), pa.py_buffer(text), validity
    )
    try:
        parsed = pc.cast(array, pa.timestamp("ns", "UTC"), memory_pool=_POOL)
        return parsed.to_numpy(zero_copy_only=False).astype("datetime64[ns]", copy=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return array.to_pylist()
