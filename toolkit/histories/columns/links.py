"""What one event learns from another: workflow task ordinals, activity/child names, update names.

All computed with numpy over the column arrays of one history, already in event id order, before
the DataFrame exists (pandas' ``map``/``loc`` machinery costs more than the work itself). Id
lookups are binary searches in the sorted ``event_id`` array; where ids repeat (damaged
histories), the first event with the id wins.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["copy_from_linked", "fill_update_names", "workflow_task_ordinals"]

_OPENERS = ("WorkflowTaskScheduled", "DecisionTaskScheduled")
_STARTS = ("WorkflowTaskStarted", "DecisionTaskStarted")


def _one_of(column: np.ndarray, values: tuple[str, ...]) -> np.ndarray:
    """Cells equal to one of a few ``values`` (``np.isin`` on object arrays is slower)."""
    found = np.zeros(len(column), dtype=bool)
    for value in values:
        found |= column == value
    return found


def _absent(column: np.ndarray) -> np.ndarray:
    """``None`` cells of an object column (the builders never put NaN there)."""
    return np.equal(column, None)


def _positions_of(sorted_ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each wanted id: its first position in ``sorted_ids``, and whether it is there.

    ``0`` stands for an absent link and never matches.
    """
    if not len(sorted_ids):
        return np.zeros(len(wanted), dtype=np.intp), np.zeros(len(wanted), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_ids, wanted, side="left"), len(sorted_ids) - 1)
    return at, (sorted_ids[at] == wanted) & (wanted != 0)


def _lookup(sorted_ids: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``values`` of the events whose id is each wanted id (NaN where there is none)."""
    at, found = _positions_of(sorted_ids, wanted)
    out = np.full(len(wanted), np.nan)
    out[found] = values[at[found]]
    return out


def workflow_task_ordinals(
    event_type: np.ndarray, category: np.ndarray, is_command: np.ndarray, ids: np.ndarray,
    scheduled: np.ndarray, completed_by: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The ``workflow_task`` of each event, as floats (NaN: none).

    A workflow task's events carry their own task; a command the task that produced it (else
    the latest task scheduled before it, for dialects without the producing id); any other
    event the first task started after it, the one that delivered it to the workflow code.
    """
    n = len(ids)
    opens = _one_of(event_type, _OPENERS)
    task = np.full(n, np.nan)
    task[opens] = np.arange(1, opens.sum() + 1)
    task_events = (category == "workflow_task") & ~opens
    task[task_events] = _lookup(ids[opens], task[opens], scheduled[task_events])
    known = ~np.isnan(task)
    by_producer = _lookup(ids[known], task[known], completed_by[is_command])
    latest = np.cumsum(opens).astype("float64")
    latest[latest == 0] = np.nan
    task[is_command] = np.where(np.isnan(by_producer), latest[is_command], by_producer)
    starts = np.flatnonzero(_one_of(event_type, _STARTS) & ~np.isnan(task))
    others = np.flatnonzero(~(opens | task_events | is_command))
    if len(others):
        following = np.searchsorted(starts, others, side="left")
        valid = following < len(starts)
        values = np.full(len(others), np.nan)
        values[valid] = task[starts[following[valid]]]
        task[others] = values
    return task


def copy_from_linked(
    columns: dict[str, Any], rows: np.ndarray, link: str, names: tuple[str, ...]
) -> None:
    """Copy ``names`` from the event that ``link`` points at, where a row lacks them."""
    ids, targets = columns["event_id"], columns[link]
    rows = np.flatnonzero(rows & (targets != 0))
    if not len(rows):
        return
    for name in names:
        column = columns[name]
        missing = rows[_absent(column[rows])]  # look only at the linked rows' cells
        if not len(missing):
            continue
        at, found = _positions_of(ids, targets[missing])
        copied = np.full(len(missing), None, dtype=object)
        copied[found] = column[at[found]]
        column[missing] = copied


def fill_update_names(columns: dict[str, Any], updates: np.ndarray) -> None:
    """Give update events without a name (completed, ...) the name their update id had."""
    ids, names = columns["update_id"], columns["update_name"]
    updates = np.flatnonzero(updates)
    updates = updates[~_absent(ids[updates])]
    if not len(updates):
        return
    by_id: dict[Any, Any] = {}
    for i in updates.tolist():
        if names[i] is not None:
            by_id.setdefault(ids[i], names[i])
    for i in updates.tolist():
        if names[i] is None:
            names[i] = by_id.get(ids[i])
