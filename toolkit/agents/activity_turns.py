"""Every scheduled activity's role and turn, for all the runs of an events frame at once.

The assignment every agent analysis starts from (:func:`toolkit.activity_spans`,
:func:`toolkit.agent_steps`, the token ledger, the traces): the framework's roles per run, each
run's turns (its user messages), and per ``ActivityTaskScheduled`` event its role, turn, trigger,
times and outcome. Computed column-wise over the whole frame (one selection per kind of event,
runs told apart by codes, turns found by a sorted search), so that a folder of many small runs
costs no pandas operation per run; the rules are those of a walk through each history in event
order (:mod:`toolkit.agents.turns` states them):

- a turn starts at each user message (the start, a user signal, an update counted once); a start
  followed by no activity before the first user signal/update is no turn;
- an activity belongs to the last turn started before it (turn 0 before any);
- a turn is answered when a workflow task completed after its message; an unanswered turn names
  the last workflow-task failure after it;
- an activity's started and closing events are the last of their kind linked to it.

Runs whose framework is not recognised are kept apart in :attr:`ActivityTurns.errors`, with the
error the row-wise reading raised for them; the caller decides whether that is fatal.
"""

from __future__ import annotations

import ctypes
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.activity_roles import LETTER, activity_roles, run_roles, text_take
from toolkit.agents.roles import Roles
from toolkit.agents.turn_starts import turn_starts
from toolkit.errors import ToolkitError

__all__ = ["ACTIVITY_TURN_COLUMNS", "ActivityTurns", "activity_turns", "column_at"]

#: Columns of :attr:`ActivityTurns.spans` (``activity_spans`` gives them without ``source``).
ACTIVITY_TURN_COLUMNS = [
    "source", "history", "run_id", "turn", "trigger", "event_id", "activity_type", "activity_id",
    "role", "letter", "scheduled", "started", "closed", "outcome",
]  # fmt: skip

CLOSED = ("ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut",
          "ActivityTaskCanceled")  # fmt: skip
TASK_FAILURES = ("WorkflowTaskFailed", "WorkflowTaskTimedOut")
_MESSAGES = ("WorkflowExecutionStarted", "WorkflowExecutionSignaled",
             "WorkflowExecutionUpdateAdmitted", "WorkflowExecutionUpdateAccepted")  # fmt: skip

#: A turn's user message: (event id, trigger, answered: a workflow task completed after it,
#: failure: the last workflow-task failure after it when unanswered, else None).
Turn = tuple[int, str, bool, "str | None"]
#: A run: (source, history) as the frame holds them (source None without the column).
RunKey = tuple[Hashable, int]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass
class ActivityTurns:
    """What :func:`activity_turns` found.

    Attributes
    ----------
    spans : pandas.DataFrame
        One row per scheduled activity of the recognised runs, in run order (sources as they
        first appear, histories ascending), then event order; :data:`ACTIVITY_TURN_COLUMNS`.
    turns : dict
        Per run key (source, history): its turns' user messages (turn n = item n-1).
    roles : dict
        Per run key: the roles resolved.
    errors : dict
        Per run key no framework was recognised in: the error.
    runs : list
        Every run key, in run order.
    positions : dict
        Per span row: ``run`` (its run's index in ``runs``) and the row positions in the frame of
        its ``scheduled``, ``started`` and ``closed`` events (-1 when absent); per run in
        ``runs``: ``first`` and ``last`` (the rows of its lowest and highest event id); per run
        key: ``messages`` (the rows of its turns' messages); per frame row: ``rows`` (its run's
        index in ``runs``); ``types``: (each frame row's event type code, the types by code).
    """

    spans: pd.DataFrame
    turns: dict[RunKey, list[Turn]]
    roles: dict[RunKey, Roles]
    errors: dict[RunKey, ToolkitError]
    runs: list[RunKey]
    positions: dict[str, Any] = field(default_factory=dict)


def column_at(frame: pd.DataFrame, name: str, rows: np.ndarray) -> np.ndarray:
    """``frame[name]`` at ``rows`` as objects (None for a column the frame lacks)."""
    if name not in frame.columns:
        return np.full(len(rows), None, dtype=object)
    series = frame[name]
    if series.dtype == object:  # its own array, indexed (a copy): no Series of the rows
        return series.to_numpy()[rows]
    # Taken, then converted: all of a column of strings or times as objects costs far more.
    return series.iloc[rows].to_numpy(dtype=object, copy=True)


