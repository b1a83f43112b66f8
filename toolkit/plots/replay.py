"""Replay charts: the compatibility grid of a replay matrix and one divergence, side by side."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from toolkit.plots.style import NOTEBOOK_WIDTH, human, natural_key, new_figure

__all__ = ["REPLAY_COLORS", "plot_divergence", "plot_replay_matrix", "replay_grid"]

#: Cell colours: the share of histories that fail decides, so partial and total failure differ.
REPLAY_COLORS = {
    "ok": "#A1D99B",
    "partial": "#FDAE6B",
    "total": "#DE2D26",
    "other": "#BDBDBD",
    "empty": "#FFFFFF",
}
_LEGEND = {
    "ok": "every history replays",
    "partial": "some histories fail",
    "total": "every history fails",
    "other": "replay error (not nondeterminism)",
}
#: Inches per character of 8-point monospace, rounded up so that columns never overlap.
_CHAR = 0.074
_CORE_PREFIXES = ("[TMPRL1100] Nondeterminism error: ", "nondeterministic workflow: ")


def _message_shape(text: Any) -> str | None:
    """The part of a failure that tells cells apart, event ids generalised (``id: N``)."""
    if not isinstance(text, str) or not text:
        return None
    for prefix in _CORE_PREFIXES:
        if prefix in text:
            text = text.split(prefix, 1)[1].split('", source', 1)[0]
            break
    return re.sub(r"\bid: \d+", "id: N", text.strip())


def replay_grid(
    matrix: pd.DataFrame,
    *,
    rows: str = "recorded_env",
    columns: str = "replayer_env",
    outcome: str = "outcome",
    message: str = "message",
) -> tuple[pd.DataFrame, dict[str, str]]:
    """What :func:`plot_replay_matrix` draws: one row per cell and the key of failure messages.

    Returns
    -------
    (pandas.DataFrame, dict)
        Cells with ``row``, ``column``, ``histories``, ``failed``, ``state`` (``ok``,
        ``partial``, ``total``, ``other``) and ``keys`` (letters of the failure messages seen
        in the cell); and letter -> message shape (most frequent first).
    """
    shapes = matrix[message].map(_message_shape)
    failing = matrix[outcome].astype(str) != "ok"
    counts = shapes[failing].value_counts()
    key = {shape: chr(ord("A") + i) for i, shape in enumerate(counts.index)}
    cells = []
    frame = matrix.assign(_row=matrix[rows].astype(str), _col=matrix[columns].astype(str),
                          _shape=shapes, _fail=failing)  # fmt: skip
    for (row, column), cell in frame.groupby(["_row", "_col"], sort=False):
        failed = int(cell["_fail"].sum())
        nondeterministic = cell.loc[cell["_fail"], outcome].astype(str).eq("nondeterminism")
        if failed == 0:
            state = "ok"
        elif not nondeterministic.any():
            state = "other"
        else:
            state = "total" if failed == len(cell) else "partial"
        letters = sorted({key[s] for s in cell.loc[cell["_fail"], "_shape"] if s in key})
        cells.append({"row": row, "column": column, "histories": len(cell), "failed": failed,
                      "state": state, "keys": letters})  # fmt: skip
    grid = pd.DataFrame(cells, columns=["row", "column", "histories", "failed", "state", "keys"])
    return grid, {letter: shape for shape, letter in key.items()}


def plot_replay_matrix(
    matrix: pd.DataFrame,
    *,
    rows: str = "recorded_env",
    columns: str = "replayer_env",
    outcome: str = "outcome",
    message: str = "message",
    title: str = "Replay compatibility",
    max_keys: int = 8,
) -> Figure:
    """Grid of replay outcomes: history recorded by the row's version, replayed by the column's.

    Each cell says how many of its histories fail (``2/3``) and which failure messages they
    print (letters keyed under the grid, each message once); its colour separates cells where
    every history replays, some fail, and all fail.

    Parameters
    ----------
    matrix
        One row per (history, replayer) pair: the lab's ``replay_matrix.csv`` read with
        :func:`toolkit.read_replay_matrix`, or :func:`toolkit.replay_histories` output with
        the two version columns added.
    rows, columns, outcome, message
        Column names (``outcome`` is ``ok``, ``nondeterminism`` or another failure).
    title
        Figure title.
    max_keys
        Messages listed under the grid at most (the rest are counted).

    Returns
    -------
    matplotlib.figure.Figure
    """
    grid, key = replay_grid(matrix, rows=rows, columns=columns, outcome=outcome,
                            message=message)  # fmt: skip
    row_keys = sorted(grid["row"].unique(), key=natural_key)
    col_keys = sorted(grid["column"].unique(), key=natural_key)
    label_chars = max((len(k) for k in row_keys), default=4)
    cell = min(1.0, (NOTEBOOK_WIDTH - 1.0 - 0.075 * label_chars) / max(1, len(col_keys)))
    shown = list(key.items())[:max_keys]
    lines = [_wrap(f"{k}  {m}") for k, m in shown]
    if len(key) > max_keys:
        lines.append(f"... and {len(key) - max_keys} other messages")
    key_lines = sum(line.count("\n") + 1 for line in lines) or 1
    grid_height, key_height = 0.42 * len(row_keys) + 1.1, 0.16 * key_lines + 0.15
    figure = new_figure(NOTEBOOK_WIDTH, grid_height + key_height + 0.4)
    ax, key_ax = figure.subplots(2, 1, height_ratios=[grid_height, key_height])
    for item in grid.itertuples():
        i, j = row_keys.index(item.row), col_keys.index(item.column)
        ax.add_patch(Rectangle((j, i), 1, 1, facecolor=REPLAY_COLORS[item.state],
                               edgecolor="white", linewidth=2))  # fmt: skip
        if item.state == "ok":
            text = "ok" if item.histories == 1 else f"ok ({item.histories})"
        else:
            text = f"{item.failed}/{item.histories}"
            if item.keys:
                text += "  " + ",".join(item.keys)
        color = "white" if item.state == "total" else "black"
        ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=8.5, color=color)
    ax.set_xlim(0, len(col_keys))
    ax.set_ylim(len(row_keys), 0)
    ax.set_xticks(np.arange(len(col_keys)) + 0.5, col_keys, fontsize=8.5,
                  rotation=30 if cell * 13 < max(map(len, col_keys), default=0) else 0,
                  ha="right" if cell * 13 < max(map(len, col_keys), default=0) else "center")
    ax.set_yticks(np.arange(len(row_keys)) + 0.5, row_keys, fontsize=8.5)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_xlabel(human(columns) + " (code)")
    ax.set_ylabel(human(rows))
    present = [s for s in _LEGEND if (grid["state"] == s).any()]
    ax.legend(handles=[Patch(color=REPLAY_COLORS[s], label=_LEGEND[s]) for s in present],
              loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=8, frameon=False)  # fmt: skip
    key_ax.set_axis_off()
    key_ax.text(0, 1, "\n".join(lines) if lines else "no failures", va="top", ha="left",
                fontsize=8, family="monospace", transform=key_ax.transAxes)  # fmt: skip
    figure.suptitle(title, fontsize=11)
    return figure


def _wrap(text: str) -> str:
    return textwrap.fill(text, 112, subsequent_indent="   ", break_on_hyphens=False)


def plot_divergence(divergence: Any, *, context: int = 6) -> Figure:
    """The two command sequences side by side, the first divergence highlighted.

    Parameters
    ----------
    divergence
        A :class:`toolkit.Divergence` (or a frame shaped like its ``aligned`` attribute, with
        nothing highlighted).
    context
        Rows shown before and after the divergence (all rows when the sequences are short).

    Returns
    -------
    matplotlib.figure.Figure
    """
    aligned = divergence if isinstance(divergence, pd.DataFrame) else divergence.aligned
    event_id = None if isinstance(divergence, pd.DataFrame) else divergence.event_id
    hit = aligned.index[aligned["recorded_event_id"] == event_id].tolist() if event_id else []
    centre = hit[0] if hit else None
    if centre is not None and len(aligned) > 2 * context + 1:
        at = aligned.index.get_loc(centre)
        aligned = aligned.iloc[max(0, at - context) : at + context + 1]
    left = [_cell(row, "recorded") for _, row in aligned.iterrows()]
    right = [_cell(row, "replayed") for _, row in aligned.iterrows()]
    # Columns measured in characters of the monospace font, so nothing runs past the edge.
    fits = int((NOTEBOOK_WIDTH - 0.3) / _CHAR) - 6
    half = max(20, fits // 2)
    left, right = [_shorten(t, half) for t in left], [_shorten(t, half) for t in right]
    first = max(len("recorded history"), *map(len, left), 1) + 3
    total = 5 + first + max(len("new code (replayed history)"), *map(len, right), 1)
    figure = new_figure(0.3 + _CHAR * total, 0.3 * len(aligned) + 1.4)
    ax = figure.add_subplot()
    ax.set_axis_off()
    for row_number, (index, row) in enumerate(aligned.iterrows()):
        y = len(aligned) - row_number
        face = "#FCAE91" if index == centre else ("#F0F0F0" if not row["same"] else "white")
        ax.add_patch(Rectangle((0, y - 0.5), total, 1, facecolor=face, edgecolor="#DDDDDD",
                               linewidth=0.5))  # fmt: skip
        ax.text(0.5, y, f"{row['position']}", va="center", fontsize=8, color="#666666")
        ax.text(5, y, left[row_number], va="center", fontsize=8, family="monospace")
        ax.text(5 + first, y, right[row_number], va="center", fontsize=8, family="monospace")
    ax.text(5, len(aligned) + 0.9, "recorded history", fontsize=9, weight="bold")
    ax.text(5 + first, len(aligned) + 0.9, "new code (replayed history)", fontsize=9,
            weight="bold")  # fmt: skip
    ax.set_xlim(0, total)
    ax.set_ylim(0.4, len(aligned) + 1.4)
    if not isinstance(divergence, pd.DataFrame) and divergence.core_message:
        width = int(figure.get_figwidth() / 0.062)
        figure.suptitle(textwrap.fill(divergence.core_message, width), fontsize=8.5)
    return figure


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _cell(row: pd.Series, side: str) -> str:
    label = row[side]
    if label is None or (isinstance(label, float) and np.isnan(label)):
        return "—"
    event_id = row[f"{side}_event_id"]
    event = "" if pd.isna(event_id) else f"ev {event_id}, "
    return f"{label}  [{event}task {row[f'{side}_task']}]"
