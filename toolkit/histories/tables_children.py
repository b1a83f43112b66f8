"""``child_workflows(events)``: one row per child workflow the parent initiated."""

from __future__ import annotations

from typing import Any

import pandas as pd
from temporalio.api.enums.v1 import (
    ParentClosePolicy,
    RetryState,
    StartChildWorkflowExecutionFailedCause,
)

from toolkit.histories.tables_common import (
    HistoryKey,
    attr,
    build_frame,
    canonical,
    check_events,
    event_rows,
    failure_of,
    first_present,
    history_fields,
    nullable,
    to_int,
)

__all__ = ["CHILD_WORKFLOW_COLUMNS", "child_workflows"]

_CLOSE_OUTCOMES = {
    "ChildWorkflowExecutionCompleted": "completed",
    "ChildWorkflowExecutionFailed": "failed",
    "ChildWorkflowExecutionCanceled": "canceled",
    "ChildWorkflowExecutionTimedOut": "timed_out",
    "ChildWorkflowExecutionTerminated": "terminated",
    "StartChildWorkflowExecutionFailed": "start_failed",
}
_EVENT_TYPES = (
    "StartChildWorkflowExecutionInitiated", "ChildWorkflowExecutionStarted", *_CLOSE_OUTCOMES,
)
_READ = (
    "source", "history", "workflow_id", "run_id", "event_id", "event_time", "event_type",
    "workflow_task", "child_workflow_id", "child_workflow_type", "task_queue",
    "initiated_event_id", "failure_message", "failure_type", "retry_state", "cause", "input",
    "result", "attributes",
)

#: Column -> dtype of the child-workflows table.
CHILD_WORKFLOW_COLUMNS: dict[str, str] = {
    "source": "object", "history": "Int64", "workflow_id": "object", "run_id": "object",
    "child_workflow_id": "object", "child_run_id": "object", "child_workflow_type": "object",
    "namespace": "object", "task_queue": "object", "workflow_task": "Int64",
    "initiated_event_id": "Int64", "started_event_id": "Int64", "closed_event_id": "Int64",
    "initiated_time": "datetime", "started_time": "datetime", "closed_time": "datetime",
    "outcome": "object", "failure_message": "object", "failure_type": "object",
    "retry_state": "object", "cause": "object", "parent_close_policy": "object",
    "start_duration": "timedelta", "run_duration": "timedelta", "input": "object",
    "result": "object",
}


