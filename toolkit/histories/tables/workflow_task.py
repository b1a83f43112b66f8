"""``workflow_tasks(events)``: one row per workflow task (per ``WorkflowTaskScheduled``).

Cadence-era and pre-1.0 Temporal histories call workflow tasks *decision tasks*
(``DecisionTaskScheduled`` ...); both spellings are read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd
from temporalio.api.enums.v1 import TaskQueueKind, TimeoutType, WorkflowTaskFailedCause

from toolkit.histories.tables.build import (
    EntityJoin,
    Record,
    canonical_of,
    close,
    column_or_attribute,
    entity_frame,
    fill_once,
    join_entities,
    record_failure,
    stamp,
)
from toolkit.histories.tables.common import (
    HISTORY_SCHEMA,
    HistoryKey,
    attr,
    check_events,
    first_present,
    nullable,
    to_int,
)

__all__ = ["WORKFLOW_TASK_COLUMNS", "workflow_tasks"]

_STAGES = ("Scheduled", "Started", "Completed", "Failed", "TimedOut")
#: Event type -> stage, for both the current and the decision-task spelling.
_STAGE_OF = {
    f"{prefix}{stage}": stage
    for prefix in ("WorkflowTask", "DecisionTask")
    for stage in _STAGES
}
_OUTCOMES = {"Completed": "completed", "Failed": "failed", "TimedOut": "timed_out"}
_TASK_QUEUE_KIND = canonical_of(TaskQueueKind)
_TIMEOUT_TYPE = canonical_of(TimeoutType)
_FAILED_CAUSE = canonical_of(WorkflowTaskFailedCause)

#: Column -> dtype of the workflow-tasks table.
WORKFLOW_TASK_COLUMNS: dict[str, str] = {
    **HISTORY_SCHEMA,
    "workflow_task": "Int64",
    "scheduled_event_id": "Int64", "started_event_id": "Int64", "closed_event_id": "Int64",
    "scheduled_time": "datetime", "started_time": "datetime", "closed_time": "datetime",
    "attempt": "Int64", "outcome": "object",
    "cause": "object", "failure_message": "object", "failure_type": "object",
    "timeout_type": "object",
    "commands": "object", "command_count": "Int64",
    "task_queue": "object", "sticky": "boolean", "identity": "object",
    "sdk_name": "object", "sdk_version": "object", "core_used_flags": "object",
    "lang_used_flags": "object", "binary_checksum": "object", "build_id": "object",
    "history_size_bytes": "Int64",
    "queue_duration": "timedelta", "run_duration": "timedelta",
}

_JOIN = EntityJoin(
    table="workflow_tasks",
    schema=WORKFLOW_TASK_COLUMNS,
    key_column="scheduled_event_id",
    opening=tuple(t for t, stage in _STAGE_OF.items() if stage == "Scheduled"),
    others=tuple(t for t, stage in _STAGE_OF.items() if stage != "Scheduled"),
    link="scheduled_event_id",
    reads=(
        "task_queue", "scheduled_event_id", "attempt", "identity", "failure_message",
        "failure_type", "cause",
    ),
    requires=("scheduled_event_id", "workflow_task", "is_command"),
    starts={"outcome": "pending"},
    inherits=("workflow_task",),  # an orphan's ordinal, from its own event
    durations={
        "queue_duration": ("scheduled_time", "started_time"),
        "run_duration": ("started_time", "closed_time"),
    },
)


def workflow_tasks(events: pd.DataFrame) -> pd.DataFrame:
    """One row per workflow task: its scheduled, started and closing events and what it produced.

    ``commands`` lists the event types of the command events the task's completion recorded, in
    history order (from the events frame's ``is_command`` and ``workflow_task`` columns). A failed
    or timed-out task produced none. Rows exist for tasks still pending in an open history, and
    for closing events whose scheduled event is absent (partial histories).

    Parameters
    ----------
    events
        The events frame of :func:`toolkit.read_history` (one or many histories).

    Returns
    -------
    pandas.DataFrame
        Sorted by (source, history, scheduled_event_id), with these columns:

        ======================  ==============  ==================================================
        column                  dtype           meaning
        ======================  ==============  ==================================================
        source, history         object, Int64   which history (as in the events frame)
        workflow_id, run_id     object          the workflow run
        workflow_task           Int64           the task's ordinal (events frame numbering)
        scheduled_event_id      Int64           the ``WorkflowTaskScheduled`` event
        started_event_id        Int64           the ``WorkflowTaskStarted`` event, if any
        closed_event_id         Int64           the completed/failed/timed-out event, if any
        scheduled_time          datetime64 UTC  time of the scheduled event
        started_time            datetime64 UTC  time of the started event
        closed_time             datetime64 UTC  time of the closing event
        attempt                 Int64           attempt (scheduled event, else started event)
        outcome                 object          ``completed``, ``failed``, ``timed_out`` or
                                                ``pending``
        cause                   object          failed: e.g.
                                                ``WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR``
        failure_message         object          failed: the failure message
        failure_type            object          failed: application type or failure kind
        timeout_type            object          timed out: e.g. ``TIMEOUT_TYPE_START_TO_CLOSE``
        commands                object          list of command event types it produced
        command_count           Int64           ``len(commands)``
        task_queue              object          where it was scheduled
        sticky                  boolean         scheduled on a worker's sticky queue
        identity                object          worker that picked it up (or closed it)
        sdk_name, sdk_version   object          ``sdkMetadata`` of the completion, when present
                                                (SDKs send them only when they change)
        core_used_flags         object          list of Core SDK flags used (``sdkMetadata``)
        lang_used_flags         object          list of language SDK flags used
        binary_checksum         object          worker binary checksum (older workers)
        build_id                object          worker build id / deployment version
        history_size_bytes      Int64           history size the started event reports
        queue_duration          timedelta       started - scheduled
        run_duration            timedelta       closed - started
        ======================  ==============  ==================================================

    Raises
    ------
    HistoryFormatError
        When ``events`` is not an events frame.
    """
    check_events(events, _JOIN.requires, _JOIN.table)
    records = join_entities(events, _JOIN, _apply)
    commands = _commands_by_task(events)
    for (history, _), record in records.items():
        produced = (
            commands.get((history, record["workflow_task"]), [])
            if record["outcome"] == "completed" else []
        )
        record["commands"] = produced
        record["command_count"] = len(produced)
    return entity_frame(records.values(), _JOIN)


def _commands_by_task(events: pd.DataFrame) -> dict[tuple[HistoryKey, Any], list[str]]:
    """(history, workflow_task ordinal) -> command event types, in history order."""
    produced: dict[tuple[HistoryKey, Any], list[str]] = defaultdict(list)
    commands = events[events["is_command"].fillna(False).astype(bool)]
    for event in commands[["source", "history", "workflow_task", "event_type"]].itertuples(
        index=False
    ):
        task = nullable(event.workflow_task)
        if task is not None:
            produced[(HistoryKey(event.source, event.history), task)].append(event.event_type)
    return produced


def _apply(record: Record, event: Any) -> None:
    _APPLY[_STAGE_OF[event.event_type]](record, event)


def _scheduled(record: Record, event: Any) -> None:
    stamp(record, "scheduled", event)
    record["workflow_task"] = nullable(event.workflow_task)
    record["attempt"] = column_or_attribute(event, "attempt", "attempt", convert=to_int)
    record["task_queue"] = column_or_attribute(event, "task_queue", "taskQueue", "name")
    kind = _TASK_QUEUE_KIND(attr(event.attributes, "taskQueue", "kind"))
    record["sticky"] = None if kind is None else kind == "TASK_QUEUE_KIND_STICKY"


def _started(record: Record, event: Any) -> None:
    stamp(record, "started", event)
    fill_once(record, event, "attempt", "attempt", convert=to_int)
    record["identity"] = column_or_attribute(event, "identity", "identity")
    record["history_size_bytes"] = to_int(attr(event.attributes, "historySizeBytes"))


def _closed(record: Record, event: Any) -> None:
    attributes = event.attributes
    close(record, event, _OUTCOMES[_STAGE_OF[event.event_type]])
    fill_once(record, event, "identity", "identity")
    record["binary_checksum"] = attr(attributes, "binaryChecksum") or None
    record["build_id"] = _build_id(attributes)


def _completed(record: Record, event: Any) -> None:
    _closed(record, event)
    metadata = attr(event.attributes, "sdkMetadata")
    if isinstance(metadata, Mapping):
        record["sdk_name"] = metadata.get("sdkName") or None
        record["sdk_version"] = metadata.get("sdkVersion") or None
        record["core_used_flags"] = _flags(metadata.get("coreUsedFlags"))
        record["lang_used_flags"] = _flags(metadata.get("langUsedFlags"))


def _failed(record: Record, event: Any) -> None:
    _closed(record, event)
    record["cause"] = column_or_attribute(event, "cause", "cause", convert=_FAILED_CAUSE)
    record_failure(record, event, fallback=attr(event.attributes, "details"))


def _timed_out(record: Record, event: Any) -> None:
    _closed(record, event)
    record["timeout_type"] = _TIMEOUT_TYPE(attr(event.attributes, "timeoutType"))


_APPLY = {
    "Scheduled": _scheduled,
    "Started": _started,
    "Completed": _completed,
    "Failed": _failed,
    "TimedOut": _timed_out,
}


def _flags(values: Any) -> list[int] | None:
    if not isinstance(values, list):
        return None
    return [flag for flag in (to_int(v) for v in values) if flag is not None]


def _build_id(attributes: Any) -> str | None:
    """The worker's build id, wherever this history's server version put it."""
    return first_present(
        attr(attributes, "workerVersion", "buildId"),
        attr(attributes, "deploymentVersion", "buildId"),
        attr(attributes, "deployment", "buildId"),
        attr(attributes, "workerDeploymentVersion"),
    )
