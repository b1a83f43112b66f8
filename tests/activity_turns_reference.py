"""activity_turns as it was before its sorted and contiguous-run fast paths (the oracle of
tests/test_activity_turns.py): the same rules, every selection sorted, every key hashed."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.roles import Roles, detect_roles, resolve_roles
from toolkit.errors import ToolkitError

__all__ = ["ACTIVITY_TURN_COLUMNS", "ActivityTurns", "activity_turns", "column_at"]

#: Columns of :attr:`ActivityTurns.spans` (``activity_spans`` gives them without ``source``).
ACTIVITY_TURN_COLUMNS = [
    "source", "history", "run_id", "turn", "trigger", "event_id", "activity_type", "activity_id",
    "role", "letter", "scheduled", "started", "closed", "outcome",
]  # fmt: skip

LETTER = {"model": "M", "listing": "L", "tool_call": "C", "other": "o"}
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
    # Taken, then converted: all of a column of strings or times as objects costs far more.
    return frame[name].iloc[rows].to_numpy(dtype=object, copy=True)


def _linked_last(keys: np.ndarray, rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per ``wanted`` key, the row of the last event (rows in event order) with that key; -1."""
    if not len(keys):
        return np.full(len(wanted), -1, dtype=np.int64)
    index = pd.Index(keys[::-1])
    last = ~index.duplicated(keep="first")
    found = index[last].get_indexer(wanted)
    picked = rows[::-1][last]
    return np.where(found >= 0, picked[np.maximum(found, 0)], -1)


class _RoleCache:
    """Roles resolved per run; runs with the same activity types share the detection."""

    def __init__(self, roles: str | Roles, frame: pd.DataFrame, run: np.ndarray):
        self.roles, self.frame, self.run = roles, frame, run
        self.known: dict[tuple[str, ...], Roles] = {}

    def resolve(self, code: int, types: list[Any], source: Any) -> Roles:
        if isinstance(self.roles, Roles):
            return self.roles
        names = tuple(sorted({t for t in types if isinstance(t, str)}))
        found = self.known.get(names)
        if found is not None:
            return found
        where = _text(source) or "<events>"
        if self.roles == "auto" and names and detect_roles(names) is None:
            # Inferred from what this run's activities return: its own events are needed.
            one = self.frame[self.run == code].sort_values("event_id", kind="stable")
            return resolve_roles(self.roles, names, where, one)
        found = resolve_roles(self.roles, names, where)
        self.known[names] = found
        return found


