"""Every chart of the toolkit: functions that take frames and return a matplotlib ``Figure``.

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot state), so they work with
the Agg backend, in tests and in notebooks (a returned Figure displays itself in Jupyter).
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

__all__ = [
    "plot_activity_timeline",
    "plot_divergence",
    "plot_listings_per_turn",
    "plot_replay_matrix",
]

ROLE_COLORS = {"model": "#4C72B0", "listing": "#DD8452", "tool_call": "#55A868", "other": "#8C8C8C"}
OUTCOME_COLORS = {"ok": "#C7E9C0", "nondeterminism": "#FCAE91", "error": "#FDD49E"}


def natural_key(label: Any) -> list[Any]:
    """Sort key that orders version labels as versions: ``adk-2.2.0`` before ``adk-2.13.0``."""
    return [
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in re.split(r"(\d+)", str(label))
    ]


def plot_listings_per_turn(
    table: pd.DataFrame,
    *,
    group: str = "label",
    bars: str = "turn",
    value: str = "listings",
    title: str | None = None,
) -> Figure:
    """Grouped bars: ``value`` (listings) per ``bars`` (turn) for each ``group`` (version).

    Parameters
    ----------
    table
        :func:`toolkit.listings_per_turn` output (or any frame with these columns). Several rows
        for one (group, bar) are averaged.
    group, bars, value
        Column names: one cluster per ``group`` value, one bar per ``bars`` value inside it.
    """
    pivot = table.pivot_table(index=group, columns=bars, values=value, aggfunc="mean")
    pivot = pivot.loc[sorted(pivot.index, key=natural_key)]
    figure = Figure(figsize=(max(6.0, 1.2 * len(pivot) + 2), 4.0), layout="constrained")
    ax = figure.add_subplot()
    width = 0.8 / max(1, len(pivot.columns))
    positions = np.arange(len(pivot))
    for index, column in enumerate(pivot.columns):
        heights = pivot[column].to_numpy(dtype=float)
        container = ax.bar(
            positions + index * width - 0.4 + width / 2, heights, width, label=f"{bars} {column}"
        )
        ax.bar_label(container, fmt="%g", padding=2, fontsize=8)
    ax.set_xticks(positions, [str(i) for i in pivot.index], rotation=30, ha="right")
    ax.set_ylabel(value.replace("_", " "))
    ax.set_title(title or f"{value.replace('_', ' ')} per {bars}")
    if len(pivot.columns):
        ax.legend(fontsize=8)
    return figure


def plot_replay_matrix(
    matrix: pd.DataFrame,
    *,
    rows: str = "recorded_env",
    columns: str = "replayer_env",
    outcome: str = "outcome",
    message: str = "message",
    label_width: int = 28,
    title: str = "Replay compatibility (history recorded by row, replayed by column)",
) -> Figure:
    """Grid of replay outcomes with the failure text written into each failing cell.

    Parameters
    ----------
    matrix
        One row per (recorded, replayer) pair: the lab's ``replay_matrix.csv`` or
        :func:`toolkit.replay.replayer.replay` output with the two version columns added.
    rows, columns, outcome, message
        Column names. Several rows per cell are summarised as ``k/n fail``.
    """
    row_keys = sorted(matrix[rows].astype(str).unique(), key=natural_key)
    col_keys = sorted(matrix[columns].astype(str).unique(), key=natural_key)
    figure = Figure(
        figsize=(2.4 * len(col_keys) + 2, 1.3 * len(row_keys) + 1.5), layout="constrained"
    )
    ax = figure.add_subplot()
    for i, row_key in enumerate(row_keys):
        for j, col_key in enumerate(col_keys):
            cell = matrix[
                (matrix[rows].astype(str) == row_key) & (matrix[columns].astype(str) == col_key)
            ]
            failing = cell[cell[outcome] != "ok"]
            kind = "ok" if failing.empty else str(failing[outcome].iloc[0])
            color = OUTCOME_COLORS.get(kind, "#DDDDDD") if len(cell) else "#FFFFFF"
            ax.add_patch(_rectangle(j, i, 1, 1, color, edge="white", linewidth=2))
            if cell.empty:
                text = "—"
            elif failing.empty:
                text = "ok" if len(cell) == 1 else f"ok ({len(cell)})"
            else:
                first = _short_message(str(failing[message].iloc[0]))
                count = "" if len(cell) == 1 else f"{len(failing)}/{len(cell)} fail\n"
                text = count + textwrap.fill(first, label_width)
            ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(col_keys))
    ax.set_ylim(len(row_keys), 0)
    ax.set_xticks(np.arange(len(col_keys)) + 0.5, col_keys, rotation=30, ha="right")
    ax.set_yticks(np.arange(len(row_keys)) + 0.5, row_keys)
    ax.set_xlabel(columns.replace("_", " "))
    ax.set_ylabel(rows.replace("_", " "))
    ax.set_title(title, fontsize=10)
    return figure


def _short_message(text: str) -> str:
    """The detail after ``Nondeterminism error:`` (the part that differs between cells)."""
    for marker in ("Nondeterminism error: ", "nondeterministic workflow: "):
        if marker in text:
            return text.split(marker, 1)[1].split('", source', 1)[0]
    return text


def plot_divergence(divergence: Any, *, context: int = 6) -> Figure:
    """The two command sequences side by side, the first divergence highlighted.

    Parameters
    ----------
    divergence
        A :class:`toolkit.replay.divergence.Divergence` (or a frame shaped like its
        ``aligned`` attribute, with nothing highlighted).
    context
        Rows shown before and after the divergence (all rows when the sequences are short).
    """
    aligned = divergence if isinstance(divergence, pd.DataFrame) else divergence.aligned
    event_id = None if isinstance(divergence, pd.DataFrame) else divergence.event_id
    hit = aligned.index[aligned["recorded_event_id"] == event_id].tolist() if event_id else []
    centre = hit[0] if hit else None
    if centre is not None and len(aligned) > 2 * context + 1:
        aligned = aligned.iloc[max(0, centre - context) : centre + context + 1]
    figure = Figure(figsize=(10, 0.35 * len(aligned) + 1.2), layout="constrained")
    ax = figure.add_subplot()
    ax.set_axis_off()
    for row_number, (index, row) in enumerate(aligned.iterrows()):
        y = len(aligned) - row_number
        highlight = index == centre
        face = "#FCAE91" if highlight else ("#F0F0F0" if not row["same"] else "white")
        ax.add_patch(_rectangle(0, y - 0.5, 1, 1, face))
        ax.text(0.02, y, f"{row['position']}", va="center", fontsize=8, color="#666666")
        ax.text(0.07, y, _cell(row, "recorded"), va="center", fontsize=8, family="monospace")
        ax.text(0.55, y, _cell(row, "replayed"), va="center", fontsize=8, family="monospace")
    ax.text(0.07, len(aligned) + 0.9, "recorded history", fontsize=9, weight="bold")
    ax.text(0.55, len(aligned) + 0.9, "new code (replayed history)", fontsize=9, weight="bold")
    ax.set_xlim(0, 1)
    ax.set_ylim(0.4, len(aligned) + 1.4)
    if not isinstance(divergence, pd.DataFrame):
        figure.suptitle(textwrap.fill(divergence.core_message, 110), fontsize=8)
    return figure


def _rectangle(
    x: float, y: float, w: float, h: float, face: str, edge: str = "#DDDDDD", linewidth: float = 0.5
) -> Rectangle:
    return Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, linewidth=linewidth)


def _cell(row: pd.Series, side: str) -> str:
    label = row[side]
    if label is None or (isinstance(label, float) and np.isnan(label)):
        return "—"
    event_id = row[f"{side}_event_id"]
    return f"{label}  [ev {event_id}, task {row[f'{side}_task']}]"


def plot_activity_timeline(spans: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Gantt chart of activities (scheduled → closed), one panel per turn, coloured by role.

    Parameters
    ----------
    spans
        :func:`toolkit.agents.turns.activity_spans` output for one history (or filtered to one).
    """
    turns = sorted(spans["turn"].unique())
    figure = Figure(figsize=(10, 0.3 * len(spans) + 1.2 * len(turns) + 1), layout="constrained")
    axes = figure.subplots(len(turns), 1, squeeze=False)[:, 0] if turns else []
    origin = spans["scheduled"].min()
    for ax, turn in zip(axes, turns, strict=True):
        mine = spans[spans["turn"] == turn].sort_values("event_id")
        for y, row in enumerate(mine.itertuples()):
            start = (row.scheduled - origin).total_seconds()
            end_time = row.closed if pd.notna(row.closed) else spans["scheduled"].max()
            began = row.started if pd.notna(row.started) else end_time
            waiting = (began - origin).total_seconds()
            end = (end_time - origin).total_seconds()
            color = ROLE_COLORS.get(row.role, "#8C8C8C")
            ax.barh(y, waiting - start, left=start, color=color, alpha=0.35, height=0.7)
            ax.barh(y, max(end - waiting, 1e-3), left=waiting, color=color, height=0.7)
        labels = [f"{t} ({e})" for t, e in zip(mine.activity_type, mine.event_id, strict=True)]
        ax.set_yticks(range(len(mine)), labels, fontsize=7)
        ax.invert_yaxis()
        trigger = mine["trigger"].iloc[0] if len(mine) else None
        ax.set_title(f"turn {turn} ({trigger})", fontsize=9, loc="left")
    if len(turns):
        axes[-1].set_xlabel("seconds since the first activity was scheduled")
        handles = [Patch(color=c, label=r) for r, c in ROLE_COLORS.items()]
        axes[0].legend(handles=handles, fontsize=7, loc="lower right")
    default = "Activities per turn (light: waiting to start, dark: running)"
    figure.suptitle(title or default, fontsize=10)
    return figure
