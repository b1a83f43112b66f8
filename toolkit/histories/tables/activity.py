"""``activities(events)``: one row per activity execution (per ``ActivityTaskScheduled``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from temporalio.api.enums.v1 import TimeoutType

from toolkit.histories.tables.attribute_views import dig
from toolkit.histories.tables.build import RETRY_STATE, add_durations, canonical_of
from toolkit.histories.tables.columnar import (
    Entities,
    cached_duration,
    first_present_of,
    group_entities,
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

__all__ = ["ACTIVITY_COLUMNS", "activities"]

_SCHEDULED = "ActivityTaskScheduled"
_STARTED = "ActivityTaskStarted"
_CANCEL_REQUESTED = "ActivityTaskCancelRequested"
_CLOSE_OUTCOMES = {
    "ActivityTaskCompleted": "completed",
    "ActivityTaskFailed": "failed",
    "ActivityTaskTimedOut": "timed_out",
    "ActivityTaskCanceled": "canceled",
}
_TIMEOUT_TYPE = canonical_of(TimeoutType)

#: Column -> dtype of the activities table.
ACTIVITY_COLUMNS: dict[str, str] = {
    **HISTORY_SCHEMA,
    "activity_id": "object",
    "activity_type": "object",
    "task_queue": "object",
    "workflow_task": "Int64",
    "scheduled_event_id": "Int64",
    "started_event_id": "Int64",
    "closed_event_id": "Int64",
    "scheduled_time": "datetime",
    "started_time": "datetime",
    "closed_time": "datetime",
    "attempt": "Int64",
    "outcome": "object",
    "failure_message": "object",
    "failure_type": "object",
    "retry_state": "object",
    "timeout_type": "object",
    "last_failure_message": "object",
    "cancel_requested": "boolean",
    "queue_duration": "timedelta",
    "run_duration": "timedelta",
    "total_duration": "timedelta",
    "identity": "object",
    "start_to_close_timeout": "timedelta",
    "schedule_to_close_timeout": "timedelta",
    "heartbeat_timeout": "timedelta",
    "maximum_attempts": "Int64",
    "input": "object",
    "result": "object",
}

#: Attribute fields decoded for every event at once: those without a column, and
#: ``retryState``, whose column the loader leaves empty on most closing events (it has none).
#: The other fallbacks of columns (``activityId`` ...) are decoded only where a column is empty.
_FIELDS = (
    "startToCloseTimeout", "scheduleToCloseTimeout", "heartbeatTimeout", "retryPolicy",
    "lastFailure", "failure", "reason", "timeoutType", "retryState",
)
_DURATIONS = {
    "queue_duration": ("scheduled_time", "started_time"),
    "run_duration": ("started_time", "closed_time"),
    "total_duration": ("scheduled_time", "closed_time"),
}


def activities(events: pd.DataFrame, *, payload_cells: bool = False) -> pd.DataFrame:
    """One row per activity execution: scheduled, started and closed events joined.

    Rows are keyed by the ``ActivityTaskScheduled`` event; an execution covers every retry
    attempt (the server records one started event, for the last attempt, when the activity
    closes). Started or closed events whose scheduled event is absent (a partial history) still
    get a row, with the scheduled fields empty. Works on frames holding many histories.

    Parameters
    ----------
    events
        The events frame of :func:`toolkit.read_history` (one or many histories).
    payload_cells
        Keep ``input``/``result`` as the events frame's payload cells, decoded on first use,
        instead of lists of values (faster when few are read: the dataset writer writes their
        JSON text straight from the source's bytes).

    Returns
    -------
    pandas.DataFrame
        Sorted by (source, history, scheduled_event_id), with these columns:

        ==========================  ===============  ============================================
        column                      dtype            meaning
        ==========================  ===============  ============================================
        source, history             object, Int64    which history (as in the events frame)
        workflow_id, run_id         object           the workflow run
        activity_id, activity_type  object           from the scheduled event
        task_queue                  object           task queue the activity was scheduled on
        workflow_task               Int64            ordinal of the workflow task that scheduled it
        scheduled_event_id          Int64            the ``ActivityTaskScheduled`` event
        started_event_id            Int64            the ``ActivityTaskStarted`` event, if any
        closed_event_id             Int64            completed/failed/timed-out/canceled event
        scheduled_time              datetime64 UTC   time of the scheduled event
        started_time                datetime64 UTC   time of the started event (last attempt)
        closed_time                 datetime64 UTC   time of the closing event
        attempt                     Int64            attempt of the started event; NA while a
                                                     retried activity is pending (the server
                                                     writes the started event only on close)
        outcome                     object           ``completed``, ``failed``, ``timed_out``,
                                                     ``canceled`` or ``pending``
        failure_message             object           message of the closing failure
        failure_type                object           application failure type or failure kind
        retry_state                 object           e.g. ``RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED``
        timeout_type                object           e.g. ``TIMEOUT_TYPE_START_TO_CLOSE``
        last_failure_message        object           failure of the previous attempt (started)
        cancel_requested            boolean          the workflow asked to cancel it
        queue_duration              timedelta        started - scheduled (for a retried
                                                     activity this spans the earlier attempts)
        run_duration                timedelta        closed - started
        total_duration              timedelta        closed - scheduled
        identity                    object           worker that ran the last attempt
        start_to_close_timeout      timedelta        as scheduled
        schedule_to_close_timeout   timedelta        as scheduled
        heartbeat_timeout           timedelta        as scheduled
        maximum_attempts            Int64            retry policy (0 means unlimited)
        input, result               object           decoded payloads (lists of values)
        ==========================  ===============  ============================================

    Raises
    ------
    HistoryFormatError
        When ``events`` is not an events frame.
    """
    check_events(events, ("scheduled_event_id", "activity_type"), "activities")
    entities = group_entities(
        events,
        opening=(_SCHEDULED,),
        others=(_STARTED, _CANCEL_REQUESTED, *_CLOSE_OUTCOMES),
        link="scheduled_event_id",
        fields=_FIELDS,
    )
    entities.payload_cells = payload_cells
    columns = {
        **_identity(entities),
        **_scheduled(entities),
        **_started(entities),
        **_closed(entities),
        "cancel_requested": entities.first(entities.mask((_CANCEL_REQUESTED,))) >= 0,
        **dict.fromkeys(_DURATIONS, np.full(entities.count, None, dtype=object)),  # derived below
    }
    frame = frame_of_columns(columns, ACTIVITY_COLUMNS, ("source", "history", "scheduled_event_id"))
    add_durations(frame, _DURATIONS)
    return frame


def _identity(entities: Entities) -> dict[str, Any]:
    """Which history and activity: from the first event, and the first id and type seen."""
    first = entities.first()
    columns = entities.history_columns(first)
    # The loader copies id and type onto every activity event; the first one seen wins.
    columns["activity_id"] = entities.first_value(
        entities.column_or_attribute("activity_id", "activityId")
    )
    columns["activity_type"] = entities.first_value(
        entities.column_or_attribute("activity_type", "activityType", "name")
    )
    columns["scheduled_event_id"] = entities.key
    return columns


def _scheduled(entities: Entities) -> dict[str, Any]:
    stage = entities.mask((_SCHEDULED,))
    picks = entities.last(stage)
    task_queue = entities.column_or_attribute("task_queue", "taskQueue", "name", rows=stage)

    def timeout(name: str) -> Any:
        return entities.read(picks, cached_duration, name)

    return {
        "scheduled_time": entities.times(picks),
        "workflow_task": entities.pick("workflow_task", picks),
        "task_queue": entities.take(task_queue, picks),
        "input": entities.payloads("input", picks),
        "start_to_close_timeout": timeout("startToCloseTimeout"),
        "schedule_to_close_timeout": timeout("scheduleToCloseTimeout"),
        "heartbeat_timeout": timeout("heartbeatTimeout"),
        "maximum_attempts": entities.read(
            picks, lambda policy: to_int(dig(policy, "maximumAttempts")), "retryPolicy"
        ),
    }


def _started(entities: Entities) -> dict[str, Any]:
    stage = entities.mask((_STARTED,))
    picks = entities.last(stage)
    attempt = entities.column_or_attribute("attempt", "attempt", rows=stage, convert=to_int)
    return {
        "started_event_id": entities.ids(picks),
        "started_time": entities.times(picks),
        "attempt": entities.take(attempt, picks),
        "last_failure_message": entities.read(
            picks, lambda failure: dig(failure, "message"), "lastFailure"
        ),
    }


def _closed(entities: Entities) -> dict[str, Any]:
    stage = entities.mask(_CLOSE_OUTCOMES)
    picks = entities.last(stage)
    outcome = entities.take(entities.event_type, picks)
    outcome = np.array([_CLOSE_OUTCOMES.get(kind, "pending") for kind in outcome], dtype=object)
    failures = entities.read(picks, _failure, "failure", "reason")
    messages, types = unzip(failures, 2)
    retry_state = entities.column_or_attribute(
        "retry_state", "retryState", rows=stage, convert=RETRY_STATE
    )
    # The started event names the worker of the last attempt; else the closing event does.
    identity = entities.overwrite_then_fill(
        entities.mask((_STARTED,)),
        entities.column_or_attribute("identity", "identity", rows=entities.mask((_STARTED,))),
        stage,
        entities.column_or_attribute("identity", "identity", rows=stage),
    )
    return {
        "closed_event_id": entities.ids(picks),
        "closed_time": entities.times(picks),
        "outcome": outcome,
        # The frame's failure columns first, as record_failure reads them.
        "failure_message": first_present_of(entities.pick("failure_message", picks), messages),
        "failure_type": first_present_of(entities.pick("failure_type", picks), types),
        "retry_state": entities.take(retry_state, picks),
        "timeout_type": entities.read(picks, _timeout_type, "failure", "timeoutType"),
        "result": entities.payloads("result", picks),
        "identity": identity,
    }


def _failure(failure: Any, reason: Any) -> tuple[Any, Any]:
    """(message, type) of the closing failure; pre-1.0 dialects: ``reason`` as the message."""
    message, failure_type = failure_of({"failure": failure})
    return first_present(message, reason), failure_type


def _timeout_type(failure: Any, timeout_type: Any) -> str | None:
    return _TIMEOUT_TYPE(first_present(
        dig(failure, "timeoutFailureInfo", "timeoutType"),
        dig(failure, "cause", "timeoutFailureInfo", "timeoutType"),
        timeout_type,
    ))
