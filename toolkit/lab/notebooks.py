"""Execute the project's notebooks headless (tests and ``make demo``), optionally to HTML, and
find the noise a reader should not see in them, overlapping words in their figures included
(every figure a kernel renders is measured: :mod:`toolkit.lab.figure_check`)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from toolkit.errors import LabError

__all__ = ["NOTEBOOKS_DIR", "execute_notebook", "list_notebooks", "noise", "run_notebook",
           "write_html"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"

#: What a reader should never meet in an executed notebook, and why.
_NOISE = (
    (re.compile(r"Traceback \(most recent call last\)"), "a traceback"),
    (re.compile(r"\bWARN(ING)?\b[ :|].*temporal"), "an SDK or sdk-core WARN line"),
    (re.compile(r"\w+Warning: "), "a Python warning"),
    (re.compile(re.escape(tempfile.gettempdir()) + r"/|ipykernel_\d+"), "a temporary path"),
    (re.compile(r"\b\d+ days [+-]?\d\d:\d\d:\d\d|-1 days \+"), "a Timedelta printed raw"),
)
_WIDGET = "application/vnd.jupyter.widget-view+json"


def list_notebooks(directory: Path = NOTEBOOKS_DIR) -> list[Path]:
    """The notebooks to run, in name order (checkpoints excluded)."""
    return sorted(p for p in directory.glob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def run_notebook(
    path: Path, *, timeout: int = 600, env: dict[str, str] | None = None
) -> Any:
    """Run every cell of ``path`` in a fresh kernel (cwd: the notebook's folder).

    Returns
    -------
    nbformat.NotebookNode
        The executed notebook; ``metadata["toolkit"]["figures"]`` lists every figure its kernel
        rendered (title, size in inches, pairs of overlapping texts).

    Raises
    ------
    LabError
        A cell failed (a failing check included), naming the notebook and the cell.
    """
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    os.environ.update(env or {})
    sockets = tempfile.mkdtemp(prefix="nb-kernel-")
    kernel = None
    checks = Path(sockets) / "figures.jsonl"
    watch = f"__import__('toolkit.lab.figure_check').lab.figure_check.watch({str(checks)!r})"
    try:
        # IPC sockets: a local kernel needs no TCP (whose launch warns about encryption).
        kernel = KernelManager(kernel_name="python3", transport="ipc",
                               ip=os.path.join(sockets, "kernel"))  # fmt: skip
        client = NotebookClient(
            notebook,
            km=kernel,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
            extra_arguments=[f"--IPKernelApp.exec_lines={watch}"],
        )
        client.execute()
        from toolkit.lab.figure_check import read_checks

        notebook.metadata.setdefault("toolkit", {})["figures"] = read_checks(checks)
    except CellExecutionError as exc:
        text = _ANSI.sub("", str(exc))
        raise LabError(f"notebook {path.name} failed: {text[-4000:]}") from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if kernel is not None and kernel.has_kernel:  # a kernel we pass in is ours to stop
            # Politely first: the kernel's exit handlers stop what it started (dev servers).
            kernel.shutdown_kernel(now=False)
        shutil.rmtree(sockets, ignore_errors=True)
    return notebook


def noise(notebook: Any) -> list[str]:
    """Outputs a reader should not see: stderr, tracebacks, SDK ``WARN`` lines, warnings,
    temporary paths, raw Timedeltas, progress widgets, and words printed over each other in a
    figure (:func:`run_notebook` measures them). One line per finding, naming the cell or the
    figure."""
    found = []
    for number, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                found.append(f"cell {number}: stderr: {output.get('text', '')[:200]!r}")
                continue
            data = output.get("data", {})
            if _WIDGET in data:
                found.append(f"cell {number}: a progress widget")
            text = output.get("text") or data.get("text/plain") or ""
            text += "\n".join(output.get("traceback", []))
            for pattern, what in _NOISE:
                match = pattern.search(_ANSI.sub("", str(text)))
                if match:
                    found.append(f"cell {number}: {what}: {match.group(0)!r}")
    for figure in notebook.get("metadata", {}).get("toolkit", {}).get("figures", []):
        for first, second in figure["overlaps"]:
            found.append(f"figure {figure['title']!r}: {first!r} overlaps {second!r}")
    return found


def execute_notebook(
    path: Path, *, html: Path | None = None, timeout: int = 600, env: dict[str, str] | None = None
) -> Path | None:
    """Run every cell of ``path`` in a fresh kernel; with ``html``, also write it there as HTML.

    A failing cell (including a failing check) raises :class:`LabError` naming the notebook
    and the cell.
    """
    notebook = run_notebook(path, timeout=timeout, env=env)
    if html is None:
        return None
    write_html(notebook, html)
    return html


def write_html(notebook: Any, html: Path) -> Path:
    """Write an executed notebook as HTML (folders created)."""
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(notebook)
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(body, encoding="utf-8")
    return html
