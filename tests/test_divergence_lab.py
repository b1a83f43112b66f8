"""first_divergence agrees with the real Replayer on the lab's replay matrices and the gallery.

Each data set is checked only once it is committed under data/ (``make record``); until then the
test skips and says which file is missing. Pairs the model cannot speak about are left out with a
count: replays that failed for a reason other than nondeterminism (``error``), and matrix rows
whose replaying version recorded no history of the same scenario.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from toolkit.histories.read import read_history
from toolkit.replay.divergence import first_divergence

DATA = Path(__file__).resolve().parents[1] / "data"


def _agree(recorded: Path, replayed: Path, outcome: str, message: str) -> str | None:
    """None when the model agrees with the real verdict; otherwise what differs."""
    modelled = first_divergence(read_history(recorded), read_history(replayed))
    if outcome == "ok":
        return None if modelled is None else f"model fails: {modelled.core_message}"
    if modelled is None:
        return f"model replays fine, Replayer said {message}"
    if modelled.core_message not in message:
        return f"model says {modelled.core_message!r}, Replayer said {message!r}"
    return None


@pytest.mark.parametrize("dataset", ["adk", "go_twin"])
def test_replay_matrix(dataset: str) -> None:
    matrix_path = DATA / dataset / "replay_matrix.csv"
    if not matrix_path.is_file():
        pytest.skip(f"{matrix_path.relative_to(DATA.parent)} not recorded yet (make record)")
    matrix = pd.read_csv(matrix_path, dtype=str, keep_default_na=False)
    replayer_column = next(c for c in matrix.columns if c.startswith("replayer_"))
    problems, checked, left_out = [], 0, 0
    for row in matrix.to_dict("records"):
        recorded = DATA / dataset / row["history"]
        replayed = DATA / dataset / row[replayer_column] / recorded.name
        if row["outcome"] not in {"ok", "nondeterminism"} or not replayed.is_file():
            left_out += 1
            continue
        problem = _agree(recorded, replayed, row["outcome"], row["message"])
        if problem:
            problems.append(f"{row['history']} on {row[replayer_column]}: {problem}")
        checked += 1
    assert not problems, "\n".join(problems)
    assert checked > 0, f"no comparable rows in {matrix_path} ({left_out} left out)"


def test_gallery() -> None:
    cases = sorted((DATA / "gallery").glob("*/case.json"))
    if not cases:
        pytest.skip("data/gallery not recorded yet (make record)")
    problems, checked = [], 0
    for case_path in cases:
        case = json.loads(case_path.read_text())
        for recorded, replayed in (("v1", "v2"), ("v2", "v1")):
            real = case["replays"][f"{recorded}_on_{replayed}"]
            if real["outcome"] not in {"ok", "nondeterminism"}:
                continue
            problem = _agree(
                case_path.parent / f"{recorded}.json",
                case_path.parent / f"{replayed}.json",
                real["outcome"],
                real["message"],
            )
            if problem:
                problems.append(f"{case['name']} {recorded} on {replayed}: {problem}")
            checked += 1
    assert not problems, f"{len(problems)} of {checked} disagree:\n" + "\n".join(problems)
