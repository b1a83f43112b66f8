"""The dataset's tables of a batch, their run counts and partition columns found by each row's
run position, equal those found by grouping and merging (the general path, kept for keys the
positions cannot be computed for), on the lab's recordings and the public corpus; and the
tables put in the dataset files' order as frames equal the Arrow tables sorted after."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.datasets import tables
from toolkit.datasets.arrow import to_arrow
from toolkit.datasets.layout import TABLES, file_schema
from toolkit.datasets.merge import in_schema, sort_rows
from toolkit.histories.columns.event_fields import shared_event_fields
from toolkit.histories.reading.batch import find_history_files

DATA = Path(__file__).resolve().parents[1] / "data"


def _both(events: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """``batch_tables`` of ``events`` as the writer calls it, and by the general path."""
    files = {source: f"sha-{i}" for i, source in enumerate(events["source"].unique())}
    with shared_event_fields():
        fast = tables.batch_tables(events, files, "b1", "default")
    positions = tables._run_rows
    tables._run_rows = lambda facts, frames: None  # type: ignore[assignment]
    try:
        with shared_event_fields():
            general = tables.batch_tables(events, files, "b1", "default")
    finally:
        tables._run_rows = positions  # type: ignore[assignment]
    return fast, general


@pytest.mark.parametrize("where", ["lab", "corpus"])
def test_tables_by_run_positions_equal_the_grouped_and_merged_ones(
    where: str, request: pytest.FixtureRequest
) -> None:
    root = DATA if where == "lab" else request.getfixturevalue("corpus") / "histories"
    events = tk.read_histories(find_history_files(root), progress=False, workers=1).events
    fast, general = _both(events)
    assert list(fast) == list(general) == ["events", "activities", "workflow_tasks", "runs"]
    assert len(fast["runs"]) > 50 and fast["activities"]["namespace"].notna().any()
    assert fast["runs"]["failed_activities"].any() and fast["runs"]["workflow_tasks"].all()
    for name in fast:
        pd.testing.assert_frame_equal(fast[name], general[name], check_exact=True, obj=name)


def test_rows_out_of_order_or_unmatched_take_the_general_path() -> None:
    events = tk.read_histories(DATA / "go_twin", progress=False, workers=1).events
    shuffled = events.sample(frac=1, random_state=3).reset_index(drop=True)
    fast, general = _both(shuffled)
    for name in fast:
        pd.testing.assert_frame_equal(fast[name], general[name], check_exact=True, obj=name)
    facts = tables.run_facts(events)
    stray = {"events": events.assign(source=events["source"] + "-elsewhere")}
    assert tables._run_rows(facts, stray) is None  # a row whose run facts do not hold
    assert tables._run_rows(facts.assign(source=None), {"events": events}) is None


@pytest.mark.parametrize("where", ["lab", "corpus"])
def test_run_facts_of_rows_in_run_order_equal_those_of_sorting_and_grouping(
    where: str, request: pytest.FixtureRequest
) -> None:
    root = DATA if where == "lab" else request.getfixturevalue("corpus") / "histories"
    # Files in the order of their names as text: the events come in run order (the fast path).
    files = sorted(find_history_files(root), key=str)
    events = tk.read_histories(files, progress=False, workers=1).events
    read = [*tables.RUN_KEYS, "event_id", "event_time", "event_type", *tables._IDENTITY]
    assert tables._sorted_runs(events[read]) is not None
    fast = tables.run_facts(events)
    sorted_runs = tables._sorted_runs
    tables._sorted_runs = lambda frame: None  # type: ignore[assignment]
    try:
        general = tables.run_facts(events)
    finally:
        tables._sorted_runs = sorted_runs  # type: ignore[assignment]
    assert len(fast) > 50 and fast["status"].nunique() > 1
    pd.testing.assert_frame_equal(fast, general, check_exact=True)


def test_rows_out_of_run_order_are_sorted_and_grouped() -> None:
    events = tk.read_histories(DATA / "go_twin", progress=False, workers=1).events
    read = [*tables.RUN_KEYS, "event_id", "event_time", "event_type", *tables._IDENTITY]
    first = events[read]
    assert tables._sorted_runs(first.iloc[::-1]) is None  # every key backwards
    swapped = first.copy()
    swapped.loc[[1, 2], "event_id"] = swapped.loc[[2, 1], "event_id"].to_numpy()
    assert tables._sorted_runs(swapped) is None  # two events of a run out of id order
    assert tables._sorted_runs(first.assign(source=None)) is None
    assert tables._sorted_runs(first.assign(history=first["history"].astype("Int64"))) is None


def _arrow_sorted(frames: dict[str, pd.DataFrame]) -> dict[str, object]:
    """Each table converted to Arrow, then sorted as the dataset files are (the Arrow sort)."""
    return {name: sort_rows(to_arrow(frame, TABLES[name]), file_schema(name))
            for name, frame in frames.items()}  # fmt: skip


@pytest.mark.parametrize("where", ["lab", "corpus", "shuffled", "general"])
def test_tables_ordered_as_frames_equal_the_arrow_sorted_tables(
    where: str, request: pytest.FixtureRequest
) -> None:
    root = DATA if where != "corpus" else request.getfixturevalue("corpus") / "histories"
    events = tk.read_histories(find_history_files(root), progress=False, workers=1).events
    if where == "shuffled":  # rows out of run order: run facts sorted and grouped
        events = events.sample(frac=1, random_state=5).reset_index(drop=True)
    files = {source: f"sha-{i}" for i, source in enumerate(events["source"].unique())}
    positions = tables._run_rows
    if where == "general":  # the grouped and merged tables, each ordered by its own keys
        tables._run_rows = lambda facts, frames: None  # type: ignore[assignment]
    try:
        with shared_event_fields():
            ordered = tables.batch_tables(events, files, "b1", "default", ordered=True)
            as_built = tables.batch_tables(events, files, "b1", "default")
    finally:
        tables._run_rows = positions  # type: ignore[assignment]
    pd.testing.assert_frame_equal(ordered["runs"], as_built["runs"], check_exact=True)
    expected = _arrow_sorted(as_built)
    moved = 0
    for name, frame in ordered.items():
        schema = file_schema(name)
        table = to_arrow(frame, TABLES[name])
        if name != "runs":
            assert table.equals(expected[name]), name  # rows already in the files' order
            moved += not frame.equals(as_built[name])
        assert in_schema(table, schema).schema.equals(schema, check_metadata=True)
    assert moved  # the order differs from the tables' own: the test can tell them apart
