"""``activities(events)``: one row per activity execution (per ``ActivityTaskScheduled``)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from temporalio.api.enums.v1 import TimeoutType

from toolkit.histories.tables.build import (
    RETRY_STATE,
    EntityJoin,
    Record,
    canonical_of,
    close,
    column_or_attribute,
    entity_table,
    fill_once,
    record_failure,
    stamp,
)
from toolkit.histories.tables.common import (
    HISTORY_SCHEMA,
    attr,
    duration,
    first_present,
    nullable,
    to_int,
)

__all__ = ["ACTIVITY_COLUMNS", "activities"]

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

_JOIN = EntityJoin(
    table="activities",
    schema=ACTIVITY_COLUMNS,
    key_column="scheduled_event_id",
    opening=("ActivityTaskScheduled",),
    others=("ActivityTaskStarted", "ActivityTaskCancelRequested", *_CLOSE_OUTCOMES),
    link="scheduled_event_id",
    reads=(
        "activity_id", "activity_type", "task_queue", "scheduled_event_id", "attempt", "identity",
        "failure_message", "failure_type", "retry_state", "input", "result",
    ),
    requires=("scheduled_event_id", "activity_type"),
    starts={"outcome": "pending", "cancel_requested": False},
    durations={
        "queue_duration": ("scheduled_time", "started_time"),
        "run_duration": ("started_time", "closed_time"),
        "total_duration": ("scheduled_time", "closed_time"),
    },
)


def activities(events: pd.DataFrame) -> pd.DataFrame:
    """One row per activity execution: scheduled, started and closed events joined.

    Rows are keyed by the ``ActivityTaskScheduled`` event; an execution covers every retry
    attempt (the server records one started event, for the last attempt, when the activity
    closes). Started or closed events whose scheduled event is absent (a partial history) still
    get a row, with the scheduled fields empty. Works on frames holding many histories.

    Parameters
    ----------
    events
        The events frame of :func:`toolkit.read_history` (one or many histories).

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
    return entity_table(events, _JOIN, _apply)


def _apply(record: Record, event: Any) -> None:
    # Type and id are copied onto every activity event by the loader; the first one seen wins.
    fill_once(record, event, "activity_id", "activityId")
    fill_once(record, event, "activity_type", "activityType", "name")
    kind = event.event_type
    if kind == "ActivityTaskScheduled":
        _scheduled(record, event)
    elif kind == "ActivityTaskStarted":
        stamp(record, "started", event)
        record["attempt"] = column_or_attribute(event, "attempt", "attempt", convert=to_int)
        record["identity"] = column_or_attribute(event, "identity", "identity")
        record["last_failure_message"] = attr(event.attributes, "lastFailure", "message")
    elif kind == "ActivityTaskCancelRequested":
        record["cancel_requested"] = True
    else:
        _closed(record, event)


def _scheduled(record: Record, event: Any) -> None:
    attributes = event.attributes
    stamp(record, "scheduled", event)
    record["workflow_task"] = nullable(event.workflow_task)
    record["task_queue"] = column_or_attribute(event, "task_queue", "taskQueue", "name")
    record["input"] = nullable(event.input)
    record["start_to_close_timeout"] = duration(attr(attributes, "startToCloseTimeout"))
    record["schedule_to_close_timeout"] = duration(attr(attributes, "scheduleToCloseTimeout"))
    record["heartbeat_timeout"] = duration(attr(attributes, "heartbeatTimeout"))
    record["maximum_attempts"] = to_int(attr(attributes, "retryPolicy", "maximumAttempts"))


def _closed(record: Record, event: Any) -> None:
    attributes = event.attributes
    close(record, event, _CLOSE_OUTCOMES[event.event_type])
    # Pre-1.0 dialects: reason/details instead of a failure.
    record_failure(record, event, fallback=attr(attributes, "reason"))
    record["retry_state"] = column_or_attribute(event, "retry_state", "retryState",
                                                convert=RETRY_STATE)
    record["timeout_type"] = _TIMEOUT_TYPE(first_present(
        attr(attributes, "failure", "timeoutFailureInfo", "timeoutType"),
        attr(attributes, "failure", "cause", "timeoutFailureInfo", "timeoutType"),
        attr(attributes, "timeoutType"),
    ))
    record["result"] = nullable(event.result)
    fill_once(record, event, "identity", "identity")
