"""read_history on every dialect: real corpus files, fixtures in the shapes the corpus lacks."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pandas as pd
import pytest
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowHistory

import toolkit as tk
from toolkit.histories.events import COLUMNS

H = "histories"


def _events_in(obj: object) -> list[dict]:
    """An independent count of the events a parsed JSON file holds (for cross-checking)."""
    if isinstance(obj, dict):
        if "events" in obj:
            return list(obj["events"])
        if "history" in obj:
            return _events_in(obj["history"])
        return [v for v in obj.values() if isinstance(v, dict)]
    assert isinstance(obj, list)
    if obj and "events" in obj[0]:
        return [e for h in obj for e in h["events"]]
    return list(obj)


def _corpus_files(corpus: Path) -> list[Path]:
    return sorted(p for p in (corpus / H).rglob("*") if p.is_file())


def test_every_corpus_history_loads_with_every_event(corpus: Path) -> None:
    files = _corpus_files(corpus)
    assert len(files) >= 70
    for path in files:
        if path.name == "empty-event-history.json":
            continue
        events = tk.read_history(path)
        if path.suffix == ".bin":
            expected_ids = [e.event_id for e in History.FromString(path.read_bytes()).events]
        else:
            raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            expected_ids = [int(e["eventId"]) for e in _events_in(json.loads(raw))]
        assert len(events) == len(expected_ids), path
        assert sorted(events["event_id"]) == sorted(expected_ids), path
        assert list(events.columns) == list(COLUMNS), path
        assert events["event_time"].notna().all(), path
        assert (events.groupby("history")["event_id"].diff().dropna() >= 0).all(), path


def test_schema_dtypes_are_stable(corpus: Path) -> None:
    for name in (
        "temporalio__sdk-go/basic.json",
        "temporalio__sdk-core/ends_empty_wft_complete.bin",
    ):
        events = tk.read_history(corpus / H / name)
        assert {c: str(t) for c, t in events.dtypes.items()} == COLUMNS


def test_enum_spellings_all_normalise(corpus: Path) -> None:
    screaming = tk.read_history(corpus / H / "temporalio__sdk-go/memo-gob.json")
    pascal = tk.read_history(
        corpus / H / "temporalio__sdk-go/child-workflow-cancel-with-update.json"
    )
    prefixed = tk.read_history(corpus / H / "temporalio__samples-go/helloworld.json")
    for frame in (screaming, pascal, prefixed):
        assert frame["event_type"].iloc[0] == "WorkflowExecutionStarted"
        assert not frame["event_type"].str.contains("EVENT_TYPE|^EventType", regex=True).any()
    assert "ChildWorkflowExecutionStarted" in set(pascal["event_type"])


def test_cadence_era_numbers_and_epoch_timestamps(corpus: Path) -> None:
    events = tk.read_history(corpus / H / "temporalio__sdk-go/basic.json")
    assert events["event_time"].iloc[0] == pd.Timestamp(1574668217480891000, unit="ns", tz="UTC")
    assert set(events.loc[events["category"] == "workflow_task", "event_type"]) >= {
        "DecisionTaskScheduled",
        "DecisionTaskCompleted",
    }
    scheduled = events[events["event_type"] == "ActivityTaskScheduled"]
    assert len(scheduled) == 3 and scheduled["is_command"].all()
    assert scheduled["workflow_task"].notna().all()


def test_descending_ui_export_is_sorted(corpus: Path) -> None:
    path = corpus / H / "temporalio__ui/raw-events.descending.timed-out.json"
    assert json.loads(path.read_text())["history"]["events"][0]["eventId"] == "18"
    events = tk.read_history(path)
    assert list(events["event_id"]) == list(range(1, 19))
    assert events["event_type"].iloc[-1] == "WorkflowExecutionTimedOut"


def test_unknown_event_type_and_fields_are_kept(corpus: Path) -> None:
    events = tk.read_history(corpus / H / "temporalio__sdk-go/workflow_with_bad_unknown_event.json")
    unknown = events[events["event_type"] == "UnknownEvent"]
    assert len(unknown) == 1
    assert unknown["category"].iloc[0] == "other"
    assert unknown["extra"].iloc[0]["workerMayIgnore"] is False
    old = tk.read_history(corpus / H / "temporalio__sdk-go/child-workflow-cancel-with-update.json")
    completed = old[old["event_type"] == "WorkflowTaskCompleted"]
    assert any("workerVersioningId" in attrs for attrs in completed["attributes"])


def test_unknown_enum_values_are_kept_verbatim(corpus: Path) -> None:
    events = tk.read_history(corpus / H / "temporalio__sdk-go/update-reset-accepted.json")
    text = json.dumps([dict(a) for a in events["attributes"]])
    raw = (corpus / H / "temporalio__sdk-go/update-reset-accepted.json").read_text()
    for value in {v for v in json.loads(raw).__str__().split("'") if v.isupper() and "_" in v}:
        assert value in text or value in raw


def test_payload_encodings(corpus: Path) -> None:
    decoded = tk.read_history(
        corpus / H / "antmendoza__my-temporal-pocs/413b5a6e-9330-4a76-b7e3-6dbe85834604_events.json"
    )
    # UI "decoded" download: "Temporal" is base64-alphabet text and must not be decoded again.
    assert decoded["input"].iloc[0] == ["Temporal"]
    encrypted = tk.read_history(
        corpus / H / "antmendoza__my-temporal-pocs/14d803eb-e233-4970-9c06-739358323810_events.json"
    )
    opaque = encrypted["input"].iloc[0][0]
    assert isinstance(opaque, tk.histories.payloads.OpaquePayload)
    assert opaque.encoding == "binary/encrypted" and opaque.metadata["encryption-key-id"] == "test"
    gob = tk.read_history(corpus / H / "temporalio__sdk-go/memo-gob.json")
    assert gob["input"].notna().any()
    protobuf = tk.read_history(corpus / H / "temporalio__sdk-go/mutable-side-effect-legacy.json")
    markers = protobuf[protobuf["event_type"] == "MarkerRecorded"]
    assert all(isinstance(d.value, dict) and d["side-effect-id"] for d in markers["details"])


def test_failures_and_retry_state(corpus: Path) -> None:
    events = tk.read_history(corpus / H / "temporalio__ui/event-history-failed.json")
    failed = events[events["event_type"] == "WorkflowExecutionFailed"].iloc[0]
    assert failed["failure_message"]
    assert failed["retry_state"].startswith("RETRY_STATE_")


def test_array_of_histories_are_told_apart(corpus: Path, tmp_path: Path) -> None:
    one = json.loads((corpus / H / "temporalio__features/history.go.v1.5.0.json").read_text())
    two = json.loads((corpus / H / "temporalio__features/history.go.v1.11.0.json").read_text())
    path = tmp_path / "many.json"
    path.write_text(json.dumps(one + two))
    events = tk.read_history(path)
    assert sorted(events["history"].unique()) == [0, 1]
    assert events.groupby("history").size().tolist() == [11, 17]


def test_pre_2023_cli_comma_separated_events(corpus: Path, tmp_path: Path) -> None:
    events = json.loads((corpus / H / "temporalio__sdk-java/timerfiring.json").read_text())
    text = ",\n".join(json.dumps(e, indent=2) for e in events)
    path = tmp_path / "old-cli.json"
    path.write_text(text)
    frame = tk.read_history(path)
    assert len(frame) == len(events) == 18


def test_ui_event_groups(corpus: Path) -> None:
    events = json.loads((corpus / H / "temporalio__sdk-java/timerfiring.json").read_text())
    groups = [{"id": str(i), "eventList": events[i : i + 3]} for i in range(0, len(events), 3)]
    frame = tk.read_history(groups)
    assert list(frame["event_id"]) == [e["eventId"] for e in events]


def test_keyed_by_event_type(corpus: Path) -> None:
    frame = tk.read_history(corpus / H / "temporalio__ui/all-event-types.json")
    assert len(frame) == 26


def test_gzip_and_binary_and_cloud_export(corpus: Path, tmp_path: Path) -> None:
    binary = corpus / H / "temporalio__sdk-core/long_local_activity_with_update-2_history.bin"
    history = History.FromString(binary.read_bytes())
    from_bin = tk.read_history(binary)
    gz = tmp_path / "copy.json.gz"
    gz.write_bytes(gzip.compress(tk.write_history(from_bin).encode()))
    from_gz = tk.read_history(gz)
    assert list(from_gz["event_type"]) == list(from_bin["event_type"])
    from temporalio.api.export.v1 import WorkflowExecution, WorkflowExecutions

    other = History.FromString(
        (corpus / H / "temporalio__sdk-core/ends_empty_wft_complete.bin").read_bytes()
    )
    export = WorkflowExecutions(
        items=[WorkflowExecution(history=history), WorkflowExecution(history=other)]
    )
    layout = tmp_path / "temporal-workflow-history/export/my-ns/2026/11/29/10/05"
    layout.mkdir(parents=True)
    (layout / "part-0001").write_bytes(export.SerializeToString())
    frame = tk.read_history(layout / "part-0001")
    assert frame.groupby("history").size().tolist() == [len(history.events), len(other.events)]
    assert (frame["namespace"] == "my-ns").all()
    # At-least-once delivery: the same file twice yields each run once.
    (layout / "part-0002").write_bytes(export.SerializeToString())
    batch = tk.read_histories(tmp_path / "temporal-workflow-history")
    assert len(batch.events) == len(frame) and batch.errors.empty


def test_every_in_memory_source_kind(corpus: Path) -> None:
    path = corpus / H / "temporalio__sdk-python/hitl_workflow.json"
    text = path.read_text()
    expected = tk.read_history(path)
    sdk = WorkflowHistory.from_json("wf-1", text)
    kinds = [
        text.encode(),
        text,
        io.BytesIO(text.encode()),
        io.StringIO(text),
        json.loads(text),
        sdk,
        History(events=sdk.events),
    ]
    for source in kinds:
        frame = tk.read_history(source)
        assert list(frame["event_type"]) == list(expected["event_type"]), type(source)
    # The history's own workflow id wins over the object's; without one, the object's is used.
    assert tk.read_history(sdk)["workflow_id"].iloc[0] == "record-hitl"
    older = (corpus / H / "temporalio__samples-go/helloworld.json").read_text()
    from_object = tk.read_history(WorkflowHistory.from_json("wf-1", older))
    assert from_object["workflow_id"].iloc[0] == "wf-1"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (
            b'{"events": [{"eventId": "1", "eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_STAR',
            "truncated",
        ),
        (b'{"name": "not a history"}', "is not a history"),
        (b"[1, 2, 3]", "not an object"),
        (b'{"events": [{"eventId": {"x": 1}}]}', "event #0"),
        (b"\x08\x96\x01garbage", "neither JSON nor a protobuf"),
        (b"\x0a\x05\x08\x00\x10\x00\x00", "damaged protobuf"),
        (b"\x0a\x02\x18\x05", "event #0 has event_id 0"),
        (b'{"events": [] } trailing', "after the JSON value"),
        (b"\x1f\x8b\x08\x00", "gzip"),
        (b'{"events": [{"eventId": "1", "eventType": "EVENT_TYPE_WORKFLOW_TASK_STARTED", '
         b'"workflowTaskStartedEventAttributes": {"suggestContinueAsNew": 1}}]}',
         "true or false"),
    ],
)
def test_bad_input_names_source_and_position(tmp_path: Path, content: bytes, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(tk.HistoryFormatError) as info:
        tk.read_history(path)
    assert str(path) in str(info.value)
    assert needle in str(info.value)


def test_truncated_json_reports_line_and_byte(tmp_path: Path, corpus: Path) -> None:
    text = (corpus / H / "temporalio__sdk-python/hitl_workflow.json").read_bytes()
    path = tmp_path / "cut.json"
    path.write_bytes(text[: len(text) // 2])
    with pytest.raises(tk.HistoryFormatError, match="end of input"):
        tk.read_history(path)
    broken = tmp_path / "broken.json"
    broken.write_bytes(text.replace(b'"eventType"', b'"eventType" "', 1))
    with pytest.raises(tk.HistoryFormatError, match=r"line \d+ column \d+"):
        tk.read_history(broken)


def test_missing_file_and_unsupported_object() -> None:
    with pytest.raises(tk.HistoryFormatError, match="no such file"):
        tk.read_history("/nonexistent/history.json")
    with pytest.raises(tk.HistoryFormatError, match="cannot read a history from a int"):
        tk.read_history(42)


def test_empty_history_is_an_error_unless_allowed(corpus: Path) -> None:
    path = corpus / H / "temporalio__ui/empty-event-history.json"
    with pytest.raises(tk.HistoryFormatError, match="no events"):
        tk.read_history(path)
    frame = tk.read_history(path, allow_empty=True)
    assert frame.empty and list(frame.columns) == list(COLUMNS)


def test_read_histories_collects_per_file_errors(corpus: Path, tmp_path: Path) -> None:
    (tmp_path / "good.json").write_bytes(
        (corpus / H / "temporalio__sdk-python/hitl_workflow.json").read_bytes()
    )
    (tmp_path / "bad.json").write_text("{")
    batch = tk.read_histories(tmp_path)
    assert batch.events["source"].nunique() == 1 and len(batch.events) == 10
    assert batch.errors["source"].tolist() == [str(tmp_path / "bad.json")]
    assert "truncated" in batch.errors["message"].iloc[0]
    with pytest.raises(tk.HistoryFormatError):
        tk.read_histories(tmp_path, errors="raise")
    globbed = tk.read_histories(str(tmp_path / "g*.json"))
    assert len(globbed.events) == 10 and globbed.errors.empty


def test_binary_messages_parse_on_first_use_with_located_errors(corpus: Path) -> None:
    # The wire reader does not look inside payload metadata; the protobuf library does, when
    # the event is first parsed (at load for the started event, else when a cell needs it):
    # bad UTF-8 there is a located error naming the event, never a DecodeError.
    path = corpus / "histories" / "temporalio__sdk-core" / "ends_empty_wft_complete.bin"
    data = path.read_bytes()
    damaged = data.replace(b"encoding", b"\xff\xfecoding", 1)
    assert damaged != data
    with pytest.raises(tk.HistoryFormatError, match="damaged protobuf") as caught:
        events = tk.read_history(damaged)
        for index in range(len(events)):
            dict(events.attributes.iloc[index])
    assert caught.value.position is not None and caught.value.position.startswith("event #")


def test_a_fifo_or_folder_named_like_a_history_is_an_error_not_a_wait(tmp_path: Path) -> None:
    """A path that exists but is no regular file (a FIFO nobody writes to would block a plain
    open forever; a folder called ``run.json``) is a located error naming it, at once."""
    import os

    fifo, folder = tmp_path / "run-fifo.json", tmp_path / "run-folder.json"
    os.mkfifo(fifo)
    folder.mkdir()
    for path, what in ((fifo, "not a regular file"), (folder, "a directory")):
        with pytest.raises(tk.HistoryFormatError, match=what) as raised:
            tk.read_history(path)
        assert str(path) in str(raised.value)
    with pytest.raises(tk.HistoryFormatError, match="no such file"):
        tk.read_history(tmp_path / "missing.json")
