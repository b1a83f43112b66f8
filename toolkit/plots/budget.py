"""The history budget of agent runs: history bytes per model call, by role, against the limits.

One panel per run: the history's size right after each model call was scheduled, stacked by what
spent it (model inputs, outputs, tool calls, listings, the rest), the server's limits as
horizontal lines, the forecast as a dashed line, and a cross where the server stopped the run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from toolkit.plots.style import natural_key, new_figure

__all__ = ["budget_series", "plot_history_budget"]

_ROLES = ("model_input", "model_output", "tool_input", "tool_result", "listing", "other")
_ROLE_NAMES = {"model_input": "model input", "model_output": "model output",
               "tool_input": "tool input", "tool_result": "tool result",
               "listing": "tool listings", "other": "everything else"}  # fmt: skip
_COLOURS = {"model_input": "#4c72b0", "model_output": "#8fb0dd", "tool_input": "#dd8452",
            "tool_result": "#f2b98a", "listing": "#55a868", "other": "#c7c7c7"}  # fmt: skip
_LIMIT_LINES = (
    ("history_bytes", "history size limit", "#c44e52", "-"),
    ("history_bytes_warn", "warning", "#c44e52", ":"),
    ("continue_as_new_bytes", "continue-as-new suggested", "#8172b3", "--"),
)
#: The x axis shows the forecast only up to this multiple of the calls seen.
_REACH = 4


def _unit(top: float) -> tuple[float, str]:
    """The unit a panel's axis counts in: KiB, or MiB once the history passes 2 MiB."""
    return (1024 * 1024, "MiB") if top > 2 * 1024 * 1024 else (1024, "KiB")


def budget_series(
    events: Any, *, budget: pd.DataFrame | None = None, limits: Any = None,
    roles: Any = "auto", fit: Any = None,
) -> pd.DataFrame:  # fmt: skip
    """What :func:`plot_history_budget` draws, one row per (run, model call, series).

    Returns
    -------
    pandas.DataFrame
        ``run_id``, ``label``, ``call``, ``series`` (a role, ``history`` for the observed total,
        or ``forecast``), ``bytes`` (cumulative, right after the call was scheduled).
    """
    from toolkit.agents.budget import history_budget
    from toolkit.agents.forecast import Growth, projected_history
    from toolkit.agents.growth import as_events, model_call_sizes

    events = as_events(events)[0]
    calls = model_call_sizes(events, roles=roles)
    if budget is None:
        budget = history_budget(events, limits=limits, roles=roles, fit=fit)
    rows: list[tuple[Any, ...]] = []
    labels = dict(zip(budget["run_id"], budget["label"], strict=True))
    for run_id, one in calls.groupby("run_id", sort=False):
        for call in one.itertuples():
            for role in _ROLES:
                rows.append((run_id, labels.get(run_id), call.call, role,
                             getattr(call, f"{role}_bytes")))  # fmt: skip
            rows.append((run_id, labels.get(run_id), call.call, "history", call.history_bytes))
    for row in budget.itertuples():
        growth = row.growth
        if not isinstance(growth, dict) or row.forecast_model_calls is pd.NA:
            continue
        seen = calls[calls["run_id"] == row.run_id]
        fitted = seen.iloc[: growth["calls"]]
        if fitted.empty:
            continue
        model = Growth(calls=growth["calls"], base=growth["base"],
                       increment=growth["increment"], other=growth["other"],
                       events_per_call=growth["events_per_call"],
                       history_bytes=int(fitted["history_bytes"].iloc[-1]),
                       events=int(fitted["events"].iloc[-1]),
                       input_bytes=int(fitted["input_bytes"].iloc[-1]), input_sd=0,
                       other_sd=0)  # fmt: skip
        # The line runs to the forecast, or past every call seen, whichever comes first (a far
        # forecast is named at the line's end instead of stretching the axis).
        end = min(int(row.forecast_model_calls) + 1,
                  max(_REACH * growth["calls"], 12, int(seen["call"].max()) + 1))
        ahead = np.arange(growth["calls"] + 1, max(end, growth["calls"] + 1) + 1)
        rows.append((row.run_id, row.label, growth["calls"], "forecast", model.history_bytes))
        for number, size in zip(ahead, projected_history(model, ahead), strict=True):
            rows.append((row.run_id, row.label, int(number), "forecast", float(size)))
    return pd.DataFrame(rows, columns=["run_id", "label", "call", "series", "bytes"])


