"""compact_dataset and `toolkit dataset compact`: fewer files, the same rows and answers, and
crashes (real killed processes) that lose or duplicate nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from dataset_writers import (
    event_count,
    finish,
    make_runs,
    start_compactor,
    start_writer,
    stop_between_parts_and_commit,
)
from test_dataset_engines import _duckdb, _pyarrow, fleet

import toolkit as tk
from toolkit.cli import main
from toolkit.datasets import TABLES, table_files
from toolkit.datasets.layout import ROW_GROUP_ROWS, SORT_BY


def _files(dataset: Path) -> int:
    return sum(len(table_files(dataset, t)) for t in TABLES)


def _counts(dataset: Path) -> list[int]:
    """Runs, distinct run keys, events and activities, as tk.sql (committed batches) reads."""
    found = tk.sql(
        "select (select count(*) from runs) r, (select count(distinct run_key) from runs) k, "
        "(select count(*) from events) e, (select count(*) from activities) a",
        dataset=dataset,
    )
    return [int(found[c].iloc[0]) for c in ("r", "k", "e", "a")]


@pytest.fixture(scope="module")
def small_batches(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """12 runs written one batch each: 48 small files (copied by each test that changes it)."""
    root = tmp_path_factory.mktemp("compact")
    paths = make_runs(root / "in", 12)
    report = tk.write_dataset(paths, root / "ds", batch_files=1, workers=1, progress=False)
    assert len(report.batches) == 12
    return root / "ds", paths


def _copy(small_batches: tuple[Path, list[Path]], tmp_path: Path) -> Path:
    dataset = tmp_path / "ds"
    shutil.copytree(small_batches[0], dataset)
    return dataset


def test_compaction_keeps_every_engines_answers_and_sorts_like_the_writer(
    tmp_path: Path,
) -> None:
    dataset = tmp_path / "ds"
    for path in fleet(tmp_path / "in"):  # five writes of one run each: five batches
        tk.write_dataset(path, dataset, workers=1)
    before = {"duckdb": _duckdb(dataset), "pyarrow": _pyarrow(dataset)}
    files = _files(dataset)
    report = tk.compact_dataset(dataset)
    assert (report.files_before, report.batches_before, report.batches_after) == (files, 5, 1)
    assert _files(dataset) == report.files_after == len(TABLES) < files
    assert {"duckdb": _duckdb(dataset), "pyarrow": _pyarrow(dataset)} == before
    assert tk.check_dataset(dataset).ok
    for table in TABLES:
        (part,) = table_files(dataset, table)
        rows = pq.read_table(part)
        assert pq.read_metadata(part).row_group(0).num_rows <= ROW_GROUP_ROWS
        keys = rows.select(list(SORT_BY)).to_pylist()
        ordered = [tuple((v is not None, v) for v in row.values()) for row in keys]
        assert ordered == sorted(ordered), table
        if table == "events":  # each run's events stay in their order
            for run in set(rows.column("source").to_pylist()):
                ids = rows.filter(pc.equal(rows["source"], run)).column("event_id").to_pylist()
                assert ids == sorted(ids) and len(ids) > 1
    # Already compact: nothing is rewritten, not even the one batch left.
    names = {t: table_files(dataset, t) for t in TABLES}
    again = tk.compact_dataset(dataset)
    assert again.written == [] and {t: table_files(dataset, t) for t in TABLES} == names


def test_new_small_writes_join_the_compacted_batch_until_it_is_full(
    small_batches: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = _copy(small_batches, tmp_path)
    expected = _counts(dataset)
    assert main(["dataset", "compact", str(dataset), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["files_before"], printed["files_after"]) == (48, 4)
    more = make_runs(tmp_path / "more", 3, seed=5)
    tk.write_dataset(more, dataset, batch_files=1, workers=1, progress=False)
    merged = tk.compact_dataset(dataset)  # the compacted tail and the three new batches
    assert (merged.batches_before, merged.batches_after, _files(dataset)) == (4, 1, 4)
    assert _counts(dataset)[:3] == [15, 15, expected[2] + event_count(more)]
    # A target below one batch's files: every group is "full" at once, and stays so.
    sizes = [p.stat().st_size for t in TABLES for p in table_files(dataset, t)]
    tk.write_dataset(make_runs(tmp_path / "last", 2, seed=6), dataset, batch_files=1,
                     progress=False, workers=1)  # fmt: skip
    first = tk.compact_dataset(dataset, target_bytes=max(sizes) + 1)
    assert first.written and tk.compact_dataset(dataset, target_bytes=max(sizes) + 1).written == []
    assert tk.check_dataset(dataset).ok and _counts(dataset)[:2] == [17, 17]


def _assert_nothing_lost(dataset: Path, expected: list[int]) -> None:
    """Readers see every run once; check finds only leftovers; repair and a new compaction
    end with one file per table and the same rows."""
    assert _counts(dataset) == expected
    found = tk.check_dataset(dataset)
    assert set(found.problems["kind"]) <= {"orphan_part"}, found.problems
    assert (found.runs, found.events) == (expected[0], expected[2])
    assert tk.repair_dataset(dataset).after.ok
    assert _counts(dataset) == expected
    tk.compact_dataset(dataset)
    assert _counts(dataset) == expected and _files(dataset) == len(TABLES)
    assert tk.check_dataset(dataset).ok


def test_a_compaction_killed_before_its_commit_loses_nothing(
    small_batches: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    dataset = _copy(small_batches, tmp_path)
    expected = _counts(dataset)
    compactor = start_compactor(dataset)
    try:
        new_parts = stop_between_parts_and_commit(compactor, dataset)
        assert new_parts, "no compacted part was caught"
        # Frozen with its new files written: readers still see the old batches, once.
        assert _counts(dataset) == expected
    finally:
        compactor.kill()  # SIGKILL (also ends a stopped process): no cleanup of any kind
        compactor.join()
    assert any(p.exists() for p in new_parts)
    _assert_nothing_lost(dataset, expected)


def test_a_compaction_killed_after_its_commit_loses_nothing(
    small_batches: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    dataset = _copy(small_batches, tmp_path)
    expected = _counts(dataset)
    batches = dataset / "_toolkit" / "batches"
    compactor = start_compactor(dataset)
    try:
        deadline = time.monotonic() + 60
        # Its batch committed (renamed from .tmp-...): it now removes the batches it replaced.
        while not [p for p in batches.glob("*-c*") if not p.name.startswith(".")]:
            assert compactor.is_alive() and time.monotonic() < deadline
            time.sleep(0.0005)
        os.kill(compactor.pid, signal.SIGSTOP)  # type: ignore[arg-type]
        # Old and new batches are both on disk (almost always: the removal takes milliseconds);
        # readers count the new one only.
        assert _counts(dataset) == expected
    finally:
        compactor.kill()
        compactor.join()
    _assert_nothing_lost(dataset, expected)


def test_writes_during_a_compaction_are_all_kept(
    small_batches: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    dataset = _copy(small_batches, tmp_path)
    expected = _counts(dataset)
    more = make_runs(tmp_path / "more", 6, seed=9)
    writer = start_writer(more, dataset, batch_files=1)
    try:
        tk.compact_dataset(dataset)
    finally:
        finish([writer])
    assert _counts(dataset)[:3] == [18, 18, expected[2] + event_count(more)]
    assert tk.check_dataset(dataset).ok
    tk.compact_dataset(dataset)
    assert _files(dataset) == len(TABLES) and _counts(dataset)[:2] == [18, 18]


def test_a_writer_reading_the_manifest_while_a_compaction_removes_batches(
    small_batches: tuple[Path, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch listed as committed but removed before its manifest is read (a compaction
    merged it meanwhile) is listed again, not an error (CI saw a writer fail so)."""
    from toolkit.datasets import manifest as manifests

    dataset = _copy(small_batches, tmp_path)
    real = manifests.committed_batches
    looks: list[int] = []

    def racing(root: Path) -> set[str]:
        looks.append(1)
        found = real(root)
        return found | {"00000000T000000-gone-0"} if len(looks) == 1 else found

    monkeypatch.setattr(manifests, "committed_batches", racing)
    seen = manifests.Manifest(dataset)
    seen.refresh()
    assert len(looks) >= 3 and seen.batches == real(dataset) and seen.runs
    monkeypatch.setattr(manifests, "committed_batches", lambda root: real(root) | {"gone"})
    with pytest.raises(FileNotFoundError):  # listed every time: not a compaction's doing
        manifests.Manifest(dataset).refresh()


