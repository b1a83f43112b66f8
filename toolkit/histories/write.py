"""Write an events frame back out as proto-JSON (or a protobuf ``History``) that replays.

Whatever dialect a history was read from, the writer emits canonical proto3 JSON of the installed
API: ``EVENT_TYPE_*`` and other enums in their proto names, int64 as strings, RFC 3339 times,
payloads base64-encoded (UI "decoded" payloads are re-encoded as ``json/plain``). Fields the
installed API does not know are left out of the written file (the frame keeps them in
``attributes``/``extra``), so temporalio's ``Replayer`` accepts the result; replaying it behaves
exactly like replaying the original.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from temporalio.api.history.v1 import History, HistoryEvent

from toolkit.errors import HistoryFormatError
from toolkit.histories import enums
from toolkit.histories.columns.lazy import LazyProto
from toolkit.histories.payloads import decode_payload
from toolkit.histories.proto_json import message_to_dict

__all__ = ["event_message", "is_b64_text", "is_decoded_payload", "normalized_payload", "to_history",
           "to_workflow_history", "write_history"]

# Cadence-era names of workflow-task events and their attributes.
_RENAMED_TYPES = {
    "DecisionTaskScheduled": "WorkflowTaskScheduled",
    "DecisionTaskStarted": "WorkflowTaskStarted",
    "DecisionTaskCompleted": "WorkflowTaskCompleted",
    "DecisionTaskFailed": "WorkflowTaskFailed",
    "DecisionTaskTimedOut": "WorkflowTaskTimedOut",
}
_DROP = object()  # a value the installed schema cannot hold
_RENAMED_FIELDS = {"decisionTaskCompletedEventId": "workflowTaskCompletedEventId"}


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def is_b64_text(value: Any) -> bool:
    """Whether ``value`` is base64 text (what proto-JSON writes bytes as)."""
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value, validate=True)
    except ValueError:
        return False
    return True


def is_decoded_payload(payload: Mapping[str, Any], *, check_data: bool = True) -> bool:
    """Whether a proto-JSON payload was written decoded (a UI "decoded" download, a bare
    value): its bytes are then re-encoded as ``json/plain``, not the ones the server stored.

    ``check_data=False`` looks at the metadata only (exporters that decode payloads decode
    their metadata too) and at the data's type, never validating a large data string."""
    metadata = payload.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        return True
    data = payload.get("data")
    if "encodingDecoded" in metadata or not all(is_b64_text(v) for v in metadata.values()):
        return True
    if not check_data:
        return not (data is None or isinstance(data, str))
    return not (data is None or is_b64_text(data))


def normalized_payload(payload: Any) -> dict[str, Any]:
    """A proto-JSON payload as the writer writes it: base64 metadata and data; a decoded one (or
    a bare value a UI put in place of a payload) re-encoded as compact ``json/plain``."""
    if not isinstance(payload, Mapping):
        return {"metadata": {"encoding": _b64(b"json/plain")}, "data": _b64(orjson.dumps(payload))}
    return _normalize_payload(payload)


def _normalize_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    metadata = payload.get("metadata") or {}
    data = payload.get("data")
    if not is_decoded_payload(payload):
        return {"metadata": dict(metadata), **({"data": data} if data is not None else {})}
    value = decode_payload(payload)
    return {
        "metadata": {"encoding": _b64(b"json/plain")},
        "data": _b64(orjson.dumps(value)),
    }


def _normalize(value: Any, descriptor: Descriptor) -> Any:
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        key = _RENAMED_FIELDS.get(key, key)
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None or item is None:
            continue  # unknown to the installed API, or an emit-defaults null
        normalized = _normalize_field(item, field)
        if normalized is not _DROP:
            out[field.json_name] = normalized
    return out


def _normalize_field(item: Any, field: FieldDescriptor) -> Any:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value_field = field.message_type.fields_by_name["value"]
        if not isinstance(item, Mapping):
            return _DROP  # e.g. Cadence-era marker details written as one base64 blob
        # Entries of a shape the schema cannot hold (old Java marker details wrote a bare
        # Payloads here) are left out of the written file.
        return {
            k: _normalize_field(v, value_field)
            for k, v in item.items()
            if v is not None and (value_field.message_type is None or isinstance(v, Mapping))
        }
    if field.is_repeated and isinstance(item, list):
        return [_normalize_single(x, field) for x in item if x is not None]
    return _normalize_single(item, field)


