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
from toolkit.histories.payload_cells import (
    DATA_ALWAYS,
    framed,
    json_payload_size,
    measure_payload_cell,
    payload_json,
    payload_texts,
    payloads_field_size,
    varint_size,
)
from toolkit.histories.proto_size import NotCanonical, message_size
from toolkit.histories.write import (
    event_message,
    is_decoded_payload,
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

EVENT_SIZE_COLUMNS = [
    "source", "history", "run_id", "event_id", "event_type", "workflow_task", "bytes",
    "cumulative_bytes", "server_bytes", "payload_bytes", "exact",
]  # fmt: skip
PAYLOAD_SIZE_COLUMNS = [
    "source", "history", "run_id", "event_id", "event_type", "activity_type", "field", "kind",
    "index", "bytes", "data_bytes", "field_bytes", "encoding", "known", "exact", "note",
]  # fmt: skip


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
            known = bool(payload.data) or encoding not in DATA_ALWAYS
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