def test_two_compactions_at_once_rewrite_each_batch_once(
    small_batches: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    dataset = _copy(small_batches, tmp_path)
    expected = _counts(dataset)
    compactors = [start_compactor(dataset), start_compactor(dataset)]
    finish(compactors)
    assert _counts(dataset) == expected
    assert tk.check_dataset(dataset).ok and _files(dataset) == len(TABLES)


def test_export_compact_leaves_one_file_per_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = make_runs(tmp_path / "in", 3)
    dataset = tmp_path / "ds"
    argv = ["export", *map(str, paths), "--to", str(dataset), "--batch-files", "1"]
    assert main([*argv, "--compact", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files_compacted"] == [12, 4]
    assert _files(dataset) == 4 and _counts(dataset)[:2] == [3, 3]


def test_write_dataset_can_compact_after_writing(
    small_batches: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    dataset = _copy(small_batches, tmp_path)
    before = _counts(dataset)
    extra = make_runs(tmp_path / "more", 2, seed=1)
    report = tk.write_dataset(extra, dataset, workers=1, progress=False, compact=True)
    assert report.runs_written == 2
    assert _files(dataset) == len(TABLES)  # 14 one-run batches merged into one
    runs, keys, events, activities = _counts(dataset)
    assert runs == keys == before[0] + 2 and events > before[2] and activities > before[3]
    assert tk.check_dataset(dataset).ok