def _normalize_single(item: Any, field: FieldDescriptor) -> Any:
    if field.enum_type is not None:
        return enums.canonical_enum(field.enum_type, item)
    message = field.message_type
    if message is None:
        return item
    if message.full_name == "temporal.api.common.v1.Payload":
        if isinstance(item, Mapping):
            return _normalize_payload(item)
        # A bare value a UI put in place of a payload: encode it as the json/plain it shows.
        return {"metadata": {"encoding": _b64(b"json/plain")}, "data": _b64(orjson.dumps(item))}
    if message.full_name.startswith("google.protobuf."):
        return item  # Timestamp, Duration, Struct...: their JSON forms parse as they are
    return _normalize(item, message)


def _event_time(value: Any) -> str | None:
    if value is None or pd.isna(value):
        return None
    stamp = pd.Timestamp(value)
    return stamp.isoformat().replace("+00:00", "Z")


def event_message(row: Mapping[str, Any]) -> HistoryEvent:
    """One row of an events frame as the ``HistoryEvent`` message it records (a history read
    from protobuf gives its own message back, untouched; any JSON dialect is normalized first).
    """
    extra = row["extra"]
    if isinstance(extra, LazyProto):
        return extra.message  # read from protobuf: the message itself, untouched
    event_type = _RENAMED_TYPES.get(row["event_type"], row["event_type"])
    event: dict[str, Any] = {"eventId": str(row["event_id"])}
    time = _event_time(row["event_time"])
    if time:
        event["eventTime"] = time
    if event_type in enums.EVENT_TYPES:
        event["eventType"] = enums.screaming_event_type(event_type)
        key = enums.attributes_key(event_type)
        field = HistoryEvent.DESCRIPTOR.fields_by_camelcase_name[key]
        event[key] = _normalize(dict(row["attributes"] or {}), field.message_type)
    envelope = _normalize(
        {k: v for k, v in dict(extra or {}).items() if k != "timestamp"}, HistoryEvent.DESCRIPTOR
    )
    event.update({k: v for k, v in envelope.items() if k not in event})
    try:
        return json_format.ParseDict(event, HistoryEvent(), ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise HistoryFormatError(
            str(row.get("source", "<events>")),
            f"event cannot be written as proto-JSON ({exc})",
            position=f"event_id {row['event_id']}",
        ) from None


def _one_history(events: pd.DataFrame, history: int | None) -> pd.DataFrame:
    if history is not None:
        events = events[events["history"] == history]
    keys = events[["source", "history"]].drop_duplicates()
    if len(keys) > 1:
        raise HistoryFormatError(
            "<events>",
            f"the frame holds {len(keys)} histories",
            expected="one history: pass history=<n> or filter the frame first",
        )
    if events.empty:
        raise HistoryFormatError("<events>", "no events to write", expected="a non-empty frame")
    return events.sort_values("event_id")


def to_history(events: pd.DataFrame, *, history: int | None = None) -> History:
    """Build a ``temporalio.api.history.v1.History`` from an events frame (one history)."""
    frame = _one_history(events, history)
    return History(events=[event_message(row) for row in frame.to_dict("records")])


def to_workflow_history(
    events: pd.DataFrame, *, history: int | None = None, workflow_id: str | None = None
) -> Any:
    """Build a ``temporalio.client.WorkflowHistory`` (what ``Replayer.replay_workflow`` takes)."""
    from temporalio.client import WorkflowHistory

    frame = _one_history(events, history)
    known = frame["workflow_id"].dropna()
    wid = workflow_id or (str(known.iloc[0]) if len(known) else "replayed-workflow")
    return WorkflowHistory(workflow_id=wid, events=list(to_history(frame).events))


def write_history(
    events: pd.DataFrame,
    path: str | Path | None = None,
    *,
    history: int | None = None,
    indent: bool = True,
) -> str:
    """Write one history of an events frame as proto-JSON ``{"events": [...]}``.

    Parameters
    ----------
    events
        An events frame (from :func:`toolkit.read_history`), possibly filtered to one history.
    path
        Where to write; ``None`` only returns the text.
    history
        Which history of a multi-history frame to write (its ``history`` number).
    indent
        Pretty-print with two-space indentation, like the CLI.

    Returns
    -------
    str
        The JSON text, which ``temporalio.client.WorkflowHistory.from_json`` and the
        ``Replayer`` accept.
    """
    message = to_history(events, history=history)
    body = message_to_dict(message)
    option = orjson.OPT_INDENT_2 if indent else 0
    text = orjson.dumps(body, option=option).decode("utf-8")
    if path is not None:
        Path(path).write_text(text + "\n", encoding="utf-8")
    return text
