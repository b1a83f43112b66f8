"""Every command of each model step, in order: where listings sit relative to timers.

:func:`toolkit.agent_steps` counts listings and tool calls per step; replay compares *positions*
too. When an ``InstructionProvider`` or a ``ToolFilter`` starts a timer, a listing moved from one
side of that timer to the other breaks replay even though the count is unchanged. This module
writes each step's commands as letters (``L`` listing, ``M`` model, ``C`` tool call,
``T(<summary>)`` timer, other activities by type name, other commands by kind), split at the model
call: ``before_model`` is what the step issued up to its model call (request preprocessing),
``after_model`` the tool calls that follow it (plus, on a turn's last step, everything after).

Examples
--------
>>> steps = step_commands(toolkit.read_history("run.json"))              # doctest: +SKIP
>>> steps[["turn", "step", "before_model"]]                               # doctest: +SKIP
   turn  step       before_model
0     1     1  L T(instruction) L
1     1     2    T(instruction) L
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from toolkit.agents.roles import Roles, resolve_roles
from toolkit.agents.turns import turn_starts
from toolkit.histories.payloads import decode_payload
from toolkit.replay.commands import commands_of_records, events_frame, iter_histories, per_source

__all__ = ["STEP_COMMAND_COLUMNS", "command_letter", "step_commands"]

STEP_COMMAND_COLUMNS = [
    "source",
    "history",
    "run_id",
    "turn",
    "trigger",
    "step",
    "model_event_id",
    "before_model",
    "after_model",
    "turn_sequence",
]

_LETTER = {"model": "M", "listing": "L", "tool_call": "C"}

#: Commands that close the run: not part of any step.
_CLOSING = frozenset(
    {
        "CompleteWorkflowExecution",
        "FailWorkflowExecution",
        "CancelWorkflowExecution",
        "ContinueAsNewWorkflowExecution",
    }
)


def _summary(extra: Any) -> str | None:
    """The decoded ``userMetadata.summary`` of an event (timers carry their purpose there)."""
    if not isinstance(extra, Mapping):
        return None
    metadata = extra.get("userMetadata")
    summary = metadata.get("summary") if isinstance(metadata, Mapping) else None
    if summary is None:
        return None
    value = decode_payload(summary)
    return None if value in (None, "") else str(value)


def command_letter(command: Mapping[str, Any], roles: Roles, summary: str | None = None) -> str:
    """The short label of one ``commands()`` row: ``L``/``M``/``C``, ``T(...)``, a type or kind.

    Parameters
    ----------
    command
        A row of :func:`toolkit.commands`.
    roles
        Which activity types are model calls, listings and tool calls.
    summary
        The event's user-metadata summary, shown in timer labels (the timer id otherwise).
    """
    kind = command.get("kind")
    if kind == "ScheduleActivityTask":
        activity_type = command.get("activity_type")
        return _LETTER.get(roles.role_of(activity_type), str(activity_type))
    if kind == "StartTimer":
        return f"T({summary or command.get('timer_id')})"
    if kind == "RecordMarker":
        return f"Marker({command.get('marker_name')})"
    return str(kind)


def _split_steps(letters: list[tuple[str, int]]) -> list[tuple[int | None, list[str], list[str]]]:
    """(model event id, before, after) per step; a turn without a model call is one step 0."""
    models = [i for i, (letter, _) in enumerate(letters) if letter == "M"]
    if not models:
        return [(None, [letter for letter, _ in letters], [])]
    steps = []
    start = 0
    for number, index in enumerate(models):
        end = models[number + 1] if number + 1 < len(models) else len(letters)
        after_end = index + 1
        if number + 1 < len(models):
            # Tool calls right after the model call are its own; the next step's preprocessing
            # (listings, timers) starts at the first other command.
            while after_end < end and letters[after_end][0] == "C":
                after_end += 1
        else:
            after_end = len(letters)
        before = [letter for letter, _ in letters[start:index]]
        after = [letter for letter, _ in letters[index + 1 : after_end]]
        steps.append((letters[index][1], before, after))
        start = after_end
    return steps


@per_source
def step_commands(events: Any, roles: str | Roles = "auto") -> pd.DataFrame:
    """One row per model step with its commands before and after the model call.

    Parameters
    ----------
    events
        An events frame (one or several histories) or anything ``read_history`` accepts.
    roles
        ``"auto"``, a preset name or a :class:`~toolkit.agents.roles.Roles` (as in
        :func:`toolkit.agent_steps`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`STEP_COMMAND_COLUMNS`: ``source``, ``history``, ``run_id``, ``turn``
        (numbered like
        :func:`toolkit.listings_per_turn`; 0 for commands before the first user message),
        ``trigger``, ``step`` (1-based; 0 for a turn without a model call, which still gets a row,
        even with no commands at all), ``model_event_id``, ``before_model``, ``after_model``
        (space-separated letters) and ``turn_sequence`` (the whole turn). Workflow-closing
        commands are left out.

    Raises
    ------
    toolkit.errors.ToolkitError
        When ``roles="auto"`` recognises no framework, or an unknown preset is named.
    """
    frame = events_frame(events)
    rows: list[dict[str, Any]] = []
    for history, one in iter_histories(frame):
        source = str(one["source"].iloc[0]) if "source" in one and len(one) else "<events>"
        scheduled = one.loc[one["event_type"] == "ActivityTaskScheduled", "activity_type"]
        resolved = resolve_roles(roles, scheduled, source)
        extras = dict(zip(one["event_id"].astype(int), one.get("extra", [None] * len(one)),
                          strict=True))  # fmt: skip
        records = one.to_dict("records")
        starts = turn_starts(one, resolved, records=records)
        per_turn: dict[int, list[tuple[str, int]]] = {t: [] for t in range(1, len(starts) + 1)}
        run_id = one["run_id"].iloc[0] if "run_id" in one and len(one) else None
        for command in commands_of_records(history, records):
            if command["kind"] in _CLOSING:
                continue
            event_id = command["event_id"]
            turn = sum(1 for start, _ in starts if start < event_id)
            letter = command_letter(command, resolved, _summary(extras.get(event_id)))
            per_turn.setdefault(turn, []).append((letter, event_id))
        for turn in sorted(per_turn):
            letters = per_turn[turn]
            trigger = starts[turn - 1][1] if turn >= 1 else None
            sequence = " ".join(letter for letter, _ in letters)
            for number, (model_id, before, after) in enumerate(_split_steps(letters)):
                rows.append(
                    {
                        "history": history,
                        "run_id": run_id,
                        "turn": turn,
                        "trigger": trigger,
                        "step": number + 1 if model_id is not None else 0,
                        "model_event_id": model_id,
                        "before_model": " ".join(before),
                        "after_model": " ".join(after),
                        "turn_sequence": sequence,
                    }
                )
    out = pd.DataFrame(rows, columns=STEP_COMMAND_COLUMNS)
    out["model_event_id"] = out["model_event_id"].astype("Int64")
    return out
