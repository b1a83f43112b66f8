"""Splitting a binary History into its event records: the numpy chain equals the byte walk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from google.protobuf import json_format
from temporalio.api.history.v1 import History, HistoryEvent

from toolkit.histories.reading.wire import WireError, _chained_records, _walk_records

ROOT = Path(__file__).resolve().parents[1]


def _same(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    walked = _walk_records(data, 1)
    chained = _chained_records(data, 1)
    assert chained is not None
    assert np.array_equal(chained[0], walked[0]) and np.array_equal(chained[1], walked[1])
    return chained


def test_real_histories_split_the_same_both_ways(corpus: Path) -> None:
    binaries = sorted((corpus / "histories").rglob("*.bin"))
    jsons = [ROOT / "data" / "adk" / "adk-2.13.0" / "two_turns.json"]
    histories = [History.FromString(p.read_bytes()) for p in binaries]
    histories += [json_format.Parse(p.read_text(), History()) for p in jsons]
    assert len(histories) >= 3
    for history in histories:
        data = history.SerializeToString()
        starts, _ = _same(data)
        assert len(starts) == len(history.events)


def test_an_event_written_another_way_falls_back_to_the_walk() -> None:
    # Event id 0 is left out by proto3 encoders, so this record's payload starts with field 2:
    # not a candidate of the chain, which then gives up (and the byte walk reads it).
    events = [HistoryEvent(event_id=1), HistoryEvent(task_id=7), HistoryEvent(event_id=3)]
    data = History(events=events).SerializeToString()
    assert _chained_records(data, 1) is None
    starts, ends = _walk_records(data, 1)
    assert len(starts) == 3 and ends[-1] == len(data)


def test_tag_bytes_inside_events_are_not_taken_for_records() -> None:
    # Identities full of 0x0A 0x08 pairs: candidates that are not records.
    events = [HistoryEvent(event_id=i + 1, task_id=10 * i) for i in range(50)]
    for event in events:
        started = event.workflow_execution_started_event_attributes
        started.identity = "\n\x08\n\x08" * (event.event_id % 7)
    _same(History(events=events).SerializeToString())


def test_cut_bytes_are_refused() -> None:
    data = History(events=[HistoryEvent(event_id=1), HistoryEvent(event_id=2)]).SerializeToString()
    assert _chained_records(data[:-1], 1) is None
    with pytest.raises(WireError):
        _walk_records(data[:-1], 1)
