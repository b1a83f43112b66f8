"""The flag-pair recorder live: one pair recorded on the dev server with the installed temporalio.

Only the pair that needs no other release's environment runs here (the cross-release pairs are
committed data, checked by test_flag_pairs.py): the workflow that builds its activity and child
workflow ids from its workflow id, recorded under two workflow ids by the recorder's worker
process, replayed both ways by the real Replayer in a subprocess, and compared with the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolkit.histories.reading.read import read_history
from toolkit.lab.flag_pairs.envs import MAIN_ENV
from toolkit.lab.flag_pairs.record import PLAN, record_all
from toolkit.replay.verdict import replay_verdict

pytestmark = pytest.mark.server

PAIR = [r for r in PLAN if r.flag == "derived_ids" and r.env == MAIN_ENV.name and r.code == "same"]


@pytest.fixture(scope="module")
def recorded(dev_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("flag_pairs_live")
    record_all(data, dev_server.address, PAIR)
    return data / "flag_pairs"


def test_the_pair_is_recorded_under_two_workflow_ids(recorded: Path) -> None:
    assert len(PAIR) == 2
    ids = []
    for recording in PAIR:
        meta = json.loads((recorded / recording.path).with_suffix(".meta.json").read_text())
        assert meta["status"] == "COMPLETED" and meta["temporalio"] == MAIN_ENV.temporalio
        history = (recorded / recording.path).read_text()
        assert f"{meta['workflow_id']}-child" in history  # the ids embed the run's workflow id
        ids.append(meta["workflow_id"])
    assert ids[0] != ids[1]


def test_model_agrees_with_the_replayer_both_ways(recorded: Path) -> None:
    matrix = pd.read_csv(recorded / "replay_matrix.csv", dtype=str, keep_default_na=False)
    assert len(matrix) == 2 and set(matrix["outcome"]) == {"ok"}, matrix["message"].tolist()
    a, b = (recorded / recording.path for recording in PAIR)
    for old, new in ((a, b), (b, a)):
        verdict = replay_verdict(read_history(old), read_history(new))
        assert (verdict.outcome, verdict.exact) == ("ok", True), verdict.assumptions
        rebased = [note for note in verdict.notes if "built from the workflow id" in note]
        assert len(rebased) == 2, verdict.notes  # the activity id and the child workflow id
