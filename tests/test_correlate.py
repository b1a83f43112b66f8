"""correlate(): log records joined to history events, on a real worker log and its histories.

The data (``data/duplicate_tool/python``) is one google-adk worker's log captured while it ran two
workflows on the dev server: ``two_toolsets`` (shadow warnings, no identifiers in the records)
and ``list_twice`` (the call-tool activity fails three times; each failure record states the
activity id and attempt).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.errors import HistoryFormatError, LogFormatError, ToolkitError
from toolkit.logs.correlate import CORRELATE_COLUMNS, correlate, log_identifiers

DATA = Path(__file__).resolve().parents[1] / "data" / "duplicate_tool" / "python"


@pytest.fixture(scope="module")
def meta() -> dict:
    return json.loads((DATA / "capture.meta.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def logs() -> pd.DataFrame:
    return tk.read_logs(DATA / "worker.log")


@pytest.fixture(scope="module")
def events(meta: dict) -> pd.DataFrame:
    frames = [tk.read_history(DATA / run["history"]) for run in meta["runs"]]
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def rows(logs: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    return correlate(logs, events)


def _run(meta: dict, scenario: str) -> dict:
    return next(r for r in meta["runs"] if r["scenario"] == scenario)


def test_every_log_record_is_kept(logs: pd.DataFrame, rows: pd.DataFrame) -> None:
    assert list(rows.columns) == CORRELATE_COLUMNS
    assert set(rows["line"]) == set(logs["line"])
    assert rows["line"].is_monotonic_increasing


def test_activity_failures_match_their_activity_and_attempt(rows: pd.DataFrame, meta: dict
                                                            ) -> None:
    run_id = _run(meta, "list_twice")["run_id"]
    failures = rows[rows["message"].str.startswith("Completing activity as failed")]
    assert list(failures["log_attempt"]) == [1, 2, 3]
    assert set(failures["log_run_id"]) == {run_id}
    assert set(failures["run_id"]) == {run_id}
    assert set(failures["activity_type"]) == {"weather-call-tool"}
    assert (failures["activity_id"] == failures["log_activity_id"]).all()
    # History keeps only the last attempt's start: attempt 3 matches it exactly, 1 and 2 only
    # the activity.
    last = failures[failures["log_attempt"] == 3].iloc[0]
    assert (last["match"], last["event_type"], last["attempt"]) == (
        "activity_attempt", "ActivityTaskStarted", 3)
    assert list(failures["match"][:2]) == ["activity", "activity"]


def test_records_without_identifiers_match_the_run_open_at_that_time(
        logs: pd.DataFrame, rows: pd.DataFrame, events: pd.DataFrame) -> None:
    found = tk.duplicate_tools(logs)
    shadow = found[found["kind"] == "python_adk"]
    assert shadow["tool"].value_counts()["get_weather"] >= 4
    matched = rows[rows["line"].isin(shadow["line"])]
    assert len(matched) >= len(shadow["line"].unique())
    assert set(matched["match"]) == {"time"}
    assert (matched["delta"].abs() <= pd.Timedelta("5s")).all()
    spans = events.groupby("run_id")["event_time"].agg(["min", "max"])
    for row in matched.itertuples():
        start, end = spans.loc[row.run_id]
        assert start <= row.ts <= end + pd.Timedelta("1s"), row


def test_window_and_modes(logs: pd.DataFrame, events: pd.DataFrame) -> None:
    keyed = correlate(logs, events, by_time=False, how="inner")
    assert len(keyed) == 3 and set(keyed["match"]) <= {"activity", "activity_attempt"}
    left = correlate(logs, events, by_time=False)
    assert left["match"].isna().sum() == len(logs) - 3
    narrow = correlate(logs, events, window="1ms", how="inner")
    wide = correlate(logs, events, window="5s", how="inner")
    assert len(narrow) < len(wide)
    assert (narrow.loc[narrow["match"] == "time", "delta"].abs() <= pd.Timedelta("1ms")).all()


def test_go_sdk_and_core_shapes_match_by_run_and_workflow(events: pd.DataFrame, meta: dict
                                                          ) -> None:
    run = _run(meta, "two_toolsets")
    text = "\n".join([
        # Go SDK default logger (key value pairs), Rust core tracing (key=value).
        f"2024/01/01 00:00:00 ERROR Workflow panic Namespace default TaskQueue q "
        f"WorkflowType LabAdkAgent WorkflowID {run['workflow_id']} RunID {run['run_id']} "
        "Attempt 1 Error boom",
        f"2024-01-01T00:00:01.000Z  WARN temporal_sdk_core::worker::workflow: Failing workflow "
        f"task run_id={run['run_id']} failure=boom",
        f'{{"level":"error","ts":"2024-01-01T00:00:02Z","msg":"x","workflowId":'
        f'"{run["workflow_id"]}"}}',
    ])
    logs = tk.read_logs(text.splitlines())
    with_ids = events.copy()
    with_ids.loc[with_ids["run_id"] == run["run_id"], "workflow_id"] = run["workflow_id"]
    out = correlate(logs, with_ids)
    assert list(out.groupby("line")["match"].first()) == ["run", "run", "workflow"]
    assert set(out["run_id"]) == {run["run_id"]}
    # Years away from every event and no timestamp to go by: the scope's first event.
    assert set(out["event_id"]) == {1}


def test_log_identifiers_shapes() -> None:
    assert log_identifiers("Failing workflow task run_id=abc failure=x", {}) == {"run_id": "abc"}
    nested = {"temporal_activity": {"activity_id": "7", "attempt": 2,
                                    "workflow_run_id": "r-1", "workflow_id": "w-1"}}
    assert log_identifiers("Completing activity as failed", nested) == {
        "activity_id": "7", "attempt": "2", "run_id": "r-1", "workflow_id": "w-1"}
    assert log_identifiers("x", {"RunID": "r", "WorkflowID": "w", "ActivityID": "a"}) == {
        "run_id": "r", "workflow_id": "w", "activity_id": "a"}
    # 'workflow_run_id' is a run id; a bare 'run' word is not an identifier.
    assert log_identifiers("({'workflow_run_id': 'r-2'}) the run finished", None) == {
        "run_id": "r-2"}
    assert log_identifiers("nothing to see", None) == {}


def test_bad_input_raises(logs: pd.DataFrame, events: pd.DataFrame) -> None:
    with pytest.raises(LogFormatError, match="missing columns"):
        correlate(logs.drop(columns=["fields"]), events)
    with pytest.raises(HistoryFormatError, match="missing columns"):
        correlate(logs, events.drop(columns=["event_time"]))
    with pytest.raises(ToolkitError, match="not a duration"):
        correlate(logs, events, window="soon")
    with pytest.raises(ToolkitError, match="non-negative"):
        correlate(logs, events, window="-1s")
    with pytest.raises(ToolkitError, match="expected 'left' or 'inner'"):
        correlate(logs, events, how="outer")  # type: ignore[arg-type]


def test_no_identifiers_no_events_still_one_row_per_record(events: pd.DataFrame) -> None:
    first = events["event_time"].min().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    logs = tk.read_logs(["hello world", f"{first} INFO x"])
    out = correlate(logs, events.iloc[0:0])
    assert out["line"].tolist() == [1, 2] and out["match"].isna().all()
    out = correlate(logs, events, window="1ms")
    assert out["match"].tolist() == [None, "time"]  # no timestamp, nothing to go by
    assert abs(out["delta"].iloc[1]) < pd.Timedelta("1us")
