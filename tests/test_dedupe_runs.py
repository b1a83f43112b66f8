"""Repeated runs are dropped alike whether histories are found by their spans or by grouping.

``read_histories`` finds a batch's histories where ``source`` or ``history`` changes (each
history's rows are together in a batch's frame) instead of grouping the frame; the grouped way
is kept for frames that are not so. Both are run on the frames of every history of data/ and
the corpus, read in chunks that repeat files (so runs are met again within a chunk and in a
later one), and must keep the same rows and remember the same runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.histories.reading.batch import (
    _dedupe_runs,
    _dedupe_runs_grouped,
    find_history_files,
    history_spans,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def chunks(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> list[pd.DataFrame]:
    files = find_history_files([ROOT / "data", corpus / "histories"])
    assert len(files) > 300
    # Every file under two names, the second copies shifted by 37 files: the same runs met
    # again within a chunk of 120 and in later chunks.
    copies = tmp_path_factory.mktemp("copies")
    twice = []
    for index, path in enumerate(files):
        for copy in ("a", "b"):
            target = copies / copy / f"{index:05d}-{path.name}"
            target.parent.mkdir(exist_ok=True)
            shutil.copyfile(path, target)
        twice.append(copies / "a" / f"{index:05d}-{path.name}")
    seconds = [copies / "b" / f"{index:05d}-{path.name}" for index, path in enumerate(files)]
    listed = [p for pair in zip(twice, seconds[37:] + seconds[:37], strict=True) for p in pair]
    batches = tk.read_histories(listed, dedupe=False, chunksize=120, workers=1, progress=False)
    return [batch.events for batch in batches]  # type: ignore[union-attr]


def test_spans_and_grouping_drop_the_same_runs(chunks: list[pd.DataFrame]) -> None:
    fast_seen: set[tuple[object, int, int]] = set()
    grouped_seen: set[tuple[object, int, int]] = set()
    dropped = 0
    for events in chunks:
        assert history_spans(events) is not None  # the fast path is the one tested
        fast = _dedupe_runs(events, fast_seen)
        grouped = _dedupe_runs_grouped(events, grouped_seen)
        pd.testing.assert_frame_equal(fast, grouped, check_exact=True)
        dropped += len(events) - len(fast)
    assert fast_seen == grouped_seen
    assert dropped > 1000  # repeats were there to drop


def test_a_history_in_pieces_is_grouped(chunks: list[pd.DataFrame]) -> None:
    events = chunks[0]
    first = events["history"].eq(events["history"].iloc[0]) & events["source"].eq(
        events["source"].iloc[0]
    )
    rows = first[first].index
    # The first history's rows split around the rest: spans cannot tell it is one history.
    apart = pd.concat([events.loc[rows[:2]], events.loc[~first], events.loc[rows[2:]]])
    apart = apart.reset_index(drop=True)
    assert history_spans(apart) is None
    for frame in (apart, pd.concat([apart, apart], ignore_index=True)):
        fast_seen: set[tuple[object, int, int]] = set()
        grouped_seen: set[tuple[object, int, int]] = set()
        fast = _dedupe_runs(frame, fast_seen)
        pd.testing.assert_frame_equal(fast, _dedupe_runs_grouped(frame, grouped_seen))
        assert fast_seen == grouped_seen
