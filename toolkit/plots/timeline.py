"""Time charts: activities per turn (a Gantt chart) and the deliveries of one bus command."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from toolkit.errors import ToolkitError
from toolkit.plots.style import new_figure

__all__ = ["OUTCOME_COLORS", "ROLE_COLORS", "plot_activity_timeline", "plot_delivery_timeline",
           "timeline_rows"]

ROLE_COLORS = {"model": "#4C72B0", "listing": "#DD8452", "tool_call": "#55A868", "other": "#8C8C8C"}
_ROLE_LABELS = {"model": "model call", "listing": "tool listing", "tool_call": "tool call",
                "other": "other activity"}  # fmt: skip
OUTCOME_COLORS = {"completed": "#55A868", "failed": "#C44E52", "timed_out": "#DD8452",
                  "canceled": "#8C8C8C", "open": "#4C72B0"}  # fmt: skip
_FAILED_TASK = "#C00000"


def timeline_rows(data: pd.DataFrame, *, roles: Any = "auto") -> tuple[pd.DataFrame, pd.DataFrame]:
    """What :func:`plot_activity_timeline` draws: activities and workflow-task failures.

    Parameters
    ----------
    data
        An events frame of one history, or :func:`toolkit.activity_spans` output.
    roles
        Agent roles for an events frame (``"auto"``; a history of no known agent framework is
        drawn as one panel of activities).

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        Activities: ``turn``, ``trigger``, ``event_id``, ``activity_type``, ``role``,
        ``scheduled``, ``started``, ``closed``, ``attempt`` (Int64, NA for spans), ``outcome``;
        one row with no ``event_id`` per turn without any activity (a stuck turn). Failed
        workflow tasks (events only): ``workflow_task``, ``time``, ``turn``, ``outcome``,
        ``cause``, ``failure_message``.
    """
    import toolkit as tk

    if "event_type" not in data.columns:
        spans = data.assign(attempt=pd.array([pd.NA] * len(data), dtype="Int64"))
        spans["outcome"] = spans["outcome"].map(_span_outcome)
        empty = pd.DataFrame(columns=["workflow_task", "time", "turn", "outcome", "cause",
                                      "failure_message"])  # fmt: skip
        return spans, empty
    if data.groupby(["source", "history"], dropna=False).ngroups > 1:
        raise ToolkitError("plot_activity_timeline: the frame holds several histories; "
                           "expected one (filter it by source and history)")  # fmt: skip
    acts = tk.activities(data)
    try:
        spans = tk.activity_spans(data, roles=roles)
        turns = tk.listings_per_turn(data, roles=roles)[["turn", "trigger"]]
    except ToolkitError:  # no agent framework: every activity in one panel
        spans = pd.DataFrame({"turn": 0, "trigger": None, "event_id": acts["scheduled_event_id"],
                              "activity_type": acts["activity_type"], "role": "other"})
        turns = pd.DataFrame({"turn": [0], "trigger": [None]})
    detail = acts.set_index("scheduled_event_id")
    ids = spans["event_id"]
    rows = spans[["turn", "trigger", "event_id", "activity_type", "role"]].assign(
        scheduled=ids.map(detail["scheduled_time"]).to_numpy(),
        started=ids.map(detail["started_time"]).to_numpy(),
        closed=ids.map(detail["closed_time"]).to_numpy(),
        attempt=ids.map(detail["attempt"]).astype("Int64").to_numpy(),
        outcome=ids.map(detail["outcome"]).to_numpy(),
    )
    stuck = turns[~turns["turn"].isin(rows["turn"])]
    rows = pd.concat([rows, stuck.assign(event_id=pd.NA)], ignore_index=True)
    rows["event_id"] = rows["event_id"].astype("Int64")
    tasks = tk.workflow_tasks(data)
    failed = tasks[tasks["outcome"].isin(["failed", "timed_out"])]
    time = failed["closed_time"].fillna(failed["started_time"])
    closing = failed["closed_event_id"].fillna(failed["started_event_id"])
    failures = pd.DataFrame({
        "workflow_task": failed["workflow_task"].to_numpy(), "time": time.to_numpy(),
        "turn": _turn_of_event(data, roles, closing), "outcome": failed["outcome"].to_numpy(),
        "cause": failed["cause"].to_numpy(),
        "failure_message": failed["failure_message"].to_numpy(),
    })  # fmt: skip
    return rows, failures


def _span_outcome(event_type: Any) -> Any:
    names = {"ActivityTaskCompleted": "completed", "ActivityTaskFailed": "failed",
             "ActivityTaskTimedOut": "timed_out", "ActivityTaskCanceled": "canceled"}  # fmt: skip
    return names.get(event_type, event_type)


def _turn_of_event(events: pd.DataFrame, roles: Any, event_ids: pd.Series) -> list[int]:
    """The turn each event belongs to: the last turn whose user message came before it."""
    from toolkit.agents.roles import resolve_roles
    from toolkit.agents.turns import turn_starts

    scheduled = events[events["event_type"] == "ActivityTaskScheduled"]
    try:
        resolved = resolve_roles(roles, scheduled["activity_type"], "<events>")
    except ToolkitError:  # no agent framework: one panel, turn 0
        return [0] * len(event_ids)
    starts = [event_id for event_id, _ in turn_starts(events, resolved, scheduled)]
    return [max(1, sum(1 for s in starts if s < event_id)) for event_id in event_ids]


def plot_activity_timeline(
    data: pd.DataFrame, *, roles: Any = "auto", title: str | None = None
) -> Figure:
    """Gantt chart of one history's activities, one panel per turn, coloured by role.

    Light bars run from scheduling to the start of the last attempt (waiting, earlier attempts
    and retry back-off), dark bars are the last attempt; each activity that did not simply
    complete says how it ended and after how many attempts. An agent's activities are coloured
    by role (model call, tool listing, tool call), a plain workflow's by outcome. A turn with
    no activity (stuck: its workflow task kept failing) gets an empty panel that says so, and
    every failed workflow task is a red line with its cause.

    Parameters
    ----------
    data
        An events frame of one history (:func:`toolkit.read_history`), or
        :func:`toolkit.activity_spans` output of one history.
    roles
        Agent roles (``"auto"``); a history of no known agent framework gets one panel.
    title
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    rows, failures = timeline_rows(data, roles=roles)
    timed = rows[rows["event_id"].notna()]
    origin = data["event_time"].min() if "event_time" in data else timed["scheduled"].min()
    end = max(pd.Series([*timed["closed"].dropna(), *timed["scheduled"].dropna(),
                         *failures["time"].dropna()]).max(), origin)  # fmt: skip
    span_seconds = max((end - origin).total_seconds(), 1e-3)
    turns = sorted(rows["turn"].unique())
    sizes = [max(2, int((timed["turn"] == t).sum())) for t in turns]
    figure = new_figure(9.5, 0.24 * sum(sizes) + 0.55 * len(turns) + 1.3)
    axes = figure.subplots(len(turns), 1, sharex=True, squeeze=False, height_ratios=sizes)[:, 0]
    # An agent's activities are told apart by role; a plain workflow's by how they ended.
    by_role = (timed["role"] != "other").any()
    colors = [ROLE_COLORS.get(r, ROLE_COLORS["other"]) if by_role
              else OUTCOME_COLORS.get(o if isinstance(o, str) else "open", OUTCOME_COLORS["open"])
              for r, o in zip(timed["role"], timed["outcome"], strict=True)]  # fmt: skip
    timed = timed.assign(color=colors)
    for ax, turn in zip(axes, turns, strict=True):
        mine = timed[timed["turn"] == turn].sort_values("event_id")
        trigger = rows.loc[rows["turn"] == turn, "trigger"].iloc[0]
        _draw_turn(ax, mine, origin, end, span_seconds)
        name = "activities" if turn == 0 and not isinstance(trigger, str) else f"turn {turn}"
        ax.set_title(f"{name} ({trigger})" if isinstance(trigger, str) else name,
                     fontsize=9, loc="left")  # fmt: skip
        for failure in failures[failures["turn"] == turn].itertuples():
            seconds = (failure.time - origin).total_seconds()
            late = seconds > span_seconds / 2
            ax.axvline(seconds, color=_FAILED_TASK, linewidth=1.5, linestyle="--")
            cause = str(failure.cause or failure.outcome)
            cause = cause.removeprefix("WORKFLOW_TASK_FAILED_CAUSE_")
            ax.annotate(f"workflow task {failure.workflow_task} {failure.outcome}: "
                        f"{cause.replace('_', ' ').lower()}", (seconds, 0.25),
                        xycoords=("data", "axes fraction"), xytext=(-4 if late else 4, 0),
                        textcoords="offset points", ha="right" if late else "left",
                        va="center", fontsize=8,
                        color=_FAILED_TASK)  # fmt: skip
    axes[-1].set_xlim(0, span_seconds * 1.32)
    axes[-1].set_xlabel("seconds since the workflow started")
    if by_role:
        present = [r for r in ROLE_COLORS if (timed["role"] == r).any()]
        handles: list[Any] = [Patch(color=ROLE_COLORS[r], label=_ROLE_LABELS[r]) for r in present]
    else:
        ended = set(timed["outcome"].fillna("open"))
        handles = [Patch(color=c, label=o.replace("_", " ")) for o, c in OUTCOME_COLORS.items()
                   if o in ended]  # fmt: skip
    if len(failures):
        handles.append(Line2D([], [], color=_FAILED_TASK, linestyle="--",
                              label="failed workflow task"))  # fmt: skip
    figure.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8,
                  frameon=False)  # fmt: skip
    default = "Activities (light: scheduled, waiting or between retries; dark: last attempt)"
    figure.suptitle(title or default, fontsize=10)
    return figure


