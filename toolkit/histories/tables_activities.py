"""``activities(events)``: one row per activity execution (per ``ActivityTaskScheduled``)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from temporalio.api.enums.v1 import RetryState, TimeoutType

from toolkit.histories.tables_common import (
    HistoryKey,
    attr,
    build_frame,
    canonical,
    check_events,
    duration,
    event_rows,
    failure_of,
    first_present,
    history_fields,
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
_EVENT_TYPES = (
    "ActivityTaskScheduled",
    "ActivityTaskStarted",
    "ActivityTaskCancelRequested",
    *_CLOSE_OUTCOMES,
)
_READ = (
    "source",
    "history",
    "workflow_id",
    "run_id",
    "event_id",
    "event_time",
    "event_type",
    "workflow_task",
    "activity_id",
    "activity_type",
    "task_queue",
    "scheduled_event_id",
    "attempt",
    "identity",
    "failure_message",
    "failure_type",
    "retry_state",
    "input",
    "result",
    "attributes",
)

#: Column -> dtype of the activities table.
ACTIVITY_COLUMNS: dict[str, str] = {
    "source": "object",
    "history": "Int64",
    "workflow_id": "object",
    "run_id": "object",
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
    check_events(events, ("scheduled_event_id", "activity_type"), "activities")
    records: dict[tuple[HistoryKey, int | None], dict[str, Any]] = {}
    for event in event_rows(events, _EVENT_TYPES, _READ):
        key_id = (
            event.event_id
            if event.event_type == "ActivityTaskScheduled"
            else _linked_scheduled_id(event)
        )
        key = (HistoryKey(event.source, event.history), key_id)
        record = records.get(key)
        if record is None:
            record = records[key] = _new_record(event, key_id)
        _apply(record, event)
    frame = build_frame(
        records.values(),
        ACTIVITY_COLUMNS,
        ("source", "history", "scheduled_event_id"),
    )
    frame["queue_duration"] = frame["started_time"] - frame["scheduled_time"]
    frame["run_duration"] = frame["closed_time"] - frame["started_time"]
    frame["total_duration"] = frame["closed_time"] - frame["scheduled_time"]
    return frame


def _linked_scheduled_id(event: Any) -> int | None:
    return to_int(nullable(event.scheduled_event_id)) or to_int(
        attr(event.attributes, "scheduledEventId")
    )


def _new_record(event: Any, scheduled_event_id: int | None) -> dict[str, Any]:
    record: dict[str, Any] = dict.fromkeys(ACTIVITY_COLUMNS)
    record.update(history_fields(event))
    record["scheduled_event_id"] = scheduled_event_id
    record["outcome"] = "pending"
    record["cancel_requested"] = False
    return record


def _apply(record: dict[str, Any], event: Any) -> None:
    attributes = event.attributes
    kind = event.event_type
    # Type and id are copied onto every activity event by the loader; the first one seen wins.
    record["activity_id"] = first_present(
        record["activity_id"],
        nullable(event.activity_id),
        attr(attributes, "activityId"),
    )
    record["activity_type"] = first_present(
        record["activity_type"],
        nullable(event.activity_type),
        attr(attributes, "activityType", "name"),
    )
    if kind == "ActivityTaskScheduled":
        record["scheduled_time"] = nullable(event.event_time)
        record["workflow_task"] = nullable(event.workflow_task)
        record["task_queue"] = first_present(
            nullable(event.task_queue),
            attr(attributes, "taskQueue", "name"),
        )
        record["input"] = nullable(event.input)
        record["start_to_close_timeout"] = duration(attr(attributes, "startToCloseTimeout"))
        record["schedule_to_close_timeout"] = duration(attr(attributes, "scheduleToCloseTimeout"))
        record["heartbeat_timeout"] = duration(attr(attributes, "heartbeatTimeout"))
        record["maximum_attempts"] = to_int(attr(attributes, "retryPolicy", "maximumAttempts"))
    elif kind == "ActivityTaskStarted":
        record["started_event_id"] = event.event_id
        record["started_time"] = nullable(event.event_time)
        record["attempt"] = first_present(
            nullable(event.attempt),
            to_int(attr(attributes, "attempt")),
        )
        record["identity"] = first_present(nullable(event.identity), attr(attributes, "identity"))
        record["last_failure_message"] = attr(attributes, "lastFailure", "message")
    elif kind == "ActivityTaskCancelRequested":
        record["cancel_requested"] = True
    else:
        _apply_close(record, event)


def _apply_close(record: dict[str, Any], event: Any) -> None:
    attributes = event.attributes
    record["outcome"] = _CLOSE_OUTCOMES[event.event_type]
    record["closed_event_id"] = event.event_id
    record["closed_time"] = nullable(event.event_time)
    message, failure_type = failure_of(attributes)
    record["failure_message"] = first_present(
        nullable(event.failure_message),
        message,
        attr(attributes, "reason"),  # pre-1.0 dialects: reason/details instead of a failure
    )
    record["failure_type"] = first_present(nullable(event.failure_type), failure_type)
    record["retry_state"] = first_present(
        nullable(event.retry_state),
        canonical(RetryState, attr(attributes, "retryState"), "RETRY_STATE_"),
    )
    record["timeout_type"] = canonical(
        TimeoutType,
        first_present(
            attr(attributes, "failure", "timeoutFailureInfo", "timeoutType"),
            attr(attributes, "failure", "cause", "timeoutFailureInfo", "timeoutType"),
            attr(attributes, "timeoutType"),
        ),
        "TIMEOUT_TYPE_",
    )
    record["result"] = nullable(event.result)
    if record["identity"] is None:
        record["identity"] = first_present(nullable(event.identity), attr(attributes, "identity"))
