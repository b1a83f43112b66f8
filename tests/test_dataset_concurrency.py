"""Concurrent writers, killed writers and readers on one dataset, all in real processes."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest
from dataset_writers import (
    event_count,
    finish,
    kill_writer,
    make_runs,
    start_writer,
    stop_between_parts_and_commit,
    uncommitted_parts,
)

import toolkit as tk
from toolkit.datasets import sql, write_dataset
from toolkit.errors import ToolkitError


def _counts(dataset: Path) -> tuple[int, int, int]:
    found = sql(
        "select (select count(*) from runs) runs, (select count(distinct run_key) from runs) "
        "keys, (select count(*) from events) events",
        dataset=dataset,
    )
    return int(found["runs"].iloc[0]), int(found["keys"].iloc[0]), int(found["events"].iloc[0])


def _committed(dataset: Path) -> set[str]:
    folder = dataset / "_toolkit" / "batches"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def _wait_until_opened(dataset: Path, writers: int, timeout: float = 60) -> None:
    """Wait until the last writer started has opened the dataset: it committed a batch, or
    it holds a writer lease (and waits for the commit lock)."""
    before = _committed(dataset)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leases = dataset / "_toolkit" / "writers"
        if _committed(dataset) - before or (
            leases.is_dir() and len(list(leases.glob("*.lease"))) >= writers
        ):
            return
        time.sleep(0.01)
    raise AssertionError("the second writer never opened the dataset")


def test_a_writer_opening_the_dataset_keeps_the_other_writers_batch(tmp_path: Path) -> None:
    # Writer A is frozen with parts written and its commit still to come; writer B then writes
    # the other runs. Before the fix B deleted A's parts as leftovers and A committed runs
    # whose rows were gone.
    first, second = make_runs(tmp_path / "a", 30), make_runs(tmp_path / "b", 10, seed=1)
    dataset = tmp_path / "ds"
    writer = start_writer(first, dataset, batch_files=10)
    other = None
    try:
        stop_between_parts_and_commit(writer, dataset)
        other = start_writer(second, dataset, batch_files=5)
        _wait_until_opened(dataset, writers=2)
    finally:
        os.kill(writer.pid, signal.SIGCONT)  # type: ignore[arg-type]
        finish([writer] if other is None else [writer, other])
    everything = first + second
    assert _counts(dataset) == (40, 40, event_count(everything))
    # A rerun over all the files adds nothing: everything claimed is there.
    assert write_dataset(everything, dataset, progress=False).runs_written == 0


def test_two_and_four_writers_interleave_their_batches(tmp_path: Path) -> None:
    # Different timings: staggered starts, several write_dataset calls, pauses, batch sizes.
    plans = [
        [dict(batch_files=3), dict(batch_files=2, calls=2, pause=0.05)],
        [dict(batch_files=2), dict(batch_files=3, calls=2), dict(batch_files=1, pause=0.1),
         dict(batch_files=6)],
    ]  # fmt: skip
    for number, plan in enumerate(plans):
        runs = [make_runs(tmp_path / f"in{number}-{i}", 8 - 2 * number, seed=10 * number + i)
                for i in range(len(plan))]  # fmt: skip
        dataset = tmp_path / f"ds{number}"
        writers = []
        for paths, options in zip(runs, plan, strict=True):
            writers.append(start_writer(paths, dataset, **options))
            time.sleep(0.2 * number)
        finish(writers)
        everything = [p for paths in runs for p in paths]
        assert _counts(dataset) == (len(everything), len(everything), event_count(everything))
        assert tk.check_dataset(dataset).ok


def test_a_killed_writer_then_a_rerun_ends_complete(tmp_path: Path) -> None:
    paths = make_runs(tmp_path / "in", 30)
    dataset = tmp_path / "ds"
    rng = random.Random(7)
    for attempt in range(2):
        writer = start_writer(paths, dataset, batch_files=10)
        # Somewhere inside a batch: wait for the writer's first uncommitted part, then a little.
        deadline = time.monotonic() + 60
        while not uncommitted_parts(dataset) and writer.is_alive():
            assert time.monotonic() < deadline
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.3))
        kill_writer(writer)  # SIGKILL: no cleanup of any kind
        partial = tk.check_dataset(dataset)
        assert set(partial.problems["kind"]) <= {"orphan_part"}, attempt
    report = write_dataset(paths, dataset, progress=False)
    assert _counts(dataset) == (30, 30, event_count(paths))
    assert report.runs_duplicate == 0
    after = tk.check_dataset(dataset)
    assert after.ok and after.runs == 30 and not uncommitted_parts(dataset)


def test_a_reader_sees_only_committed_batches(tmp_path: Path) -> None:
    paths = make_runs(tmp_path / "in", 30)
    dataset = tmp_path / "ds"
    writer = start_writer(paths, dataset, batch_files=5)
    seen = []
    try:
        while writer.is_alive():
            if (dataset / "_toolkit" / "dataset.json").is_file():
                # Every run the reader sees has all its events, and nothing else is there.
                found = sql(
                    "select (select count(*) from runs) runs, (select coalesce(sum(events), 0) "
                    "from runs) claimed, (select count(*) from events) events",
                    dataset=dataset,
                )
                runs, claimed, events = (int(found[c].iloc[0]) for c in ("runs", "claimed",
                                                                        "events"))  # fmt: skip
                assert events == claimed
                assert runs % 5 == 0  # whole batches only
                seen.append(runs)
            time.sleep(0.05)
    finally:
        finish([writer])
    assert seen == sorted(seen) and len(set(seen)) > 1
    assert _counts(dataset) == (30, 30, event_count(paths))


def test_a_writer_that_cannot_take_the_lock_fails_before_writing(tmp_path: Path) -> None:
    first, second = make_runs(tmp_path / "a", 10), make_runs(tmp_path / "b", 5, seed=1)
    dataset = tmp_path / "ds"
    writer = start_writer(first, dataset, batch_files=5)
    try:
        stop_between_parts_and_commit(writer, dataset)
        with pytest.raises(ToolkitError, match="commit lock"):
            write_dataset(second, dataset, lock_timeout=0.5, progress=False)
    finally:
        os.kill(writer.pid, signal.SIGCONT)  # type: ignore[arg-type]
        finish([writer])
    assert _counts(dataset) == (10, 10, event_count(first))
