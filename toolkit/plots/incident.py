"""The incident timeline: every run over time, one lane per version label, with what went wrong.

The first chart of the investigation report: when each run started and closed, under which
version, how it ended, where its workflow tasks failed and its activities were retried, where it
was terminated, where each newer version's first run came in (the rollout), and when the worker
logs saw something that no history holds.
"""

from __future__ import annotations

from typing import Any

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from toolkit.plots.style import NOTEBOOK_WIDTH, new_figure

__all__ = ["STATUS_COLORS", "incident_rows", "plot_incident_timeline"]

#: How a run ended, as the runs table spells it (``stuck`` overrides ``running``).
STATUS_COLORS = {"completed": "#55A868", "running": "#4C72B0", "stuck": "#DD8452",
                 "failed": "#C44E52", "timed_out": "#8172B3", "terminated": "#6B6B6B",
                 "canceled": "#A0A0A0", "continued_as_new": "#64B5CD"}  # fmt: skip
_OTHER = "#937860"
#: Marks on the runs: (event types, marker, colour, legend text).
_MARKS = {
    "workflow_task_failed": ({"WorkflowTaskFailed", "WorkflowTaskTimedOut"}, "X", "#C00000",
                             "workflow task failed"),
    "activity_failed": ({"ActivityTaskFailed", "ActivityTaskTimedOut"}, "o", "#E08000",
                        "activity attempt failed (retried or final)"),
    "terminated": ({"WorkflowExecutionTerminated"}, "s", "#222222", "run terminated"),
}  # fmt: skip
_LOGS = "seen in logs"
#: Version lanes at most; the runs of the least used labels share the last one.
_LANES = 12
_OTHERS = "other versions"
#: Runs stacked in one lane at most: beyond, bars share rows (a fleet is still readable).
_ROWS = 8


