"""Every notebook runs headless, top to bottom; its checks hold and its output has no noise."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

import toolkit as tk
from toolkit.lab.notebooks import list_notebooks, noise, run_notebook, write_html

NOTEBOOKS = list_notebooks()
_PRIVATE_HINTS = ("toolkit.replay.", "toolkit.agents.", "toolkit.histories.", "toolkit.logs.",
                  "toolkit.datasets", "hosted_runtime.evidence", "def version(")  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_quietly_and_its_checks_hold(notebook: Path, tmp_path: Path) -> None:
    executed = run_notebook(notebook, timeout=900)
    assert noise(executed) == [], f"{notebook.name} shows noise"
    html = write_html(executed, tmp_path / f"{notebook.stem}.html")
    assert html.stat().st_size > 10_000


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_uses_public_names_and_shows_its_evidence(notebook: Path) -> None:
    cells = nbformat.read(notebook, as_version=4).cells
    code = [c.source for c in cells if c.cell_type == "code"]
    imports = [line for source in code for line in source.splitlines()
               if line.startswith(("import ", "from "))]  # fmt: skip
    for line in imports:
        assert not any(hint in line for hint in _PRIVATE_HINTS), f"private import: {line}"
    assert not any("def version(" in source for source in code)
    # Assertions live in cells marked as checks, never in place of the evidence.
    unmarked = [s.splitlines()[0] for s in code if "\nassert " in f"\n{s}"
                and not s.lstrip().startswith("# Check")]  # fmt: skip
    assert unmarked == [], f"assertions outside check cells: {unmarked}"


def test_noise_names_what_a_reader_should_not_see() -> None:
    stderr = new_output("stream", name="stderr", text="12:00:00Z WARN temporalio_sdk_core")
    quiet = new_output("execute_result", data={"text/plain": "   run_s\n0  0.123"})
    timedelta = new_output("execute_result", data={"text/plain": "0 days 00:00:00.007220641"})
    warning = new_output("stream", name="stdout", text="ipykernel_77/1.py:3: UserWarning: x")
    widget = new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {}})
    notebook = new_notebook(cells=[new_code_cell(outputs=[quiet]),
                                   new_code_cell(outputs=[stderr, timedelta]),
                                   new_code_cell(outputs=[warning, widget])])  # fmt: skip
    notebook.metadata["toolkit"] = {"figures": [
        {"title": "Listings", "size": [9.5, 4.2], "overlaps": [["adk-1.27.5", "adk-1.28.1"]]},
        {"title": "Quiet", "size": [9.5, 4.2], "overlaps": []}]}  # fmt: skip
    found = noise(notebook)
    assert [f.split(":")[0] for f in found] == ["cell 1", "cell 1", "cell 2", "cell 2", "cell 2",
                                                "figure 'Listings'"]  # fmt: skip
    assert found[-1] == "figure 'Listings': 'adk-1.27.5' overlaps 'adk-1.28.1'"
    assert any("Timedelta" in f for f in found) and any("widget" in f for f in found)
    assert any("temporary path" in f for f in found) and any("warning" in f for f in found)


def test_there_are_notebooks() -> None:
    assert {p.stem for p in NOTEBOOKS} >= {"first-look", "replay-divergence", "duplicate-tool",
                                              "postmortem"}


@pytest.mark.slow
def test_a_figure_shows_once_whether_assigned_returned_or_silenced(tmp_path: Path) -> None:
    setup = ("import toolkit as tk\n"
             "case = '../data/gallery/activity-renamed'\n"
             "d = tk.first_divergence(f'{case}/v1.json', f'{case}/v2.json')")  # fmt: skip
    cells = [setup, "fig = tk.plots.plot_divergence(d)", "tk.plots.plot_divergence(d)",
             "tk.plots.plot_divergence(d);", "x = 1"]  # fmt: skip
    path = tmp_path / "notebooks" / "figures.ipynb"
    path.parent.mkdir()
    (tmp_path / "data").symlink_to(Path(__file__).resolve().parents[1] / "data")
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), path)
    executed = run_notebook(path, timeout=300)
    images = [sum("image/png" in o.get("data", {}) for o in c.outputs) for c in executed.cells]
    assert images == [0, 1, 1, 1, 0]
    # The kernel measured each figure it rendered, at its size, and found no words on words.
    figures = executed.metadata["toolkit"]["figures"]
    assert len(figures) == 3 and all(f["overlaps"] == [] for f in figures)
    case = Path(__file__).resolve().parents[1] / "data" / "gallery" / "activity-renamed"
    message = tk.first_divergence(case / "v1.json", case / "v2.json").core_message
    assert {f["title"].replace("\n", " ") for f in figures} == {message}
    assert len(executed.cells) == len(cells)  # nothing added to the notebook