def _draw_turn(ax: Axes, mine: pd.DataFrame, origin: Any, end: Any, span: float) -> None:
    if mine.empty:
        ax.text(0.01, 0.72, "no activity: no workflow task of this turn completed",
                transform=ax.transAxes, ha="left", va="center", fontsize=8.5, color="#555555")
        ax.set_yticks([])
        return
    for y, row in enumerate(mine.itertuples()):
        closed = row.closed if pd.notna(row.closed) else end
        began = row.started if pd.notna(row.started) else closed
        start = (row.scheduled - origin).total_seconds()
        waiting = (began - origin).total_seconds()
        stop = (closed - origin).total_seconds()
        color = row.color
        ax.barh(y, max(waiting - start, 0.0), left=start, color=color, alpha=0.35, height=0.7)
        ax.barh(y, max(stop - waiting, span * 2e-3), left=waiting, color=color, height=0.7)
        note = _ending(row.outcome, row.attempt)
        if note:
            ax.text(stop + span * 0.01, y, note, va="center", fontsize=7.5, color="#333333")
    ax.set_yticks(np.arange(len(mine)), list(mine["activity_type"]), fontsize=7.5)
    ax.set_ylim(len(mine) - 0.5, -0.5)


def _ending(outcome: Any, attempt: Any) -> str:
    """How an activity ended, when it did not simply complete on its first attempt."""
    attempts = int(attempt) if pd.notna(attempt) else 1
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if outcome == "completed" or outcome is None or (isinstance(outcome, float)):
        return f"completed on attempt {attempts}" if attempts > 1 else ""
    if not isinstance(outcome, str):
        return "still open"
    return f"{outcome.replace('_', ' ')}{tries}"