def plot_history_budget(
    events: Any,
    *,
    budget: pd.DataFrame | None = None,
    limits: Any = None,
    roles: Any = "auto",
    fit: Any = None,
    max_panels: int = 6,
    title: str | None = None,
) -> Figure:
    """History bytes per model call, stacked by role, one panel per run, with the limits drawn.

    Parameters
    ----------
    events
        An events frame or paths (as :func:`toolkit.history_budget` takes).
    budget
        Its :func:`toolkit.history_budget`, when the caller has it (else computed with
        ``limits``, ``roles``, ``fit``).
    limits
        The server's limits (lines drawn: the history size limit, its warning level and the
        continue-as-new suggestion, where they fall within the chart).
    max_panels
        Runs beyond this many are left out (the title says how many were).
    """
    from toolkit.agents.budget import history_budget
    from toolkit.agents.growth import as_events
    from toolkit.histories.server_limits import resolve_limits

    resolved = resolve_limits(limits)
    events = as_events(events)[0]
    if budget is None:
        budget = history_budget(events, limits=limits, roles=roles, fit=fit)
    series = budget_series(events, budget=budget, roles=roles)
    drawn = set(series["run_id"])
    order = sorted(range(len(budget)), key=lambda i: natural_key(budget["label"].iloc[i]))
    run_ids = [budget["run_id"].iloc[i] for i in order if budget["run_id"].iloc[i] in drawn]
    shown = run_ids[:max_panels]
    columns = 2 if len(shown) > 1 else 1
    rows = max(1, math.ceil(len(shown) / columns))
    figure = new_figure(9.5, 3.3 * rows + 0.8)
    axes = figure.subplots(rows, columns, squeeze=False)
    for index, ax in enumerate(axes.flat):
        if index >= len(shown):
            ax.set_visible(False)
            continue
        run = budget[budget["run_id"] == shown[index]].iloc[0]
        _panel(ax, series[series["run_id"] == shown[index]], run, resolved)
    handles, names = [], []
    for ax in axes.flat[: len(shown)]:
        for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
            if name not in names:
                handles.append(handle)
                names.append(name)
    if shown:
        figure.legend(handles, names, loc="outside lower center", ncol=4, frameon=False,
                      fontsize=8)  # fmt: skip
    left_out = len(run_ids) - len(shown)
    heading = title or "History size per model call, by what spent it"
    if left_out:
        heading += f" ({len(shown)} of {len(run_ids)} runs)"
    figure.suptitle(heading, fontsize=11)
    return figure


def _panel(ax: Axes, series: pd.DataFrame, run: Any, limits: dict[str, int]) -> None:
    stacked = series[series["series"].isin(_ROLES)].pivot_table(
        index="call", columns="series", values="bytes", aggfunc="first").reindex(
        columns=list(_ROLES)).fillna(0)  # fmt: skip
    forecast = series[series["series"] == "forecast"]
    observed = stacked.sum(axis=1)
    top = max(float(observed.max()) if len(observed) else 0.0,
              float(forecast["bytes"].max()) if len(forecast) else 0.0)  # fmt: skip
    reach = [limits[n] for n, *_ in _LIMIT_LINES if limits.get(n) and limits[n] <= top * 1.3]
    scale, unit = _unit(max([top, *reach]))
    calls = stacked.index.to_numpy()
    ax.stackplot(calls, *(stacked[r].to_numpy() / scale for r in _ROLES),
                 labels=[_ROLE_NAMES[r] for r in _ROLES],
                 colors=[_COLOURS[r] for r in _ROLES], alpha=0.9, linewidth=0)  # fmt: skip
    ax.plot(calls, observed.to_numpy() / scale, color="#444444", linewidth=0.8)
    if len(forecast):
        ax.plot(forecast["call"], forecast["bytes"] / scale, color="#111111", linestyle="--",
                linewidth=1.3, label="forecast from the calls fitted")  # fmt: skip
        end = forecast.iloc[-1]
        if run.forecast_model_calls is not pd.NA and end["call"] < run.forecast_model_calls:
            ax.annotate(f"limit at call {run.forecast_model_calls} →", (end["call"],
                        end["bytes"] / scale), xytext=(-4, 6), textcoords="offset points",
                        ha="right", fontsize=7, color="#111111")  # fmt: skip
    for name, text, colour, style in _LIMIT_LINES:
        value = limits.get(name)
        if value is not None and value in reach:
            ax.axhline(value / scale, color=colour, linestyle=style, linewidth=1, label=text)
    if run.limit_hit and len(calls):
        ax.plot([calls[-1]], [observed.iloc[-1] / scale], marker="X", color="#c44e52",
                markersize=9, linestyle="none", label="stopped by the server")  # fmt: skip
    x_end = max(calls.max() if len(calls) else 1,
                forecast["call"].max() if len(forecast) else 1)  # fmt: skip
    ax.set_xlim(0.5, x_end + 0.5)
    ax.set_ylim(0, max([top, *reach]) * 1.08 / scale or 1)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=8))
    ax.set_xlabel("model call", fontsize=8)
    ax.set_ylabel(f"history size ({unit})", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.set_title(_panel_title(run), fontsize=8.5, loc="left")
    ax.grid(axis="y", color="#eeeeee", linewidth=0.6)
    ax.set_axisbelow(True)


def _panel_title(run: Any) -> str:
    from toolkit.text import nbytes

    name = str(run.workflow_id or run.run_id or "")
    if len(name) > 40:
        name = name[:39] + "…"
    tail = f"{run.model_calls} model calls, {nbytes(run.history_bytes)}"
    if run.limit_hit:
        tail += ", stopped by the server"
    elif run.forecast_model_calls is not pd.NA:
        tail += f", limit at call {run.forecast_model_calls}"
    return f"{name}\n{tail}"
