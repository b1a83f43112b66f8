"""``timers(events)``: one row per timer (per ``TimerStarted``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit.histories.tables.build import (
    EntityJoin,
    Record,
    close,
    column_or_attribute,
    entity_table,
    fill_once,
    stamp,
)
from toolkit.histories.tables.common import HISTORY_SCHEMA, attr, duration, nullable

__all__ = ["TIMER_COLUMNS", "timers"]

_CLOSE_OUTCOMES = {"TimerFired": "fired", "TimerCanceled": "canceled"}

#: Column -> dtype of the timers table.
TIMER_COLUMNS: dict[str, str] = {
    **HISTORY_SCHEMA,
    "timer_id": "object", "workflow_task": "Int64",
    "started_event_id": "Int64", "closed_event_id": "Int64",
    "started_time": "datetime", "closed_time": "datetime", "outcome": "object",
    "start_to_fire_timeout": "timedelta", "expected_fire_time": "datetime",
    "fire_delay": "timedelta", "duration": "timedelta", "canceled_by": "object",
}

_JOIN = EntityJoin(
    table="timers",
    schema=TIMER_COLUMNS,
    key_column="started_event_id",
    opening=("TimerStarted",),
    others=tuple(_CLOSE_OUTCOMES),
    link="started_event_id",
    reads=("timer_id", "started_event_id", "identity"),
    requires=("started_event_id", "timer_id"),
    starts={"outcome": "pending"},
    durations={"duration": ("started_time", "closed_time")},
)


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
    frame = entity_table(events, _JOIN, _apply)
    frame["expected_fire_time"] = frame["started_time"] + frame["start_to_fire_timeout"]
    fired = frame["outcome"] == "fired"
    frame["fire_delay"] = (frame["closed_time"] - frame["expected_fire_time"]).where(fired)
    return frame


def _apply(record: Record, event: Any) -> None:
    fill_once(record, event, "timer_id", "timerId")
    if event.event_type == "TimerStarted":
        stamp(record, "started", event)
        record["workflow_task"] = nullable(event.workflow_task)
        record["start_to_fire_timeout"] = duration(
            attr(event.attributes, "startToFireTimeout")
        )
        return
    close(record, event, _CLOSE_OUTCOMES[event.event_type])
    if event.event_type == "TimerCanceled":
        record["canceled_by"] = column_or_attribute(event, "identity", "identity")
