"""What one event learns from another: workflow task ordinals, activity/child names, update names.

All computed with numpy over the column arrays of one history, or of several histories laid one
after another, already in event id order within each, before the DataFrame exists (pandas'
``map``/``loc`` machinery costs more than the work itself). Id lookups are binary searches in
the sorted event keys (:class:`EventKeys`: the event id, made unique across histories); where ids
repeat (damaged histories), the first event with the id wins.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from toolkit.histories.columns.common import TypeCodes

__all__ = [
    "EventKeys",
    "EventKinds",
    "Unlinkable",
    "copy_from_linked",
    "fill_update_names",
    "workflow_task_ordinals",
]

_OPENERS = ("WorkflowTaskScheduled", "DecisionTaskScheduled")
_STARTS = ("WorkflowTaskStarted", "DecisionTaskStarted")


class Unlinkable(ValueError):
    """Event ids that cannot be keyed across histories (negative, or too large to combine);
    the caller links such histories one at a time."""


class EventKeys:
    """Event ids as keys unique across the histories held by one set of columns.

    History *k* (``counts[k]`` events, ids ascending) gets keys ``k * span + event_id``, so the
    keys of all histories ascend together and a link (a ``scheduledEventId``, ...) finds its
    target only within its own history. With ``counts=None`` the keys are the ids themselves.
    """

    def __init__(self, ids: np.ndarray, counts: np.ndarray | None = None) -> None:
        self.segment: np.ndarray | None = None
        self.keys = ids
        # One history numbered 1, 2, 3, ... (the usual case): event id k is at position k - 1.
        self.dense = bool(
            (counts is None or len(counts) <= 1) and len(ids) and ids[0] == 1
            and ids[-1] == len(ids) and (np.diff(ids) == 1).all()
        )  # fmt: skip
        if counts is None or len(counts) <= 1 or not len(ids):
            return
        low, high = int(ids.min()), int(ids.max())
        self.span = high + 1
        if low < 0 or self.span * len(counts) >= 2**62:
            raise Unlinkable(f"event ids from {low} to {high}")
        self.starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        self.segment = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        self.keys = self.segment * self.span + ids

    def of(self, targets: np.ndarray, rows: Any = slice(None)) -> np.ndarray:
        """Keys of the events that ``targets`` (ids held by the events at ``rows``) name;
        ``0`` (never a key that matches) for an absent or impossible id."""
        if self.segment is None:
            return targets
        inside = (targets > 0) & (targets < self.span)
        return np.where(inside, self.segment[rows] * self.span + targets, 0)

    def positions(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each wanted key: the position of the first event with it, and whether there is
        one (``0`` stands for an absent link and never matches)."""
        if not self.dense:
            return _positions_of(self.keys, wanted)
        found = (wanted >= 1) & (wanted <= len(self.keys))
        return np.where(found, wanted - 1, 0), found

    def restart(self, counter: np.ndarray) -> np.ndarray:
        """A running count (``cumsum``) restarted at the first event of each history."""
        if self.segment is None:
            return counter
        before = np.concatenate(([0], counter))[self.starts]
        return counter - before[self.segment]

    def same_history(self, a: np.ndarray, b: np.ndarray) -> np.ndarray | bool:
        """Whether the events at positions ``a`` and ``b`` belong to the same history."""
        if self.segment is None:
            return True
        return self.segment[a] == self.segment[b]


class EventKinds:
    """Which events have a given type or category, from one pass over the type column.

    Comparing an object column with a string costs a pass over every cell; ``_link`` needs
    about ten such masks. The type column is factorized once (a category follows from the
    type), and each mask is then a lookup of the few distinct types.
    """

    def __init__(
        self, event_type: np.ndarray, category: np.ndarray, known: TypeCodes | None = None
    ) -> None:
        if known is not None:  # the column builder's codes (same types, same categories)
            self._codes, self._types, self._categories = known.codes, known.shorts, known.categories
            return
        codes, types = pd.factorize(event_type, use_na_sentinel=False)
        self._codes = codes
        self._types = list(types)
        first = np.empty(len(types), dtype=np.int64)
        first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # the first event of each type
        self._categories = category[first].tolist()

    def of_type(self, *names: str) -> np.ndarray:
        """Events of any of the types ``names``."""
        return np.array([t in names for t in self._types], dtype=bool)[self._codes]

    def of_category(self, name: str) -> np.ndarray:
        """Events of category ``name``."""
        return np.array([c == name for c in self._categories], dtype=bool)[self._codes]


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


