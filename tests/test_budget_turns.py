"""The budget's turns, counted for every run of a frame at once, are those the walk over each
run's events counted (tests/turns_reference.py): on data/ and the corpus, with each preset's
roles forced on every run (so that signals and updates of every name meet every rule), and on
frames whose updates repeat, lack ids or come before the first activity."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from turns_reference import user_turns as walked_turns

import toolkit as tk
from toolkit.agents.growth import runs_of, user_turns
from toolkit.agents.roles import PRESETS, Roles

ROOT = Path(__file__).resolve().parents[1]


def _assert_same(events: pd.DataFrame, roles: str | Roles = "auto") -> int:
    counted = 0
    for run in runs_of(events, roles):
        assert user_turns(run) == walked_turns(run), (run.value("source", 0), roles)
        counted += user_turns(run)
    return counted


@pytest.fixture(scope="module")
def recorded(corpus: Path) -> pd.DataFrame:
    return pd.concat([tk.read_histories(folder, progress=False).events
                      for folder in (ROOT / "data", corpus / "histories")],
                     ignore_index=True)  # fmt: skip


@pytest.mark.parametrize("roles", ["auto", *PRESETS])
def test_turns_of_recorded_runs_match_the_walk(recorded: pd.DataFrame, roles: str) -> None:
    assert _assert_same(recorded, roles) > 0


def test_turns_of_runs_whose_updates_repeat_or_lack_ids(recorded: pd.DataFrame) -> None:
    updates = recorded["event_type"].isin(["WorkflowExecutionUpdateAdmitted",
                                           "WorkflowExecutionUpdateAccepted"])  # fmt: skip
    sources = recorded.loc[updates, "source"].unique()
    assert len(sources) >= 3, "the corpus holds runs with updates"
    frame = recorded[recorded["source"].isin(sources)].copy()
    # Every other update loses its id (counted by position), and every update's name becomes a
    # user message's for a preset that takes any update name.
    at = frame.index[frame["event_type"].isin(["WorkflowExecutionUpdateAdmitted",
                                               "WorkflowExecutionUpdateAccepted"])]  # fmt: skip
    frame.loc[at[::2], "update_id"] = None
    everyone = Roles("everyone", ".*model.*", ".*list.*", ".*tool.*")
    assert _assert_same(frame, everyone) >= len(sources)
    nobody = Roles("nobody", ".*model.*", ".*list.*", ".*tool.*", user_signals=None,
                   user_updates=None, start_is_user=False)  # fmt: skip
    assert _assert_same(frame, nobody) == 0
