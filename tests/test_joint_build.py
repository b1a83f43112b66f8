"""Histories of a batch are built together: the result must equal each history built alone.

``read_histories`` and ``write_dataset`` decode a chunk of files and fill the columns of all
their histories at once (one fill per event type, one time parse, one linking pass). These
tests compare that joint build with ``read_history`` of each file on real files: lab recordings
and the public corpus, shuffled so that histories with the same event ids, update ids and
activity ids sit next to each other, plus damaged files in the middle of a batch.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pandas as pd
import pytest

import toolkit as tk
from toolkit.histories.reading.read import read_many_parts

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"

_CELLS = ("attributes", "extra", "input", "result", "details")


def _history_files(root: Path) -> list[Path]:
    """The readable histories under ``root`` (not the manifests, sidecars and the corpus'
    deliberately broken files)."""
    candidates = [p for p in sorted(root.rglob("*.json")) if not p.name.endswith(".meta.json")]
    read = set(tk.read_histories(candidates, progress=False, workers=1).events["source"])
    return [p for p in candidates if str(p) in read]


def _alone(files: list[Path]) -> pd.DataFrame:
    return pd.concat([tk.read_history(f) for f in files], ignore_index=True)


def _assert_same(joint: pd.DataFrame, alone: pd.DataFrame) -> None:
    joint, alone = joint.reset_index(drop=True), alone.reset_index(drop=True)
    assert len(joint) == len(alone)
    for column in joint.columns.drop(["history", *_CELLS]):
        pd.testing.assert_series_equal(joint[column], alone[column], check_names=True)
    for column in _CELLS:  # lazy cells compare by their decoded values
        assert [repr(v) for v in joint[column]] == [repr(v) for v in alone[column]], column


@pytest.fixture(scope="module")
def lab_files() -> list[Path]:
    files = _history_files(DATA)
    assert len(files) >= 40, "the lab's recordings under data/ should be here"
    return files


def test_a_batch_of_lab_histories_equals_each_read_alone(lab_files: list[Path]) -> None:
    files = list(lab_files)
    random.Random(7).shuffle(files)  # neighbours with equal event ids from other runs
    batch = tk.read_histories(files, progress=False, workers=1)
    assert batch.errors.empty
    _assert_same(batch.events, _alone(files))
    # Links never cross histories: every activity event names an activity of its own run.
    activities = batch.events[batch.events["category"] == "activity"]
    assert activities["activity_type"].notna().all()
    numbered = batch.events.groupby("source")["workflow_task"].min().dropna()
    assert (numbered == 1).all()  # workflow tasks are numbered from 1 in every history


def test_a_batch_of_public_histories_equals_each_read_alone(corpus: Path) -> None:
    files = _history_files(corpus / "histories")
    assert len(files) >= 40
    random.Random(11).shuffle(files)
    batch = tk.read_histories(files, progress=False, workers=1)
    assert batch.errors.empty
    _assert_same(batch.events, _alone(files))
    # Update names are learned per history: two runs with the same update id keep their own.
    updates = batch.events[batch.events["category"] == "update"]
    assert updates["update_name"].notna().any()


def test_damaged_files_in_a_batch_cost_only_themselves(
    lab_files: list[Path], tmp_path: Path
) -> None:
    good = lab_files[:6]
    bad_time = tmp_path / "bad_time.json"
    text = good[0].read_text()
    first_time = text.index('"eventTime": "') + len('"eventTime": "')
    bad_time.write_text(text[:first_time] + "yesterday" + text[first_time + 20 :])
    empty = tmp_path / "empty.json"
    empty.write_text('{"events": []}')
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    # The UI's newest-first export of a history not otherwise in the batch (read_histories
    # drops a second copy of a run).
    descending = tmp_path / "descending.json"
    events = tk.read_history(lab_files[-1])
    document = orjson.loads(lab_files[-1].read_bytes())
    document["events"].reverse()
    descending.write_bytes(orjson.dumps(document))
    files = [good[0], bad_time, good[1], empty, descending, cut, *good[2:]]

    parts, errors = read_many_parts(files)
    assert sorted(errors) == [1, 3, 5]
    kept = [f for k, f in enumerate(files) if k not in errors]
    assert sum(map(len, parts)) == len(_alone(kept))
    assert "yesterday" in str(errors[1]) and "event #" in str(errors[1])
    assert "no events" in str(errors[3])
    batch = tk.read_histories(files, progress=False, workers=1)
    assert sorted(batch.errors["source"]) == sorted(map(str, [bad_time, empty, cut]))
    _assert_same(batch.events, _alone(kept))
    reversed_rows = batch.events[batch.events["source"] == str(descending)]
    assert reversed_rows["event_id"].tolist() == events["event_id"].tolist()
    with pytest.raises(tk.HistoryFormatError, match="yesterday"):
        tk.read_histories(files, progress=False, workers=1, errors="raise")
