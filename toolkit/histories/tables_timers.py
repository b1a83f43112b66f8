"""``timers(events)``: one row per timer (per ``TimerStarted``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit.histories.tables_common import (
    HistoryKey,
    attr,
    build_frame,
    check_events,
    duration,
    event_rows,
    first_present,
    history_fields,
    nullable,
    to_int,
)

__all__ = ["TIMER_COLUMNS", "timers"]

_CLOSE_OUTCOMES = {"TimerFired": "fired", "TimerCanceled": "canceled"}
_READ = (
    "source", "history", "workflow_id", "run_id", "event_id", "event_time", "event_type",
    "workflow_task", "timer_id", "started_event_id", "identity", "attributes",
)

#: Column -> dtype of the timers table.
TIMER_COLUMNS: dict[str, str] = {
    "source": "object", "history": "Int64", "workflow_id": "object", "run_id": "object",
    "timer_id": "object", "workflow_task": "Int64",
    "started_event_id": "Int64", "closed_event_id": "Int64",
    "started_time": "datetime", "closed_time": "datetime", "outcome": "object",
    "start_to_fire_timeout": "timedelta", "expected_fire_time": "datetime",
    "fire_delay": "timedelta", "duration": "timedelta", "canceled_by": "object",
}


def timers(events: pd.DataFrame) -> pd.DataFrame:
    """One row per timer: started, then fired or canceled (or still pending).

    Parameters
    ----------
    events
        The events frame of :func:`toolkit.read_history` (one or many histories).

    Returns
    -------
    pandas.DataFrame
        Sorted by (source, history, started_event_id), with these columns:

        =====================  ==============  ===================================================
        column                 dtype           meaning
        =====================  ==============  ===================================================
        source, history        object, Int64   which history (as in the events frame)
        workflow_id, run_id    object          the workflow run
        timer_id               object          the timer's id (SDK sequence number or user id)
        workflow_task          Int64           ordinal of the workflow task that started it
        started_event_id       Int64           the ``TimerStarted`` event
        closed_event_id        Int64           the ``TimerFired`` / ``TimerCanceled`` event
        started_time           datetime64 UTC  time of the started event
        closed_time            datetime64 UTC  time of the fired/canceled event
        outcome                object          ``fired``, ``canceled`` or ``pending``
        start_to_fire_timeout  timedelta       the requested delay
        expected_fire_time     datetime64 UTC  started_time + start_to_fire_timeout
        fire_delay             timedelta       fired: closed_time - expected_fire_time
        duration               timedelta       closed_time - started_time
        canceled_by            object          canceled: identity on the canceled event
        =====================  ==============  ===================================================

    Raises
    ------
    HistoryFormatError
        When ``events`` is not an events frame.
    """
    check_events(events, ("started_event_id", "timer_id"), "timers")
    records: dict[tuple[HistoryKey, int | None], dict[str, Any]] = {}
    for event in event_rows(events, ("TimerStarted", *_CLOSE_OUTCOMES), _READ):
        attributes = event.attributes
        key_id = event.event_id if event.event_type == "TimerStarted" else first_present(
            to_int(nullable(event.started_event_id)), to_int(attr(attributes, "startedEventId")),
        )
        key = (HistoryKey(event.source, event.history), key_id)
        record = records.get(key)
        if record is None:
            record = records[key] = dict.fromkeys(TIMER_COLUMNS)
            record.update(history_fields(event), started_event_id=key_id, outcome="pending")
        record["timer_id"] = first_present(
            record["timer_id"], nullable(event.timer_id), attr(attributes, "timerId"),
        )
        if event.event_type == "TimerStarted":
            record["workflow_task"] = nullable(event.workflow_task)
            record["started_time"] = nullable(event.event_time)
            record["start_to_fire_timeout"] = duration(attr(attributes, "startToFireTimeout"))
        else:
            record["outcome"] = _CLOSE_OUTCOMES[event.event_type]
            record["closed_event_id"] = event.event_id
            record["closed_time"] = nullable(event.event_time)
            if event.event_type == "TimerCanceled":
                record["canceled_by"] = first_present(
                    nullable(event.identity), attr(attributes, "identity"),
                )
    frame = build_frame(records.values(), TIMER_COLUMNS, ("source", "history", "started_event_id"))
    frame["expected_fire_time"] = frame["started_time"] + frame["start_to_fire_timeout"]
    fired = frame["outcome"] == "fired"
    frame["fire_delay"] = (frame["closed_time"] - frame["expected_fire_time"]).where(fired)
    frame["duration"] = frame["closed_time"] - frame["started_time"]
    return frame
