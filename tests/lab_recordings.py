"""The lab's committed recordings (``data/<framework>/<env>/<scenario>.json`` and ``.meta.json``)
as the data tests read them.

Import with ``from lab_recordings import ...`` (``tests/`` is on the path).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolkit.agents.step_commands import step_commands
from toolkit.agents.turns import agent_steps, listings_per_turn
from toolkit.histories.reading.read import read_history
from toolkit.lab.adk_python.matrix import MATRIX_NAME

DATA_ROOT = Path(__file__).resolve().parents[1] / "data"


def recordings_dir(framework: str) -> Path:
    """``data/<framework>``; skips the importing test module when no replay matrix was recorded
    there (the recording is ``make record``, too slow for CI)."""
    path = DATA_ROOT / framework
    if not (path / MATRIX_NAME).exists():
        pytest.skip(f"no recorded data in {path} (run `make record`)", allow_module_level=True)
    return path


def load_recording(data: Path, env: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The history ``data/env/name.json`` and its metadata."""
    path = data / env / f"{name}.json"
    return (json.loads(path.read_text()),
            json.loads(path.with_suffix(".meta.json").read_text()))


def event_attributes(history: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The ``key`` attributes (e.g. ``activityTaskScheduledEventAttributes``) of the events that
    have them, in order."""
    return [e[key] for e in history["events"] if key in e]


def scheduled_activity_types(path: Path) -> list[str]:
    """Activity types of the history file's ``ActivityTaskScheduled`` events, in order."""
    history = json.loads(path.read_text())
    return [a["activityType"]["name"]
            for a in event_attributes(history, "activityTaskScheduledEventAttributes")]


def assert_preset_reads_two_turns(data: Path, env: str, name: str, listed: list[int],
                                  call: str) -> pd.DataFrame:
    """Check what the role preset reads from a two-turn recording whose first turn calls one tool
    (``call``): steps (1,1) (1,2) (2,1) with ``listed`` listings before each and no unknown
    activity, the metadata's listings per turn labelled ``env``, and a first step that lists
    before the model and calls after it. Returns the steps."""
    path = data / env / f"{name}.json"
    steps = agent_steps(read_history(path))
    assert steps[["turn", "step"]].values.tolist() == [[1, 1], [1, 2], [2, 1]]
    assert steps["listings_before"].tolist() == listed
    assert steps["tool_calls"].tolist() == [1, 0, 0] and steps["other"].sum() == 0
    assert steps["tool_call_activities"].iloc[0] == [call]
    turns = listings_per_turn(path)
    assert turns["listings"].tolist() == load_recording(data, env, name)[1]["listings_per_turn"]
    assert turns["label"].unique().tolist() == [env]
    commands = step_commands(path)
    first = commands[(commands["turn"] == 1) & (commands["step"] == 1)].iloc[0]
    assert (first["before_model"], first["after_model"]) == ("L", "C")
    return steps
