"""What every chart shares: figure size for a notebook, display in Jupyter, labels, order.

Figures are ``matplotlib.figure.Figure`` objects built without pyplot's global state, so they
render with Agg in scripts and tests (``fig.savefig("x.png")``). Inside a Jupyter kernel a new
figure is also shown once at the end of the cell, whether the cell returns it or assigns it
(``fig = tk.plots.plot_divergence(d)``): a detached figure would otherwise show nothing.
"""

from __future__ import annotations

import re
from typing import Any

from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

__all__ = ["NOTEBOOK_WIDTH", "human", "integer_ticks", "natural_key", "new_figure"]

#: Inches that fit a notebook's output area at 100 dpi without scaling (about 950 px).
NOTEBOOK_WIDTH = 9.5

#: Column names as a reader says them.
_HUMAN = {
    "label": "version",
    "turn_kind": "turn",
    "listings": "tool listings",
    "model_steps": "model steps",
    "tool_calls": "tool calls",
    "recorded": "history recorded by",
    "replayer": "replayed by",
    "recorded_env": "history recorded by",
    "replayer_env": "replayed by",
    "recorded_variant": "history recorded by",
    "replayer_variant": "replayed by",
}


def human(name: Any) -> str:
    """A column name as an axis or legend label: ``turn_kind`` -> ``turn``."""
    text = str(name)
    return _HUMAN.get(text, text.replace("_", " "))


def natural_key(label: Any) -> list[Any]:
    """Sort key that orders version labels as versions: ``adk-2.2.0`` before ``adk-2.13.0``."""
    return [
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in re.split(r"(\d+)", str(label))
    ]


def integer_ticks(axis: Axis) -> None:
    """Counts get whole-number ticks only (no 2.5 listings)."""
    axis.set_major_locator(MaxNLocator(integer=True))


def new_figure(width: float, height: float) -> Figure:
    """A constrained-layout figure that Jupyter shows at the end of the cell that made it."""
    figure = Figure(figsize=(min(width, NOTEBOOK_WIDTH), height), layout="constrained")
    _show_when_cell_ends(figure)
    return figure


def _show_when_cell_ends(figure: Figure) -> None:
    """In a Jupyter kernel, display ``figure`` after the cell unless the cell returned it."""
    try:
        from IPython import get_ipython
    except ImportError:  # no IPython: a script or a test, where savefig is the way out
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return
    _register_png_formatter(shell)

    def show(*_: Any) -> None:
        shell.events.unregister("post_execute", show)
        # The cell's value is displayed by IPython already (and kept as ``_``): not twice.
        if shell.user_ns.get("_") is not figure:
            from IPython.display import display

            display(figure)

    shell.events.register("post_execute", show)


def _register_png_formatter(shell: Any) -> None:
    """Make sure a Figure displays as a PNG, even if the notebook never imported pyplot."""
    formatter = shell.display_formatter.formatters["image/png"]
    if Figure not in formatter.type_printers:
        from IPython.core.pylabtools import select_figure_formats

        select_figure_formats(shell, {"png"})