def incident_rows(
    runs: pd.DataFrame, events: pd.DataFrame | None = None, findings: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What :func:`plot_incident_timeline` draws: one bar per run, one mark per event of note.

    Parameters
    ----------
    runs
        :attr:`toolkit.investigate.Investigation.runs` (``source``, ``history``, ``run_id``,
        ``label``, ``status``, ``stuck``, ``start``, ``close``).
    events
        The runs' events: marks (failed workflow tasks, failed activity attempts,
        terminations), and where an open run's bar ends (its last event).
    findings
        Findings: those that name no run (seen in logs only) are marked in a lane of their own
        from their first to their last sighting.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        Bars: ``lane`` (version label, in order of first run), ``row`` (within the lane),
        ``run_id``, ``start``, ``end``, ``status`` (``stuck`` for a stuck open run), ``open``.
        Marks: ``lane``, ``row``, ``time``, ``kind`` (``workflow_task_failed``,
        ``activity_failed``, ``terminated``, ``seen_in_logs``), ``end`` (a log finding's last
        sighting, else the time), ``text``.
    """
    bar_columns = ["lane", "row", "run_id", "start", "end", "status", "open", "source", "history"]
    mark_columns = ["lane", "row", "time", "kind", "end", "text"]
    frame = runs[runs["start"].notna()].copy() if len(runs) else runs.copy()
    if frame.empty:
        bars = pd.DataFrame(columns=bar_columns)
    else:
        last = None
        if events is not None and len(events):
            last = events.groupby(["source", "history"])["event_time"].max()
        ends = []
        for row in frame.itertuples():
            if pd.notna(row.close):
                ends.append(row.close)
            elif last is not None and (row.source, row.history) in last.index:
                ends.append(last[(row.source, row.history)])
            else:
                ends.append(row.start)
        frame["end"] = ends
        frame["open"] = frame["close"].isna()
        stuck = frame["stuck"].fillna(False).astype(bool)
        frame["status"] = ["stuck" if s else status
                           for s, status in zip(stuck, frame["status"], strict=True)]
        # Lanes in order of first run; past _LANES labels, the least used share one lane.
        sizes = frame["label"].value_counts()
        if len(sizes) > _LANES:
            kept = set(sizes.index[: _LANES - 1])
            frame["label"] = [lab if lab in kept else _OTHERS for lab in frame["label"]]
        order = frame.groupby("label", sort=False)["start"].min().sort_values().index
        frame["lane"] = pd.Categorical(frame["label"], categories=list(order), ordered=True)
        frame = frame.sort_values(["lane", "start"], kind="stable")
        frame["row"] = _pack(frame)
        bars = frame.assign(lane=frame["label"])[bar_columns].reset_index(drop=True)
    marks = [_event_marks(bars, events)] if len(bars) and events is not None else []
    if findings is not None and len(findings):
        seen = findings[(findings["run_count"] == 0) & findings["first_seen"].notna()]
        marks.append(pd.DataFrame({
            "lane": _LOGS, "row": np.arange(len(seen)) % _ROWS, "time": seen["first_seen"],
            "kind": "seen_in_logs", "end": seen["last_seen"].fillna(seen["first_seen"]),
            "text": seen["title"]}))  # fmt: skip
    marks = [m for m in marks if len(m)]
    table = pd.concat(marks, ignore_index=True) if marks else pd.DataFrame(columns=mark_columns)
    return bars, table[mark_columns]


def _pack(frame: pd.DataFrame) -> list[int]:
    """Rows within each lane: a run takes the first row free at its start (at most _ROWS)."""
    rows = []
    for _, lane in frame.groupby("lane", sort=False, observed=True):
        free_at: list[Any] = []
        for start, end in zip(lane["start"], lane["end"], strict=True):
            row = next((i for i, t in enumerate(free_at) if t <= start), None)
            if row is None and len(free_at) < _ROWS:
                row = len(free_at)
                free_at.append(end)
            elif row is None:  # every row busy: the one that frees first
                row = int(np.argmin(free_at))
            free_at[row] = max(free_at[row], end)
            rows.append(row)
    return rows


def _event_marks(bars: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    where = bars.set_index(["source", "history"])[["lane", "row"]]
    parts = []
    for kind, (types, _, _, _) in _MARKS.items():
        chosen = events[events["event_type"].isin(types) & events["event_time"].notna()]
        if chosen.empty:
            continue
        keys = pd.MultiIndex.from_arrays([chosen["source"], chosen["history"]])
        known = keys.isin(where.index)
        chosen, keys = chosen[known], keys[known]
        placed = where.loc[keys]
        text = chosen.get("activity_type")
        parts.append(pd.DataFrame({
            "lane": placed["lane"].to_numpy(), "row": placed["row"].to_numpy(),
            "time": chosen["event_time"].to_numpy(), "kind": kind,
            "end": chosen["event_time"].to_numpy(),
            "text": text.to_numpy() if text is not None else None}))  # fmt: skip
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def plot_incident_timeline(
    runs: pd.DataFrame,
    events: pd.DataFrame | None = None,
    findings: pd.DataFrame | None = None,
    *,
    title: str = "Incident timeline: runs by version label",
) -> Figure:
    """Runs over time, one lane per version label, coloured by how they ended.

    Each run is a bar from its start to its close (an open run's bar ends at its last event and
    is hatched); marks show failed workflow tasks, failed activity attempts and terminations;
    a dashed line marks the first run of each version after the first (the rollout boundary);
    findings seen only in logs get a lane of their own.

    Parameters
    ----------
    runs, events, findings
        As :func:`incident_rows` takes them (an :class:`~toolkit.investigate.Investigation`'s
        ``runs``, ``evidence["events"]`` and ``findings``).
    title
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from toolkit.plots.listings import _tick_text

    bars, marks = incident_rows(runs, events, findings)
    lanes = list(dict.fromkeys(bars["lane"]))
    if (marks["lane"] == _LOGS).any():
        lanes.append(_LOGS)
    heights = {lane: 1 + int(max(bars.loc[bars["lane"] == lane, "row"].max()
                                 if (bars["lane"] == lane).any() else 0,
                                 marks.loc[marks["lane"] == lane, "row"].max()
                                 if (marks["lane"] == lane).any() else 0))
               for lane in lanes}  # fmt: skip
    base, y = {}, 0.0
    for lane in lanes:  # lanes from the top down, a gap between them
        base[lane] = y
        y += heights[lane] + 0.6
    figure = new_figure(NOTEBOOK_WIDTH, 1.7 + 0.3 * max(y, 1.5))
    ax = figure.add_subplot()
    _time_axis(ax, bars, marks)
    low, high = ax.get_xlim()
    if len(bars):
        starts = mdates.date2num(pd.to_datetime(bars["start"], utc=True))
        ends = mdates.date2num(pd.to_datetime(bars["end"], utc=True))
        # A run of seconds among runs of years is still a visible mark (0.4 % of the axis).
        widths = np.maximum(ends - starts, (high - low) * 0.004)
        rows = np.array([base[lane] + row for lane, row in zip(bars["lane"], bars["row"],
                                                                strict=True)])  # fmt: skip
        for (status, still_open), index in bars.groupby(["status", "open"]).groups.items():
            at = bars.index.get_indexer(index)  # one call per kind of bar: fleets draw fast
            ax.barh(rows[at], widths[at], left=starts[at], height=0.7,
                    color=STATUS_COLORS.get(status, _OTHER), hatch="///" if still_open else None,
                    edgecolor="white", linewidth=0.5)  # fmt: skip
    for kind, (_, marker, color, _) in _MARKS.items():
        mine = marks[marks["kind"] == kind]
        if len(mine):
            ax.scatter(mdates.date2num(pd.to_datetime(mine["time"], utc=True)),
                       [base[lane] + row for lane, row in zip(mine["lane"], mine["row"],
                                                              strict=True)],
                       marker=marker, color=color, s=28, zorder=3,
                       edgecolors="white", linewidths=0.5)  # fmt: skip
    logs = marks[marks["kind"] == "seen_in_logs"]
    for mark in logs.itertuples():
        start, end = mdates.date2num(mark.time), mdates.date2num(mark.end)
        ax.plot([start, max(end, start)], [base[_LOGS] + mark.row] * 2, color="#7F3C8D",
                linewidth=3, solid_capstyle="round", marker="|", markersize=8)  # fmt: skip
    rollouts = _rollouts(runs, bars)
    for moment in rollouts:
        ax.axvline(mdates.date2num(moment), color="#333333", linestyle="--", linewidth=1)
    counts = bars.groupby("lane", sort=False).size()
    labels = [_tick_text(lane, 26) + (f"\n{counts[lane]} run" + ("s" if counts[lane] != 1
                                                                    else "")
                                      if lane in counts else "")
              for lane in lanes]  # fmt: skip
    ax.set_yticks([base[lane] + (heights[lane] - 1) / 2 for lane in lanes], labels, fontsize=8)
    ax.set_ylim(y - 0.6 + 0.2, -0.8)
    handles = _legend(bars, marks, bool(rollouts))
    if handles:
        figure.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)),
                      fontsize=8, frameon=False)  # fmt: skip
    figure.suptitle(title, fontsize=10)
    return figure


