"""The user messages that start turns, for all the runs of a frame at once
(:func:`toolkit.agents.activity_turns.activity_turns` states the rules).

Column-wise: which messages are turns is decided per kind of message (a start by its run's
roles, a signal once per distinct (roles, name) pair, the updates one by one: an update is
counted once per id), each run's first start dropped where the run waits for a message before
its first activity, and the turns' answers read off each run's last completed workflow task and
last workflow-task failure. Only the lists handed back are made per run.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.activity_roles import roles_index
from toolkit.agents.roles import Roles

__all__ = ["TurnStarts", "turn_starts"]

#: (turns by run key, message rows by run key, the turns' run codes, event ids and triggers in
#: run then event order).
TurnStarts = tuple[dict[Any, list[Any]], dict[Any, list[int]], np.ndarray, np.ndarray, np.ndarray]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def turn_starts(
    columns: Any,
    resolved: dict[int, Roles],
    runs: list[tuple[Hashable, int]],
    messages: np.ndarray,
    kinds: np.ndarray,
    firsts: tuple[np.ndarray, np.ndarray],
    completed: tuple[np.ndarray, np.ndarray],
    last_failure: dict[int, tuple[int, str]],
) -> TurnStarts:
    """Each recognised run's turns and their messages' rows.

    Parameters
    ----------
    columns
        A function: column name -> its values at the ``messages`` rows (None without it);
        ``event_id`` and ``run`` (run codes) among them.
    resolved, runs
        The runs' roles by code, the run keys by code.
    messages, kinds
        The rows of the user-message kinds of event, by run then event id; the kind of each.
    firsts
        The run codes and event ids of the scheduled activities, by run then event id.
    completed
        The same, of the completed workflow tasks.
    last_failure
        Per run code: the event id and text of its last workflow-task failure.
    """
    count = len(runs)
    run, eid = columns("run"), columns("event_id")
    roles = [resolved.get(code) for code in range(count)]
    turn = np.zeros(len(messages), dtype=bool)
    trigger = np.full(len(messages), None, dtype=object)
    start = kinds == "WorkflowExecutionStarted"
    start_user = np.array([r is not None and r.start_is_user for r in roles], dtype=bool)
    turn[start] = start_user[run[start]] if count else False
    trigger[start] = "start"
    _signals(np.flatnonzero(kinds == "WorkflowExecutionSignaled"), columns, roles, turn, trigger)
    _updates(np.flatnonzero(~start & (kinds != "WorkflowExecutionSignaled")), columns, roles,
             turn, trigger)  # fmt: skip

    at = np.flatnonzero(turn)
    t_run, t_eid = run[at], eid[at]
    # A workflow that starts and waits for its first message: the start is no turn.
    first_activity = np.full(count, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_activity, firsts[0], firsts[1])
    heads = np.flatnonzero(np.r_[True, t_run[1:] != t_run[:-1]]) if len(at) else at
    two = heads[(heads + 1 < len(at))]
    two = two[t_run[np.minimum(two + 1, len(at) - 1)] == t_run[two]]
    drop = two[(trigger[at[two]] == "start") & (first_activity[t_run[two]] > t_eid[two + 1])]
    kept = np.ones(len(at), dtype=bool)
    kept[drop] = False
    at, t_run, t_eid = at[kept], t_run[kept], t_eid[kept]

    answered_before = np.zeros(count, dtype=np.int64)
    np.maximum.at(answered_before, completed[0], completed[1])
    failure_id = np.full(count, np.iinfo(np.int64).min, dtype=np.int64)
    failure_text = np.full(count, None, dtype=object)
    for code, (failed, text) in last_failure.items():
        failure_id[code], failure_text[code] = failed, text
    answered = t_eid < answered_before[t_run]
    failures = np.full(len(at), None, dtype=object)
    shown = ~answered & (failure_id[t_run] > t_eid)
    failures[shown] = failure_text[t_run[shown]]
    t_trigger = trigger[at]
    listed = list(zip(t_eid.tolist(), t_trigger.tolist(), answered.tolist(), failures.tolist(),
                      strict=True))  # fmt: skip
    rows = messages[at].tolist()
    bounds = np.searchsorted(t_run, np.arange(count + 1)).tolist()
    turns = {runs[code]: listed[bounds[code]:bounds[code + 1]] for code in resolved}
    message_rows = {runs[code]: rows[bounds[code]:bounds[code + 1]] for code in resolved}
    return turns, message_rows, t_run, t_eid, t_trigger


def _signals(where: np.ndarray, columns: Any, roles: list[Roles | None], turn: np.ndarray,
             trigger: np.ndarray) -> None:  # fmt: skip
    """Mark the user signals among the messages at ``where`` as turns, with their triggers:
    decided once per distinct (roles, name), each trigger made once per distinct text name."""
    if not len(where):
        return
    names = columns("signal_name")[where]
    codes, uniques = pd.factorize(names)  # None and NaN: -1 (both no name)
    values = uniques.tolist()
    of_run, distinct = roles_index(roles)
    held = of_run[columns("run")[where]]
    width = len(values) + 1
    pairs, inverse = np.unique(held * width + codes + 1, return_inverse=True)
    decided = np.array([
        pair >= 0 and distinct[pair // width].is_user_signal(
            _text(values[pair % width - 1]) if pair % width else None)
        for pair in pairs.tolist()
    ], dtype=bool)  # fmt: skip
    user = decided[inverse.reshape(-1)]
    # Triggers by the name's code where it is text; any other name is written as it is.
    made = np.array([f"signal:{v}" for v in values] + [None], dtype=object)[codes]
    textual = np.array([type(v) is str for v in values] + [False], dtype=bool)[codes]
    for i in np.flatnonzero(user & ~textual).tolist():
        made[i] = f"signal:{names[i]}"
    turn[where[user]] = True
    trigger[where[user]] = made[user]


def _updates(where: np.ndarray, columns: Any, roles: list[Roles | None], turn: np.ndarray,
             trigger: np.ndarray) -> None:  # fmt: skip
    """Mark the user updates among the messages at ``where`` as turns (an update id counted
    once per run), with their triggers."""
    if not len(where):
        return
    seen: dict[int, set[Any]] = {}
    for i, code, eid, update, update_id in zip(
        where.tolist(), columns("run")[where].tolist(), columns("event_id")[where].tolist(),
        columns("update_name")[where].tolist(), columns("update_id")[where].tolist(),
        strict=True,
    ):  # fmt: skip
        found = roles[code]
        if found is None:
            continue
        key = _text(update_id) or eid
        ids = seen.setdefault(code, set())
        name = _text(update)
        if key not in ids and found.is_user_update(name):
            ids.add(key)
            turn[i] = True
            trigger[i] = f"update:{name}"
