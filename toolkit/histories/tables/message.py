"""``signals(events)`` and ``updates(events)``: messages into (and signals out of) a workflow.

Update rejections by a validator never reach a history (the server drops the speculative task),
so ``rejected`` rows appear only for histories that do hold ``WorkflowExecutionUpdateRejected``
events; ``WorkflowExecutionUpdateAdmitted`` likewise appears only after resets and replication.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from temporalio.api.enums.v1 import SignalExternalWorkflowExecutionFailedCause

from toolkit.histories.tables.build import (
    EntityJoin,
    Record,
    Records,
    add_durations,
    canonical_of,
    close,
    column_or_attribute,
    entity_table,
    fill_once,
    new_record,
    record_failure,
    stamp,
)
from toolkit.histories.tables.common import (
    EVENT_BASICS,
    HISTORY_SCHEMA,
    HistoryKey,
    attr,
    build_frame,
    check_events,
    event_rows,
    first_present,
    nullable,
)

__all__ = ["SIGNAL_COLUMNS", "UPDATE_COLUMNS", "signals", "updates"]

_SENT_CLOSE = {
    "ExternalWorkflowExecutionSignaled": "signaled",
    "SignalExternalWorkflowExecutionFailed": "failed",
}
_SIGNAL_FAILED_CAUSE = canonical_of(SignalExternalWorkflowExecutionFailedCause)

#: Column -> dtype of the signals table.
SIGNAL_COLUMNS: dict[str, str] = {
    **HISTORY_SCHEMA,
    "direction": "object", "signal_name": "object", "event_id": "Int64", "event_time": "datetime",
    "workflow_task": "Int64", "outcome": "object", "closed_event_id": "Int64",
    "closed_time": "datetime", "cause": "object", "identity": "object",
    "target_workflow_id": "object", "target_run_id": "object", "input": "object",
}

# A received signal is its own entity; a sent one is joined with the event that closes it.
_SIGNAL_JOIN = EntityJoin(
    table="signals",
    schema=SIGNAL_COLUMNS,
    key_column="event_id",
    opening=("WorkflowExecutionSignaled", "SignalExternalWorkflowExecutionInitiated"),
    others=tuple(_SENT_CLOSE),
    link="initiated_event_id",
    reads=("signal_name", "initiated_event_id", "identity", "cause", "input"),
    requires=("signal_name", "initiated_event_id"),
    starts={"direction": "sent", "outcome": "pending"},
)


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
    return entity_table(events, _SIGNAL_JOIN, _apply_signal)


def _apply_signal(record: Record, event: Any) -> None:
    fill_once(record, event, "signal_name", "signalName")
    if event.event_type == "WorkflowExecutionSignaled":
        _opened(record, event)
        record.update(
            direction="received", outcome="received", target_workflow_id=None, target_run_id=None
        )
        record["identity"] = column_or_attribute(event, "identity", "identity")
        return
    execution = attr(event.attributes, "workflowExecution")
    if record["target_workflow_id"] is None:
        record["target_workflow_id"] = first_present(attr(execution, "workflowId"))
    if record["target_run_id"] is None:
        record["target_run_id"] = first_present(attr(execution, "runId"))
    if event.event_type == "SignalExternalWorkflowExecutionInitiated":
        _opened(record, event)
    else:
        close(record, event, _SENT_CLOSE[event.event_type])
        record["cause"] = column_or_attribute(event, "cause", "cause", convert=_SIGNAL_FAILED_CAUSE)


def _opened(record: Record, event: Any) -> None:
    record["event_time"] = nullable(event.event_time)
    record["workflow_task"] = nullable(event.workflow_task)
    record["input"] = nullable(event.input)


_UPDATE_STAGES = {
    "WorkflowExecutionUpdateAdmitted": "admitted",
    "WorkflowExecutionUpdateAccepted": "accepted",
    "WorkflowExecutionUpdateRejected": "rejected",
    "WorkflowExecutionUpdateCompleted": "completed",
}
_UPDATE_READS = (
    *EVENT_BASICS, "update_id", "update_name", "failure_message", "failure_type", "input", "result",
)

#: Column -> dtype of the updates table.
UPDATE_COLUMNS: dict[str, str] = {
    **HISTORY_SCHEMA,
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
    records: Records = {}
    for event in event_rows(events, _UPDATE_STAGES, _UPDATE_READS):
        update_id = first_present(nullable(event.update_id), _update_id(event.attributes))
        key = (HistoryKey(event.source, event.history),
               update_id if update_id is not None else ("event", event.event_id))
        record = records.get(key)
        if record is None:
            record = records[key] = new_record(
                UPDATE_COLUMNS, event, update_id=update_id, first=event.event_id
            )
        _apply_update(record, event)
    for record in records.values():
        record["outcome"] = _update_outcome(record)
    frame = build_frame(
        sorted(records.values(), key=lambda r: r["first"]), UPDATE_COLUMNS, ("source", "history"),
    )
    add_durations(frame, {"duration": ("accepted_time", "completed_time")})
    return frame


def _apply_update(record: Record, event: Any) -> None:
    attributes = event.attributes
    stage = _UPDATE_STAGES[event.event_type]
    request = first_present(attr(attributes, "acceptedRequest"),
                            attr(attributes, "rejectedRequest"), attr(attributes, "request"))
    record["update_name"] = first_present(
        record["update_name"], nullable(event.update_name), attr(request, "input", "name"),
    )
    record["identity"] = first_present(record["identity"], attr(request, "meta", "identity"))
    record["input"] = first_present(record["input"], nullable(event.input))
    stamp(record, stage, event)
    if stage in ("accepted", "rejected"):
        record["workflow_task"] = nullable(event.workflow_task)
    if stage == "rejected":
        record_failure(record, event)
    elif stage == "completed":
        record_failure(record, event, holder=attr(attributes, "outcome", default={}))
        record["result"] = nullable(event.result)


def _update_id(attributes: Any) -> str | None:
    return first_present(
        attr(attributes, "protocolInstanceId"),
        attr(attributes, "meta", "updateId"),
        attr(attributes, "acceptedRequest", "meta", "updateId"),
        attr(attributes, "rejectedRequest", "meta", "updateId"),
        attr(attributes, "request", "meta", "updateId"),
    )


def _update_outcome(record: Record) -> str:
    if record["completed_event_id"] is not None:
        return "failed" if record["failure_message"] or record["failure_type"] else "completed"
    if record["rejected_event_id"] is not None:
        return "rejected"
    if record["accepted_event_id"] is not None:
        return "accepted"
    return "admitted"
