"""Command events in order, with the identity the SDKs compare during replay.

Replay re-runs workflow code and matches each command it emits against the *command events* of
history (the events a worker's commands became, after each ``WorkflowTaskCompleted``). This module
lists those events, one row each, with the fields the SDKs compare (activity type and id, timer id,
child workflow type and id, marker name, local-activity and patch identity) and where each came
from (the workflow task that produced it, its position in that task and overall).

Examples
--------
>>> import toolkit
>>> cmds = toolkit.commands(toolkit.read_history("run.json"))          # doctest: +SKIP
>>> cmds[["position", "kind", "activity_type", "task_completed_event_id"]]  # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pandas as pd

from toolkit.errors import HistoryFormatError, ToolkitError
from toolkit.histories.payloads import decode_payload
from toolkit.histories.tables.marker_details import patch_identity, version_identity

__all__ = [
    "COMMAND_KIND",
    "TASK_COMPLETED",
    "commands",
    "events_frame",
    "history_commands",
    "identity_label",
    "iter_histories",
    "marker_identity",
    "records",
]

#: Command event type -> the command type that produces it (short names, as the API spells them).
COMMAND_KIND: dict[str, str] = {
    "ActivityTaskScheduled": "ScheduleActivityTask",
    "ActivityTaskCancelRequested": "RequestCancelActivityTask",
    "TimerStarted": "StartTimer",
    "TimerCanceled": "CancelTimer",
    "MarkerRecorded": "RecordMarker",
    "StartChildWorkflowExecutionInitiated": "StartChildWorkflowExecution",
    "SignalExternalWorkflowExecutionInitiated": "SignalExternalWorkflowExecution",
    "RequestCancelExternalWorkflowExecutionInitiated": "RequestCancelExternalWorkflowExecution",
    "UpsertWorkflowSearchAttributes": "UpsertWorkflowSearchAttributes",
    "WorkflowPropertiesModified": "ModifyWorkflowProperties",
    "NexusOperationScheduled": "ScheduleNexusOperation",
    "NexusOperationCancelRequested": "RequestCancelNexusOperation",
    "WorkflowExecutionCompleted": "CompleteWorkflowExecution",
    "WorkflowExecutionFailed": "FailWorkflowExecution",
    "WorkflowExecutionCanceled": "CancelWorkflowExecution",
    "WorkflowExecutionContinuedAsNew": "ContinueAsNewWorkflowExecution",
    # Updates are answered with protocol messages; sdk-core treats their events as command events.
    "WorkflowExecutionUpdateAccepted": "ProtocolMessage",
    "WorkflowExecutionUpdateRejected": "ProtocolMessage",
    "WorkflowExecutionUpdateCompleted": "ProtocolMessage",
}

#: Events closing a workflow task successfully (Cadence-era histories say "DecisionTask").
TASK_COMPLETED = frozenset({"WorkflowTaskCompleted", "DecisionTaskCompleted"})

COLUMNS = [
    "history",
    "run_id",
    "event_id",
    "event_type",
    "kind",
    "identity",
    "position",
    "task",
    "task_completed_event_id",
    "position_in_task",
    "workflow_task",
    "activity_type",
    "activity_id",
    "timer_id",
    "child_workflow_type",
    "child_workflow_id",
    "signal_name",
    "target_workflow_id",
    "scheduled_event_id",
    "marker_name",
    "local_activity_type",
    "local_activity_id",
    "local_activity_seq",
    "patch_id",
    "patch_deprecated",
    "patch_version",
    "nexus_service",
    "nexus_operation",
    "update_id",
]


def events_frame(source: Any) -> pd.DataFrame:
    """Return ``source`` as an events frame (a frame as is, anything else via ``read_history``)."""
    if isinstance(source, pd.DataFrame):
        missing = {"event_id", "event_type"} - set(source.columns)
        if missing:
            raise HistoryFormatError(
                "<DataFrame>",
                f"not an events frame: columns {sorted(missing)} are missing",
                expected="the frame toolkit.read_history returns",
            )
        return source
    from toolkit.histories.reading.read import (
        read_history,  # late: the loader imports heavier modules
    )

    return read_history(source)


def per_source(
    function: Callable[..., pd.DataFrame] | None = None, *, skip_unrecognised: bool = False
) -> Any:
    """Run a per-history analysis once per source of a many-file frame.

    ``history`` numbers restart at 0 in every file of a :func:`toolkit.read_histories` frame, so
    an analysis that keys on ``history`` alone would merge different files. The wrapped function
    sees one source at a time; its results are concatenated with a ``source`` column in front.

    Used bare (``@per_source``) or with an option (``per_source(f, skip_unrecognised=True)``):
    with ``skip_unrecognised`` a source the function rejects with a
    :class:`~toolkit.errors.ToolkitError` (an agent table over a history that is no agent) is
    left out, unless every source is rejected: then the first error is raised.
    """
    if function is None:
        return functools.partial(per_source, skip_unrecognised=skip_unrecognised)

    @functools.wraps(function)
    def wrapper(events: Any, *args: Any, **kwargs: Any) -> pd.DataFrame:
        frame = events_frame(events)
        if "source" not in frame.columns:
            return function(frame, *args, **kwargs)
        if len(frame) == 0:
            out = function(frame, *args, **kwargs)
            if "source" not in out.columns:
                out.insert(0, "source", pd.Series(dtype=object))
            return out
        parts = []
        rejected: ToolkitError | None = None
        for source, one in frame.groupby("source", sort=False, dropna=False):
            try:
                out = function(one, *args, **kwargs)
            except ToolkitError as error:
                if not skip_unrecognised:
                    raise
                rejected = rejected or error
                continue
            if "source" not in out.columns:
                out.insert(0, "source", source)
            elif out["source"].isna().all():
                out["source"] = source
            parts.append(out)
        if not parts and rejected is not None:
            raise rejected
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]

    return wrapper


def iter_histories(events: pd.DataFrame) -> Iterator[tuple[int, pd.DataFrame]]:
    """Yield ``(history, frame)`` per history of an events frame, each sorted by event id."""
    if "history" not in events.columns:
        yield 0, events.sort_values("event_id", kind="stable")
        return
    for history, frame in events.groupby("history", sort=True):
        yield int(history), frame.sort_values("event_id", kind="stable")


def _attr(attributes: Any, *path: str) -> Any:
    value = attributes
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _detail(attributes: Any, key: str) -> Any:
    """First value of marker detail ``key`` (details map name -> Payloads)."""
    details = _attr(attributes, "details")
    if not isinstance(details, Mapping):
        return None
    entry = details.get(key)
    payloads = entry.get("payloads") if isinstance(entry, Mapping) else entry
    if isinstance(payloads, list) and payloads:
        return decode_payload(payloads[0])  # marker details hold JSON; never executed
    return None


def marker_identity(marker_name: str | None, attributes: Any) -> dict[str, Any]:
    """Identity fields of a marker: local-activity type/id/seq or patch id and deprecation.

    Parameters
    ----------
    marker_name
        The ``markerName`` of a ``MarkerRecorded`` event.
    attributes
        Its ``markerRecordedEventAttributes`` mapping (proto-JSON field names).
    """
    out: dict[str, Any] = {}
    if marker_name == "core_local_activity":
        data = _detail(attributes, "data")
        if isinstance(data, Mapping):
            out["local_activity_type"] = data.get("activity_type")
            out["local_activity_id"] = data.get("activity_id")
            out["local_activity_seq"] = data.get("seq")
    elif marker_name == "LocalActivity":
        data = _detail(attributes, "data")
        if isinstance(data, Mapping):  # Go layout
            out["local_activity_type"] = data.get("ActivityType")
            out["local_activity_id"] = data.get("ActivityID")
        else:  # Java layout
            out["local_activity_type"] = _detail(attributes, "type")
            out["local_activity_id"] = _detail(attributes, "activityId")
    elif marker_name == "core_patch":
        patch_id, deprecated = patch_identity(lambda key: _detail(attributes, key))
        if patch_id is not None:
            out["patch_id"], out["patch_deprecated"] = patch_id, deprecated
    elif marker_name == "Version":
        change, version = version_identity(lambda key: _detail(attributes, key))
        out["patch_id"], out["patch_version"] = change, version
    return out


def identity_label(row: Mapping[str, Any]) -> str:
    """A short human label such as ``ScheduleActivityTask(weather-list-tools #1)``."""
    kind = row["kind"]
    parts: list[str] = []
    if row.get("activity_type") and kind == "ScheduleActivityTask":
        parts = [str(row["activity_type"]), f"id={row.get('activity_id')}"]
    elif row.get("timer_id") is not None and kind in {"StartTimer", "CancelTimer"}:
        parts = [f"id={row['timer_id']}"]
    elif row.get("child_workflow_type"):
        parts = [str(row["child_workflow_type"]), f"id={row.get('child_workflow_id')}"]
    elif row.get("local_activity_type"):
        parts = ["local " + str(row["local_activity_type"]), f"id={row.get('local_activity_id')}"]
    elif row.get("patch_id") is not None:
        parts = [f"patch={row['patch_id']}"]
        if row.get("patch_version") is not None:
            parts.append(f"version={row['patch_version']}")
    elif row.get("marker_name"):
        parts = [str(row["marker_name"])]
    elif row.get("signal_name"):
        parts = [str(row["signal_name"])]
    elif row.get("nexus_operation"):
        parts = [f"{row.get('nexus_service')}/{row['nexus_operation']}"]
    elif row.get("scheduled_event_id") is not None and kind.startswith("RequestCancel"):
        parts = [f"scheduled={row['scheduled_event_id']}"]
    return f"{kind}({', '.join(parts)})" if parts else kind


def _value(row: Any, column: str) -> Any:
    value = row.get(column) if hasattr(row, "get") else None
    if value is None or (not isinstance(value, (str, Mapping, list)) and pd.isna(value)):
        return None
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """``frame.to_dict("records")``, twice as fast on an events frame: the cells as they are,
    a missing value of a nullable integer or boolean column as None (as ``to_dict`` gives)."""
    columns = list(frame.columns)
    arrays = []
    for column in columns:
        values = frame[column]
        cells = values.to_numpy(dtype=object)
        nullable = isinstance(values.dtype, pd.api.extensions.ExtensionDtype)
        if nullable and values.dtype.kind in "iufb":
            missing = values.isna().to_numpy()
            if missing.any():
                cells = cells.copy()
                cells[missing] = None
        arrays.append(cells)
    return [dict(zip(columns, row, strict=True)) for row in zip(*arrays, strict=True)]


def history_commands(history: int, frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Command rows of one history (events sorted by id); see :func:`commands` for columns."""
    return commands_of_records(history, records(frame))


def commands_of_records(history: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`history_commands` of a history's events already turned into records.

    For callers that walk the same records themselves, so that the frame is converted once.
    """
    rows: list[dict[str, Any]] = []
    task = 0
    task_completed: int | None = None
    in_task = 0
    for event in events:
        event_type = event["event_type"]
        if event_type in TASK_COMPLETED:
            task += 1
            task_completed = int(event["event_id"])
            in_task = 0
            continue
        kind = COMMAND_KIND.get(event_type)
        if kind is None:
            continue
        attributes = event.get("attributes")
        in_task += 1
        row: dict[str, Any] = {
            "history": history,
            "run_id": _value(event, "run_id"),
            "event_id": int(event["event_id"]),
            "event_type": event_type,
            "kind": kind,
            "position": len(rows) + 1,
            "task": task,
            "task_completed_event_id": task_completed,
            "position_in_task": in_task,
            "workflow_task": _value(event, "workflow_task"),
            "activity_type": _value(event, "activity_type"),
            "activity_id": _value(event, "activity_id"),
            "timer_id": _value(event, "timer_id"),
            "child_workflow_type": _value(event, "child_workflow_type"),
            "child_workflow_id": _value(event, "child_workflow_id"),
            "signal_name": _value(event, "signal_name"),
            "target_workflow_id": _attr(attributes, "workflowExecution", "workflowId"),
            "scheduled_event_id": _value(event, "scheduled_event_id"),
            "marker_name": _value(event, "marker_name"),
            "nexus_service": _attr(attributes, "service"),
            "nexus_operation": _attr(attributes, "operation"),
            "update_id": _value(event, "update_id"),
        }
        if event_type == "ActivityTaskScheduled":
            row["activity_type"] = row["activity_type"] or _attr(attributes, "activityType", "name")
            row["activity_id"] = row["activity_id"] or _attr(attributes, "activityId")
        elif event_type == "StartChildWorkflowExecutionInitiated":
            row["child_workflow_type"] = row["child_workflow_type"] or _attr(
                attributes, "workflowType", "name"
            )
            row["child_workflow_id"] = row["child_workflow_id"] or _attr(attributes, "workflowId")
        elif event_type in {"TimerStarted", "TimerCanceled"}:
            row["timer_id"] = row["timer_id"] or _attr(attributes, "timerId")
        elif event_type == "MarkerRecorded":
            row["marker_name"] = row["marker_name"] or _attr(attributes, "markerName")
            row.update(marker_identity(row["marker_name"], attributes))
        if row["scheduled_event_id"] is not None:
            row["scheduled_event_id"] = int(row["scheduled_event_id"])
        row["identity"] = identity_label(row)
        rows.append(row)
    return rows


@per_source
def commands(events: Any) -> pd.DataFrame:
    """List the command events of each history, in order, with the identity replay compares.

    Parameters
    ----------
    events
        An events frame (:func:`toolkit.read_history`) or anything ``read_history`` accepts.

    Returns
    -------
    pandas.DataFrame
        One row per command event. ``kind`` is the command type (``ScheduleActivityTask``,
        ``StartTimer``, ``RecordMarker``, ...); ``identity`` a short label; ``position`` the 1-based
        position among the history's commands; ``task`` the 1-based ordinal of the completed
        workflow task that produced it, ``task_completed_event_id`` that task's
        ``WorkflowTaskCompleted`` event id and ``position_in_task`` the 1-based position within it.
        Identity columns: ``activity_type``, ``activity_id``, ``timer_id``,
        ``child_workflow_type``, ``child_workflow_id``, ``signal_name``, ``target_workflow_id``,
        ``scheduled_event_id`` (cancel requests), ``marker_name``, ``local_activity_type``,
        ``local_activity_id``, ``local_activity_seq`` (``core_local_activity`` and Go/Java
        ``LocalActivity`` markers), ``patch_id``, ``patch_deprecated`` (``core_patch`` markers in
        the current and the old sdk-core layout; Go/Java ``Version`` markers: the change id),
        ``patch_version`` (``Version`` markers), ``nexus_service``, ``nexus_operation``,
        ``update_id``.
    """
    frame = events_frame(events)
    rows: list[dict[str, Any]] = []
    for history, one in iter_histories(frame):
        rows.extend(history_commands(history, one))
    out = pd.DataFrame(rows, columns=COLUMNS)
    for column in ("history", "event_id", "position", "task", "position_in_task"):
        out[column] = out[column].astype("int64")
    for column in ("task_completed_event_id", "scheduled_event_id", "local_activity_seq"):
        out[column] = out[column].astype("Int64")
    out["workflow_task"] = out["workflow_task"].astype("Int64")
    return out