def activity_turns(frame: pd.DataFrame, roles: str | Roles) -> ActivityTurns:
    """Roles, turns and the activity rows of every run in an events frame (module docstring)."""
    count = len(frame)
    event_type = frame["event_type"].to_numpy(dtype=object)
    event_id = frame["event_id"].to_numpy().astype(np.int64)
    sources = (frame["source"].to_numpy(dtype=object) if "source" in frame.columns
               else np.full(count, None, dtype=object))  # fmt: skip
    history = (frame["history"].to_numpy().astype(np.int64) if "history" in frame.columns
               else np.zeros(count, dtype=np.int64))  # fmt: skip
    source_code, _ = pd.factorize(sources, use_na_sentinel=False)
    span = int(history.max()) + 1 if count else 1
    keys, first_of_key, run = np.unique(source_code.astype(np.int64) * span + history,
                                        return_index=True, return_inverse=True)  # fmt: skip
    run = run.reshape(-1)
    runs: list[RunKey] = [(sources[i], int(history[i])) for i in first_of_key]
    order = np.lexsort((event_id, run))  # every row, by run then event id
    run_starts = np.searchsorted(run[order], np.arange(len(keys)))
    run_ends = np.append(run_starts[1:], count)
    first_row = order[run_starts] if count else np.zeros(0, dtype=np.int64)
    last_row = order[run_ends - 1] if count else np.zeros(0, dtype=np.int64)
    big = int(event_id.max()) + 2 if count else 2

    # Event types as small codes, once: each selection below tests integers, not every event's
    # type text again (a dozen kinds are selected).
    type_codes, type_names = pd.factorize(event_type, use_na_sentinel=False)
    code_of = {name: code for code, name in enumerate(type_names.tolist())}

    def is_type(types: str | tuple[str, ...]) -> np.ndarray:
        """``np.isin(event_type, types)``, off the codes."""
        wanted = [code_of[t] for t in ((types,) if isinstance(types, str) else types)
                  if t in code_of]  # fmt: skip
        return np.isin(type_codes, wanted)

    def rows_of(types: tuple[str, ...]) -> np.ndarray:
        rows = np.flatnonzero(is_type(types))
        return rows[np.lexsort((event_id[rows], run[rows]))]

    scheduled = rows_of(("ActivityTaskScheduled",))
    sched_run = run[scheduled]
    sched_types = column_at(frame, "activity_type", scheduled)

    # Roles per run, from its scheduled activity types.
    types_of: dict[int, list[Any]] = {code: [] for code in range(len(runs))}
    for code, name in zip(sched_run.tolist(), sched_types.tolist(), strict=True):
        types_of[code].append(name)
    cache = _RoleCache(roles, frame, run)
    resolved: dict[int, Roles] = {}
    errors: dict[RunKey, ToolkitError] = {}
    for code, key in enumerate(runs):
        try:
            resolved[code] = cache.resolve(code, types_of[code], key[0])
        except ToolkitError as error:
            errors[key] = error

    # Each run's user messages, then its turns.
    messages = rows_of(_MESSAGES)
    first_activity = dict(zip(sched_run[::-1].tolist(), event_id[scheduled][::-1].tolist(),
                              strict=True))  # fmt: skip
    completed = rows_of(("WorkflowTaskCompleted",))
    last_completed = dict(zip(run[completed].tolist(), event_id[completed].tolist(),
                              strict=True))  # fmt: skip
    failed = rows_of(TASK_FAILURES)
    last_failure: dict[int, tuple[int, str]] = {}
    for code, eid, kind, message, cause in zip(
        run[failed].tolist(), event_id[failed].tolist(), event_type[failed].tolist(),
        column_at(frame, "failure_message", failed).tolist(),
        column_at(frame, "cause", failed).tolist(), strict=True,
    ):  # fmt: skip
        last_failure[code] = (eid, _text(message) or _text(cause) or kind)
    starts: dict[int, list[tuple[int, str, int]]] = {code: [] for code in resolved}
    seen_updates: dict[int, set[Any]] = {}
    for row, code, eid, kind, signal, update, update_id in zip(
        messages.tolist(), run[messages].tolist(), event_id[messages].tolist(),
        event_type[messages].tolist(), column_at(frame, "signal_name", messages).tolist(),
        column_at(frame, "update_name", messages).tolist(),
        column_at(frame, "update_id", messages).tolist(), strict=True,
    ):  # fmt: skip
        found = resolved.get(code)
        if found is None:
            continue
        if kind == "WorkflowExecutionStarted":
            if found.start_is_user:
                starts[code].append((eid, "start", row))
        elif kind == "WorkflowExecutionSignaled":
            if found.is_user_signal(_text(signal)):
                starts[code].append((eid, f"signal:{signal}", row))
        else:
            key = _text(update_id) or eid
            seen = seen_updates.setdefault(code, set())
            name = _text(update)
            if key not in seen and found.is_user_update(name):
                seen.add(key)
                starts[code].append((eid, f"update:{name}", row))
    turns: dict[RunKey, list[Turn]] = {}
    message_rows: dict[RunKey, list[int]] = {}
    for code, found_starts in starts.items():
        if len(found_starts) > 1 and found_starts[0][1] == "start":
            # A workflow that starts and waits for its first message: the start is no turn.
            first = first_activity.get(code)
            if first is None or first > found_starts[1][0]:
                found_starts = found_starts[1:]
        starts[code] = found_starts
        answered_before = last_completed.get(code, 0)
        failure = last_failure.get(code)
        turns[runs[code]] = [
            (eid, trigger, eid < answered_before,
             None if eid < answered_before or failure is None or failure[0] <= eid
             else failure[1])
            for eid, trigger, _ in found_starts
        ]  # fmt: skip
        message_rows[runs[code]] = [row for _, _, row in found_starts]

    # The activities of recognised runs: role, turn, started and closing events.
    keep = np.array([code in resolved for code in sched_run.tolist()], dtype=bool)
    scheduled, sched_run, sched_types = scheduled[keep], sched_run[keep], sched_types[keep]
    sched_ids = event_id[scheduled]
    start_run = np.array([c for c, s in starts.items() for _ in s], dtype=np.int64)
    start_ids = np.array([e for s in starts.values() for e, _, _ in s], dtype=np.int64)
    start_triggers = np.array([t for s in starts.values() for _, t, _ in s], dtype=object)
    order_starts = np.lexsort((start_ids, start_run))
    start_keys = (start_run * big + start_ids)[order_starts]
    start_triggers = start_triggers[order_starts]
    position = np.searchsorted(start_keys, sched_run * big + sched_ids, side="left")
    turn = position - np.searchsorted(start_keys, sched_run * big, side="left")
    trigger = np.full(len(scheduled), None, dtype=object)
    has_turn = turn > 0
    trigger[has_turn] = start_triggers[position[has_turn] - 1]
    role = [resolved[code].role_of(_text(name))
            for code, name in zip(sched_run.tolist(), sched_types.tolist(), strict=True)]
    links = _links(frame, run, is_type)
    wanted = sched_run * big + sched_ids
    started = _linked_last(*links("ActivityTaskStarted", big), wanted)
    closed = _linked_last(*links(CLOSED, big), wanted)
    times = frame["event_time"]
    spans = pd.DataFrame({
        "source": sources[scheduled],
        "history": history[scheduled],
        "run_id": column_at(frame, "run_id", scheduled),
        "turn": turn.astype(np.int64),
        "trigger": trigger,
        "event_id": sched_ids,
        "activity_type": sched_types,
        "activity_id": column_at(frame, "activity_id", scheduled),
        "role": np.array(role, dtype=object),
        "letter": np.array([LETTER[r] for r in role], dtype=object),
        "scheduled": _times(times, scheduled),
        "started": _times(times, started),
        "closed": _times(times, closed),
        "outcome": np.where(closed >= 0, event_type[np.maximum(closed, 0)], None),
    })  # fmt: skip
    positions = {"run": sched_run, "scheduled": scheduled, "started": started, "closed": closed,
                 "first": first_row, "last": last_row, "messages": message_rows,
                 "rows": run, "types": (type_codes, type_names.tolist())}  # fmt: skip
    return ActivityTurns(spans, turns, {runs[c]: r for c, r in resolved.items()}, errors, runs,
                         positions)  # fmt: skip


