"""JSON events -> column lists, a column at a time.

All events of a history are decoded in one msgspec call into typed structs that declare only the
fields the frame needs (C speed, everything else skipped); columns are then list comprehensions
over those structs. The raw bytes of each event stay available for the ``attributes`` and
``extra`` cells, which decode on first use. Histories with an event msgspec cannot type (a field
of an unexpected type) are decoded event by event, so one odd event never loses the others.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pandas as pd

from toolkit.errors import HistoryFormatError
from toolkit.histories.columns_common import (
    NULL,
    TypeInfo,
    cause_name,
    failure_columns,
    present,
    retry_state_name,
    type_info,
)
from toolkit.histories.dialects import RawHistory
from toolkit.histories.enums import ATTRIBUTE_KEYS
from toolkit.histories.lazy import LazyAttributes, LazyExtra, LazyPayloads
from toolkit.histories.views import AttrView, IntLike, Named, attr_decoder, head_decoder

__all__ = ["json_columns"]


def _typed_event_fields() -> list[tuple[str, Any, Any]]:
    fields: list[tuple[str, Any, Any]] = [
        ("eventId", IntLike, None),
        ("eventTime", str | None, None),
        ("eventType", str | int | None, None),
        ("timestamp", int | str | None, None),
    ]
    return fields + [(key, AttrView | None, None) for key in ATTRIBUTE_KEYS]


TypedEvent = msgspec.defstruct("TypedEvent", _typed_event_fields())
_typed_list = msgspec.json.Decoder(list[TypedEvent])
_typed_one = msgspec.json.Decoder(TypedEvent)
_EMPTY = AttrView()


def _name(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Named):
        return value.name or None
    return str(value) or None


def _decode_events(history: RawHistory, name: str) -> list[Any]:
    if history.json_array is not None:
        try:
            return _typed_list.decode(history.json_array)
        except msgspec.MsgspecError:
            pass  # find the odd event below, one at a time
    raws = history.json_events
    events = []
    for index, raw in enumerate(raws):
        try:
            events.append(_typed_one.decode(raw))
        except msgspec.MsgspecError:
            events.append(_tolerant_event(raw, name, index))
    return events


def _tolerant_event(raw: msgspec.Raw, name: str, index: int) -> Any:
    """An event whose attributes have an unexpected shape: keep the envelope, skip the view."""
    try:
        head = head_decoder.decode(raw)
    except msgspec.MsgspecError as exc:
        raise HistoryFormatError(
            name,
            f"not a history event ({exc})",
            position=f"event #{index}",
            expected="an object with eventId, eventType and its attributes",
        ) from None
    return TypedEvent(
        eventId=head.eventId, eventTime=head.eventTime, eventType=head.eventType,
        timestamp=head.timestamp,
    )  # fmt: skip


def _find_attributes(raw: msgspec.Raw) -> tuple[str | None, AttrView]:
    """For event types the API does not know: the key ending in 'EventAttributes'."""
    keys = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
    for key, value in keys.items():
        if key.endswith("EventAttributes") and value != NULL:
            try:
                return key, attr_decoder.decode(value)
            except msgspec.MsgspecError:
                return key, _EMPTY
    return None, _EMPTY


def _event_ids(events: list[Any], name: str) -> list[int]:
    ids = []
    for index, event in enumerate(events):
        value = event.eventId
        try:
            ids.append(int(value))
        except (TypeError, ValueError):
            raise HistoryFormatError(
                name,
                f"eventId {value!r} is not an integer",
                position=f"event #{index}",
                expected="an integer eventId",
            ) from None
    return ids


def _ints(values: list[Any]) -> Any:
    """Nullable Int64 from ints, numeric strings and None (0 is the proto default: not set)."""
    try:
        array = np.array([v or 0 for v in values], dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        array = np.array([_int_or_zero(v) for v in values], dtype=np.int64)
    return pd.arrays.IntegerArray(array, array == 0)


def _int_or_zero(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _payloads(values: list[Any], codec: Any, decode: bool) -> list[Any]:
    if not decode:
        return [None] * len(values)
    return [LazyPayloads(v, codec) if v is not None and v != NULL else None for v in values]


def json_columns(
    history: RawHistory, name: str, codec: Any, decode: bool
) -> tuple[dict[str, list[Any]], list[Any], list[Any]]:
    """Column lists, event times and ``workflowTaskCompletedEventId`` of each event."""
    events = _decode_events(history, name)
    for index, event in enumerate(events):
        if event.eventId is None and event.eventType is None:
            raise HistoryFormatError(
                name,
                "object has neither eventId nor eventType",
                position=f"event #{index}",
                expected="a history event",
            )
    infos: list[TypeInfo] = [type_info(e.eventType) for e in events]
    attrs: list[AttrView] = [
        getattr(e, i.key, None) or _EMPTY for e, i in zip(events, infos, strict=True)
    ]
    keys: list[str | None] = [i.key for i in infos]
    for index, info in enumerate(infos):
        if not info.known:
            keys[index], attrs[index] = _find_attributes(history.json_events[index])
    c: dict[str, list[Any]] = {
        "event_id": _event_ids(events, name),
        "event_type": [i.short for i in infos],
        "category": [i.category for i in infos],
        "is_command": [i.is_command for i in infos],
        "activity_id": [a.activityId or None for a in attrs],
        "activity_type": [_name(a.activityType) for a in attrs],
        "task_queue": [_name(a.taskQueue) for a in attrs],
        "scheduled_event_id": _ints([a.scheduledEventId for a in attrs]),
        "started_event_id": _ints([a.startedEventId for a in attrs]),
        "initiated_event_id": _ints([a.initiatedEventId for a in attrs]),
        "attempt": _ints([a.attempt for a in attrs]),
        "timer_id": [a.timerId or None for a in attrs],
        "signal_name": [a.signalName or None for a in attrs],
        "marker_name": [a.markerName or None for a in attrs],
        "identity": [a.identity or None for a in attrs],
        "retry_state": [retry_state_name(a.retryState) for a in attrs],
        "cause": [
            cause_name(i.cause_enum, a.cause) if a.cause is not None else None
            for a, i in zip(attrs, infos, strict=True)
        ],
        "input": _payloads([a.input for a in attrs], codec, decode),
        "result": _payloads([a.result for a in attrs], codec, decode),
        "details": _payloads([a.details for a in attrs], codec, decode),
        "attributes": [LazyAttributes(history, i, k) for i, k in enumerate(keys)],
        "extra": [LazyExtra(history, i, k) for i, k in enumerate(keys)],
    }
    _fill_sparse(c, attrs, infos, codec, decode)
    times = [e.eventTime or e.timestamp for e in events]
    completed_by = _ints(
        [a.workflowTaskCompletedEventId or a.decisionTaskCompletedEventId for a in attrs]
    )
    return c, times, completed_by


def _fill_sparse(
    c: dict[str, list[Any]], attrs: list[AttrView], infos: list[TypeInfo], codec: Any, decode: bool
) -> None:
    """Columns only a few event kinds have: failures, updates, child workflows."""
    n = len(attrs)
    for column in ("failure_message", "failure_type", "update_name", "update_id",
                   "child_workflow_id", "child_workflow_type"):  # fmt: skip
        c[column] = [None] * n
    for i, (a, info) in enumerate(zip(attrs, infos, strict=True)):
        failure = a.failure or (a.outcome.failure if a.outcome is not None else None)
        if failure is not None:
            c["failure_message"][i], c["failure_type"][i] = failure_columns(failure, codec, decode)
        if info.category == "update":
            request = a.acceptedRequest or a.request or a.rejectedRequest
            c["update_id"][i] = (
                (request.meta.updateId if request and request.meta else None)
                or (a.meta.updateId if a.meta else None)
                or a.protocolInstanceId
                or None
            )
            if request is not None and request.input is not None:
                c["update_name"][i] = request.input.name or None
                if decode and present(request.input.args):
                    c["input"][i] = LazyPayloads(request.input.args, codec)
            if decode and a.outcome is not None and present(a.outcome.success):
                c["result"][i] = LazyPayloads(a.outcome.success, codec)
        elif info.category == "child_workflow":
            execution = a.workflowExecution
            c["child_workflow_id"][i] = (
                a.workflowId or (execution.workflowId if execution else None) or None
            )
            c["child_workflow_type"][i] = _name(a.workflowType)