def _rollouts(runs: pd.DataFrame, bars: pd.DataFrame) -> list[Any]:
    """First runs of a version after another version of the same workflow type: the rollout
    boundaries (unrelated workflows under different labels are no rollout)."""
    if bars.empty or "workflow_type" not in runs.columns:
        return []
    typed = bars.merge(runs[["source", "history", "workflow_type"]], on=["source", "history"])
    out = []
    for _, group in typed.groupby("workflow_type"):
        firsts = group.groupby("lane")["start"].min().sort_values()
        out += list(firsts.iloc[1:])
    return sorted(set(out))[:_LANES]


def _time_axis(ax: Any, bars: pd.DataFrame, marks: pd.DataFrame) -> None:
    times = pd.concat([pd.to_datetime(bars["start"], utc=True),
                       pd.to_datetime(bars["end"], utc=True),
                       pd.to_datetime(marks["time"], utc=True),
                       pd.to_datetime(marks["end"], utc=True)]).dropna()  # fmt: skip
    if times.empty:
        ax.set_xlabel("time (UTC)")
        return
    low, high = times.min(), times.max()
    pad = max((high - low) * 0.03, pd.Timedelta(seconds=1))
    ax.set_xlim(mdates.date2num(low - pad), mdates.date2num(high + pad))
    locator = mdates.AutoDateLocator(minticks=3, maxticks=7)
    ax.xaxis.set_major_locator(locator)
    formatter = mdates.ConciseDateFormatter(locator, tz="UTC", show_offset=False)
    ax.xaxis.set_major_formatter(formatter)
    day = low.strftime("%Y-%m-%d")
    last = high.strftime("%Y-%m-%d")
    ax.set_xlabel(f"time (UTC) on {day}" if day == last else f"time (UTC), {day} to {last}",
                  fontsize=9)  # fmt: skip
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#EEEEEE", linewidth=0.8)
    ax.set_axisbelow(True)


def _legend(bars: pd.DataFrame, marks: pd.DataFrame, rollout: bool) -> list[Any]:
    handles: list[Any] = [Patch(facecolor=STATUS_COLORS.get(status, _OTHER),
                                label=status.replace("_", " "))
                          for status in STATUS_COLORS if (bars["status"] == status).any()]
    if bars["open"].any():
        handles.append(Patch(facecolor="white", edgecolor="#555555", hatch="///",
                             label="still open at the last event"))
    for kind, (_, marker, color, text) in _MARKS.items():
        if (marks["kind"] == kind).any():
            handles.append(Line2D([], [], marker=marker, color=color, linestyle="",
                                  label=text))
    if (marks["kind"] == "seen_in_logs").any():
        handles.append(Line2D([], [], color="#7F3C8D", linewidth=3, label="finding seen in logs"))
    if rollout:
        handles.append(Line2D([], [], color="#333333", linestyle="--",
                              label="first run of the next version"))
    return handles
