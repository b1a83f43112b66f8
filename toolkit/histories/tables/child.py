"""``child_workflows(events)``: one row per child workflow the parent initiated."""

from __future__ import annotations

from typing import Any

import pandas as pd
from temporalio.api.enums.v1 import ParentClosePolicy, StartChildWorkflowExecutionFailedCause

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
from toolkit.histories.tables.common import HISTORY_SCHEMA, attr, first_present, nullable

__all__ = ["CHILD_WORKFLOW_COLUMNS", "child_workflows"]

_CLOSE_OUTCOMES = {
    "ChildWorkflowExecutionCompleted": "completed",
    "ChildWorkflowExecutionFailed": "failed",
    "ChildWorkflowExecutionCanceled": "canceled",
    "ChildWorkflowExecutionTimedOut": "timed_out",
    "ChildWorkflowExecutionTerminated": "terminated",
    "StartChildWorkflowExecutionFailed": "start_failed",
}
_PARENT_CLOSE_POLICY = canonical_of(ParentClosePolicy)
_START_FAILED_CAUSE = canonical_of(StartChildWorkflowExecutionFailedCause)

#: Column -> dtype of the child-workflows table.
CHILD_WORKFLOW_COLUMNS: dict[str, str] = {
    **HISTORY_SCHEMA,
    "child_workflow_id": "object", "child_run_id": "object", "child_workflow_type": "object",
    "namespace": "object", "task_queue": "object", "workflow_task": "Int64",
    "initiated_event_id": "Int64", "started_event_id": "Int64", "closed_event_id": "Int64",
    "initiated_time": "datetime", "started_time": "datetime", "closed_time": "datetime",
    "outcome": "object", "failure_message": "object", "failure_type": "object",
    "retry_state": "object", "cause": "object", "parent_close_policy": "object",
    "start_duration": "timedelta", "run_duration": "timedelta", "input": "object",
    "result": "object",
}

_JOIN = EntityJoin(
    table="child_workflows",
    schema=CHILD_WORKFLOW_COLUMNS,
    key_column="initiated_event_id",
    opening=("StartChildWorkflowExecutionInitiated",),
    others=("ChildWorkflowExecutionStarted", *_CLOSE_OUTCOMES),
    link="initiated_event_id",
    reads=(
        "child_workflow_id", "child_workflow_type", "task_queue", "initiated_event_id",
        "failure_message", "failure_type", "retry_state", "cause", "input", "result",
    ),
    requires=("initiated_event_id", "child_workflow_id"),
    starts={"outcome": "pending"},
    durations={
        "start_duration": ("initiated_time", "started_time"),
        "run_duration": ("started_time", "closed_time"),
    },
)


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
    return entity_table(events, _JOIN, _apply)


def _apply(record: Record, event: Any) -> None:
    attributes = event.attributes
    fill_once(record, event, "child_workflow_id", "workflowId")
    if record["child_workflow_id"] is None:  # closing events name the child's execution
        record["child_workflow_id"] = first_present(
            attr(attributes, "workflowExecution", "workflowId")
        )
    fill_once(record, event, "child_workflow_type", "workflowType", "name")
    if record["child_run_id"] is None:
        record["child_run_id"] = first_present(attr(attributes, "workflowExecution", "runId"))
    if event.event_type == "StartChildWorkflowExecutionInitiated":
        _initiated(record, event)
    elif event.event_type == "ChildWorkflowExecutionStarted":
        stamp(record, "started", event)
    else:
        _closed(record, event)


def _initiated(record: Record, event: Any) -> None:
    attributes = event.attributes
    stamp(record, "initiated", event)
    record["workflow_task"] = nullable(event.workflow_task)
    record["namespace"] = attr(attributes, "namespace") or None
    record["task_queue"] = column_or_attribute(event, "task_queue", "taskQueue", "name")
    record["parent_close_policy"] = _PARENT_CLOSE_POLICY(attr(attributes, "parentClosePolicy"))
    record["input"] = nullable(event.input)


def _closed(record: Record, event: Any) -> None:
    close(record, event, _CLOSE_OUTCOMES[event.event_type])
    record_failure(record, event)
    record["retry_state"] = column_or_attribute(
        event, "retry_state", "retryState", convert=RETRY_STATE
    )
    if event.event_type == "StartChildWorkflowExecutionFailed":
        record["cause"] = column_or_attribute(event, "cause", "cause", convert=_START_FAILED_CAUSE)
    record["result"] = nullable(event.result)
