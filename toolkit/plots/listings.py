"""Tool listings per turn: one bar per version label and kind of turn, never an average of
versions."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from toolkit.plots.style import human, integer_ticks, natural_key, new_figure

__all__ = ["listing_bars", "plot_listings_per_turn"]

#: Ten distinct colours (matplotlib's tab10), then twenty (tab20) when there are more bars.
_PALETTES = ("tab10", "tab20")


def listing_bars(
    table: pd.DataFrame,
    *,
    group: str = "label",
    bars: str = "turn",
    value: str = "listings",
    facet: str | None = None,
    runs: str = "source",
) -> pd.DataFrame:
    """What :func:`plot_listings_per_turn` draws: one row per (facet, group, bar).

    Returns
    -------
    pandas.DataFrame
        ``facet`` ("" without one), ``group``, ``bar``, ``mean``, ``min``, ``max`` (of
        ``value`` over the rows), ``rows`` and ``runs`` (distinct ``runs`` values, or rows when
        the table has no such column), ordered as drawn: groups as versions, bars by name.
    """
    frame = table.assign(_facet=table[facet].astype(str) if facet else "")
    run_key = frame[runs] if runs in frame else pd.Series(range(len(frame)), index=frame.index)
    frame = frame.assign(_run=run_key)
    keys = ["_facet", group, bars]
    grouped = frame.groupby(keys, dropna=False, sort=False)
    out = grouped[value].agg(["mean", "min", "max", "size"]).rename(columns={"size": "rows"})
    out["runs"] = grouped["_run"].nunique()
    out = out.reset_index().rename(columns={"_facet": "facet", group: "group", bars: "bar"})
    order = sorted(range(len(out)), key=lambda i: (
        natural_key(out["facet"].iloc[i]), natural_key(out["group"].iloc[i]),
        natural_key(out["bar"].iloc[i])))  # fmt: skip
    return out.iloc[order].reset_index(drop=True)


def plot_listings_per_turn(
    table: pd.DataFrame,
    *,
    group: str = "label",
    bars: str = "turn",
    value: str = "listings",
    facet: str | None = None,
    runs: str = "source",
    title: str | None = None,
) -> Figure:
    """Grouped bars: ``value`` per ``bars`` category (a turn, a kind of turn) for each version.

    Each bar belongs to one ``group`` value (a version label), so runs of different versions are
    never averaged together. Where a label holds several runs, the bar is their mean, a whisker
    spans their min and max, the bar's label says ``min–max``, and the tick says how many runs.

    Parameters
    ----------
    table
        :func:`toolkit.listings_per_turn` output, or any frame with these columns.
    group
        The version label column: one cluster of bars per value, in version order.
    bars
        One bar per value inside each cluster (coloured; the legend names them).
    value
        The count drawn (``listings``, ``model_steps``, ...).
    facet
        Optional column (a framework, a dataset): one panel per value, side by side.
    runs
        Column identifying a run (``source``), for the number of runs per label.
    title
        Figure title (default: "<value> per <bars>").

    Returns
    -------
    matplotlib.figure.Figure
    """
    drawn = listing_bars(table, group=group, bars=bars, value=value, facet=facet, runs=runs)
    facets = list(dict.fromkeys(drawn["facet"])) or [""]
    categories = sorted(drawn["bar"].unique(), key=natural_key)
    palette = matplotlib.colormaps[_PALETTES[len(categories) > 10]].colors
    colors = {c: palette[i % len(palette)] for i, c in enumerate(categories)}
    sizes = [max(1, drawn.loc[drawn["facet"] == f, "group"].nunique()) for f in facets]
    # A cluster is as wide as its bars or its (wrapped) tick label, whichever needs more.
    label_inches = 0.075 * max((len(line) for g in drawn["group"].unique()
                                for line in _tick_text(g).splitlines()), default=0)
    cluster = max(0.35 * max(1, len(categories)), label_inches + 0.15)
    width = 1.6 + sum(cluster * n + 0.3 for n in sizes)
    figure = new_figure(max(5.0, width), 4.2)
    axes = figure.subplots(1, len(facets), sharey=True, squeeze=False,
                           width_ratios=sizes)[0]  # fmt: skip
    for ax, facet_value in zip(axes, facets, strict=True):
        _draw_panel(ax, drawn[drawn["facet"] == facet_value], categories, colors)
        if facet:
            ax.set_title(f"{human(facet)}: {facet_value}", fontsize=10)
    axes[0].set_ylabel(human(value))
    integer_ticks(axes[0].yaxis)
    top = float(np.nanmax(drawn["max"])) if len(drawn) else 1.0
    axes[0].set_ylim(0, max(1.0, top) * 1.18 + 0.3)
    if categories:
        handles = [Patch(color=colors[c], label=str(c)) for c in categories]
        figure.legend(handles=handles, title=human(bars), loc="outside right center",
                      fontsize=9, title_fontsize=9, frameon=False)  # fmt: skip
    figure.suptitle(title or f"{human(value)} per {human(bars)}", fontsize=11)
    _fit_tick_labels(figure, [(ax, drawn[drawn["facet"] == f]) for ax, f in
                              zip(axes, facets, strict=True)])  # fmt: skip
    return figure


def _draw_panel(
    ax: Axes, drawn: pd.DataFrame, categories: list, colors: dict
) -> None:
    groups = sorted(drawn["group"].unique(), key=natural_key)
    width = 0.8 / max(1, len(categories))
    for index, category in enumerate(categories):
        part = drawn[drawn["bar"] == category].set_index("group").reindex(groups)
        present = part["mean"].notna().to_numpy()
        positions = np.arange(len(groups))[present] + (index - (len(categories) - 1) / 2) * width
        part = part[present]
        spread = part["max"].to_numpy(float) > part["min"].to_numpy(float)
        container = ax.bar(positions, part["mean"].to_numpy(float), width * 0.92,
                           color=colors[category], label=str(category))  # fmt: skip
        if spread.any():
            ax.errorbar(positions[spread], part["mean"].to_numpy(float)[spread],
                        yerr=[(part["mean"] - part["min"]).to_numpy(float)[spread],
                              (part["max"] - part["mean"]).to_numpy(float)[spread]],
                        fmt="none", ecolor="#333333", capsize=3, linewidth=1)  # fmt: skip
        texts = [f"{lo:g}–{hi:g}" if hi > lo else f"{hi:g}"
                 for lo, hi in zip(part["min"], part["max"], strict=True)]  # fmt: skip
        for bar, text, high in zip(container, texts, part["max"], strict=True):
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, float(high)),
                        xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                        fontsize=8)  # fmt: skip
    ax.set_xticks(np.arange(len(groups)))  # labelled by _fit_tick_labels, once laid out
    ax.set_xlim(-0.6, len(groups) - 0.4)


def _tick_labels(drawn: pd.DataFrame, width: int) -> list[str]:
    """Each cluster's version label wrapped to ``width`` characters, with its count of runs."""
    groups = sorted(drawn["group"].unique(), key=natural_key)
    runs = drawn.groupby("group")["runs"].max()
    several = (runs > 1).any()
    return [_tick_text(g, width) + (f"\n{runs[g]} runs" if several else "") for g in groups]


