"""What an activity's spans need from :func:`toolkit.activities`, without the rest of the table.

The spans of an activity read a dozen of the table's thirty-three columns, and two of them only
for some activities: the closing failure's message for an activity that failed, timed out or
was canceled, the previous attempt's failure for one that was retried. :func:`activity_facts`
computes those columns by the table's own rules (the same entity grouping, the same first and
last events, the frame's columns first and the attributes where they are empty,
:mod:`toolkit.histories.tables.columnar`), in the table's row order, and decodes the attributes
of an event only where a value is read from them: in histories the loader read, none but the
failures'.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd

# The activity table's own event kinds and outcomes: these facts follow its rules.
from toolkit.histories.tables.activity import (
    _CANCEL_REQUESTED,
    _CLOSE_OUTCOMES,
    _SCHEDULED,
    _STARTED,
)
from toolkit.histories.tables.attribute_views import attribute_fields, dig
from toolkit.histories.tables.columnar import Entities, FrameRows
from toolkit.histories.tables.common import failure_of, first_present, to_int

__all__ = ["FAILED", "Stage", "activity_facts", "facts_of_stages"]

_UTC_NS = pd.DatetimeTZDtype("ns", "UTC")

#: Outcomes whose closing failure is read (an activity span's error).
FAILED = frozenset({"failed", "timed_out", "canceled"})


class _Field:
    """One attribute field of the selected events, decoded only at the rows read."""

    def __init__(self, cells: np.ndarray, name: str) -> None:
        self.cells, self.name = cells, name

    def __getitem__(self, rows: Any) -> Any:
        if isinstance(rows, (int, np.integer)):
            return attribute_fields([self.cells[rows]], (self.name,))[self.name][0]
        return attribute_fields(self.cells[np.asarray(rows)], (self.name,))[self.name]


class _Fields(dict):  # type: ignore[type-arg]
    """Field name -> :class:`_Field`, made when first asked for (as ``Entities.fields``)."""

    def __init__(self, cells: np.ndarray) -> None:
        super().__init__()
        self.cells = cells

    def __missing__(self, name: str) -> _Field:
        field = self[name] = _Field(self.cells, name)
        return field


def _times(entities: Entities, picks: np.ndarray, nanos: bool = False) -> list[Any]:
    """Event times at ``picks`` as UTC timestamps (with ``nanos``, their nanoseconds since the
    epoch: ``Timestamp.value``), None where there is no pick."""
    times = entities.times(picks)
    if times.dtype != _UTC_NS:  # the loader's own are already: nothing to convert
        times = pd.Series(pd.to_datetime(times, utc=True), dtype=_UTC_NS)
    if nanos:  # no Timestamp made: NaT is the int64 minimum
        stamps = pd.DatetimeIndex(times)
        values: list[Any] = stamps.asi8.tolist()
        for index in np.flatnonzero(stamps.isna()).tolist():
            values[index] = None
        return values
    return [None if t is pd.NaT else t for t in times.tolist()]


def _failure_message(failure: Any, reason: Any) -> Any:
    """The closing failure's message, as ``activities`` reads it (pre-1.0: ``reason``)."""
    return first_present(failure_of({"failure": failure})[0], reason)


def activity_facts(events: pd.DataFrame, *, payloads: bool = False,
                   nanos: bool = False) -> dict[str, list[Any]]:  # fmt: skip
    """Columns of :func:`toolkit.activities` for the spans, one value per activity, in the
    table's order (source, history, scheduled event id).

    ``source``, ``history``, ``scheduled_event_id``, ``activity_id``, ``activity_type``,
    ``task_queue``, ``scheduled_time``, ``started_time``, ``closed_time`` (timestamps or None),
    ``attempt`` (int or None), ``outcome``, ``queue_duration`` (Timedelta or None), and
    ``failure_message`` (only where the outcome is in :data:`FAILED`, else None),
    ``last_failure_message`` (only where the attempt is above 1, else None); with
    ``payloads``, ``input`` and ``result`` decoded. With ``nanos``, the three times are ints
    (``Timestamp.value``) and ``queue_duration`` their difference in nanoseconds.
    """
    kinds = {_SCHEDULED, _STARTED, _CANCEL_REQUESTED, *_CLOSE_OUTCOMES}
    # The activity events' rows, each column taken when read (not the frame copied whole).
    selected = FrameRows(events, np.flatnonzero(events["event_type"].isin(kinds).to_numpy()))
    cells = (selected["attributes"].to_numpy(dtype=object) if "attributes" in selected.columns
             else np.full(len(selected), None, dtype=object))  # fmt: skip
    entities = Entities(selected, _Fields(cells),  # type: ignore[arg-type]
                        (_SCHEDULED,), "scheduled_event_id")
    first = entities.first()
    head = entities.history_columns(first)
    scheduled_stage = entities.mask((_SCHEDULED,))
    started_stage = entities.mask((_STARTED,))
    columns: dict[str, Any] = {
        "source": head["source"],
        "history": head["history"],
        "scheduled_event_id": entities.key,
        "activity_id": entities.first_value(
            entities.column_or_attribute("activity_id", "activityId")),
        "activity_type": entities.first_value(
            entities.column_or_attribute("activity_type", "activityType", "name")),
    }  # fmt: skip
    columns.update(facts_of_stages(
        (entities, entities.last(scheduled_stage), scheduled_stage),
        (entities, entities.last(started_stage), started_stage),
        (entities, entities.last(entities.mask(_CLOSE_OUTCOMES)), None),
        payloads=payloads, nanos=nanos))  # fmt: skip
    return _in_table_order({k: list(v) for k, v in columns.items()})