def _lookup(
    keys: EventKeys, among: np.ndarray, values: np.ndarray, wanted: np.ndarray
) -> np.ndarray:
    """``values`` of the events (``among`` them) whose key is each wanted key (NaN where there
    is none)."""
    if keys.dense:  # no repeated ids: the event with the id, if it is among them
        at, found = keys.positions(wanted)
        found &= among[at]
    else:  # the first of them with the id
        at, found = _positions_of(keys.keys[among], wanted)
        values = values[among]
    out = np.full(len(wanted), np.nan)
    out[found] = values[at[found]]
    return out


def workflow_task_ordinals(
    kinds: EventKinds, is_command: np.ndarray, keys: EventKeys, scheduled: np.ndarray,
    completed_by: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The ``workflow_task`` of each event, as floats (NaN: none), numbered within its history.

    A workflow task's events carry their own task; a command the task that produced it (else
    the latest task scheduled before it, for dialects without the producing id); any other
    event the first task started after it, the one that delivered it to the workflow code.
    """
    n = len(keys.keys)
    opens = kinds.of_type(*_OPENERS)
    latest = keys.restart(np.cumsum(opens)).astype("float64")
    task = np.full(n, np.nan)
    task[opens] = latest[opens]
    task_events = kinds.of_category("workflow_task") & ~opens
    task[task_events] = _lookup(keys, opens, task, keys.of(scheduled[task_events], task_events))
    known = ~np.isnan(task)
    by_producer = _lookup(keys, known, task, keys.of(completed_by[is_command], is_command))
    latest[latest == 0] = np.nan
    task[is_command] = np.where(np.isnan(by_producer), latest[is_command], by_producer)
    starts = np.flatnonzero(kinds.of_type(*_STARTS) & ~np.isnan(task))
    others = np.flatnonzero(~(opens | task_events | is_command))
    if len(others):
        following = np.searchsorted(starts, others, side="left")
        valid = np.flatnonzero(following < len(starts))
        valid = valid[keys.same_history(starts[following[valid]], others[valid])]
        values = np.full(len(others), np.nan)
        values[valid] = task[starts[following[valid]]]
        task[others] = values
    return task


def copy_from_linked(
    columns: dict[str, Any], keys: EventKeys, rows: np.ndarray, link: str, names: tuple[str, ...]
) -> None:
    """Copy ``names`` from the event that ``link`` points at, where a row lacks them."""
    targets = columns[link]
    rows = np.flatnonzero(rows & (targets != 0))
    if not len(rows):
        return
    for name in names:
        column = columns[name]
        missing = rows[_absent(column[rows])]  # look only at the linked rows' cells
        if not len(missing):
            continue
        at, found = keys.positions(keys.of(targets[missing], missing))
        copied = np.full(len(missing), None, dtype=object)
        copied[found] = column[at[found]]
        column[missing] = copied


def fill_update_names(columns: dict[str, Any], keys: EventKeys, updates: np.ndarray) -> None:
    """Give update events without a name (completed, ...) the name their update id had (in
    the same history)."""
    ids, names = columns["update_id"], columns["update_name"]
    updates = np.flatnonzero(updates)
    updates = updates[~_absent(ids[updates])]
    if not len(updates):
        return
    history = keys.segment if keys.segment is not None else np.zeros(len(ids), dtype=np.int64)
    by_id: dict[Any, Any] = {}
    for i in updates.tolist():
        if names[i] is not None:
            by_id.setdefault((history[i], ids[i]), names[i])
    for i in updates.tolist():
        if names[i] is None:
            names[i] = by_id.get((history[i], ids[i]))
