"""``signals(events)`` and ``updates(events)``: messages into (and signals out of) a workflow.

Update rejections by a validator never reach a history (the server drops the speculative task),
so ``rejected`` rows appear only for histories that do hold ``WorkflowExecutionUpdateRejected``
events; ``WorkflowExecutionUpdateAdmitted`` likewise appears only after resets and replication.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from temporalio.api.enums.v1 import SignalExternalWorkflowExecutionFailedCause

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

__all__ = ["SIGNAL_COLUMNS", "UPDATE_COLUMNS", "signals", "updates"]

_SIGNAL_READ = (
    "source", "history", "workflow_id", "run_id", "event_id", "event_time", "event_type",
    "workflow_task", "signal_name", "initiated_event_id", "identity", "cause", "input",
    "attributes",
)
_SENT_CLOSE = {
    "ExternalWorkflowExecutionSignaled": "signaled",
    "SignalExternalWorkflowExecutionFailed": "failed",
}

#: Column -> dtype of the signals table.
SIGNAL_COLUMNS: dict[str, str] = {
    "source": "object", "history": "Int64", "workflow_id": "object", "run_id": "object",
    "direction": "object", "signal_name": "object", "event_id": "Int64", "event_time": "datetime",
    "workflow_task": "Int64", "outcome": "object", "closed_event_id": "Int64",
    "closed_time": "datetime", "cause": "object", "identity": "object",
    "target_workflow_id": "object", "target_run_id": "object", "input": "object",
}


def signals(events: pd.DataFrame) -> pd.DataFrame:
    """One row per signal received (``WorkflowExecutionSignaled``) or sent to another workflow.

    Parameters
    ----------
    events
        The events frame of :func:`toolkit.read_history` (one or many histories).

    Returns
    -------
    pandas.DataFrame
        Sorted by (source, history, event_id), with these columns:

        ===================  ==============  =====================================================
        column               dtype           meaning
        ===================  ==============  =====================================================
        source, history      object, Int64   which history (as in the events frame)
        workflow_id, run_id  object          the workflow run
        direction            object          ``received`` or ``sent``
        signal_name          object          the signal's name
        event_id             Int64           signaled event, or the sent signal's initiated event
        event_time           datetime64 UTC  its time
        workflow_task        Int64           received: the task that delivered it to the code;
                                             sent: the task whose command sent it
        outcome              object          received: ``received``; sent: ``signaled``,
                                             ``failed`` or ``pending``
        closed_event_id      Int64           sent: ``ExternalWorkflowExecutionSignaled`` or
                                             ``SignalExternalWorkflowExecutionFailed``
        closed_time          datetime64 UTC  sent: its time
        cause                object          sent and failed: the failure cause enum
        identity             object          received: the sender's identity
        target_workflow_id   object          sent: the workflow signaled
        target_run_id        object          sent: its run, when given
        input                object          decoded signal arguments (list)
        ===================  ==============  =====================================================

    Raises
    ------
    HistoryFormatError
        When ``events`` is not an events frame.
    """
    check_events(events, ("signal_name", "initiated_event_id"), "signals")
    records: dict[tuple[HistoryKey, int | None], dict[str, Any]] = {}
    types = ("WorkflowExecutionSignaled", "SignalExternalWorkflowExecutionInitiated", *_SENT_CLOSE)
    for event in event_rows(events, types, _SIGNAL_READ):
        attributes = event.attributes
        received = event.event_type == "WorkflowExecutionSignaled"
        opens = received or event.event_type == "SignalExternalWorkflowExecutionInitiated"
        key_id = event.event_id if opens else first_present(
            to_int(nullable(event.initiated_event_id)),
            to_int(attr(attributes, "initiatedEventId")),
        )
        key = (HistoryKey(event.source, event.history), key_id)
        record = records.get(key)
        if record is None:
            record = records[key] = dict.fromkeys(SIGNAL_COLUMNS)
            record.update(history_fields(event), event_id=key_id, direction="sent",
                          outcome="pending")
        record["signal_name"] = first_present(
            record["signal_name"], nullable(event.signal_name), attr(attributes, "signalName"),
        )
        record["target_workflow_id"] = first_present(
            record["target_workflow_id"], attr(attributes, "workflowExecution", "workflowId"),
        ) if not received else None
        record["target_run_id"] = first_present(
            record["target_run_id"], attr(attributes, "workflowExecution", "runId"),
        ) if not received else None
        if opens:
            record["event_time"] = nullable(event.event_time)
            record["workflow_task"] = nullable(event.workflow_task)
            record["input"] = nullable(event.input)
        if received:
            record.update(direction="received", outcome="received")
            record["identity"] = first_present(nullable(event.identity),
                                               attr(attributes, "identity"))
        elif not opens:
            record["outcome"] = _SENT_CLOSE[event.event_type]
            record["closed_event_id"] = event.event_id
            record["closed_time"] = nullable(event.event_time)
            record["cause"] = first_present(nullable(event.cause), canonical(
                SignalExternalWorkflowExecutionFailedCause, attr(attributes, "cause"),
                "SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_CAUSE_",
            ))
    return build_frame(records.values(), SIGNAL_COLUMNS, ("source", "history", "event_id"))


_UPDATE_STAGES = {
    "WorkflowExecutionUpdateAdmitted": "admitted",
    "WorkflowExecutionUpdateAccepted": "accepted",
    "WorkflowExecutionUpdateRejected": "rejected",
    "WorkflowExecutionUpdateCompleted": "completed",
}
_UPDATE_READ = (
    "source", "history", "workflow_id", "run_id", "event_id", "event_time", "event_type",
    "workflow_task", "update_id", "update_name", "failure_message", "failure_type", "input",
    "result", "attributes",
)

#: Column -> dtype of the updates table.
UPDATE_COLUMNS: dict[str, str] = {
    "source": "object", "history": "Int64", "workflow_id": "object", "run_id": "object",
    "update_id": "object", "update_name": "object", "outcome": "object",
    "workflow_task": "Int64",
    "admitted_event_id": "Int64", "accepted_event_id": "Int64", "rejected_event_id": "Int64",
    "completed_event_id": "Int64",
    "admitted_time": "datetime", "accepted_time": "datetime", "rejected_time": "datetime",
    "completed_time": "datetime",
    "failure_message": "object", "failure_type": "object", "identity": "object",
    "duration": "timedelta", "input": "object", "result": "object",
}


def updates(events: pd.DataFrame) -> pd.DataFrame:
    """One row per workflow update: admitted, accepted, rejected and completed events joined.

    Events are joined on the update id (``protocolInstanceId`` / ``meta.updateId``); events with
    no id at all get a row of their own.

    Parameters
    ----------
    events
        The events frame of :func:`toolkit.read_history` (one or many histories).

    Returns
    -------
    pandas.DataFrame
        Sorted by (source, history, first event id of the update), with these columns:

        =================================  ==============  ======================================
        column                             dtype           meaning
        =================================  ==============  ======================================
        source, history                    object, Int64   which history
        workflow_id, run_id                object          the workflow run
        update_id, update_name             object          the update
        outcome                            object          ``completed`` (success), ``failed``
                                                           (completed with a failure),
                                                           ``rejected``, ``accepted`` (not yet
                                                           completed) or ``admitted``
        workflow_task                      Int64           the task whose completion accepted
                                                           or rejected it
        admitted_event_id ... completed_   Int64           the four events, when present
        event_id
        admitted_time ... completed_time   datetime64 UTC  their times
        failure_message, failure_type      object          rejection or completion failure
        identity                           object          the caller's identity
        duration                           timedelta       completed - accepted
        input                              object          decoded update arguments (list)
        result                             object          decoded success value (list)
        =================================  ==============  ======================================

    Raises
    ------
    HistoryFormatError
        When ``events`` is not an events frame.
    """
    check_events(events, ("update_id", "update_name"), "updates")
    records: dict[tuple[HistoryKey, Any], dict[str, Any]] = {}
    for event in event_rows(events, _UPDATE_STAGES, _UPDATE_READ):
        attributes = event.attributes
        stage = _UPDATE_STAGES[event.event_type]
        update_id = first_present(nullable(event.update_id), _update_id(attributes))
        key = (HistoryKey(event.source, event.history),
               update_id if update_id is not None else ("event", event.event_id))
        record = records.get(key)
        if record is None:
            record = records[key] = dict.fromkeys(UPDATE_COLUMNS)
            record.update(history_fields(event), update_id=update_id, first=event.event_id)
        request = first_present(attr(attributes, "acceptedRequest"),
                                attr(attributes, "rejectedRequest"), attr(attributes, "request"))
        record["update_name"] = first_present(
            record["update_name"], nullable(event.update_name), attr(request, "input", "name"),
        )
        record["identity"] = first_present(record["identity"], attr(request, "meta", "identity"))
        record["input"] = first_present(record["input"], nullable(event.input))
        record[f"{stage}_event_id"] = event.event_id
        record[f"{stage}_time"] = nullable(event.event_time)
        if stage in ("accepted", "rejected"):
            record["workflow_task"] = nullable(event.workflow_task)
        if stage == "rejected" or stage == "completed":
            message, failure_type = failure_of(
                attributes if stage == "rejected" else attr(attributes, "outcome")
            )
            record["failure_message"] = first_present(nullable(event.failure_message), message)
            record["failure_type"] = first_present(nullable(event.failure_type), failure_type)
        if stage == "completed":
            record["result"] = nullable(event.result)
        record["outcome"] = _update_outcome(record)
    frame = build_frame(
        sorted(records.values(), key=lambda r: r["first"]), UPDATE_COLUMNS, ("source", "history"),
    )
    frame["duration"] = frame["completed_time"] - frame["accepted_time"]
    return frame


def _update_id(attributes: Any) -> str | None:
    return first_present(
        attr(attributes, "protocolInstanceId"),
        attr(attributes, "meta", "updateId"),
        attr(attributes, "acceptedRequest", "meta", "updateId"),
        attr(attributes, "rejectedRequest", "meta", "updateId"),
        attr(attributes, "request", "meta", "updateId"),
    )


def _update_outcome(record: dict[str, Any]) -> str:
    if record["completed_event_id"] is not None:
        return "failed" if record["failure_message"] or record["failure_type"] else "completed"
    if record["rejected_event_id"] is not None:
        return "rejected"
    if record["accepted_event_id"] is not None:
        return "accepted"
    return "admitted"