#: One stage of the activities (scheduled, started, closing): the events it is read from, the
#: event of each activity among them (-1: none) and which of the events are of that stage
#: (None: all of them).
Stage = tuple[Entities, np.ndarray, "np.ndarray | None"]


def facts_of_stages(scheduled: Stage, started: Stage, closed: Stage, *, payloads: bool = False,
                    nanos: bool = False) -> dict[str, Any]:  # fmt: skip
    """The columns of :func:`activity_facts` after ``activity_type``, from the activities' events
    of each stage: ``task_queue`` ... ``last_failure_message`` (``input``, ``result``)."""
    queued, scheduled_picks, scheduled_rows = scheduled
    starts, started_picks, started_rows = started
    closes, closed_picks, _ = closed
    attempt = starts.take(starts.column_or_attribute(
        "attempt", "attempt", rows=started_rows, convert=to_int), started_picks)  # fmt: skip
    # each closing event's type looked up by map (no Python frame per activity)
    outcome = list(map(_CLOSE_OUTCOMES.get, closes.take(closes.event_type, closed_picks),
                       repeat("pending")))  # fmt: skip
    columns: dict[str, Any] = {
        "task_queue": queued.take(queued.column_or_attribute(
            "task_queue", "taskQueue", "name", rows=scheduled_rows), scheduled_picks),
        "scheduled_time": _times(queued, scheduled_picks, nanos),
        "started_time": _times(starts, started_picks, nanos),
        "closed_time": _times(closes, closed_picks, nanos),
        "attempt": [a if type(a) is int else None if a is None or a is pd.NA else int(a)
                    for a in attempt],  # an int as it is (the common case: no int() call)
        "outcome": outcome,
    }  # fmt: skip
    columns["queue_duration"] = [
        None if s is None or b is None else s - b
        for b, s in zip(columns["scheduled_time"], columns["started_time"], strict=True)
    ]
    failed = np.flatnonzero(np.isin(np.array(outcome, dtype=object), list(FAILED)))
    columns["failure_message"] = _read_at(
        closes, closed_picks, failed, _failure_message, ("failure", "reason"),
        first=closes.pick("failure_message", closed_picks))  # fmt: skip
    retried = np.array([a is not None and a > 1 for a in columns["attempt"]], dtype=bool)
    columns["last_failure_message"] = _read_at(
        starts, started_picks, np.flatnonzero(retried), lambda f: dig(f, "message"),
        ("lastFailure",))  # fmt: skip
    if payloads:
        columns["input"] = queued.payloads("input", scheduled_picks)
        columns["result"] = closes.payloads("result", closed_picks)
    return columns


def _read_at(entities: Entities, picks: np.ndarray, where: np.ndarray, convert: Any,
             fields: Sequence[str], first: np.ndarray | None = None) -> list[Any]:  # fmt: skip
    """``convert(fields...)`` of the events ``picks[where]`` (the column ``first`` before the
    attributes where it has a value), None at the other entities."""
    out: list[Any] = [None] * len(picks)
    if first is not None:
        for index in where.tolist():
            out[index] = first_present(first[index])
        where = np.array([i for i in where.tolist() if out[i] is None], dtype=np.int64)
    if len(where):
        read = entities.read(picks[where], convert, *fields)
        for index, value in zip(where.tolist(), read.tolist(), strict=True):
            out[index] = value
    return out


def _in_table_order(columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The rows as ``activities`` sorts them, then as the spans sort them (both by source,
    history, scheduled event id: the first with sources as text, stable)."""
    sources, histories, ids = columns["source"], columns["history"], columns["scheduled_event_id"]
    if (sources and all(type(v) is str for v in sources) and all(type(v) is int for v in histories)
            and all(type(v) is int for v in ids)):  # fmt: skip
        return _by_text_sources(columns)  # the keys' table below would take the same branch
    keys = pd.DataFrame({
        "source": pd.Series(columns["source"], dtype=object),
        "history": pd.Series([None if v is None or v is pd.NA else v for v in columns["history"]],
                             dtype="Int64"),
        "scheduled_event_id": pd.Series([None if v is None or v is pd.NA else v
                                         for v in columns["scheduled_event_id"]], dtype="Int64"),
    })  # fmt: skip
    if not len(keys):
        return columns
    if all(type(v) is str for v in sources) and not keys[["history", "scheduled_event_id"]].isna(
            ).any(axis=None):  # fmt: skip
        return _by_text_sources(columns)
    order = keys.assign(source=keys["source"].astype(str)).sort_values(
        list(keys.columns), kind="stable").index  # fmt: skip
    keys = keys.loc[order].reset_index(drop=True)
    order = order.to_numpy()[keys.sort_values(list(keys.columns)).index.to_numpy()]
    return _reordered(columns, order)


def _by_text_sources(columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """:func:`_in_table_order` of rows whose sources are all text and whose keys are all set:
    both sorts are this one (the keys are distinct)."""
    sources, histories, ids = columns["source"], columns["history"], columns["scheduled_event_id"]
    code, _ = pd.factorize(np.array(sources, dtype=object), sort=True)
    order = np.lexsort((np.array(ids, dtype=np.int64), np.array(histories, dtype=np.int64),
                        code))  # fmt: skip
    return _reordered(columns, order)


def _reordered(columns: dict[str, list[Any]], order: np.ndarray) -> dict[str, list[Any]]:
    """Each column's values in ``order`` (row positions); the columns themselves where the
    order is theirs already (as the loader reads activities: sources in name order)."""
    if bool((order == np.arange(len(order))).all()):
        return columns
    positions = order.tolist()
    return {name: list(map(values.__getitem__, positions)) for name, values in columns.items()}
