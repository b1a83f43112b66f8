"""Tokens per turn by version label: what each turn cost per release, never averaged across them."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from toolkit.errors import ToolkitError
from toolkit.plots.listings import plot_listings_per_turn

__all__ = ["plot_tokens_per_turn", "token_bars"]


def token_bars(calls: pd.DataFrame, *, value: str = "total_tokens",
               facet: str | None = None) -> pd.DataFrame:  # fmt: skip
    """What :func:`plot_tokens_per_turn` draws from: one row per (run, turn) with ``value``
    summed over the turn's model calls; turns whose calls report no usage are left out (their
    count is in ``attrs["turns_without_usage"]``).

    ``calls`` is a :func:`toolkit.model_calls` table, or a :func:`toolkit.token_usage` table
    grouped by at least ``source``, ``label`` and ``turn``.
    """
    from toolkit.agents.tokens import token_usage

    needed = {"source", "label", "turn", value} | ({facet} if facet else set())
    if "calls" not in calls.columns:  # model_calls: sum them per run and turn first
        keys = ["source", "history", "label", "turn", *([facet] if facet else [])]
        calls = token_usage(calls, by=keys)
    missing = needed - set(calls.columns)
    if missing:
        raise ToolkitError(f"plot_tokens_per_turn: columns {sorted(missing)} are missing; give "
                           "tk.model_calls(...) or tk.token_usage(..., by=('source', 'history', "
                           "'label', 'turn'))")  # fmt: skip
    known = calls[calls[value].notna()].astype({value: "int64"})
    known.attrs["turns_without_usage"] = int(calls[value].isna().sum())
    return known.reset_index(drop=True)


def plot_tokens_per_turn(
    calls: pd.DataFrame,
    *,
    value: str = "total_tokens",
    facet: str | None = None,
    title: str | None = None,
) -> Figure:
    """Tokens per turn, one cluster of bars per version label and one bar per turn.

    A bar is the mean over the label's runs, its whisker and text their min–max, the tick says
    how many runs: a release that lists tools differently, declares more tools or makes more
    model calls per turn shows here as a different cost.

    Parameters
    ----------
    calls
        :func:`toolkit.model_calls` output (or :func:`toolkit.token_usage` by source, history,
        label and turn).
    value
        ``total_tokens`` (default), ``input_tokens``, ``output_tokens``, ...
    facet
        A column for one panel per value (``framework``).
    title
        Figure title; by default it says what is drawn and how many turns had no usage.
    """
    drawn = token_bars(calls, value=value, facet=facet)
    if drawn.empty:
        raise ToolkitError("plot_tokens_per_turn: no turn reports token usage (the model "
                           "calls' usage_note says why)")  # fmt: skip
    missing = drawn.attrs["turns_without_usage"]
    default = f"{value.replace('_', ' ')} per turn" + (
        f" ({missing} turns without usage left out)" if missing else "")
    figure = plot_listings_per_turn(drawn, group="label", bars="turn", value=value, facet=facet,
                                    runs="source", title=title or default)  # fmt: skip
    # Token counts have four digits where listings have one: each bar's min–max stands upright
    # above it, so that neighbouring bars' texts never cross.
    for ax in figure.axes:
        for text in ax.texts:
            text.set_rotation(90)
            text.set_fontsize(7)
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * 1.15)
    return figure
