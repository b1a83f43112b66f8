"""Parquet datasets: nothing lost, idempotent, deduplicated by run id, readable elsewhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import orjson
import pandas as pd
import pyarrow.dataset as ds
import pytest
from temporalio.api.export.v1 import WorkflowExecution, WorkflowExecutions

import toolkit as tk
from toolkit.datasets import TABLES, is_dataset, table_files, write_dataset
from toolkit.datasets.layout import file_schema
from toolkit.datasets.query import sql
from toolkit.datasets.tables import run_facts
from toolkit.errors import HistoryFormatError, ToolkitError

DATA = Path(__file__).resolve().parents[1] / "data"
GO_TWIN = DATA / "go_twin"
# The Python ADK lab's recordings (one google-adk version folder; whichever is recorded).
ADK = sorted(p.parent for p in (DATA / "adk").glob("adk-*/two_turns.json"))[-1]


def _count(dataset: Path, table: str) -> int:
    return int(sql(f"select count(*) n from {table}", dataset=dataset)["n"].iloc[0])


def test_rows_in_equal_rows_out_and_second_write_adds_nothing(tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    events = tk.read_histories(GO_TWIN, progress=False).events
    first = write_dataset(GO_TWIN, dataset)
    assert first.runs_written == events.groupby(["source", "history"]).ngroups
    assert first.events_written == len(events) == _count(dataset, "events")
    assert _count(dataset, "activities") == len(tk.activities(events))
    assert _count(dataset, "workflow_tasks") == len(tk.workflow_tasks(events))
    assert _count(dataset, "runs") == first.runs_written
    files_before = {t: table_files(dataset, t) for t in TABLES}

    second = write_dataset(GO_TWIN, dataset)
    assert second.files_skipped == second.files == first.files
    assert second.runs_written == 0 and second.batches == []
    assert {t: table_files(dataset, t) for t in TABLES} == files_before
    assert _count(dataset, "events") == len(events)


def test_columns_round_trip_through_parquet(tmp_path: Path) -> None:
    path = ADK / "two_turns.json"
    events = tk.read_history(path)
    write_dataset(path, tmp_path / "ds")
    back = sql("select * from events order by event_id", dataset=tmp_path / "ds")
    assert list(back["event_type"]) == list(events["event_type"])
    assert back["workflow_type"].unique().tolist() == [events["workflow_type"].iloc[0]]
    # JSON text columns hold the source's attributes and the decoded payloads.
    for row, (_, original) in zip(back.itertuples(), events.iterrows(), strict=True):
        assert orjson.loads(row.attributes) == original["attributes"].value
        if original["input"] is not None:
            assert orjson.loads(row.input) == original["input"].value
    assert (back["event_time"].dt.floor("us") == events["event_time"].dt.floor("us")).all()
    assert str(back["event_time"].dt.tz) == "UTC"
    runs = sql("select * from runs", dataset=tmp_path / "ds")
    assert runs["events"].tolist() == [len(events)]
    assert runs["run_id"].tolist() == [events["run_id"].iloc[0]]


def _export_tree(root: Path, namespace: str, files: dict[str, list[Path]]) -> Path:
    folder = root / "temporal-workflow-history" / "export" / namespace / "2026/11/29/19/00"
    folder.mkdir(parents=True)
    for name, paths in files.items():
        items = [WorkflowExecution(history=tk.to_history(tk.read_history(p))) for p in paths]
        (folder / name).write_bytes(WorkflowExecutions(items=items).SerializeToString())
    return root / "temporal-workflow-history"


def test_cloud_export_delivered_twice_is_written_once(tmp_path: Path) -> None:
    histories = GO_TWIN.glob("with_fix-adk_v2.6.0/*.json")
    a, b, c = sorted(p for p in histories if not p.name.endswith(".meta.json"))[:3]
    tree = _export_tree(tmp_path, "prod-ns", {"part-1": [a, b], "part-2": [b, c], "part-3": [a]})
    report = write_dataset(tree, tmp_path / "ds")
    assert report.files == 3 and report.histories == 5
    assert report.runs_written == 3 and report.runs_duplicate == 2
    runs = sql("select namespace, run_id from runs order by run_id", dataset=tmp_path / "ds")
    assert runs["namespace"].unique().tolist() == ["prod-ns"]
    assert runs["run_id"].is_unique
    expected = sum(len(tk.read_history(p)) for p in (a, b, c))
    assert _count(tmp_path / "ds", "events") == expected
    # A later delivery in a new file (different bytes) still adds no run.
    _export_tree(tmp_path / "later", "prod-ns", {"part-9": [c, a]})
    again = write_dataset(tmp_path / "later", tmp_path / "ds")
    assert again.runs_written == 0 and again.runs_duplicate == 2 and again.files_skipped == 0
    assert _count(tmp_path / "ds", "events") == expected


def test_a_longer_copy_of_a_run_is_reported_not_doubled(tmp_path: Path) -> None:
    full = tk.read_history(ADK / "two_turns.json")
    open_copy = tmp_path / "in" / "open.json"
    open_copy.parent.mkdir()
    tk.write_history(full.iloc[: len(full) // 2], open_copy)
    write_dataset(open_copy, tmp_path / "ds")
    report = write_dataset(ADK / "two_turns.json", tmp_path / "ds")
    assert report.runs_written == 0 and report.runs_conflicting == 1
    assert report.conflicts["events"].tolist() == [len(full)]
    assert report.conflicts["kept_events"].tolist() == [len(full) // 2]
    assert _count(tmp_path / "ds", "events") == len(full) // 2
    # Within one write the most complete copy wins.
    both = write_dataset([open_copy, ADK / "two_turns.json"], tmp_path / "fresh")
    assert both.runs_written == 1 and both.runs_conflicting == 1
    assert _count(tmp_path / "fresh", "events") == len(full)


def test_awkward_names_are_stored_as_they_are(tmp_path: Path) -> None:
    text = (ADK / "two_turns.json").read_text()
    odd = tmp_path / "in" / "odd.json"
    odd.parent.mkdir()
    odd.write_text(text.replace('"LabAdkAgent"', '"billing/Checkout v2=x%"'))
    write_dataset(odd, tmp_path / "ds", namespace="team a")
    # pyarrow's own discovery, no toolkit involved: the names are columns in the files.
    table = ds.dataset(tmp_path / "ds" / "events", format="parquet").to_table()
    assert set(table.column("workflow_type").to_pylist()) == {"billing/Checkout v2=x%"}
    assert set(table.column("namespace").to_pylist()) == {"team a"}
    assert table.num_rows == len(tk.read_history(odd))
    assert table.schema.remove_metadata() == file_schema("events").remove_metadata()
    # Plain DuckDB over the files, as another machine would query them.
    pattern = str(tmp_path / "ds" / "activities" / "*.parquet")
    found = duckdb.sql(
        f"select distinct workflow_type, namespace from read_parquet('{pattern}')"
    ).fetchall()
    assert found == [("billing/Checkout v2=x%", "team a")]
    described = orjson.loads((tmp_path / "ds" / "_toolkit" / "dataset.json").read_bytes())
    assert described["tables"]["events"]["partitioning"] == []
    assert described["tables"]["events"]["columns"]["namespace"] == "string"
    assert described["tables"]["runs"]["columns"]["date"] == "date32[day]"


def test_parts_of_an_interrupted_write_are_removed(tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    write_dataset(ADK / "two_turns.json", dataset)
    part = table_files(dataset, "events")[0]
    orphan = part.with_name("part-20260101T000000-deadbeef-0.parquet")
    shutil.copy(part, orphan)
    # Readers never see a batch that did not commit; the check names the leftover.
    assert _count(dataset, "events") == len(tk.read_history(ADK / "two_turns.json"))
    found = tk.check_dataset(dataset)
    assert found.problems["kind"].tolist() == ["orphan_part"]
    assert found.problems["path"].str.endswith(orphan.name).all()
    write_dataset(ADK / "two_toolsets.json", dataset)
    assert not orphan.exists()
    expected = len(tk.read_history(ADK / "two_turns.json")) + len(
        tk.read_history(ADK / "two_toolsets.json")
    )
    assert _count(dataset, "events") == expected


def test_unreadable_files_are_listed_and_bad_targets_refused(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(ADK / "two_turns.json", folder / "good.json")
    (folder / "empty.json").write_text("")
    report = write_dataset(folder, tmp_path / "ds")
    assert report.runs_written == 1 and report.files_failed == 1
    assert report.errors["source"].tolist() == [str(folder / "empty.json")]
    assert "empty" in report.errors["message"].iloc[0]
    with pytest.raises(HistoryFormatError):
        write_dataset(folder, tmp_path / "ds2", errors="raise")
    with pytest.raises(HistoryFormatError, match="no such file"):
        write_dataset(tmp_path / "nothing-here", tmp_path / "ds3")
    with pytest.raises(HistoryFormatError, match="no history files"):
        write_dataset(str(tmp_path / "*.nothing"), tmp_path / "ds3")
    with pytest.raises(ToolkitError, match="not empty"):
        write_dataset(folder, folder)
    assert is_dataset(tmp_path / "ds") and not is_dataset(folder)


def test_run_facts_are_the_first_and_last_values_present_in_event_order() -> None:
    events = tk.read_histories(GO_TWIN, progress=False).events
    events = events.sample(frac=1, random_state=7).reset_index(drop=True)  # any row order
    keys = ["source", "history"]
    first = events.groupby(keys)["event_id"].idxmin().to_numpy()
    last = events.groupby(keys)["event_id"].idxmax().to_numpy()
    # Every other run lacks its run id on its first event, its type and time on its last one.
    events.loc[first[::2], "run_id"] = None
    events.loc[last[::2], "event_type"] = None
    events.loc[last[::2], "event_time"] = pd.NaT
    facts = run_facts(events)
    # What groupby's first, last and min give (they skip missing values), run by run.
    ordered = events.sort_values([*keys, "event_id"], kind="stable")
    spec = ordered.groupby(keys, sort=False).agg(
        run_id=("run_id", "first"), start_time=("event_time", "min"),
        events=("event_id", "size"), last_type=("event_type", "last"),
        last_time=("event_time", "last"),
    ).reset_index()  # fmt: skip
    assert len(facts) == len(spec) > 10 and facts[keys].equals(spec[keys])
    assert facts["run_id"].tolist() == spec["run_id"].tolist()
    assert facts["start_time"].equals(spec["start_time"])
    assert facts["events"].tolist() == spec["events"].tolist()
    ends = ("Completed", "Failed", "TimedOut", "Canceled", "Terminated", "ContinuedAsNew")
    closed = spec["last_type"].isin([f"WorkflowExecution{end}" for end in ends])
    assert (facts["status"] != "open").tolist() == closed.tolist()
    assert facts["close_time"].equals(spec["last_time"].where(closed))
