"""check_dataset / repair_dataset and `toolkit dataset check|repair` on damaged datasets."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from dataset_writers import event_count, make_runs

import toolkit as tk
from toolkit.cli import main
from toolkit.datasets import sql, table_files


def _counts(dataset: Path) -> tuple[int, int]:
    found = sql("select (select count(*) from runs) r, (select count(*) from events) e",
                dataset=dataset)  # fmt: skip
    return int(found["r"].iloc[0]), int(found["e"].iloc[0])


@pytest.fixture()
def written(tmp_path: Path) -> tuple[Path, list[Path]]:
    paths = make_runs(tmp_path / "in", 6)
    report = tk.write_dataset(paths, tmp_path / "ds", batch_files=2, progress=False)
    assert len(report.batches) == 3
    return tmp_path / "ds", paths


def test_a_sound_dataset_checks_ok(written: tuple[Path, list[Path]], capsys) -> None:
    dataset, paths = written
    found = tk.check_dataset(dataset)
    assert found.ok and found.batches == 3 and found.runs == 6
    assert found.events == event_count(paths) == _counts(dataset)[1]
    assert main(["dataset", "check", str(dataset), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_a_lost_part_is_found_and_repaired_from_the_sources(
    written: tuple[Path, list[Path]], capsys
) -> None:
    dataset, paths = written
    lost = table_files(dataset, "events")[0]
    lost.unlink()
    found = tk.check_dataset(dataset)
    assert found.problems["kind"].tolist() == ["missing_part"]
    assert len(found.broken_batches()) == 1
    assert _counts(dataset)[1] < event_count(paths)  # readers would miss those rows
    assert main(["dataset", "check", str(dataset)]) == 1
    capsys.readouterr()
    assert main(["dataset", "repair", str(dataset)]) == 0
    assert "dropped 1 damaged batches" in capsys.readouterr().out
    assert tk.check_dataset(dataset).ok
    assert _counts(dataset) == (6, event_count(paths))


def test_the_writers_rerun_uses_the_same_check(written: tuple[Path, list[Path]]) -> None:
    dataset, paths = written
    table_files(dataset, "runs")[-1].unlink()
    report = tk.write_dataset(paths, dataset, progress=False)
    assert len(report.repaired_batches) == 1 and report.runs_written > 0
    assert tk.check_dataset(dataset).ok
    assert _counts(dataset) == (6, event_count(paths))


def test_what_cannot_be_repaired_is_reported(written: tuple[Path, list[Path]], capsys) -> None:
    dataset, paths = written
    part = table_files(dataset, "events")[0]
    batch = tk.datasets.commit.batch_of(part.name)[0]
    part.unlink()
    gone = [p for p in paths if p.name in sql(
        f"select source from runs where batch = '{batch}'", dataset=dataset
    )["source"].map(lambda s: Path(s).name).tolist()]  # fmt: skip
    gone[0].unlink()
    assert main(["dataset", "repair", str(dataset)]) == 1
    assert f"cannot repair: {gone[0]}: no longer there" in capsys.readouterr().err
    assert tk.check_dataset(dataset).ok  # the rest of the batch was written again
    assert _counts(dataset)[0] == 5


def test_leftovers_of_a_dead_writer_are_removed_by_repair(written: tuple[Path, list[Path]]) -> None:
    dataset, _ = written
    part = table_files(dataset, "events")[0]
    orphan = part.with_name("part-20260101T000000-0123456789ab-1-0.parquet")
    shutil.copy(part, orphan)
    assert tk.check_dataset(dataset).problems["kind"].tolist() == ["orphan_part"]
    repaired = tk.repair_dataset(dataset)
    assert str(orphan) in repaired.removed and repaired.after.ok and not orphan.exists()


def test_a_lease_is_alive_while_locked_and_expires_without_heartbeat(tmp_path: Path) -> None:
    from toolkit.datasets import commit
    from toolkit.datasets.manifest import prepare_dataset
    from toolkit.errors import ToolkitError

    root = prepare_dataset(tmp_path / "ds")
    with commit.WriterLease(root) as lease:
        assert not commit.writer_gone(root, lease.writer)  # its lock is held
        stale = lease.path.stat().st_mtime - commit.LEASE_EXPIRY - 1
        os.utime(lease.path, (stale, stale))
        assert commit.writer_gone(root, lease.writer)  # no heartbeat for too long
        commit.remove_leftovers(root)
        assert not lease.still_held()
        # A writer presumed dead commits nothing: its parts go, and it says so.
        part = root / "events" / f"part-{lease.new_batch_id()}-0.parquet"
        part.parent.mkdir(parents=True)
        part.write_bytes(b"rows")
        parts = commit.BatchParts(root, commit.batch_of(part.name)[0])
        parts.add("events", part, 1)
        with pytest.raises(ToolkitError, match="lease was expired"):
            commit.commit_batch(lease, parts, {})
        assert not part.exists() and not commit.committed_batches(root)
    assert commit.writer_gone(root, lease.writer)  # released and removed on exit
