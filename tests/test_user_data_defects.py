"""Defects met when the toolkit is used on a user's own exports (issue 11), one test each.

Each test failed before its fix: sidecars read as histories, labels only from sidecars, steps
reordering a listing, a stuck turn as a blank step 0, a preset of another framework accepted,
``diff`` certain about unrelated or unsettled pairs, ``sql``/``export`` disagreeing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from glob import glob
from pathlib import Path

import pytest

import toolkit as tk
from toolkit.errors import ToolkitError

ROOT = Path(__file__).resolve().parents[1]
ADK = ROOT / "data" / "adk"
ROLLING = ADK / "adk-1.28.1" / "rolling_upgrade_to_adk-1.29.0.json"
TWIN = ROOT / "data" / "go_twin" / "with_fix-adk_v2.5.0" / "one_call_then_plain.json"
GALLERY = ROOT / "data" / "gallery"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "toolkit.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_readme_glob_with_sidecars_works() -> None:
    table = tk.listings_per_turn(glob(str(ADK / "*" / "*.json")))
    assert table["source"].str.endswith(".meta.json").sum() == 0
    assert table["source"].nunique() == len(
        [p for p in ADK.glob("*/*.json") if not p.name.endswith(".meta.json")]
    )
    assert tk.read_histories(ADK, progress=False).errors.empty  # .mcp.jsonl is no broken history


@pytest.mark.parametrize("folder", ["openai_agents", "pydantic_ai"])
def test_lab_folders_of_every_framework_hold_no_broken_histories(folder: str) -> None:
    # The framework recorders keep per-server MCP request logs (mcp.jsonl, mcp_twice.jsonl)
    # next to the histories: JSON lines, which no history dialect is, so they are skipped.
    loaded = tk.read_histories(ROOT / "data" / folder, progress=False)
    assert loaded.errors.empty, loaded.errors.to_string()


def test_labels_without_sidecars_tell_1_28_1_from_1_29_0(tmp_path: Path) -> None:
    for env in ("adk-1.28.1", "adk-1.29.0"):
        shutil.copy(ADK / env / "two_turns.json", tmp_path / f"{env}.json")
    table = tk.listings_per_turn(tmp_path)
    labels = table.groupby("source")["label"].first()
    assert labels.nunique() == 2  # was "temporal-python 1.30.0" for both
    assert set(table["label_source"]) == {"build_id"}
    first_turns = table[table["turn"] == 1].set_index("label")["listings"]
    assert sorted(first_turns.tolist()) == [1, 3]  # one value per label, nothing averaged


def test_many_file_frames_are_read_per_source() -> None:
    events = tk.read_histories([ADK / "adk-1.28.1", ADK / "adk-1.29.0"], progress=False).events
    table = tk.listings_per_turn(events)
    assert table.groupby("source")["run_id"].nunique().eq(1).all()
    assert len(table) == len(tk.listings_per_turn([ADK / "adk-1.28.1", ADK / "adk-1.29.0"]))


def test_steps_keep_event_order_and_stuck_turns_say_why() -> None:
    steps = tk.agent_steps(ROLLING)
    turn1 = steps[steps["turn"] == 1]
    assert turn1["sequence"].tolist() == ["L M L C", "L M"]
    listed = tk.listings_per_turn(ROLLING)
    assert " ".join(turn1["sequence"]) == listed.loc[listed["turn"] == 1, "sequence"].iloc[0]
    assert (turn1["listings_before"] + turn1["listings_after"]).sum() == 3
    stuck = steps[steps["turn"] == 2].iloc[0]
    assert stuck["status"] == "stuck" and "[TMPRL1100]" in stuck["failure"]
    assert listed.loc[listed["turn"] == 2, "status"].iloc[0] == "stuck"
    shown = run("turns", ROLLING, "--width", "0")
    assert "stuck" in shown.stdout and "TMPRL1100" in shown.stdout


def test_a_preset_of_another_framework_is_an_error() -> None:
    with pytest.raises(ToolkitError, match="look like 'go_googleadk'"):
        tk.agent_steps(TWIN, roles="python_adk")
    result = run("turns", TWIN, "--roles", "python_adk")
    assert result.returncode == 2 and "o o o" not in result.stdout
    assert "python_adk" in result.stderr


def test_diff_of_unrelated_histories_is_not_comparable() -> None:
    other = GALLERY / "activity-renamed" / "v2.json"
    if not other.exists():
        pytest.skip("data/gallery not recorded")
    result = run("diff", ADK / "adk-1.28.1" / "two_turns.json", other)
    assert result.returncode == 2
    assert "Not comparable" in result.stdout and "First divergence" not in result.stdout


def test_diff_says_how_sure_an_inexact_verdict_is_on_stdout() -> None:
    case = GALLERY / "patch-introduced"
    if not case.exists():
        pytest.skip("data/gallery not recorded")
    result = run("diff", case / "v1.json", case / "v2.json")
    assert result.returncode == 0
    assert "Not exact (confidence: assumed)" in result.stdout and "assumes:" in result.stdout
    assert result.stderr == ""  # no raw Python warning with a source path
    as_json = json.loads(run("diff", case / "v1.json", case / "v2.json", "--json").stdout)
    assert as_json["exact"] is False and as_json["assumptions"]


def test_sql_and_export_agree_and_sql_takes_options_anywhere(tmp_path: Path) -> None:
    folder = tmp_path / "adk"
    shutil.copytree(ADK / "adk-1.28.1", folder)
    query = "select count(distinct run_id) as runs from events"
    queried = run("sql", "--json", query, folder)  # an option before the positionals
    exported = run("export", folder, "--to", tmp_path / "ds")
    assert (queried.returncode, exported.returncode) == (0, 0)
    assert [json.loads(line) for line in queried.stdout.splitlines()] == [{"runs": 4}]
    assert "not histories" in queried.stderr  # the sidecars, as a note
    (folder / "broken.json").write_text('{"events": [')
    queried = run("sql", query, "--json", folder, "--width", "0")
    exported = run("export", folder, "--to", tmp_path / "ds2")
    assert (queried.returncode, exported.returncode) == (1, 1)
    assert "broken.json" in queried.stderr