def child_workflows(events: pd.DataFrame) -> pd.DataFrame:
    """One row per child workflow: initiated, started and closed events joined.

    Parameters
    ----------
    events
        The events frame of :func:`toolkit.read_history` (one or many histories).

    Returns
    -------
    pandas.DataFrame
        Sorted by (source, history, initiated_event_id), with these columns:

        ========================  ==============  ================================================
        column                    dtype           meaning
        ========================  ==============  ================================================
        source, history           object, Int64   which history (as in the events frame)
        workflow_id, run_id       object          the parent run
        child_workflow_id         object          the child's workflow id
        child_run_id              object          the child's run id (from its started event)
        child_workflow_type       object          the child's workflow type
        namespace                 object          the child's namespace, as initiated
        task_queue                object          the child's task queue, as initiated
        workflow_task             Int64           the parent's task that initiated it
        initiated_event_id        Int64           ``StartChildWorkflowExecutionInitiated``
        started_event_id          Int64           ``ChildWorkflowExecutionStarted``
        closed_event_id           Int64           the closing (or start-failed) event
        initiated_time            datetime64 UTC  time of the initiated event
        started_time              datetime64 UTC  time of the started event
        closed_time               datetime64 UTC  time of the closing event
        outcome                   object          ``completed``, ``failed``, ``canceled``,
                                                  ``timed_out``, ``terminated``,
                                                  ``start_failed`` or ``pending``
        failure_message           object          the child's failure
        failure_type              object          application failure type or failure kind
        retry_state               object          e.g. ``RETRY_STATE_RETRY_POLICY_NOT_SET``
        cause                     object          start failed: e.g. ``..._WORKFLOW_ALREADY_EXISTS``
        parent_close_policy       object          e.g. ``PARENT_CLOSE_POLICY_TERMINATE``
        start_duration            timedelta       started - initiated
        run_duration              timedelta       closed - started
        input                     object          decoded child input (list)
        result                    object          decoded child result (list)
        ========================  ==============  ================================================

    Raises
    ------
    HistoryFormatError
        When ``events`` is not an events frame.
    """
    check_events(events, ("initiated_event_id", "child_workflow_id"), "child_workflows")
    records: dict[tuple[HistoryKey, int | None], dict[str, Any]] = {}
    for event in event_rows(events, _EVENT_TYPES, _READ):
        attributes = event.attributes
        opens = event.event_type == "StartChildWorkflowExecutionInitiated"
        key_id = event.event_id if opens else first_present(
            to_int(nullable(event.initiated_event_id)),
            to_int(attr(attributes, "initiatedEventId")),
        )
        key = (HistoryKey(event.source, event.history), key_id)
        record = records.get(key)
        if record is None:
            record = records[key] = dict.fromkeys(CHILD_WORKFLOW_COLUMNS)
            record.update(history_fields(event), initiated_event_id=key_id, outcome="pending")
        record["child_workflow_id"] = first_present(
            record["child_workflow_id"], nullable(event.child_workflow_id),
            attr(attributes, "workflowId"), attr(attributes, "workflowExecution", "workflowId"),
        )
        record["child_workflow_type"] = first_present(
            record["child_workflow_type"], nullable(event.child_workflow_type),
            attr(attributes, "workflowType", "name"),
        )
        record["child_run_id"] = first_present(
            record["child_run_id"], attr(attributes, "workflowExecution", "runId"),
        )
        if opens:
            _initiated(record, event)
        elif event.event_type == "ChildWorkflowExecutionStarted":
            record["started_event_id"] = event.event_id
            record["started_time"] = nullable(event.event_time)
        else:
            _closed(record, event)
    frame = build_frame(
        records.values(), CHILD_WORKFLOW_COLUMNS, ("source", "history", "initiated_event_id"),
    )
    frame["start_duration"] = frame["started_time"] - frame["initiated_time"]
    frame["run_duration"] = frame["closed_time"] - frame["started_time"]
    return frame


def _initiated(record: dict[str, Any], event: Any) -> None:
    attributes = event.attributes
    record["initiated_time"] = nullable(event.event_time)
    record["workflow_task"] = nullable(event.workflow_task)
    record["namespace"] = attr(attributes, "namespace") or None
    record["task_queue"] = first_present(
        nullable(event.task_queue), attr(attributes, "taskQueue", "name"),
    )
    record["parent_close_policy"] = canonical(
        ParentClosePolicy, attr(attributes, "parentClosePolicy"), "PARENT_CLOSE_POLICY_",
    )
    record["input"] = nullable(event.input)


def _closed(record: dict[str, Any], event: Any) -> None:
    attributes = event.attributes
    record["outcome"] = _CLOSE_OUTCOMES[event.event_type]
    record["closed_event_id"] = event.event_id
    record["closed_time"] = nullable(event.event_time)
    message, failure_type = failure_of(attributes)
    record["failure_message"] = first_present(nullable(event.failure_message), message)
    record["failure_type"] = first_present(nullable(event.failure_type), failure_type)
    record["retry_state"] = first_present(
        nullable(event.retry_state),
        canonical(RetryState, attr(attributes, "retryState"), "RETRY_STATE_"),
    )
    if event.event_type == "StartChildWorkflowExecutionFailed":
        record["cause"] = first_present(nullable(event.cause), canonical(
            StartChildWorkflowExecutionFailedCause, attr(attributes, "cause"),
            "START_CHILD_WORKFLOW_EXECUTION_FAILED_CAUSE_",
        ))
    record["result"] = nullable(event.result)
