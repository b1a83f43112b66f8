"""toolkit.spark in local mode: the single-machine decoder, tables and dataset, on Spark.

Small inputs (five lab histories under awkward workflow types, one damaged file) and the one
session-wide Spark session keep these tests to well under a minute of Spark work.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
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
    staging = list((tmp_path / "spark" / "_toolkit").rglob(".tmp-*"))
    assert staging == []
    # The same input again: every file is known by its bytes, nothing is decoded or written.
    again = tks.write_dataset(spark, inputs, tmp_path / "spark")
    assert again.files_skipped == 5 and again.runs_written == 0 and again.batches == []
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


def test_a_spark_write_that_never_commits_leaves_nothing(
    spark: Any, inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = tmp_path / "ds"
    first = next(inputs.glob("run-0.json"))
    tk.write_dataset(first, dataset, workers=1)
    before = {t: table_files(dataset, t) for t in TABLES}

    def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("driver lost before the commit")

    monkeypatch.setattr(tks, "commit_batch", crash)
    with pytest.raises(RuntimeError, match="driver lost"):
        tks.write_dataset(spark, inputs, dataset)
    monkeypatch.undo()
    # The next write (of anything) removes the uncommitted parts; the dataset is as before.
    report = tk.write_dataset(first, dataset, workers=1)
    assert report.files_skipped == 1
    assert {t: table_files(dataset, t) for t in TABLES} == before
    count = tk.sql("select count(*) n from runs", dataset=dataset)["n"].iloc[0]
    assert count == 1
    shutil.rmtree(dataset)
