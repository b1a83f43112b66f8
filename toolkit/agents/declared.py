"""What each model call was offered, run by run: declared lists, duplicate declarations.

The tools declared to the model are in every model call's input (:mod:`toolkit.agents.model_io`),
so the history alone shows a tool declared twice in one request (two toolsets on one endpoint:
ADK sends both toolsets' declarations, OpenAI Agents 0.17.8 both copies of a tool a server lists
twice) and a declared list that changes between versions (a new order, a tool gone), even where
no error was raised and no log was kept.

Examples
--------
>>> toolkit.duplicate_tools(toolkit.read_history("run.json"))        # doctest: +SKIP
>>> declared_tools(events).groupby("run_id")["declared_tools"].first()  # doctest: +SKIP
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from toolkit.agents.model_io import read_model_call, summary_of
from toolkit.agents.roles import Roles, detect_roles

__all__ = ["DECLARED_COLUMNS", "declared_duplicates", "declared_tools", "duplicate_tools"]

#: Columns of :func:`declared_tools`.
DECLARED_COLUMNS = ["source", "history", "workflow_type", "workflow_id", "run_id", "event_id",
                    "event_time", "activity_type", "outcome", "framework", "agent",
                    "declared_tools", "duplicates"]  # fmt: skip

_CLOSED = ("ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut",
           "ActivityTaskCanceled")  # fmt: skip
_KEYS = ["source", "history"]
#: Presets whose model payloads name the agent without the activity summary.
_NO_AGENT_IN_SUMMARY = ("python_adk", "pydantic_ai", "go_googleadk")


def declared_tools(events: pd.DataFrame, roles: str | Roles = "auto") -> pd.DataFrame:
    """One row per model call whose input shows the tools declared to the model.

    Parameters
    ----------
    events
        An events frame of one or many histories.
    roles
        ``"auto"``: per history, the preset its activity names match (histories no preset
        recognises are left out: no inference from results here, which would decode every
        activity of a fleet); or a :class:`~toolkit.agents.roles.Roles` for all of them.

    Returns
    -------
    pandas.DataFrame
        :data:`DECLARED_COLUMNS`: the run's identity, the model activity's scheduled
        ``event_id`` / ``event_time`` / ``activity_type``, ``outcome`` (its closing event type,
        None while open), the payload's ``framework`` and ``agent``, ``declared_tools`` (names
        in the order sent) and ``duplicates`` (names declared more than once in that call,
        sorted).
    """
    keys = [k for k in _KEYS if k in events.columns]
    scheduled = events[events["event_type"] == "ActivityTaskScheduled"]
    if scheduled.empty:
        return pd.DataFrame(columns=DECLARED_COLUMNS)
    # Roles per history from its activity names; then only the model calls' rows are read (a
    # record of every scheduled event would cost more than the payloads).
    group_keys = list(zip(*(scheduled[k] for k in keys), strict=True)) if keys else [()] * len(
        scheduled)
    if isinstance(roles, Roles):
        found: dict[Any, Roles | None] = dict.fromkeys(group_keys, roles)
    else:
        names: dict[Any, set[str]] = {}
        for key, name in zip(group_keys, scheduled["activity_type"], strict=True):
            names.setdefault(key, set()).add(name)
        found = {key: detect_roles(types) for key, types in names.items()}
    is_model = [(r := found[key]) is not None and r.role_of(name) == "model"
                for key, name in zip(group_keys, scheduled["activity_type"], strict=True)]
    wanted = [c for c in (*DECLARED_COLUMNS[:7], "activity_type", "input", "extra")
              if c in scheduled.columns]  # fmt: skip
    model = scheduled.loc[is_model, wanted]
    closing = events[events["event_type"].isin(_CLOSED)]
    links = zip(*(closing[k] for k in keys), closing["scheduled_event_id"], strict=True)
    outcome = dict(zip(links, closing["event_type"], strict=True))
    rows = []
    for event in model.to_dict("records"):
        # Only OpenAI Agents names its agent in the activity summary alone: decoding every
        # event's metadata for the others would cost more than their payloads.
        key = tuple(event[k] for k in keys)
        by_summary = found[key].name not in _NO_AGENT_IN_SUMMARY  # type: ignore[union-attr]
        call = read_model_call(event.get("input"), activity_type=event["activity_type"],
                               summary=summary_of(event.get("extra")) if by_summary else None)
        if call.declared_tools is None:
            continue
        counts = Counter(call.declared_tools)
        rows.append({
            **{c: event.get(c) for c in DECLARED_COLUMNS[:7]},
            "activity_type": event["activity_type"],
            "outcome": outcome.get((*key, event["event_id"])), "framework": call.framework,
            "agent": call.agent, "declared_tools": list(call.declared_tools),
            "duplicates": sorted(name for name, n in counts.items() if n > 1),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=DECLARED_COLUMNS)


def declared_duplicates(declared: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`toolkit.logs.duplicates.duplicate_tools_in_history`'s table for model
    calls that declared a name twice (``kind`` ``declared_twice``), from :func:`declared_tools`.

    ``behaviour``: ``declared`` (the model was offered both; what came of it is in the run's
    other rows: a tool call that fails on the ambiguous name, as the ADK plugin's does, or
    nothing when one of them silently runs), ``failed`` when the model activity itself failed
    (a provider that rejects duplicates, as Gemini does).
    """
    from toolkit.logs.duplicates import HISTORY_DUPLICATE_COLUMNS

    twice = declared[declared["duplicates"].map(len) > 0] if len(declared) else declared
    rows = []
    for row in twice.to_dict("records"):
        failed = row["outcome"] not in (None, "ActivityTaskCompleted")
        names = ", ".join(row["duplicates"])
        rows.append({
            **{c: row.get(c) for c in HISTORY_DUPLICATE_COLUMNS[:7]},
            "event_type": "ActivityTaskScheduled", "kind": "declared_twice",
            "framework": row["framework"], "behaviour": "failed" if failed else "declared",
            "retried_by": None, "tool": names, "toolset": None, "existing": None,
            "text": f"{row['activity_type']} declared {names} twice to the model "
                    f"({len(row['declared_tools'])} declarations: "
                    f"{', '.join(row['declared_tools'])})",
        })  # fmt: skip
    return pd.DataFrame(rows, columns=HISTORY_DUPLICATE_COLUMNS)


def duplicate_tools(logs: Any) -> pd.DataFrame:
    """Duplicate-tool errors and warnings (logs) or failures and declarations (histories).

    Given logs, :func:`toolkit.logs.detectors.duplicate_tools` (one row per failure, every
    framework's message shapes; its docstring has the columns). Given an events frame, the
    duplicate-tool failures the histories record (:func:`toolkit.logs.duplicates.
    duplicate_tools_in_history`) followed by the model calls that declared one tool name twice
    (:func:`declared_duplicates`: ``kind`` ``declared_twice``, ``event_id`` the model
    activity's scheduled event), which the history shows even where nothing failed.
    """
    from toolkit.logs.detectors import duplicate_tools as from_logs

    found = from_logs(logs)
    if isinstance(logs, pd.DataFrame) and "event_type" in logs.columns and "raw" not in logs:
        declared = declared_duplicates(declared_tools(logs))
        if len(declared):
            found = pd.concat([found, declared], ignore_index=True) if len(found) else declared
    return found
