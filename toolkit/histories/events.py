"""Raw events -> the events DataFrame (the column schema is documented in :mod:`toolkit.histories`).

One row builder serves both JSON and protobuf sources: each event is reduced to an
:class:`~toolkit.histories.views.AttrView` first, then every column is filled from the view.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import msgspec
import pandas as pd
from google.protobuf.descriptor import EnumDescriptor
from temporalio.api.enums.v1 import RetryState
from temporalio.api.history.v1 import HistoryEvent

from toolkit.errors import HistoryFormatError
from toolkit.histories import enums
from toolkit.histories.dialects import RawHistory
from toolkit.histories.lazy import LazyJSON, LazyProto
from toolkit.histories.payloads import decode_payloads, decode_proto_payloads
from toolkit.histories.views import (
    AttrView,
    FailureView,
    Named,
    attr_decoder,
    attr_view_from_proto,
    failure_decoder,
    failure_view_from_proto,
    head_decoder,
)

__all__ = ["COLUMNS", "build_events_frame", "empty_events_frame"]

#: Column name -> dtype, in frame order. Documented in ``toolkit/histories/__init__.py``.
COLUMNS: dict[str, str] = {
    "source": "str",
    "history": "int64",
    "namespace": "str",
    "workflow_id": "str",
    "run_id": "str",
    "workflow_type": "str",
    "event_id": "int64",
    "event_time": "datetime64[ns, UTC]",
    "event_type": "str",
    "category": "str",
    "is_command": "bool",
    "workflow_task": "Int64",
    "activity_id": "str",
    "activity_type": "str",
    "task_queue": "str",
    "scheduled_event_id": "Int64",
    "started_event_id": "Int64",
    "initiated_event_id": "Int64",
    "attempt": "Int64",
    "timer_id": "str",
    "signal_name": "str",
    "update_name": "str",
    "update_id": "str",
    "child_workflow_id": "str",
    "child_workflow_type": "str",
    "marker_name": "str",
    "identity": "str",
    "failure_message": "str",
    "failure_type": "str",
    "retry_state": "str",
    "cause": "str",
    "input": "object",
    "result": "object",
    "details": "object",
    "attributes": "object",
    "extra": "object",
}

_HISTORY_LEVEL = ("source", "history", "namespace", "workflow_id", "run_id", "workflow_type")
_PER_EVENT = [c for c in COLUMNS if c not in _HISTORY_LEVEL and c != "event_time"]
_ENVELOPE_KEYS = frozenset({"eventId", "eventTime", "eventType"})
_WRAPPER_INFOS = (
    "activityFailureInfo",
    "childWorkflowExecutionFailureInfo",
    "nexusOperationExecutionFailureInfo",
)
_INFO_NAMES = {
    "timeoutFailureInfo": "TimeoutFailure",
    "canceledFailureInfo": "CanceledFailure",
    "terminatedFailureInfo": "TerminatedFailure",
    "serverFailureInfo": "ServerFailure",
    "resetWorkflowFailureInfo": "ResetWorkflowFailure",
    "activityFailureInfo": "ActivityFailure",
    "childWorkflowExecutionFailureInfo": "ChildWorkflowFailure",
    "nexusOperationExecutionFailureInfo": "NexusOperationFailure",
    "nexusHandlerFailureInfo": "NexusHandlerFailure",
}


def empty_events_frame() -> pd.DataFrame:
    """An events frame with every column and no rows."""
    return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in COLUMNS.items()})


@cache
def _cause_enum(event_type: str) -> EnumDescriptor | None:
    field = HistoryEvent.DESCRIPTOR.fields_by_name.get(_snake(enums.attributes_key(event_type)))
    if field is None or field.message_type is None:
        return None
    cause = field.message_type.fields_by_name.get("cause")
    return cause.enum_type if cause is not None else None


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel).lstrip("_")


def _name(value: Any) -> str | None:
    if isinstance(value, Named):
        return value.name or None
    return value or None


def _int(value: Any) -> int | None:
    if value is None or value == "":
        return None
    number = int(value)
    return number or None  # 0 is the proto default: "not set"


class _Rows:
    """Column lists filled one event at a time."""

    def __init__(self, codec: Any, decode: bool) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in _PER_EVENT}
        self.times: list[Any] = []
        self.completed_by: list[int | None] = []  # workflowTaskCompletedEventId of commands
        self.codec = codec
        self.decode = decode

    def payload(self, value: Any) -> Any:
        if not _present(value) or not self.decode:
            return None
        if isinstance(value, msgspec.Raw):
            return decode_payloads(msgspec.json.decode(value), self.codec)
        if hasattr(value, "payloads"):
            return decode_proto_payloads(value, self.codec)
        if hasattr(value, "items"):  # protobuf map of Payloads (marker details)
            return {k: decode_proto_payloads(v, self.codec) for k, v in value.items()}
        return value

    def failure(self, failure: FailureView | None) -> tuple[str | None, str | None]:
        if failure is None:
            return None, None
        message = failure.message
        if _present(failure.encodedAttributes) and self.decode:
            decoded = self.payload_one(failure.encodedAttributes)
            if isinstance(decoded, dict) and decoded.get("message"):
                message = decoded["message"]
        kind = _failure_kind(failure)
        wrapper = any(_present(getattr(failure, info)) for info in _WRAPPER_INFOS)
        if wrapper and _present(failure.cause):
            inner_message, inner_kind = self.failure(_cause_view(failure.cause))
            if inner_message:
                message = f"{message}: {inner_message}" if message else inner_message
            kind = inner_kind or kind
        return message or None, kind

    def payload_one(self, value: Any) -> Any:
        if isinstance(value, msgspec.Raw):
            decoded = decode_payloads(msgspec.json.decode(value), self.codec)
        else:
            decoded = decode_proto_payloads(_wrap_payload(value), self.codec)
        return decoded[0] if isinstance(decoded, list) and decoded else decoded

    def add(
        self,
        event_id: int,
        event_time: Any,
        event_type: str,
        view: AttrView,
        attributes: Any,
        extra: Any,
    ) -> None:
        c = self.columns
        category = enums.category_of(event_type)
        c["event_id"].append(event_id)
        self.times.append(event_time)
        c["event_type"].append(event_type)
        c["category"].append(category)
        c["is_command"].append(event_type in enums.COMMAND_EVENT_TYPES)
        c["workflow_task"].append(None)
        self.completed_by.append(
            _int(view.workflowTaskCompletedEventId or view.decisionTaskCompletedEventId)
        )
        c["activity_id"].append(view.activityId or None)
        c["activity_type"].append(_name(view.activityType))
        c["task_queue"].append(_name(view.taskQueue))
        c["scheduled_event_id"].append(_int(view.scheduledEventId))
        c["started_event_id"].append(_int(view.startedEventId))
        c["initiated_event_id"].append(_int(view.initiatedEventId))
        c["attempt"].append(_int(view.attempt))
        c["timer_id"].append(view.timerId or None)
        c["signal_name"].append(view.signalName or None)
        c["marker_name"].append(view.markerName or None)
        c["identity"].append(view.identity or None)
        request = view.acceptedRequest or view.request or view.rejectedRequest
        update_id = None
        if category == "update":
            update_id = (
                (request.meta.updateId if request and request.meta else None)
                or (view.meta.updateId if view.meta else None)
                or view.protocolInstanceId
            )
        c["update_id"].append(update_id or None)
        c["update_name"].append(request.input.name if request and request.input else None)
        if category == "child_workflow":
            execution = view.workflowExecution
            c["child_workflow_id"].append(
                view.workflowId or (execution.workflowId if execution else None) or None
            )
            c["child_workflow_type"].append(_name(view.workflowType))
        else:
            c["child_workflow_id"].append(None)
            c["child_workflow_type"].append(None)
        failure = view.failure or (view.outcome.failure if view.outcome else None)
        message, kind = self.failure(failure)
        c["failure_message"].append(message)
        c["failure_type"].append(kind)
        c["retry_state"].append(
            enums.canonical_enum(RetryState.DESCRIPTOR, view.retryState or None)
        )
        cause_enum = _cause_enum(event_type) if view.cause is not None else None
        c["cause"].append(
            enums.canonical_enum(cause_enum, view.cause) if cause_enum else _opt_str(view.cause)
        )
        args = request.input.args if request and request.input else None
        c["input"].append(self.payload(view.input if view.input is not None else args))
        success = view.outcome.success if view.outcome else None
        c["result"].append(self.payload(view.result if view.result is not None else success))
        c["details"].append(self.payload(view.details))
        c["attributes"].append(attributes)
        c["extra"].append(extra)


_NULL = msgspec.Raw(b"null")


def _present(value: Any) -> bool:
    """A field is present unless it is missing or JSON null (emit-defaults files write nulls)."""
    return value is not None and not (isinstance(value, msgspec.Raw) and value == _NULL)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _failure_kind(failure: FailureView) -> str | None:
    info = failure.applicationFailureInfo
    if info is not None:
        return info.type or "ApplicationFailure"
    for key, name in _INFO_NAMES.items():
        if _present(getattr(failure, key)):
            return name
    return None


def _cause_view(cause: Any) -> FailureView | None:
    if isinstance(cause, msgspec.Raw):
        try:
            return failure_decoder.decode(cause)
        except msgspec.MsgspecError:
            return None
    return failure_view_from_proto(cause)


def _wrap_payload(payload: Any) -> Any:
    from temporalio.api.common.v1 import Payloads

    return Payloads(payloads=[payload])


# --------------------------------------------------------------------------- JSON events


def _json_event_id(value: Any, name: str, index: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise HistoryFormatError(
            name,
            f"eventId {value!r} is not an integer",
            position=f"event #{index}",
            expected="an integer eventId",
        ) from None


def _find_attributes(raw: msgspec.Raw) -> tuple[str | None, msgspec.Raw | None]:
    """Fallback for event types the API does not know: the key ending in 'EventAttributes'."""
    keys = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
    for key, value in keys.items():
        if key.endswith("EventAttributes"):
            return key, value
    return None, None


def _add_json_history(rows: _Rows, history: RawHistory, name: str) -> None:
    for index, raw in enumerate(history.json_events or ()):
        try:
            head = head_decoder.decode(raw)
        except msgspec.MsgspecError as exc:
            raise HistoryFormatError(
                name,
                f"not a history event ({exc})",
                position=f"event #{index}",
                expected="an object with eventId, eventType and its attributes",
            ) from None
        if head.eventId is None and head.eventType is None:
            raise HistoryFormatError(
                name,
                "object has neither eventId nor eventType",
                position=f"event #{index}",
                expected="a history event",
            )
        event_type = enums.event_type_name(head.eventType)
        key = enums.attributes_key(event_type)
        attr_raw = getattr(head, key, None)
        if not _present(attr_raw):
            found, attr_raw = _find_attributes(raw)
            key = found or key
        try:
            view = attr_decoder.decode(attr_raw) if _present(attr_raw) else AttrView()
        except msgspec.MsgspecError:
            # A field of an unexpected type: keep the event (its raw attributes are complete)
            # with the derived columns left empty, rather than failing the whole load.
            view = AttrView()
        event_time = head.eventTime or head.timestamp
        rows.add(
            _json_event_id(head.eventId, name, index),
            event_time,
            event_type,
            view,
            LazyJSON(attr_raw) if _present(attr_raw) else {},
            LazyJSON(raw, _ENVELOPE_KEYS | {key}),
        )


# --------------------------------------------------------------------------- protobuf events


class _ProtoExtra(LazyProto):
    __slots__ = ()

    def _decode(self) -> dict[str, Any]:
        value = super()._decode()
        return {
            k: v
            for k, v in value.items()
            if k not in _ENVELOPE_KEYS and not k.endswith("Attributes")
        }


def _add_proto_history(rows: _Rows, history: RawHistory) -> None:
    for event in history.proto_events:
        which = event.WhichOneof("attributes")
        event_type = enums.event_type_name(event.event_type)
        if which is None:
            view, attributes = AttrView(), {}
        else:
            message = getattr(event, which)
            view, attributes = attr_view_from_proto(message), LazyProto(message)
        time = event.event_time.seconds * 1_000_000_000 + event.event_time.nanos
        rows.add(event.event_id, time or None, event_type, view, attributes, _ProtoExtra(event))


# --------------------------------------------------------------------------- frame assembly


def _times(values: list[Any]) -> pd.Series:
    strings = [v if isinstance(v, str) else None for v in values]
    if all(v is None or isinstance(v, str) for v in values):
        parsed = pd.to_datetime(pd.Series(strings, dtype="object"), utc=True, format="ISO8601")
        return parsed.dt.as_unit("ns")
    numbers = [int(v) if isinstance(v, (int, float)) else None for v in values]
    parsed_text = pd.to_datetime(pd.Series(strings, dtype="object"), utc=True, format="ISO8601")
    parsed_ns = pd.to_datetime(pd.Series(numbers, dtype="Int64"), utc=True, unit="ns")
    return parsed_text.dt.as_unit("ns").fillna(parsed_ns.dt.as_unit("ns"))


def build_events_frame(
    histories: list[RawHistory],
    source_name: str,
    *,
    codec: Any = None,
    decode_payloads: bool = True,
) -> pd.DataFrame:
    """Build the events frame for all ``histories`` of one source."""
    frames = []
    for number, history in enumerate(histories):
        rows = _Rows(codec, decode_payloads)
        if history.proto_events is not None:
            _add_proto_history(rows, history)
        else:
            _add_json_history(rows, history, source_name)
        frames.append(_assemble(rows, history, number, source_name))
    if not frames:
        return empty_events_frame()
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    return frame


def _assemble(rows: _Rows, history: RawHistory, number: int, source_name: str) -> pd.DataFrame:
    columns = rows.columns
    order = sorted(range(len(columns["event_id"])), key=columns["event_id"].__getitem__)
    if order != list(range(len(order))):  # descending UI exports and keyed-by-type fixtures
        columns = {k: [v[i] for i in order] for k, v in columns.items()}
        rows.times = [rows.times[i] for i in order]
        rows.completed_by = [rows.completed_by[i] for i in order]
    _link(columns, rows.completed_by)
    data: dict[str, Any] = {}
    count = len(columns["event_id"])
    for name, dtype in COLUMNS.items():
        if name == "event_time":
            data[name] = _times(rows.times).array if count else pd.array([], dtype=dtype)
        elif name in columns:
            values = columns[name]
            if dtype == "Int64":
                data[name] = pd.array(values, dtype="Int64")
            elif dtype in ("int64", "bool", "str"):
                data[name] = pd.array(values, dtype=dtype)
            else:
                data[name] = pd.Series(values, dtype="object").array
    run_id, workflow_type = _run_facts(columns, history)
    frame = pd.DataFrame(data)
    frame.insert(0, "source", source_name)
    frame.insert(1, "history", pd.array([number] * count, dtype="int64"))
    frame.insert(2, "namespace", history.namespace)
    frame.insert(3, "workflow_id", history.workflow_id)
    frame.insert(4, "run_id", run_id)
    frame.insert(5, "workflow_type", workflow_type)
    for name in ("source", "namespace", "workflow_id", "run_id", "workflow_type"):
        frame[name] = frame[name].astype("str")
    return frame


def _run_facts(columns: dict[str, list[Any]], history: RawHistory) -> tuple[Any, Any]:
    run_id, workflow_type = history.run_id, None
    for event_type, attributes in zip(columns["event_type"], columns["attributes"], strict=True):
        if event_type == "WorkflowExecutionStarted":
            workflow_type = _name_of(attributes.get("workflowType"))
            run_id = run_id or attributes.get("originalExecutionRunId") or None
            break
    return run_id, workflow_type


def _name_of(value: Any) -> str | None:
    if isinstance(value, dict):
        return value.get("name") or None
    return value or None


_WORKFLOW_TASK_OPENERS = ("WorkflowTaskScheduled", "DecisionTaskScheduled")
_WORKFLOW_TASK_STARTS = ("WorkflowTaskStarted", "DecisionTaskStarted")


def _link(columns: dict[str, list[Any]], completed_by: list[int | None]) -> None:
    """Fill what one event learns from another: workflow task ordinals, activity/child names."""
    ids = columns["event_id"]
    types = columns["event_type"]
    position = {event_id: i for i, event_id in enumerate(ids)}
    task_of_scheduled: dict[int, int] = {}
    task_of_event: dict[int, int] = {}
    waiting: list[int] = []
    tasks = columns["workflow_task"]
    update_names: dict[str, str] = {}
    for i, event_type in enumerate(types):
        category = columns["category"][i]
        if event_type in _WORKFLOW_TASK_OPENERS:
            ordinal = len(task_of_scheduled) + 1
            task_of_scheduled[ids[i]] = ordinal
            tasks[i] = ordinal
        elif category == "workflow_task":
            tasks[i] = task_of_scheduled.get(columns["scheduled_event_id"][i])
            if event_type in _WORKFLOW_TASK_STARTS and tasks[i] is not None:
                for j in waiting:
                    tasks[j] = tasks[i]
                waiting.clear()
        elif columns["is_command"][i]:
            completed = completed_by[i]
            tasks[i] = task_of_event.get(completed) if completed else None
            if tasks[i] is None:
                tasks[i] = len(task_of_scheduled) or None
        else:
            waiting.append(i)
        if tasks[i] is not None:
            task_of_event[ids[i]] = tasks[i]
        scheduled = columns["scheduled_event_id"][i]
        if category == "activity" and scheduled in position:
            source = position[scheduled]
            columns["activity_id"][i] = columns["activity_id"][i] or columns["activity_id"][source]
            columns["activity_type"][i] = (
                columns["activity_type"][i] or columns["activity_type"][source]
            )
        initiated = columns["initiated_event_id"][i]
        if category == "child_workflow" and initiated in position:
            source = position[initiated]
            for key in ("child_workflow_id", "child_workflow_type"):
                columns[key][i] = columns[key][i] or columns[key][source]
        update_id = columns["update_id"][i]
        if update_id is not None:
            if columns["update_name"][i]:
                update_names[update_id] = columns["update_name"][i]
            else:
                columns["update_name"][i] = update_names.get(update_id)