def _links(frame: pd.DataFrame, run: np.ndarray, is_type: Any) -> Any:
    """A function: event types -> (keys, rows) of those events that link to a scheduled one, in
    event order (key: run * big + scheduled event id); ``is_type(types)``: which events have one
    of ``types``."""
    event_id = frame["event_id"].to_numpy().astype(np.int64)
    link = (pd.to_numeric(frame["scheduled_event_id"], errors="coerce").to_numpy(
        dtype=float, na_value=np.nan) if "scheduled_event_id" in frame.columns
        else np.full(len(frame), np.nan))  # fmt: skip

    def links(types: str | tuple[str, ...], big: int) -> tuple[np.ndarray, np.ndarray]:
        rows = np.flatnonzero(is_type(types) & ~np.isnan(link))
        rows = rows[np.lexsort((event_id[rows], run[rows]))]
        return run[rows] * big + link[rows].astype(np.int64), rows

    return links


def _times(times: pd.Series, rows: np.ndarray) -> pd.Series:
    """Event times at ``rows`` (NaT where -1), as UTC timestamps."""
    if not len(times):
        return pd.Series(pd.to_datetime([], utc=True))
    picked = times.iloc[np.maximum(rows, 0)].reset_index(drop=True)
    return pd.to_datetime(picked.where(rows >= 0), utc=True)
