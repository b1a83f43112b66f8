"""Sizes of events and payloads, counted the way the Temporal server counts them.

The server's history size (``historySizeBytes`` of ``DescribeWorkflowExecution``, the number
``WorkflowTaskStarted`` events record, what ``limit.historySize.error`` is compared with) is the
protobuf size of the persisted event batches, ``History{events: [...]}``: each event costs its
encoded size plus the bytes that frame it inside the batch (a one-byte tag and its length as a
varint). The payload limit (``limit.blobSize.error``) is compared with the encoded size of one
``Payloads`` field: an activity's input, a result, failure details. (temporalio/temporal:
``common/persistence/serialization/serializer.go`` ``SerializeEvents``, ``common/util.go``
``CheckEventBlobSizeLimit``.)

Every dialect the loader reads is measured: a binary history by its own messages; a JSON history
by the ``HistoryEvent`` each event parses into (:func:`toolkit.histories.write.event_message`),
which encodes to the bytes the server stored, except where an exporter decoded the payloads (a UI
"decoded" download): those are re-encoded as compact ``json/plain`` and marked not exact.

Examples
--------
>>> sizes = tk.event_sizes(events)                       # doctest: +SKIP
>>> sizes.groupby("event_type")["bytes"].sum().nlargest(3)  # doctest: +SKIP
>>> tk.payload_sizes(events).nlargest(5, "bytes")         # doctest: +SKIP
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import msgspec
import pandas as pd
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from temporalio.api.history.v1 import HistoryEvent

from toolkit.gc_pause import paused_gc
from toolkit.histories.columns.lazy import LazyProto
from toolkit.histories.proto_size import NotCanonical, message_size
from toolkit.histories.write import (
    event_message,
    is_b64_text,
    is_decoded_payload,
    normalized_payload,
)
from toolkit.replay.commands import events_frame

__all__ = [
    "EVENT_SIZE_COLUMNS",
    "PAYLOAD_SIZE_COLUMNS",
    "event_sizes",
    "framed",
    "json_payload_size",
    "measure_payload_cell",
    "payload_json",
    "payload_sizes",
    "payload_texts",
    "payloads_field_size",
    "varint_size",
]

_PAYLOAD = "temporal.api.common.v1.Payload"
_PAYLOADS = "temporal.api.common.v1.Payloads"
#: Encodings whose payloads always carry data (``null`` is the four bytes ``null``).
_DATA_ALWAYS = frozenset({"json/plain", "json/protobuf", "binary/protobuf", "binary/encrypted"})

EVENT_SIZE_COLUMNS = [
    "source", "history", "run_id", "event_id", "event_type", "workflow_task", "bytes",
    "cumulative_bytes", "server_bytes", "payload_bytes", "exact",
]  # fmt: skip
PAYLOAD_SIZE_COLUMNS = [
    "source", "history", "run_id", "event_id", "event_type", "activity_type", "field", "kind",
    "index", "bytes", "data_bytes", "field_bytes", "encoding", "known", "exact", "note",
]  # fmt: skip


def varint_size(value: int) -> int:
    """Bytes a protobuf varint of ``value`` (>= 0) takes."""
    return max(1, (int(value).bit_length() + 6) // 7)


def framed(size: int) -> int:
    """Bytes a length-delimited field of ``size`` bytes with a one-byte tag takes (an event in a
    ``History`` batch, a payload in ``Payloads``)."""
    return 1 + varint_size(size) + size


def _rows(events: pd.DataFrame) -> Iterator[tuple[Mapping[str, Any], Message, bool]]:
    """``(row, HistoryEvent, exact)`` per event, in frame order."""
    frame = events_frame(events)
    for row in frame.to_dict("records"):
        extra = row.get("extra")
        if isinstance(extra, LazyProto):  # read from protobuf: the message as stored
            yield row, extra.message, True
            continue
        yield row, event_message(row), not _has_decoded_payload(row.get("attributes"))


def _event_measures(events: pd.DataFrame) -> Iterator[tuple[int, int | None, int, bool]]:
    """``(encoded size, server's recorded size, payload bytes, exact)`` per event, in frame order.

    A JSON event in canonical proto3 JSON is measured from its raw JSON
    (:func:`toolkit.histories.proto_size.message_size`); any other is parsed into its message.
    """
    for position, extra in enumerate(events["extra"].tolist()):
        if isinstance(extra, LazyProto):  # read from protobuf: the message as stored
            message, exact = extra.message, True
        else:
            raw = getattr(extra, "raw", None)
            measured = _json_event_measures(bytes(raw)) if raw is not None else None
            if measured is not None:
                yield measured
                continue
            row = events.iloc[position].to_dict()
            message = event_message(row)
            exact = not _has_decoded_payload(row.get("attributes"))
        payload = sum(p.ByteSize() for _, _, p, _ in _walk(message, ""))
        yield message.ByteSize(), _server_bytes(message), payload, exact


def _json_event_measures(raw: bytes) -> tuple[int, int | None, int, bool] | None:
    """Measures of one canonical proto-JSON event, or None where it is not canonical."""
    event = msgspec.json.decode(raw)
    payloads: list[int] = []
    try:
        size = message_size(event, HistoryEvent.DESCRIPTOR, payloads)
    except NotCanonical:
        return None
    started = event.get("workflowTaskStartedEventAttributes") or {}
    server = started.get("historySizeBytes")
    return size, (int(server) or None) if server is not None else None, sum(payloads), True


def _has_decoded_payload(value: Any) -> bool:
    """Whether any payload inside a JSON event's attributes was written decoded."""
    if isinstance(value, Mapping):
        if "metadata" in value and ("data" in value or len(value) == 1):
            return is_decoded_payload(value)
        return any(_has_decoded_payload(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_decoded_payload(v) for v in value)
    return False


def event_sizes(events: Any) -> pd.DataFrame:
    """One row per event: its size as the server counts it toward ``historySizeBytes``.

    Parameters
    ----------
    events
        An events frame (from :func:`toolkit.read_history` / :func:`toolkit.read_histories`,
        any number of runs) or anything ``read_history`` takes.

    Returns
    -------
    pandas.DataFrame
        Events in = rows out, in frame order:

        ================  =======  =======================================================
        column            dtype    meaning
        ================  =======  =======================================================
        source, history   object,  the run (a file and the history inside it)
                          int64
        run_id            object   the run's id
        event_id          int64    the event
        event_type        object   as in the events frame
        workflow_task     Int64    as in the events frame
        bytes             int64    the event's encoded size framed in a ``History``
        cumulative_bytes  int64    the run's history size once this event is stored
        server_bytes      Int64    the size the server recorded before this event, where
                                   the event says it (``WorkflowTaskStarted``
                                   ``historySizeBytes``); equal to ``cumulative_bytes -
                                   bytes`` when the history is complete and unaltered
        payload_bytes     int64    the encoded size of the payloads inside the event
        exact             bool     False where payloads were decoded by an exporter and are
                                   measured re-encoded as ``json/plain``
        ================  =======  =======================================================
    """
    frame = events_frame(events)
    with paused_gc():  # a decoded event per event, none in a cycle
        measures = list(_event_measures(frame))
    out = pd.DataFrame(
        {
            "source": frame["source"].to_numpy() if "source" in frame else None,
            "history": frame["history"].to_numpy() if "history" in frame else 0,
            "run_id": frame["run_id"].to_numpy() if "run_id" in frame else None,
            "event_id": frame["event_id"].to_numpy(),
            "event_type": frame["event_type"].to_numpy(),
            "workflow_task": frame["workflow_task"].array if "workflow_task" in frame else None,
            "bytes": [framed(m[0]) for m in measures],
            "server_bytes": [m[1] for m in measures],
            "payload_bytes": [m[2] for m in measures],
            "exact": [m[3] for m in measures],
        }
    )
    out["history"] = out["history"].astype("int64")
    out["event_id"] = out["event_id"].astype("int64")
    out["workflow_task"] = out["workflow_task"].astype("Int64")
    out["bytes"] = out["bytes"].astype("int64")
    out["payload_bytes"] = out["payload_bytes"].astype("int64")
    out["server_bytes"] = out["server_bytes"].astype("Int64")
    out["exact"] = out["exact"].astype(bool)
    keys = [out["source"].fillna(""), out["history"]]
    out["cumulative_bytes"] = out.groupby(keys, sort=False)["bytes"].cumsum().astype("int64")
    return out[EVENT_SIZE_COLUMNS]


def _server_bytes(message: Message) -> int | None:
    if message.HasField("workflow_task_started_event_attributes"):
        started = message.workflow_task_started_event_attributes
        if started.history_size_bytes:
            return int(started.history_size_bytes)
    return None


def payload_sizes(events: Any) -> pd.DataFrame:
    """One row per payload held by the events, with its size as the server counts it.

    Every ``Payload`` at any depth of an event is listed: inputs, results, failure details
    (and their causes), heartbeat and marker details, signal and update arguments, headers,
    memos and search attributes.

    Parameters
    ----------
    events
        An events frame (any number of runs) or anything ``read_history`` takes.

    Returns
    -------
    pandas.DataFrame
        =============  =======  ===========================================================
        column         dtype    meaning
        =============  =======  ===========================================================
        source,        object,  the run
        history        int64
        run_id         object   the run's id
        event_id       int64    the event holding the payload
        event_type     object   its type
        activity_type  object   for activity events (from the events frame)
        field          object   where it sits in the event's attributes, in proto-JSON names:
                                ``input``, ``result``, ``failure.cause.applicationFailureInfo
                                .details``, ``header.fields[traceparent]``, ...
        kind           object   ``input``, ``result``, ``failure``, ``details``, ``header``,
                                ``memo``, ``search_attributes``, ``user_metadata`` or
                                ``other``
        index          int64    position inside its ``Payloads`` (0 for a single payload)
        bytes          int64    the payload's encoded size (metadata and data)
        data_bytes     int64    the size of its data alone
        field_bytes    int64    the encoded size of the whole ``Payloads`` (or the single
                                payload) it belongs to: what the payload limit compares
        encoding       object   the ``encoding`` metadata (``json/plain``,
                                ``binary/encrypted``, ...), None if absent
        known          bool     False where the data is missing although the encoding always
                                has some (payloads stripped by an exporter)
        exact          bool     False where an exporter decoded the payload and it is
                                measured re-encoded as ``json/plain``
        note           object   why a size is unknown or inexact, else None
        =============  =======  ===========================================================
    """
    records = []
    for row, message, exact in _rows(events):
        for path, index, payload, field_bytes in _walk(message, ""):
            head, _, rest = path.partition(".")
            path = rest if head.endswith("EventAttributes") and rest else path
            encoding = payload.metadata.get("encoding", b"").decode("utf-8", "replace") or None
            known = bool(payload.data) or encoding not in _DATA_ALWAYS
            note = None
            if not known:
                note = f"{encoding} payload without data: stripped by the exporter"
            elif not exact:
                note = "decoded by the exporter; measured re-encoded as json/plain"
            records.append((row.get("source"), row.get("history", 0), row.get("run_id"),
                            row["event_id"], row["event_type"], row.get("activity_type"),
                            path, _kind(path), index, payload.ByteSize(), len(payload.data),
                            field_bytes, encoding, known, exact, note))  # fmt: skip
    out = pd.DataFrame.from_records(records, columns=PAYLOAD_SIZE_COLUMNS)
    for column in ("history", "event_id", "index", "bytes", "data_bytes", "field_bytes"):
        out[column] = out[column].astype("int64")
    for column in ("known", "exact"):
        out[column] = out[column].astype(bool)
    return out


def _kind(path: str) -> str:
    head = path.split(".", 1)[0].split("[", 1)[0]
    if "failure" in path.lower():
        return "failure"
    if head == "header":
        return "header"
    if head == "memo":
        return "memo"
    if head == "searchAttributes":
        return "search_attributes"
    if head == "userMetadata":
        return "user_metadata"
    leaf = path.rsplit(".", 1)[-1].split("[", 1)[0]
    if leaf in ("input", "args"):
        return "input"
    if leaf in ("result", "lastCompletionResult", "success"):
        return "result"
    if "details" in leaf.lower():
        return "details"
    return "other"


@cache
def _payload_fields(descriptor: Descriptor) -> tuple[tuple[FieldDescriptor, str], ...]:
    """Fields of ``descriptor`` that hold payloads at any depth, with how: ``payload``,
    ``payloads``, ``map`` (a map whose values do) or ``message`` (a message that does)."""
    found = []
    for field in descriptor.fields:
        message = field.message_type
        if message is None:
            continue
        if message.full_name == _PAYLOAD:
            found.append((field, "payload"))
        elif message.full_name == _PAYLOADS:
            found.append((field, "payloads"))
        elif message.GetOptions().map_entry:
            value = message.fields_by_name["value"].message_type
            if value is not None and _holds_payloads(value, frozenset()):
                found.append((field, "map"))
        elif _holds_payloads(message, frozenset()):
            found.append((field, "message"))
    return tuple(found)


def _holds_payloads(descriptor: Descriptor, seen: frozenset[str]) -> bool:
    if descriptor.full_name in (_PAYLOAD, _PAYLOADS):
        return True
    if descriptor.full_name in seen or descriptor.full_name.startswith("google.protobuf."):
        return False
    inner = seen | {descriptor.full_name}
    return any(
        field.message_type is not None and _holds_payloads(field.message_type, inner)
        for field in descriptor.fields
    )


def _walk(message: Message, path: str) -> Iterator[tuple[str, int, Message, int]]:
    """``(path, index, Payload, size of its Payloads)`` for every payload inside ``message``."""
    for field, how in _payload_fields(message.DESCRIPTOR):
        name = field.json_name
        where = f"{path}.{name}" if path else name
        if how == "map":
            entries = getattr(message, field.name)
            for key in sorted(entries):
                yield from _walk_value(entries[key], f"{where}[{key}]", field)
            continue
        if field.is_repeated:
            for i, item in enumerate(getattr(message, field.name)):
                yield from _walk_value(item, f"{where}[{i}]", field, how)
            continue
        if not message.HasField(field.name):
            continue
        yield from _walk_value(getattr(message, field.name), where, field, how)


def _walk_value(
    value: Message, where: str, field: FieldDescriptor, how: str | None = None
) -> Iterator[tuple[str, int, Message, int]]:
    if how is None:  # a map value: what its message type is
        value_type = field.message_type.fields_by_name["value"].message_type
        how = {_PAYLOAD: "payload", _PAYLOADS: "payloads"}.get(value_type.full_name, "message")
    if how == "payload":
        yield where, 0, value, value.ByteSize()
    elif how == "payloads":
        total = value.ByteSize()
        for i, payload in enumerate(value.payloads):
            yield where, i, payload, total
    else:
        yield from _walk(value, where)


def payloads_field_size(cell: Any) -> tuple[int, bool] | None:
    """The encoded size of one payload cell of the events frame (``input``, ``result``,
    ``details``): a ``Payloads`` as the payload limit compares it (for marker details, a map of
    them: their sum), and whether it is exact (not where an exporter decoded a payload or
    stripped its data). None for an empty cell.

    Works on the raw proto-JSON or the message the cell keeps: no payload's data is decoded.
    """
    return measure_payload_cell(cell)[0]


def payload_json(cell: Any) -> tuple[Any, bool] | None:
    """The data of a payload cell holding one ``json/plain`` payload (``binary/null`` ones
    aside), undecoded, and whether it is base64 text: its base64 text (a buffer, quotes left
    out) from a JSON history, its bytes from a binary one; None for any other cell (several
    JSON payloads, encrypted, protobuf, decoded by an exporter)."""
    return measure_payload_cell(cell)[1]


def measure_payload_cell(cell: Any) -> tuple[tuple[int, bool] | None, tuple[Any, bool] | None]:
    """:func:`payloads_field_size` and :func:`payload_json` of a cell, from one decoding of its
    raw text (the slow part of both, for a cell of megabytes)."""
    raw = _cell_raw(cell)
    if raw is None:
        return None, None
    if isinstance(raw, Message):
        items = [(p.metadata.get("encoding", b""), p.data) for p in getattr(raw, "payloads", [])]
        stripped = any(not data and e.decode("utf-8", "replace") in _DATA_ALWAYS
                       for e, data in items)  # fmt: skip
        found = [data for e, data in items if e == b"json/plain"]
        others = [e for e, _ in items if e not in (b"json/plain", b"binary/null")]
        one = (found[0], False) if len(found) == 1 and not others else None
        return (int(raw.ByteSize()), not stripped), one
    if not isinstance(raw, (bytes, bytearray, memoryview, msgspec.Raw)):  # a map of Payloads
        return (sum(int(v.ByteSize()) for v in raw.values()), True), None
    found = _one_payload(raw)
    if found is not None:
        return found
    try:  # the common shape, in slim structs; data stays raw text (its length is enough)
        typed = _sizes_decoder.decode(raw)
    except msgspec.ValidationError:
        typed = None
    if typed is not None and typed.payloads is not None:
        size = _typed_size(typed.payloads)
        if size is not None:
            return size, _typed_json(typed.payloads)
    value = msgspec.json.decode(bytes(raw))
    if isinstance(value, Mapping) and ("metadata" in value or "data" in value):
        return json_payload_size(value), None  # a single Payload (a Nexus operation's input)
    if isinstance(value, Mapping) and "payloads" not in value and all(
        isinstance(v, Mapping) for v in value.values()
    ):  # marker details: name -> Payloads
        sizes = [_json_payloads_size(v) for v in value.values()]
        return (sum(size for size, _ in sizes), all(exact for _, exact in sizes)), None
    return _json_payloads_size(value), None


#: The shape nearly every payload cell has: one payload whose only metadata is its encoding.
_WS = rb"[ \t\n\r]*"  # JSON's whitespace (not \s: it takes \f and \v, which JSON does not)


def _tokens(*parts: bytes) -> bytes:
    return _WS.join(parts)


_ONE_HEAD = re.compile(_tokens(rb"\{", rb'"payloads"', rb":", rb"\[", rb"\{", rb'"metadata"', rb":",
                               rb"\{", rb'"encoding"', rb":", rb'"([A-Za-z0-9+/]*={0,2})"', rb"\}",
                               rb",", rb'"data"', rb":", rb'"'))  # fmt: skip
_ONE_TAIL = re.compile(_tokens(rb'"', rb"\}", rb"\]", rb"\}", rb"\Z"))


def _one_payload(raw: Any) -> tuple[tuple[int, bool], tuple[Any, bool] | None] | None:
    """:func:`measure_payload_cell` of a cell of one payload with only an ``encoding``, read off
    its text without decoding it (its data string's length is all its size needs); None for any
    other shape, which is decoded. Gives what the slim decoding gives, to the byte."""
    text = bytes(raw)  # one copy, searched in C (a buffer has no find)
    head = _ONE_HEAD.match(text)
    if head is None:
        return None
    tail = _ONE_TAIL.search(text, max(head.end(), len(text) - 24))
    if tail is None or text.find(b'"', head.end(), tail.start()) >= 0:
        return None  # not one string up to the end: another shape
    encoding = head.group(1).decode("ascii")
    metadata = _metadata_size((("encoding", encoding),))
    if metadata is None:
        return None
    start, end = head.end(), tail.start()
    padded = end
    while padded > start and text[padded - 1] == 0x3D:  # "=" padding
        padded -= 1
    data = (padded - start) * 3 // 4
    known = bool(data) or encoding not in _ALWAYS_DATA_B64
    size = framed(metadata + (framed(data) if data else 0))
    if encoding != _JSON_B64:
        return (size, known), None
    return (size, known), (memoryview(raw)[start:end], True)  # a string is never absent data


def _typed_size(payloads: list[_PayloadSizeView]) -> tuple[int, bool] | None:
    """Encoded size of slim-decoded payloads and whether exact; None where an exporter decoded
    one (it is measured the general way)."""
    total, known = 0, True
    for payload in payloads:
        metadata = _metadata_size(tuple(payload.metadata.items()))
        data = _raw_b64_size(payload.data)
        if metadata is None or data is None:
            return None
        if not data and payload.metadata.get("encoding") in _ALWAYS_DATA_B64:
            known = False  # stripped by the exporter: the server stored more
        total += framed(metadata + (framed(data) if data else 0))
    return total, known


def _typed_json(payloads: list[_PayloadSizeView]) -> tuple[memoryview, bool] | None:
    """The base64 text of the one ``json/plain`` payload among slim-decoded payloads
    (``binary/null`` ones aside), as a buffer without its quotes; None otherwise."""
    found = None
    for payload in payloads:
        encoding = payload.metadata.get("encoding")
        data = memoryview(payload.data)
        absent = len(data) == 0 or data == b"null"
        if encoding == _NULL_B64 and (absent or data == b'""'):
            continue
        if encoding != _JSON_B64 or absent or found is not None:
            return None
        found = data[1:-1]  # the sizes' decoding has checked it is a plain string
    return None if found is None else (found, True)


def _json_payloads_size(value: Any) -> tuple[int, bool]:
    """Encoded size of a proto-JSON ``Payloads`` (``{"payloads": [...]}``) and whether exact."""
    payloads = value.get("payloads") if isinstance(value, Mapping) else value
    if not isinstance(payloads, list):
        return 0, True
    total, exact = 0, True
    for payload in payloads:
        size, payload_exact = json_payload_size(payload)
        total += framed(size)
        exact = exact and payload_exact
    return total, exact


def json_payload_size(payload: Any) -> tuple[int, bool]:
    """Encoded size of one proto-JSON ``Payload`` (metadata values and data in base64) and
    whether it is exact: a payload an exporter decoded is measured re-encoded as compact
    ``json/plain``, as :func:`toolkit.histories.write.event_message` writes it."""
    exact = True
    if not isinstance(payload, Mapping) or is_decoded_payload(payload, check_data=False):
        payload, exact = normalized_payload(payload), False
    size = 0
    for key, value in (payload.get("metadata") or {}).items():
        entry = framed(len(key.encode("utf-8"))) + framed(_b64_size(value))
        size += framed(entry)
    data = _b64_size(payload.get("data"))
    if data:
        size += framed(data)
    return size, exact


def payload_texts(cell: Any) -> list[bytes] | None:
    """The data of each ``json/plain`` payload of a payload cell, as bytes (``binary/null``
    ones, which hold nothing, are left out); None where another payload holds data that is not
    JSON (encrypted, protobuf, decoded by an exporter) or where nothing is left."""
    raw = _cell_raw(cell)
    if raw is None:
        return None
    if isinstance(raw, Message):
        items = [(p.metadata.get("encoding", b""), p.data) for p in getattr(raw, "payloads", [])]
        if any(e not in (b"json/plain", b"binary/null") for e, _ in items):
            return None
        return [data for e, data in items if e == b"json/plain"] or None
    try:
        typed = _payloads_decoder.decode(raw)
    except msgspec.ValidationError:
        return None
    texts = []
    for payload in typed.payloads or []:
        encoding = payload.metadata.get("encoding")
        if encoding == _NULL_B64 and not payload.data:
            continue
        if encoding != _JSON_B64 or payload.data is None:
            return None
        try:
            texts.append(binascii.a2b_base64(payload.data, strict_mode=True))
        except binascii.Error:
            return None
    return texts or None


_JSON_B64 = "anNvbi9wbGFpbg=="  # base64 of json/plain, as proto-JSON writes metadata
#: The base64 metadata of the encodings whose payloads always hold data.
_ALWAYS_DATA_B64 = frozenset(binascii.b2a_base64(e.encode(), newline=False).decode()
                             for e in _DATA_ALWAYS)
_NULL_B64 = "YmluYXJ5L251bGw="  # binary/null


def _cell_raw(cell: Any) -> Any:
    """What a payload cell decodes from: its raw proto-JSON, or its protobuf message (a cell
    of a binary history looks its field up in the parsed events)."""
    raw = getattr(cell, "_raw", None)
    if raw is None and getattr(cell, "_events", None) is not None:
        message = getattr(cell._events[cell._index], cell._attributes)
        raw = getattr(message, cell._field)
    return raw


class _PayloadView(msgspec.Struct, gc=False):
    metadata: dict[str, str] = {}
    data: str | None = None


class _PayloadsView(msgspec.Struct, gc=False):
    payloads: list[_PayloadView] | None = None


_payloads_decoder = msgspec.json.Decoder(_PayloadsView)


class _PayloadSizeView(msgspec.Struct, gc=False):
    metadata: dict[str, str] = {}
    data: msgspec.Raw = msgspec.Raw(b"")  # absent: no data


class _PayloadsSizeView(msgspec.Struct, gc=False):
    payloads: list[_PayloadSizeView] | None = None


_sizes_decoder = msgspec.json.Decoder(_PayloadsSizeView)


def _raw_b64_size(raw: msgspec.Raw) -> int | None:
    """Decoded size of a base64 JSON string given as its raw text (quotes included), or None
    where it is not a plain string (a decoded value, escapes)."""
    text = memoryview(raw)
    if len(text) == 0 or bytes(text) == b"null":
        return 0
    if len(text) < 2 or text[0] != 0x22 or text[-1] != 0x22:
        return None
    end = len(text) - 1
    while end > 1 and text[end - 1] == 0x3D:  # "=" padding
        end -= 1
    return (end - 1) * 3 // 4


@cache
def _metadata_size(items: tuple[tuple[str, str], ...]) -> int | None:
    """Encoded size of a payload's metadata entries (the same few recur in every payload), or
    None where a value is not base64 (an exporter decoded the payload)."""
    if any(key == "encodingDecoded" for key, _ in items):
        return None
    size = 0
    for key, value in items:
        if not is_b64_text(value):
            return None
        size += framed(framed(len(key.encode("utf-8"))) + framed(_b64_size(value)))
    return size


def _b64_size(text: Any) -> int:
    """Decoded size of base64 ``text`` (a str or a buffer, padded or not), without decoding
    it; 0 for anything else."""
    if isinstance(text, str):
        return len(text.rstrip("=")) * 3 // 4
    if not isinstance(text, bytes | bytearray | memoryview):
        return 0
    end = len(text)
    while end and text[end - 1] == 0x3D:  # "=" padding
        end -= 1
    return end * 3 // 4
