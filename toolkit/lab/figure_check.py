"""Inside a notebook kernel: every figure rendered is checked for colliding words.

:func:`toolkit.lab.notebooks.run_notebook` starts its kernels with :func:`watch`, so each figure
a notebook shows (the toolkit's charts, pandas' and pyplot's, and those embedded in a report)
is measured with :func:`toolkit.plots.layout.overlapping_texts` at the size it is rendered,
and one JSON line per figure goes to a file the runner reads back. The notebook itself is left
as it is: no cell is added, and its reader sees nothing of this.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["read_checks", "watch"]


def _title(figure: Any) -> str:
    """What a reader would call the figure: its suptitle, else its first axes title."""
    if figure._suptitle is not None and figure._suptitle.get_text():
        return figure._suptitle.get_text()
    for ax in figure.axes:
        for where in ("center", "left", "right"):
            if ax.get_title(loc=where):
                return ax.get_title(loc=where)
    return "(untitled)"


def watch(log: str | Path) -> None:
    """Check every figure this process renders from now on; append the results to ``log``."""
    from matplotlib.backend_bases import FigureCanvasBase

    from toolkit.plots.layout import overlapping_texts

    original = FigureCanvasBase.print_figure
    if getattr(original, "_checks_figures", False):
        return
    seen: set[int] = set()

    def print_figure(canvas: Any, *args: Any, **kwargs: Any) -> Any:
        figure = canvas.figure
        if id(figure) not in seen:  # one figure rendered twice (PNG, then a report) counts once
            seen.add(id(figure))
            # Measured before drawing: the render afterwards sees the same layout.
            pairs = overlapping_texts(figure)
            row = {"title": _title(figure), "size": [round(v, 2) for v in
                                                     figure.get_size_inches()],
                   "overlaps": pairs}  # fmt: skip
            with open(log, "a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")
        return original(canvas, *args, **kwargs)

    print_figure._checks_figures = True  # type: ignore[attr-defined]
    FigureCanvasBase.print_figure = print_figure  # type: ignore[method-assign]


def read_checks(log: Path) -> list[dict[str, Any]]:
    """The figures :func:`watch` checked, in the order they were rendered."""
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