def _addresses(values: np.ndarray) -> np.ndarray | None:
    """The addresses of the objects ``values`` (an object array) holds, as integers (a view of
    its cells: valid while ``values`` is; None where its cells are not one run of memory).

    Two cells holding one object hold equal values: the loader's texts are one object per
    distinct text (an event type, a run's source), so rows are told apart by integers, no value
    hashed or compared."""
    if not len(values) or not values.flags.c_contiguous:
        return None
    cells = (ctypes.c_ssize_t * len(values)).from_address(values.ctypes.data)
    return np.frombuffer(cells, dtype=np.intp)


def _text_codes(values: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """``pd.factorize(values, use_na_sentinel=False)`` (codes, uniques as a list) of an object
    array: off the objects' addresses where every distinct value is text (the few distinct
    objects then compared as values), else factorize's own."""
    addresses = _addresses(values)
    if addresses is not None:
        codes = pd.factorize(addresses)[0]
        # Codes come in order of first appearance: each one's first row is where the running
        # maximum rises, and its object is the value factorize would have met first.
        high = np.maximum.accumulate(codes)
        rises = np.empty(len(codes), dtype=bool)
        rises[0] = True
        np.not_equal(high[1:], high[:-1], out=rises[1:])
        heads = values[rises]
        names = heads.tolist()
        if all(type(v) is str for v in names):
            if len(set(names)) == len(names):
                return codes, names
            # Equal texts in distinct objects: their codes joined, in order of first appearance.
            joined, uniques = pd.factorize(heads)
            return joined[codes], uniques.tolist()
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes, uniques.tolist()


def _source_codes(sources: np.ndarray) -> np.ndarray:
    """``pd.factorize(sources, use_na_sentinel=False)``'s codes: off the changes from row to row
    where each source's rows come together (as the loader reads files), no value hashed (nor
    compared where each row holds its source's one object)."""
    if len(sources):
        change = np.empty(len(sources), dtype=bool)
        change[0] = True
        addresses = _addresses(sources)
        if addresses is not None:
            # A change of object: a change of source, or one text in two objects (the check
            # below then finds it met twice, and factorize decides).
            np.not_equal(addresses[1:], addresses[:-1], out=change[1:])
        else:
            np.not_equal(sources[1:], sources[:-1], out=change[1:])
        heads = sources[change].tolist()
        # Text alone: None and NaN equal nothing row to row, and factorize joins them.
        if all(type(v) is str for v in heads) and len(set(heads)) == len(heads):
            return np.cumsum(change) - 1
    return pd.factorize(sources, use_na_sentinel=False)[0]


def _unique_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(keys, return_index=True, return_inverse=True)`` (the inverse flat): off the
    changes from row to row where the keys do not fall (the loader's runs, in the order of
    their sources and histories), else by np.unique's sort."""
    if len(keys) and bool((keys[1:] >= keys[:-1]).all()):
        change = np.empty(len(keys), dtype=bool)
        change[0] = True
        np.not_equal(keys[1:], keys[:-1], out=change[1:])
        first = np.flatnonzero(change)
        return keys[first], first, np.cumsum(change) - 1
    distinct, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return distinct, first, inverse.reshape(-1)


def _linked_last(keys: np.ndarray, rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per ``wanted`` key, the row of the last event (rows in event order) with that key; -1."""
    if not len(keys):
        return np.full(len(wanted), -1, dtype=np.int64)
    # Sorted by key (stable: event order within one), the last of each key kept: no hashing.
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    last = np.empty(len(ordered), dtype=bool)
    last[-1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=last[:-1])
    distinct, picked = ordered[last], rows[order[last]]
    at = np.minimum(np.searchsorted(distinct, wanted), len(distinct) - 1)
    return np.where(distinct[at] == wanted, picked[at], -1)


def activity_turns(frame: pd.DataFrame, roles: str | Roles) -> ActivityTurns:
    """Roles, turns and the activity rows of every run in an events frame (module docstring)."""
    count = len(frame)
    event_type = frame["event_type"].to_numpy(dtype=object)
    event_id = frame["event_id"].to_numpy().astype(np.int64)
    sources = (frame["source"].to_numpy(dtype=object) if "source" in frame.columns
               else np.full(count, None, dtype=object))  # fmt: skip
    history = (frame["history"].to_numpy().astype(np.int64) if "history" in frame.columns
               else np.zeros(count, dtype=np.int64))  # fmt: skip
    source_code = _source_codes(sources)
    span = int(history.max()) + 1 if count else 1
    keys, first_of_key, run = _unique_keys(source_code.astype(np.int64) * span + history)
    runs: list[RunKey] = list(zip(sources[first_of_key].tolist(),
                                  history[first_of_key].tolist(), strict=True))  # fmt: skip
    # Every row, by run then event id: the frame's own order where it is so already (as the
    # loader reads a folder), and then no selection below needs sorting either.
    step = np.diff(run)
    in_order = bool(((step > 0) | ((step == 0) & (np.diff(event_id) >= 0))).all())
    order = np.arange(count) if in_order else np.lexsort((event_id, run))
    run_starts = np.searchsorted(run[order], np.arange(len(keys)))
    run_ends = np.append(run_starts[1:], count)
    first_row = order[run_starts] if count else np.zeros(0, dtype=np.int64)
    last_row = order[run_ends - 1] if count else np.zeros(0, dtype=np.int64)
    big = int(event_id.max()) + 2 if count else 2

    # Event types as small codes, once: each selection below tests integers, not every event's
    # type text again (a dozen kinds are selected).
    type_codes, type_names = _text_codes(event_type)
    code_of = {name: code for code, name in enumerate(type_names)}

    def is_type(types: str | tuple[str, ...]) -> np.ndarray:
        """``np.isin(event_type, types)``, off the codes (a table of the few codes taken)."""
        table = np.zeros(len(type_names), dtype=bool)
        table[[code_of[t] for t in ((types,) if isinstance(types, str) else types)
               if t in code_of]] = True  # fmt: skip
        return table[type_codes]

    def rows_of(types: tuple[str, ...]) -> np.ndarray:
        rows = np.flatnonzero(is_type(types))
        return rows if in_order else rows[np.lexsort((event_id[rows], run[rows]))]

    scheduled = rows_of(("ActivityTaskScheduled",))
    sched_run = run[scheduled]
    sched_types = column_at(frame, "activity_type", scheduled)

    # Roles per run, from its scheduled activity types (as codes: a fleet has few).
    activity_code, activity_names = pd.factorize(sched_types)
    activity_types = activity_names.tolist()
    resolved, errors = run_roles(roles, frame, run, runs, sched_run, activity_code,
                                 activity_types)  # fmt: skip

    # Each run's user messages, then its turns.
    messages = rows_of(_MESSAGES)
    completed = rows_of(("WorkflowTaskCompleted",))
    failed = rows_of(TASK_FAILURES)
    last_failure: dict[int, tuple[int, str]] = {}
    for code, eid, kind, message, cause in zip(
        run[failed].tolist(), event_id[failed].tolist(), event_type[failed].tolist(),
        column_at(frame, "failure_message", failed).tolist(),
        column_at(frame, "cause", failed).tolist(), strict=True,
    ):  # fmt: skip
        last_failure[code] = (eid, _text(message) or _text(cause) or kind)
    at_messages = {"run": run[messages], "event_id": event_id[messages]}

    def columns(name: str) -> np.ndarray:
        """A column at the messages' rows."""
        if name not in at_messages:
            at_messages[name] = column_at(frame, name, messages)
        return at_messages[name]

    turns, message_rows, start_run, start_ids, start_triggers = turn_starts(
        columns, resolved, runs, messages, event_type[messages],
        (sched_run, event_id[scheduled]), (run[completed], event_id[completed]), last_failure)

    # The activities of recognised runs: role, turn, started and closing events.
    recognised = np.zeros(len(runs), dtype=bool)
    recognised[list(resolved)] = True
    keep = recognised[sched_run]
    scheduled, sched_run, sched_types = scheduled[keep], sched_run[keep], sched_types[keep]
    activity_code = activity_code[keep]
    sched_ids = event_id[scheduled]
    order_starts = np.lexsort((start_ids, start_run))
    start_keys = (start_run * big + start_ids)[order_starts]
    start_triggers = start_triggers[order_starts]
    position = np.searchsorted(start_keys, sched_run * big + sched_ids, side="left")
    turn = position - np.searchsorted(start_keys, sched_run * big, side="left")
    trigger = np.full(len(scheduled), None, dtype=object)
    has_turn = turn > 0
    trigger[has_turn] = start_triggers[position[has_turn] - 1]
    role, role_names = activity_roles(resolved, sched_run, activity_code, activity_types)
    links = _links(frame, run, event_id, is_type, in_order)
    wanted = sched_run * big + sched_ids
    started = _linked_last(*links("ActivityTaskStarted", big), wanted)
    closed = _linked_last(*links(CLOSED, big), wanted)
    times = frame["event_time"]
    spans = pd.DataFrame({
        # A run's rows share its source: the runs' few texts taken (no text made per activity).
        "source": text_take([source for source, _ in runs], sched_run, sources[scheduled]),
        "history": history[scheduled],
        "run_id": column_at(frame, "run_id", scheduled),
        "turn": turn.astype(np.int64),
        "trigger": trigger,
        "event_id": sched_ids,
        "activity_type": text_take(activity_types, activity_code, sched_types),
        "activity_id": column_at(frame, "activity_id", scheduled),
        "role": text_take(role_names, role),
        "letter": text_take([LETTER[r] for r in role_names], role),
        "scheduled": _times(times, scheduled),
        "started": _times(times, started),
        "closed": _times(times, closed),
        "outcome": text_take(type_names, np.where(closed >= 0, type_codes[closed], -1)),
    })  # fmt: skip
    positions = {"run": sched_run, "scheduled": scheduled, "started": started, "closed": closed,
                 "first": first_row, "last": last_row, "messages": message_rows,
                 "rows": run, "types": (type_codes, type_names)}  # fmt: skip
    return ActivityTurns(spans, turns, {runs[c]: r for c, r in resolved.items()}, errors, runs,
                         positions)  # fmt: skip


def _links(frame: pd.DataFrame, run: np.ndarray, event_id: np.ndarray, is_type: Any,
           in_order: bool) -> Any:  # fmt: skip
    """A function: event types -> (keys, rows) of those events that link to a scheduled one, in
    event order (key: run * big + scheduled event id); ``is_type(types)``: which events have one
    of ``types``; ``in_order``: whether the frame's rows are in event order already."""
    column = frame["scheduled_event_id"] if "scheduled_event_id" in frame.columns else None
    if column is not None and isinstance(column.dtype, pd.Int64Dtype):  # the loader's
        linked = ~column.isna().to_numpy()
        link = column.to_numpy(dtype=np.int64, na_value=0)
    else:  # anything else as numbers, what is none missing
        values = (np.full(len(frame), np.nan) if column is None else pd.to_numeric(
            column, errors="coerce").to_numpy(dtype=float, na_value=np.nan))  # fmt: skip
        linked = ~np.isnan(values)
        link = np.where(linked, values, 0).astype(np.int64)

    def links(types: str | tuple[str, ...], big: int) -> tuple[np.ndarray, np.ndarray]:
        rows = np.flatnonzero(is_type(types) & linked)
        if not in_order:
            rows = rows[np.lexsort((event_id[rows], run[rows]))]
        return run[rows] * big + link[rows], rows

    return links


_UTC_NS = pd.DatetimeTZDtype("ns", "UTC")


def _times(times: pd.Series, rows: np.ndarray) -> pd.Series:
    """Event times at ``rows`` (NaT where -1), as UTC timestamps."""
    if not len(times):
        return pd.Series(pd.to_datetime([], utc=True))
    if times.dtype == _UTC_NS:  # the loader's: taken as they are, NaT filled in at -1
        return pd.Series(times.array.take(rows, allow_fill=True))
    picked = times.iloc[np.maximum(rows, 0)].reset_index(drop=True)
    return pd.to_datetime(picked.where(rows >= 0), utc=True)
