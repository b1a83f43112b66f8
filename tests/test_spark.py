"""toolkit.spark in local mode: the single-machine decoder, tables and dataset, on Spark.

Small inputs (five lab histories under awkward workflow types, one damaged file) and the one
session-wide Spark session keep these tests to well under a minute of Spark work.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from dataset_writers import (
    event_count,
    finish,
    make_runs,
    start_writer,
    stop_between_parts_and_commit,
    uncommitted_parts,
)
from test_dataset_engines import fleet

import toolkit as tk
from toolkit import spark as tks
from toolkit.datasets import TABLES, table_files
from toolkit.datasets.layout import file_schema


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("spark-in")
    fleet(folder)
    (folder / "damaged.json").write_bytes(b'{"events": [{"eventId": "1", "eventTy')
    return folder


def _rows(dataset: Path, table: str) -> list[tuple[Any, ...]]:
    rows = ds.dataset(dataset / table, format="parquet").to_table().drop(["batch"] * (
        table == "runs"))  # fmt: skip
    return sorted(tuple(map(repr, row.values())) for row in rows.to_pylist())


def test_spark_writes_the_rows_of_the_single_machine_writer(
    spark: Any, inputs: Path, tmp_path: Path
) -> None:
    alone = tk.write_dataset(inputs, tmp_path / "alone", workers=1)
    report = tks.write_dataset(spark, inputs, tmp_path / "spark")
    assert report.files == alone.files == 6 and report.files_failed == alone.files_failed == 1
    assert report.errors["source"].tolist() == alone.errors["source"].tolist()
    assert report.runs_written == alone.runs_written == 5
    assert report.events_written == alone.events_written
    for table in TABLES:
        assert _rows(tmp_path / "spark", table) == _rows(tmp_path / "alone", table), table
        for part in table_files(tmp_path / "spark", table):
            written = [(f.name, f.type) for f in pq.read_schema(part)]
            assert written == [(f.name, f.type) for f in file_schema(table)], part
    leftovers = list((tmp_path / "spark" / "_toolkit").rglob(".tmp-*"))
    assert leftovers == [] and _empty(tmp_path / "spark" / "_toolkit" / "staging")
    # The same input again: every file is known by its bytes, nothing is decoded or written;
    # compact=True merges the files Spark wrote (one per table per task): one per table.
    again = tks.write_dataset(spark, inputs, tmp_path / "spark", compact=True)
    assert again.files_skipped == 5 and again.runs_written == 0 and again.batches == []
    assert [len(table_files(tmp_path / "spark", t)) for t in TABLES] == [1] * len(TABLES)
    for table in TABLES:
        assert _rows(tmp_path / "spark", table) == _rows(tmp_path / "alone", table), table
    count = tk.sql("select count(*) n from events", dataset=tmp_path / "spark")["n"].iloc[0]
    assert count == alone.events_written


def test_read_histories_and_tables_agree_with_one_machine(spark: Any, inputs: Path) -> None:
    events, errors = tks.read_histories(spark, inputs)
    events = events.cache()
    failed = errors.collect()
    assert [Path(row.source).name for row in failed] == ["damaged.json"]
    assert failed[0].error_type == "HistoryFormatError"
    local = tk.read_histories(inputs).events
    assert events.count() == len(local)
    assert [f.name for f in events.schema] == file_schema("events").names
    built = tks.tables(spark, events)
    expected = {"activities": tk.activities(local), "workflow_tasks": tk.workflow_tasks(local)}
    for name, frame in expected.items():
        found = built[name].select("source", "history", "scheduled_event_id", "outcome").collect()
        assert sorted(map(tuple, found)) == sorted(
            frame[["source", "history", "scheduled_event_id", "outcome"]].itertuples(
                index=False, name=None
            )
        ), name
    runs = built["runs"].select("run_key", "events", "status").collect()
    assert sorted(r.events for r in runs) == sorted(local.groupby("source").size().tolist())
    assert {r.run_key for r in runs} == set(local["run_id"])
    events.unpersist()


def _wait_for(found: Any, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not found():
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(0.01)


def _empty(folder: Path) -> bool:
    return not folder.exists() or not any(folder.iterdir())


def test_a_spark_write_and_a_local_writer_share_a_dataset(spark: Any, tmp_path: Path) -> None:
    # The local writer is frozen holding the commit lock with its batch (runs A) written but not
    # committed; Spark writes A and B meanwhile. It must wait for the lock, then find A
    # committed and leave A's rows out of its own parts: every run once.
    first, second = make_runs(tmp_path / "a", 4), make_runs(tmp_path / "b", 3, seed=1)
    dataset = tmp_path / "ds"
    writer = start_writer(first, dataset, batch_files=len(first))
    found: dict[str, Any] = {}

    def spark_write() -> None:
        try:
            found["report"] = tks.write_dataset(spark, [*first, *second], dataset)
        except BaseException as exc:  # handed to the test's thread
            found["error"] = exc

    thread = threading.Thread(target=spark_write)
    try:
        stop_between_parts_and_commit(writer, dataset)
        thread.start()
        # Staged by the executors, next to the frozen writer's parts: both survive.
        staged = dataset / "_toolkit" / "staging"
        _wait_for(lambda: list(staged.glob("*/runs/_SUCCESS")) or not thread.is_alive(),
                  "Spark to stage its tables")  # fmt: skip
        assert uncommitted_parts(dataset), "the frozen writer's parts are gone"
    finally:
        os.kill(writer.pid, signal.SIGCONT)  # type: ignore[arg-type]
        finish([writer])
        thread.join()
    assert "error" not in found, found.get("error")
    report = found["report"]
    assert (report.runs_written, report.runs_duplicate) == (len(second), len(first))
    everything = [*first, *second]
    counts = tk.sql("select count(*) n, count(distinct run_key) k, sum(events) e from runs",
                    dataset=dataset)  # fmt: skip
    assert counts.iloc[0].tolist() == [7, 7, event_count(everything)]
    assert tk.sql("select count(*) n from events", dataset=dataset)["n"].iloc[0] == (
        event_count(everything))  # fmt: skip
    assert tk.check_dataset(dataset).ok and _empty(staged)


_DRIVER = """
import sys
from pyspark.sql import SparkSession
from toolkit import spark as tks
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "1").getOrCreate())
tks.write_dataset(spark, sys.argv[1], sys.argv[2])
"""


@pytest.mark.slow  # a second Spark driver (its own JVM), killed: ~30 s idle, ~100 s loaded
def test_a_killed_spark_driver_leaves_leftovers_that_check_and_repair_handle(
    spark: Any, inputs: Path, tmp_path: Path
) -> None:
    del spark  # a driver of its own (killed below); the fixture only skips without Spark
    dataset = tmp_path / "ds"
    first = inputs / "run-0.json"
    tk.write_dataset(first, dataset, workers=1)
    before = {t: table_files(dataset, t) for t in TABLES}
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
           "PYSPARK_PYTHON": sys.executable}  # fmt: skip
    # Its own session (process group): the driver, its JVM and Python workers die together.
    command = [sys.executable, "-c", _DRIVER, str(inputs), str(dataset)]
    driver = subprocess.Popen(command, env=env, start_new_session=True,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        staged = dataset / "_toolkit" / "staging"
        # Killed as soon as its executors start writing: the earliest moment it leaves files.
        _wait_for(lambda: list(staged.glob("*/*")) or driver.poll() is not None,
                  "the driver to stage parts")  # fmt: skip
        assert driver.poll() is None, "the Spark write ended before it could be killed"
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    # Nothing of the killed write is visible; what it left is reported and removed.
    assert tk.sql("select count(*) n from runs", dataset=dataset)["n"].iloc[0] == 1
    found = tk.check_dataset(dataset)
    assert not found.ok and set(found.problems["kind"]) == {"orphan_part"}
    repaired = tk.repair_dataset(dataset)
    assert repaired.after.ok and repaired.removed
    assert {t: table_files(dataset, t) for t in TABLES} == before
    assert _empty(staged)
    # The write done again (here on one machine) ends complete.
    assert tk.write_dataset(inputs, dataset, workers=1).runs_written == 4
    assert tk.check_dataset(dataset).ok
    shutil.rmtree(dataset)
