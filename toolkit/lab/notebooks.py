"""Execute the project's notebooks headless (tests and ``make demo``), optionally to HTML."""

from __future__ import annotations

import os
import re
from pathlib import Path

from toolkit.errors import LabError

__all__ = ["NOTEBOOKS_DIR", "execute_notebook", "list_notebooks"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"


def list_notebooks(directory: Path = NOTEBOOKS_DIR) -> list[Path]:
    """The notebooks to run, in name order (checkpoints excluded)."""
    return sorted(p for p in directory.glob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def execute_notebook(
    path: Path, *, html: Path | None = None, timeout: int = 600, env: dict[str, str] | None = None
) -> Path | None:
    """Run every cell of ``path`` in a fresh kernel (cwd: the notebook's folder).

    A failing cell (including a failing ``assert``) raises :class:`LabError` naming the notebook
    and the cell. With ``html`` the executed notebook is also written there as HTML.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        client = NotebookClient(
            notebook,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
    except CellExecutionError as exc:
        text = _ANSI.sub("", str(exc))
        raise LabError(f"notebook {path.name} failed: {text[-4000:]}") from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if html is None:
        return None
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(notebook)
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(body, encoding="utf-8")
    return html
