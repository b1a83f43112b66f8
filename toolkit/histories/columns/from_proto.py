"""Protobuf events -> column arrays, one attribute message type at a time.

Events are grouped by which ``*EventAttributes`` they carry; for each group every column the
message type has is read with one C-level ``attrgetter`` pass and scattered into numpy object
arrays. Field plans are derived from the installed descriptors, never written by hand.

Used for histories that arrive as messages (``WorkflowHistory``, ``History``, a server fetch,
Cloud exports) and for binary files the wire reader (:mod:`~toolkit.histories.columns.from_wire`)
declines; serialized ``History`` bytes normally go through the wire reader, which is faster.
"""

from __future__ import annotations

from functools import cache
from operator import attrgetter
from typing import Any

import numpy as np
from google.protobuf.descriptor import Descriptor

from toolkit.histories.columns.common import (
    EventColumns,
    cause_name,
    failure_columns,
    fill_types_by_number,
    new_columns,
    retry_state_name,
    scatter,
    type_info,
)
from toolkit.histories.columns.lazy import LazyPayloads, lazy_proto_cells
from toolkit.histories.reading.dialects import RawHistory
from toolkit.histories.views import failure_view_from_proto

__all__ = ["proto_columns", "sparse_columns"]

# column -> field path (read where the message type has it)
_STRINGS = {
    "activity_id": "activity_id",
    "activity_type": "activity_type.name",
    "task_queue": "task_queue.name",
    "timer_id": "timer_id",
    "signal_name": "signal_name",
    "marker_name": "marker_name",
    "identity": "identity",
}
_INTS = {
    "scheduled_event_id": "scheduled_event_id",
    "started_event_id": "started_event_id",
    "initiated_event_id": "initiated_event_id",
    "attempt": "attempt",
    "completed_by": "workflow_task_completed_event_id",
    "history_size_bytes": "history_size_bytes",
    "suggest_continue_as_new": "suggest_continue_as_new",
}
_PAYLOADS = ("input", "result", "details")


def _has_path(descriptor: Descriptor, path: str) -> bool:
    for part in path.split("."):
        field = descriptor.fields_by_name.get(part)
        if field is None:
            return False
        descriptor = field.message_type
    return True


@cache
def _plan(descriptor: Descriptor) -> dict[str, Any]:
    strings = {
        column: attrgetter(path) for column, path in _STRINGS.items() if _has_path(descriptor, path)
    }
    ints = {c: attrgetter(f) for c, f in _INTS.items() if f in descriptor.fields_by_name}
    payloads = {}
    for column in _PAYLOADS:
        field = descriptor.fields_by_name.get(column)
        if field is not None and field.message_type is not None:
            payloads[column] = (column, field.message_type.GetOptions().map_entry)
    return {
        "strings": strings,
        "ints": ints,
        "payloads": payloads,
        "retry_state": "retry_state" in descriptor.fields_by_name,
        "cause": "cause" in descriptor.fields_by_name,
        "failure": "failure" in descriptor.fields_by_name,
    }


def _group(whichs: list[str | None]) -> dict[str | None, list[int]]:
    groups: dict[str | None, list[int]] = {}
    for index, which in enumerate(whichs):
        groups.setdefault(which, []).append(index)
    return groups


def proto_columns(history: RawHistory, codec: Any, decode: bool) -> EventColumns:
    """Column arrays, event times (epoch ns) and ``workflowTaskCompletedEventId`` per event."""
    events = list(history.proto_events)
    n = len(events)
    whichs = [e.WhichOneof("attributes") for e in events]
    c = new_columns(n)
    c["event_id"] = np.fromiter((e.event_id for e in events), dtype=np.int64, count=n)
    numbers = np.fromiter((e.event_type for e in events), dtype=np.int64, count=n)
    types = fill_types_by_number(c, numbers)
    c["attributes"], c["extra"] = lazy_proto_cells(events, whichs)
    for which, indexes in _group(whichs).items():
        if which is None:
            continue
        messages = [getattr(events[i], which) for i in indexes]
        at = np.asarray(indexes)
        info = type_info(events[indexes[0]].event_type)
        plan = _plan(messages[0].DESCRIPTOR)
        for column, getter in plan["strings"].items():
            scatter(c[column], at, [v or None for v in map(getter, messages)])
        for column, getter in plan["ints"].items():
            c[column][at] = list(map(getter, messages))
        if decode:
            for column, (field, is_map) in plan["payloads"].items():
                scatter(c[column], at, [_payload(m, field, is_map, codec) for m in messages])
        if plan["retry_state"]:
            scatter(c["retry_state"], at, [retry_state_name(m.retry_state) for m in messages])
        if plan["cause"]:
            enum = info.cause_enum
            scatter(c["cause"], at, [cause_name(enum, m.cause) for m in messages])
        if plan["failure"]:
            for i, m in zip(indexes, messages, strict=True):
                if m.HasField("failure"):
                    view = failure_view_from_proto(m.failure)
                    c["failure_message"][i], c["failure_type"][i] = failure_columns(
                        view, codec, decode
                    )
        if info.category in ("update", "child_workflow"):
            sparse_columns(c, indexes, messages, info.category, codec, decode)
    seconds = [e.event_time.seconds for e in events]
    nanos = [e.event_time.nanos for e in events]
    times = [
        s * 1_000_000_000 + ns if s or ns else None for s, ns in zip(seconds, nanos, strict=True)
    ]
    return EventColumns(c, times, c.pop("completed_by"), {}, types=types)


def _payload(message: Any, field: str, is_map: bool, codec: Any) -> Any:
    value = getattr(message, field)
    if is_map:
        return LazyPayloads(value, codec) if len(value) else None
    return LazyPayloads(value, codec) if message.HasField(field) else None


def sparse_columns(
    c: dict[str, Any], indexes: list[int], messages: list[Any], category: str, codec: Any,
    decode: bool,
) -> None:  # fmt: skip
    """Update and child workflow columns, read from the attributes messages at ``indexes``."""
    for i, m in zip(indexes, messages, strict=True):
        names = {f.name for f, _ in m.ListFields()}
        if category == "child_workflow":
            execution = m.workflow_execution if "workflow_execution" in names else None
            c["child_workflow_id"][i] = (
                (m.workflow_id if "workflow_id" in names else None)
                or (execution.workflow_id if execution is not None else None)
                or None
            )
            c["child_workflow_type"][i] = m.workflow_type.name if "workflow_type" in names else None
            continue
        request = next(
            (
                getattr(m, n)
                for n in ("accepted_request", "request", "rejected_request")
                if n in names
            ),
            None,
        )
        meta_id = m.meta.update_id if "meta" in names else None
        c["update_id"][i] = (
            (request.meta.update_id if request is not None else None)
            or meta_id
            or (m.protocol_instance_id if "protocol_instance_id" in names else None)
            or None
        )
        if request is not None:
            c["update_name"][i] = request.input.name or None
            if decode and request.input.HasField("args"):
                c["input"][i] = LazyPayloads(request.input.args, codec)
        if "outcome" in names:
            outcome = m.outcome
            if decode and outcome.HasField("success"):
                c["result"][i] = LazyPayloads(outcome.success, codec)
            if outcome.HasField("failure"):
                view = failure_view_from_proto(outcome.failure)
                c["failure_message"][i], c["failure_type"][i] = failure_columns(view, codec, decode)
