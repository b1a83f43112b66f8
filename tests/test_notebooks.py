"""Every notebook runs headless, top to bottom; each asserts the findings it presents."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.lab.notebooks import execute_notebook, list_notebooks

NOTEBOOKS = list_notebooks()


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_its_assertions_hold(notebook: Path, tmp_path: Path) -> None:
    html = execute_notebook(notebook, html=tmp_path / f"{notebook.stem}.html", timeout=900)
    assert html is not None and html.stat().st_size > 10_000


def test_there_are_notebooks() -> None:
    assert {p.stem for p in NOTEBOOKS} >= {"first-look"}
