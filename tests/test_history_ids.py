"""Ids come from the history first, then the container or file name, then the caller's rule."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest
from temporalio.api.history.v1 import History

import toolkit as tk
from toolkit.cli import main
from toolkit.errors import HistoryFormatError

DATA = Path(__file__).resolve().parents[1] / "data"
STARTED_KEYS = (
    "workflowExecutionStartedEventAttributes",
    "WorkflowExecutionStartedEventAttributes",
)


def _started_ids(value: Any, found: list[str]) -> None:
    """Every ``workflowId`` written in a started event's attributes, anywhere in the JSON."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in STARTED_KEYS and isinstance(inner, dict):
                own = inner.get("workflowId")
                if isinstance(own, str) and own:
                    found.append(own)
            _started_ids(inner, found)
    elif isinstance(value, list):
        for inner in value:
            _started_ids(inner, found)


def _ids_in_file(path: Path) -> list[str]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    found: list[str] = []
    if path.suffix == ".bin":
        for event in History.FromString(data).events:
            if event.HasField("workflow_execution_started_event_attributes"):
                own = event.workflow_execution_started_event_attributes.workflow_id
                found += [own] if own else []
        return found
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        document = orjson.loads(b"[" + data + b"]")  # the pre-2023 CLI's comma-separated events
    _started_ids(document, found)
    return found


def test_no_corpus_history_loses_the_workflow_id_it_holds(corpus: Path) -> None:
    checked = 0
    for path in sorted((corpus / "histories").rglob("*")):
        if not path.is_file() or path.suffix not in (".json", ".gz", ".bin"):
            continue
        try:
            events = tk.read_history(path)
        except HistoryFormatError:
            continue  # the empty file (its own test elsewhere)
        expected = _ids_in_file(path)
        loaded = events.groupby("history")["workflow_id"].first()
        if expected:
            checked += 1
            assert loaded.notna().all(), path
            assert set(loaded) == set(expected), path
    assert checked >= 30  # the corpus holds 38 such files today


def test_the_lab_recording_gets_its_workflow_id(tmp_path: Path) -> None:
    path = DATA / "adk" / "adk-1.28.1" / "two_toolsets.json"
    events = tk.read_history(path)
    assert events["workflow_id"].unique().tolist() == ["lab-adk-adk-1.28.1-two_toolsets-34404620"]
    # ... and so does the dataset written from the plain export.
    tk.write_dataset(path, tmp_path / "ds", progress=False)
    runs = tk.sql("select workflow_id, run_id from runs", dataset=tmp_path / "ds")
    assert runs["workflow_id"].tolist() == ["lab-adk-adk-1.28.1-two_toolsets-34404620"]
    assert runs["run_id"].tolist() == [events["run_id"].iloc[0]]


def test_the_history_wins_over_the_container(tmp_path: Path) -> None:
    path = DATA / "adk" / "adk-1.28.1" / "two_toolsets.json"
    document = orjson.loads(path.read_bytes())
    wrapped = {"workflowId": "from-the-container", "namespace": "ns-1", **document}
    events = tk.read_history(orjson.dumps(wrapped))
    assert events["workflow_id"].unique().tolist() == ["lab-adk-adk-1.28.1-two_toolsets-34404620"]
    assert events["namespace"].unique().tolist() == ["ns-1"]
    # Without the started event's own field, the container's id is used.
    started = document["events"][0]["workflowExecutionStartedEventAttributes"]
    del started["workflowId"]
    events = tk.read_history(orjson.dumps({**wrapped, "events": document["events"]}))
    assert events["workflow_id"].unique().tolist() == ["from-the-container"]


def test_ids_from_the_file_name_with_workflow_id_from(tmp_path: Path) -> None:
    # A gallery recording as an older server wrote it (no workflowId in the started event),
    # saved the way people save `temporal workflow show -o json`: <workflow id>/<run id>.json.
    document = orjson.loads((DATA / "gallery" / "activity-added-end" / "v1.json").read_bytes())
    del document["events"][0]["workflowExecutionStartedEventAttributes"]["workflowId"]
    run_id = tk.read_history(document)["run_id"].iloc[0]
    assert tk.read_history(document)["workflow_id"].isna().all()
    target = tmp_path / "exports" / "order-1234" / f"{run_id}.json"
    target.parent.mkdir(parents=True)
    target.write_bytes(orjson.dumps(document))
    rule = r"(?P<workflow_id>[^/]+)/(?P<run_id>[^/]+)[.]json$"
    events = tk.read_history(target, workflow_id_from=rule)
    assert events["workflow_id"].unique().tolist() == ["order-1234"]
    assert events["run_id"].unique().tolist() == [run_id]
    by_function = tk.read_history(target, workflow_id_from=lambda p: Path(p).parent.name)
    assert by_function["workflow_id"].unique().tolist() == ["order-1234"]
    assert tk.read_history(target, workflow_id_from=r"orders/(\d+)")["workflow_id"].isna().all()
    # The writer passes the rule on: the dataset has the id.
    tk.write_dataset(tmp_path / "exports", tmp_path / "ds", workflow_id_from=rule, progress=False)
    runs = tk.sql("select workflow_id from runs", dataset=tmp_path / "ds")
    assert runs["workflow_id"].tolist() == ["order-1234"]
    # ... and so does the command line.
    exported = tmp_path / "cli"
    argv = ["export", str(tmp_path / "exports"), "--to", str(exported), "--workflow-id-from", rule]
    assert main(argv) == 0
    assert tk.sql("select workflow_id from runs", dataset=exported)["workflow_id"].tolist() == [
        "order-1234"
    ]


def test_the_root_execution_names_a_run_without_a_parent() -> None:
    path = DATA / "gallery" / "activity-added-end" / "v1.json"
    document = orjson.loads(path.read_bytes())
    started = document["events"][0]["workflowExecutionStartedEventAttributes"]
    del started["workflowId"]
    started["rootWorkflowExecution"] = {"workflowId": "root-wf", "runId": "r"}
    assert tk.read_history(orjson.dumps(document))["workflow_id"].iloc[0] == "root-wf"
    # A child's root is its parent's root, not itself.
    started["parentWorkflowExecution"] = {"workflowId": "parent-wf", "runId": "p"}
    assert tk.read_history(orjson.dumps(document))["workflow_id"].isna().all()


@pytest.mark.parametrize("spelling", ["json", "binary"])
def test_binary_histories_read_the_started_events_workflow_id(spelling: str) -> None:
    path = DATA / "adk" / "adk-1.28.1" / "two_toolsets.json"
    history = tk.to_history(tk.read_history(path))
    source = history.SerializeToString() if spelling == "binary" else path.read_bytes()
    events = tk.read_history(source)
    assert events["workflow_id"].unique().tolist() == ["lab-adk-adk-1.28.1-two_toolsets-34404620"]
