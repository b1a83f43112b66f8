"""``workflow_tasks(events)``: one row per workflow task (per ``WorkflowTaskScheduled``).

Cadence-era and pre-1.0 Temporal histories call workflow tasks *decision tasks*
(``DecisionTaskScheduled`` ...); both spellings are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from temporalio.api.enums.v1 import TaskQueueKind, TimeoutType, WorkflowTaskFailedCause

from toolkit.histories.tables.attribute_views import dig
from toolkit.histories.tables.build import add_durations, canonical_of
from toolkit.histories.tables.columnar import (
    Entities,
    FrameRows,
    first_present_of,
    group_entities,
    joint_codes,
    plain_column,
    unzip,
)
from toolkit.histories.tables.common import (
    HISTORY_SCHEMA,
    check_events,
    failure_of,
    first_present,
    frame_of_columns,
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

#: Attribute fields decoded for every event at once: those without a column, and ``attempt``,
#: whose column is empty on started events that name none. The other fallbacks of columns
#: (``identity``, ``cause``) are decoded only where a column is empty.
_FIELDS = (
    "attempt", "taskQueue", "historySizeBytes", "failure", "details", "timeoutType",
    "sdkMetadata", "binaryChecksum", "workerVersion", "deploymentVersion", "deployment",
    "workerDeploymentVersion",
)
_DURATIONS = {
    "queue_duration": ("scheduled_time", "started_time"),
    "run_duration": ("started_time", "closed_time"),
}
_SDK_COLUMNS = ("sdk_name", "sdk_version", "core_used_flags", "lang_used_flags")


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
    check_events(events, ("scheduled_event_id", "workflow_task", "is_command"), "workflow_tasks")
    entities = group_entities(
        events,
        opening=_of_stages("Scheduled"),
        others=_of_stages("Started", "Completed", "Failed", "TimedOut"),
        link="scheduled_event_id",
        fields=_FIELDS,
    )
    columns = {
        **_scheduled(entities),
        **_started(entities),
        **_closed(entities),
        **dict.fromkeys(_DURATIONS, np.full(entities.count, None, dtype=object)),  # derived below
    }
    # The attempt the scheduled event names, else the first one its started events name.
    columns["attempt"] = entities.overwrite_then_fill(
        entities.mask(_of_stages("Scheduled")),
        _attempts(entities, "Scheduled"),
        entities.mask(_of_stages("Started")),
        _attempts(entities, "Started"),
    )
    columns["commands"] = _commands(events, columns)
    columns["command_count"] = np.fromiter(map(len, columns["commands"]), dtype=np.int64,
                                           count=entities.count)
    frame = frame_of_columns(
        columns, WORKFLOW_TASK_COLUMNS, ("source", "history", "scheduled_event_id")
    )
    add_durations(frame, _DURATIONS)
    return frame


def _of_stages(*stages: str) -> tuple[str, ...]:
    """The event types (both spellings) of ``stages``."""
    return tuple(kind for kind, stage in _STAGE_OF.items() if stage in stages)


def _attempts(entities: Entities, stage: str) -> np.ndarray:
    rows = entities.mask(_of_stages(stage))
    return entities.column_or_attribute("attempt", "attempt", rows=rows, convert=to_int)


def _scheduled(entities: Entities) -> dict[str, Any]:
    """History, ordinal, queue and times of the scheduled event."""
    picks = entities.last(entities.mask(_of_stages("Scheduled")))
    first = entities.first()
    columns = entities.history_columns(first)
    # An orphan keeps the ordinal of its own first event; a scheduled event sets the task's.
    columns["workflow_task"] = np.where(
        picks >= 0, entities.pick("workflow_task", picks), entities.pick("workflow_task", first)
    )
    columns["scheduled_event_id"] = entities.key
    columns["scheduled_time"] = entities.times(picks)
    task_queue = entities.column_or_attribute(
        "task_queue", "taskQueue", "name", rows=entities.mask(_of_stages("Scheduled"))
    )
    columns["task_queue"] = entities.take(task_queue, picks)
    columns["sticky"] = entities.read(picks, _sticky, "taskQueue")
    return columns


def _sticky(task_queue: Any) -> bool | None:
    kind = dig(task_queue, "kind")
    return _sticky_kind(kind) if isinstance(kind, str) else _sticky_of(kind)


@lru_cache(maxsize=64)
def _sticky_kind(kind: str) -> bool | None:
    # A fleet's queues name the same two or three kinds: each spelling is resolved once.
    return _sticky_of(kind)


def _sticky_of(kind: Any) -> bool | None:
    canonical = _TASK_QUEUE_KIND(kind)
    return None if canonical is None else canonical == "TASK_QUEUE_KIND_STICKY"


def _started(entities: Entities) -> dict[str, Any]:
    picks = entities.last(entities.mask(_of_stages("Started")))
    return {
        "started_event_id": entities.ids(picks),
        "started_time": entities.times(picks),
        "history_size_bytes": entities.read(picks, to_int, "historySizeBytes"),
    }


def _closed(entities: Entities) -> dict[str, Any]:
    closing = entities.mask(_of_stages("Completed", "Failed", "TimedOut"))
    picks = entities.last(closing)
    failed = entities.mask(_of_stages("Failed"))
    failed_picks = entities.last(failed)
    timed_out = entities.last(entities.mask(_of_stages("TimedOut")))
    started = entities.mask(_of_stages("Started"))
    # Failures: the frame's columns first; pre-1.0 dialects keep the message in ``details``.
    messages, types = unzip(entities.read(failed_picks, _failure, "failure", "details"), 2)
    cause = entities.column_or_attribute("cause", "cause", rows=failed, convert=_FAILED_CAUSE)
    return {
        "closed_event_id": entities.ids(picks),
        "closed_time": entities.times(picks),
        "outcome": np.array(
            [_OUTCOMES[_STAGE_OF[kind]] if kind is not None else "pending"
             for kind in entities.take(entities.event_type, picks)],
            dtype=object,
        ),
        # The worker that picked the task up, else the one that closed it.
        "identity": entities.overwrite_then_fill(
            started,
            entities.column_or_attribute("identity", "identity", rows=started),
            closing,
            entities.column_or_attribute("identity", "identity", rows=closing),
        ),
        "binary_checksum": entities.read(picks, _or_none, "binaryChecksum"),
        "build_id": entities.read(picks, _build_id, *_BUILD_ID_FIELDS),
        "cause": entities.take(cause, failed_picks),
        "failure_message": first_present_of(entities.pick("failure_message", failed_picks),
                                            messages),
        "failure_type": first_present_of(entities.pick("failure_type", failed_picks), types),
        "timeout_type": entities.read(timed_out, _TIMEOUT_TYPE, "timeoutType"),
        **_sdk_metadata(entities),
    }


def _or_none(value: Any) -> Any:
    return value or None


def _failure(failure: Any, details: Any) -> tuple[Any, Any]:
    message, failure_type = failure_of({"failure": failure})
    return first_present(message, details), failure_type


def _sdk_metadata(entities: Entities) -> dict[str, np.ndarray]:
    """``sdkMetadata`` of the last completion that carries one (SDKs send it on change)."""
    completed = entities.mask(_of_stages("Completed"))
    rows = np.flatnonzero(completed)
    carries = np.zeros(len(completed), dtype=bool)
    metadata = entities.fields["sdkMetadata"]
    carries[rows] = [isinstance(metadata[row], Mapping) for row in rows.tolist()]
    picks = entities.last(carries)
    values = entities.read(picks, _sdk_values, "sdkMetadata")
    return dict(zip(_SDK_COLUMNS, unzip(values, len(_SDK_COLUMNS)), strict=True))


def _sdk_values(metadata: Mapping[str, Any]) -> tuple[Any, ...]:
    """The ``_SDK_COLUMNS`` of one ``sdkMetadata``."""
    return (
        metadata.get("sdkName") or None,
        metadata.get("sdkVersion") or None,
        _flags(metadata.get("coreUsedFlags")),
        _flags(metadata.get("langUsedFlags")),
    )


def _commands(events: pd.DataFrame, columns: dict[str, Any]) -> np.ndarray:
    """Per task: the event types of the commands its completion recorded, in history order.

    Command events name the task by its ordinal (the events frame's ``workflow_task``); a task
    that did not complete produced none.
    """
    rows = np.flatnonzero(events["is_command"].fillna(False).astype(bool).to_numpy())
    commands = FrameRows(events, rows)
    task = plain_column(commands, "workflow_task")
    named = np.not_equal(task, None)
    count = len(columns["outcome"])
    # Tasks and commands coded together by (source, history, ordinal): tasks first.
    codes = joint_codes(*(
        np.concatenate([np.asarray(columns[name], dtype=object), values[named]])
        for name, values in (
            ("source", plain_column(commands, "source")),
            ("history", plain_column(commands, "history")),
            ("workflow_task", task),
        )
    ))
    kinds = plain_column(commands, "event_type")[named]
    produced: dict[int, list[Any]] = {}
    for code, kind in zip(codes[count:].tolist(), kinds.tolist(), strict=True):
        produced.setdefault(code, []).append(kind)
    completed = columns["outcome"] == "completed"
    return np.fromiter(
        (produced.get(code, []) if done else [] for code, done in
         zip(codes[:count].tolist(), completed.tolist(), strict=True)),
        dtype=object,
        count=count,
    )


def _flags(values: Any) -> list[int] | None:
    if not isinstance(values, list):
        return None
    return [flag for flag in (to_int(v) for v in values) if flag is not None]


#: Where each server version put the worker's build id.
_BUILD_ID_FIELDS = ("workerVersion", "deploymentVersion", "deployment", "workerDeploymentVersion")


def _build_id(
    worker_version: Any, deployment_version: Any, deployment: Any, worker_deployment_version: Any
) -> str | None:
    """The worker's build id, wherever this history's server version put it."""
    return first_present(
        dig(worker_version, "buildId"),
        dig(deployment_version, "buildId"),
        dig(deployment, "buildId"),
        worker_deployment_version,
    )