def plot_delivery_timeline(
    timeline: pd.DataFrame, title: str = "Deliveries of one command"
) -> Figure:
    """The deliveries of one bus command: errors, retries and the dead letter on one time axis.

    Parameters
    ----------
    timeline
        ``seconds``, ``kind`` (``duplicate_tool``, ``retry``, ``dead_letter``) and ``attempt``
        per record, as the duplicate-tool notebook builds it from the detectors.
    title
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    styles = {"duplicate_tool": ("x", "tab:red", 2), "retry": ("o", "tab:orange", 1),
              "dead_letter": ("s", "black", 0)}  # fmt: skip
    labels = {"duplicate_tool": 'error: duplicate tool: "…"', "retry": "retryable failure",
              "dead_letter": "dead-lettered"}  # fmt: skip
    figure = new_figure(9.0, 2.8)
    ax = figure.add_subplot()
    for kind, (marker, color, level) in styles.items():
        part = timeline[timeline["kind"] == kind]
        ax.scatter(part["seconds"], [level] * len(part), marker=marker, color=color, s=60,
                   label=labels[kind])  # fmt: skip
        if kind == "retry":
            for seconds, attempt in zip(part["seconds"], part["attempt"], strict=True):
                ax.annotate(f"#{attempt}", (seconds, level), textcoords="offset points",
                            xytext=(0, 8), ha="center", fontsize=8)  # fmt: skip
    ax.set_yticks([0, 1, 2], ["dead letter", "delivery", "error"])
    ax.set_ylim(-0.6, 2.8)
    ax.set_xlabel("seconds since the first failure")
    ax.set_title(title, fontsize=10)
    figure.legend(loc="outside right upper", fontsize=8, frameon=False)
    return figure
