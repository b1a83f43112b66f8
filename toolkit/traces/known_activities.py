""":func:`~toolkit.traces.activity_facts.activity_facts` of activities whose events are known.

:func:`toolkit.agents.activity_turns.activity_turns` has found every scheduled activity's
scheduled, started and closing rows already (:attr:`ActivityTurns.positions`); the activities
table groups the same events by entity again. Where the two groupings are bound to agree, the
facts are read at the rows found (no grouping, no sort: the activities come in the spans'
order), by the same readers as the table's (:func:`facts_of_stages`). They agree when

- every run was recognised (the turns keep the activities of those alone), and each run's key
  is a text source and an int history (the keys the table sorts and the spans look up alike);
- the frame holds each run's events together, in run order, event ids rising (the last event of
  a kind in frame order is the last by event id);
- every started, cancel-requested and closing event names, in its ``scheduled_event_id``
  column, an earlier scheduled event of its run (no orphan entity, and each activity's first
  event is its scheduled one, where the table reads its id and type first);
- each activity's scheduled event has its id and type (the table would look further).

:func:`known_facts` returns None otherwise, and the caller reads the table's way.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.activity_turns import ActivityTurns, column_at
from toolkit.histories.tables.activity import _CANCEL_REQUESTED, _CLOSE_OUTCOMES, _STARTED
from toolkit.histories.tables.columnar import Entities, FrameRows, plain_column
from toolkit.traces.activity_facts import _Fields, facts_of_stages

__all__ = ["known_facts"]

#: The activity events that name their scheduled event.
_LINKED = frozenset({_STARTED, _CANCEL_REQUESTED, *_CLOSE_OUTCOMES})


class _Rows(Entities):
    """Events at given rows of a frame, read by :class:`Entities`' readers (take, times,
    column_or_attribute, read, payloads); no grouping: the caller picks rows by position."""

    def __init__(self, events: pd.DataFrame, rows: np.ndarray) -> None:
        # Entities.__init__ is not called: it groups the events, which are grouped already.
        self.events = FrameRows(events, rows)  # type: ignore[assignment]
        self._columns: dict[str, np.ndarray] = {}

    # Taken when first read: most stages read no attribute (the loader filled the columns),
    # and only the closing one the event types.
    @cached_property
    def cells(self) -> np.ndarray:  # type: ignore[override]
        selected = self.events
        return (selected["attributes"].to_numpy(dtype=object) if "attributes" in selected.columns
                else np.full(len(selected), None, dtype=object))  # fmt: skip

    @cached_property
    def fields(self) -> _Fields:  # type: ignore[override]
        return _Fields(self.cells)

    @cached_property
    def event_type(self) -> np.ndarray:  # type: ignore[override]
        return plain_column(self.events, "event_type")


def _stage(events: pd.DataFrame, rows: np.ndarray) -> tuple[_Rows, np.ndarray, None]:
    """A stage (:data:`~toolkit.traces.activity_facts.Stage`) of row positions, -1 where an
    activity has no such event: those events, and each activity's position among them."""
    present = rows >= 0
    picks = np.full(len(rows), -1, dtype=np.int64)
    picks[present] = np.arange(int(present.sum()))
    return _Rows(events, rows[present]), picks, None


def known_facts(events: pd.DataFrame, found: ActivityTurns, *, payloads: bool = False,
                nanos: bool = False) -> dict[str, list[Any]] | None:  # fmt: skip
    """The columns of :func:`~toolkit.traces.activity_facts.activity_facts` of ``events``,
    one value per row of ``found.spans`` in its order (the table's rows in run code order);
    None where they could differ (module docstring).

    Parameters
    ----------
    events
        The frame ``found`` was found in (with ``source`` and ``history`` columns).
    found
        Its :func:`~toolkit.agents.activity_turns.activity_turns`.
    payloads, nanos
        As in :func:`~toolkit.traces.activity_facts.activity_facts`.
    """
    if not _agree(events, found):
        return None
    positions = found.positions
    scheduled = positions["scheduled"]
    queued = _Rows(events, scheduled)
    every = np.arange(len(scheduled))
    columns: dict[str, Any] = {
        "source": column_at(events, "source", scheduled),
        "history": column_at(events, "history", scheduled),
        "scheduled_event_id": queued.column("event_id"),
        "activity_id": queued.column_or_attribute("activity_id", "activityId"),
        "activity_type": queued.column_or_attribute("activity_type", "activityType", "name"),
    }
    if np.equal(columns["activity_id"], None).any() or np.equal(columns["activity_type"],
                                                                None).any():  # fmt: skip
        return None  # the table takes the first of the activity's later events that has one
    columns.update(facts_of_stages(
        (queued, every, None), _stage(events, positions["started"]),
        _stage(events, positions["closed"]), payloads=payloads, nanos=nanos))  # fmt: skip
    # Object arrays listed by tolist (their objects as they are, at C speed), lists copied.
    return {name: values.tolist() if isinstance(values, np.ndarray) and values.dtype == object
            else list(values) for name, values in columns.items()}  # fmt: skip


def _agree(events: pd.DataFrame, found: ActivityTurns) -> bool:
    """Whether the activities table groups the frame's activity events as ``found`` has."""
    if found.errors or not all(type(s) is str and type(h) is int for s, h in found.runs):
        return False
    run = found.positions["rows"]
    event_id = events["event_id"].to_numpy()
    if event_id.dtype.kind not in "iu":
        return False
    event_id = event_id.astype(np.int64, copy=False)
    step = np.diff(run)
    if not bool(((step > 0) | ((step == 0) & (np.diff(event_id) > 0))).all()):
        return False
    codes, names = found.positions["types"]
    rows = np.flatnonzero(np.isin(codes, [c for c, n in enumerate(names) if n in _LINKED]))
    if not len(rows):
        return True
    if "scheduled_event_id" not in events.columns:
        return False
    column = events["scheduled_event_id"]
    if isinstance(column.dtype, pd.Int64Dtype):
        taken = column.array[rows]
        if bool(taken.isna().any()):
            return False  # the table reads the link from the attributes there
        links = taken.to_numpy(dtype=np.int64)
    elif isinstance(column.dtype, np.dtype) and column.dtype.kind in "iu":
        links = column.to_numpy()[rows].astype(np.int64)
    else:
        return False
    if not bool(((links >= 0) & (links < event_id[rows])).all()):
        return False
    scheduled = found.positions["scheduled"]
    big = int(event_id.max()) + 2
    keys = run[scheduled] * big + event_id[scheduled]  # ascending: by run, then event id
    wanted = run[rows] * big + links
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return bool(len(keys)) and bool((keys[at] == wanted).all())