#: Tick label layouts tried in turn until no two labels overlap: (characters per line, None
#: for what the cluster's measured width holds; rotation). Level labels may take 3 lines.
_LAYOUTS = ((None, 0), (24, 45), (18, 90))
_LEVEL_LINES = 3


def _fit_tick_labels(figure: Figure, panels: list[tuple[Axes, pd.DataFrame]]) -> None:
    """Wrap, then turn, the version labels until none overlaps another (measured, not guessed).

    A label is broken after its separators (``-``, ``_``, spaces, ``·``) to fit its cluster;
    where that takes more than three lines or a piece is still wider than the cluster, the
    labels are turned 45 degrees, then upright.
    """
    from toolkit.plots.layout import overlapping_texts

    figure.draw_without_rendering()
    for width, rotation in _LAYOUTS:
        chosen = []
        for ax, drawn in panels:
            inches = ax.get_window_extent().width / figure.dpi / max(1, drawn["group"].nunique())
            chosen.append((drawn, width or max(6, int(inches / _CHAR_INCHES) - 1)))
        lines = max((_tick_text(g, chars).count("\n") + 1 for drawn, chars in chosen
                     for g in drawn["group"].unique()), default=1)  # fmt: skip
        if rotation == 0 and lines > _LEVEL_LINES:
            continue
        for (ax, _), (drawn, chars) in zip(panels, chosen, strict=True):
            ax.set_xticks(ax.get_xticks(), _tick_labels(drawn, chars), rotation=rotation,
                          ha="right" if rotation == 45 else "center",
                          rotation_mode="anchor" if rotation == 45 else "default",
                          fontsize=8.5)  # fmt: skip
        shown = {t.get_text() for ax, _ in panels for t in ax.get_xticklabels()}
        if not any(a in shown or b in shown for a, b in overlapping_texts(figure)):
            return


#: Inches per character of 8.5-point sans serif, on average (labels are measured after).
_CHAR_INCHES = 0.072
_SEPARATORS = re.compile(r"(?<=[-_/· ])")


def _tick_text(group: object, width: int = 22) -> str:
    """A version label on short lines, broken after its separators (``before_fix-``
    ``adk_v2.5.0``; ``temporal-python 1.30.0 · build 3a02e624``), a piece never cut."""
    lines: list[str] = []
    for piece in _SEPARATORS.split(str(group)):
        if lines and len(lines[-1]) + len(piece) <= width:
            lines[-1] += piece
        else:
            lines.append(piece)
    return "\n".join(line.strip() for line in lines)
