"""Analyses over a many-file frame keep files apart (history numbers restart in every file)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk

DATA = Path(__file__).resolve().parents[1] / "data"


def _twin_files() -> list[Path]:
    files = sorted(DATA.glob("go_twin/*/one_call_then_plain.json"))
    if len(files) < 2:
        pytest.skip("data/go_twin not recorded (make record)")
    return files


@pytest.mark.parametrize("analysis", ["commands", "agent_steps", "activity_spans", "step_commands"])
def test_many_file_frame_equals_file_by_file(analysis: str) -> None:
    files = _twin_files()
    batch = tk.read_histories(files)
    assert batch.events["history"].nunique() == 1  # every file's history is number 0
    function = getattr(tk, analysis)
    together = function(batch.events)
    apart = pd.concat(
        [function(tk.read_history(f)).assign(source=str(f)) for f in files], ignore_index=True
    )
    assert len(together) == len(apart)
    assert sorted(together["source"].unique()) == sorted(str(f) for f in files)
    per_file = together.groupby("source").size().sort_index()
    assert per_file.tolist() == apart.groupby("source").size().sort_index().tolist()
