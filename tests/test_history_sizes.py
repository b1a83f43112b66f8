"""Sizes of events and payloads as the server counts them (toolkit.histories.sizes), checked
against protobuf's own encoding on the lab's and the public corpus's histories, and against the
dev server's ``historySizeBytes``."""

from __future__ import annotations

import glob
from pathlib import Path

import pandas as pd
import pytest
from google.protobuf import json_format
from temporalio.api.history.v1 import History, HistoryEvent

import toolkit as tk
from toolkit.histories.columns.lazy import LazyProto
from toolkit.histories.proto_size import NotCanonical, message_size
from toolkit.histories.sizes import framed, payloads_field_size
from toolkit.histories.write import event_message

ROOT = Path(__file__).resolve().parents[1]


def _lab_files() -> list[str]:
    files = sorted(glob.glob(str(ROOT / "data" / "**" / "*.json"), recursive=True))
    return [f for f in files if not f.endswith(".meta.json") and "venvs" not in f]


def _readable(paths: list[str]) -> list[tuple[str, object]]:
    out = []
    for path in paths:
        try:
            out.append((path, tk.read_history(path)))
        except tk.ToolkitError:
            continue  # sidecars, MCP configs: not histories
    return out


@pytest.fixture(scope="module")
def every_history(corpus: Path) -> list[tuple[str, object]]:
    public = [str(p) for p in sorted((corpus / "histories").rglob("*")) if p.is_file()]
    return _readable(_lab_files() + public)


def test_sizes_from_proto_json_equal_protobuf_encoding(every_history) -> None:
    """The JSON size walk gives ParseDict + ByteSize for every canonical event, and says
    "not canonical" (never a wrong number) for the rest."""
    measured = refused = 0
    for path, events in every_history:
        for row in events.to_dict("records"):
            extra = row["extra"]
            if isinstance(extra, LazyProto) or getattr(extra, "raw", None) is None:
                continue
            expected = event_message(row).ByteSize()
            raw = tk.histories.sizes.msgspec.json.decode(bytes(extra.raw))
            try:
                size = message_size(raw, HistoryEvent.DESCRIPTOR)
            except NotCanonical:
                refused += 1
                continue
            measured += 1
            assert size == expected, (path, row["event_id"], row["event_type"])
    assert measured > 9000
    assert refused < measured / 5  # old dialects only


def test_every_event_has_a_size_and_totals_equal_the_encoded_history(every_history) -> None:
    for path, events in every_history:
        sizes = tk.event_sizes(events)
        assert len(sizes) == len(events), path
        assert (sizes["bytes"] > 0).all(), path
        whole = History(events=[event_message(r) for r in events.to_dict("records")])
        if sizes["exact"].all():
            assert sizes["cumulative_bytes"].iloc[-1] == whole.ByteSize(), path


def test_binary_histories_are_measured_by_their_own_bytes(corpus: Path) -> None:
    for path in sorted((corpus / "histories").rglob("*.bin")):
        history = History.FromString(path.read_bytes())
        sizes = tk.event_sizes(str(path))
        assert sizes["cumulative_bytes"].iloc[-1] == history.ByteSize() == len(path.read_bytes())
        assert sizes["exact"].all()


def test_server_checkpoints_match_the_events_before_them() -> None:
    """Each WorkflowTaskStarted records the server's size so far. On the lab's runs whose tasks
    and activities never retried it is the size of the events before it, or, for a task the
    server started in the same write as the events before it (a signal that arrived while the
    previous task ran), the size before that write: an earlier event boundary."""
    exact = lagging = other = 0
    for _, events in _readable(_lab_files()):
        if (events["event_type"] == "WorkflowTaskFailed").any() or (
            events["attempt"].fillna(1) > 1
        ).any():
            continue  # retried work is written differently from how the export shows it
        sizes = tk.event_sizes(events)
        before = (sizes["cumulative_bytes"] - sizes["bytes"]).tolist()
        previous = 0
        for position, recorded in enumerate(sizes["server_bytes"].tolist()):
            if recorded is pd.NA:
                continue
            if recorded == before[position]:
                exact += 1
            elif recorded in before[previous:position]:
                lagging += 1
            else:
                other += 1  # search attributes the server stores with more metadata
            previous = position
    assert exact > 1000
    assert exact / (exact + lagging + other) > 0.95
    assert other / (exact + lagging + other) < 0.01


def test_payload_rows_add_up_to_the_fields_the_limit_compares(every_history) -> None:
    for path, events in every_history[:80]:
        payloads = tk.payload_sizes(events)
        if payloads.empty:
            continue
        per_field = payloads.groupby(["event_id", "field"])
        # A Payloads field is its payloads, each framed.
        for (_, _), group in per_field:
            if group["field_bytes"].iloc[0] != group["bytes"].iloc[0] or len(group) > 1:
                assert group["field_bytes"].iloc[0] == sum(framed(b) for b in group["bytes"])
        for column in ("input", "result"):
            for event_id, cell in zip(events["event_id"], events[column], strict=True):
                measured = payloads_field_size(cell) if cell is not None else None
                if measured is None:
                    continue
                rows = payloads[(payloads["event_id"] == event_id)
                                & payloads["kind"].isin(["input", "result"])]  # fmt: skip
                assert measured[0] in set(rows["field_bytes"]), (path, event_id, column)


def test_encrypted_and_decoded_payloads_are_told_apart(corpus: Path) -> None:
    poc = corpus / "histories" / "antmendoza__my-temporal-pocs"
    encrypted = tk.payload_sizes(poc / "14d803eb-e233-4970-9c06-739358323810_events.json")
    inputs = encrypted[encrypted["kind"] == "input"]
    assert set(inputs["encoding"]) == {"binary/encrypted"}
    assert inputs["known"].all() and inputs["exact"].all()  # ciphertext is what the server keeps
    assert set(encrypted.loc[encrypted["kind"] == "header", "field"]) == {
        "header.fields[encryption]"
    }
    decoded = tk.payload_sizes(poc / "413b5a6e-9330-4a76-b7e3-6dbe85834604_events.json")
    assert not decoded["exact"].any()
    assert decoded["note"].str.contains("re-encoded").all()


def test_a_stripped_payload_is_unknown_not_zero() -> None:
    events = tk.read_history(ROOT / "data" / "adk" / "adk-2.13.0" / "two_turns.json")
    text = tk.write_history(events)
    document = json_format.Parse(text, History())
    for event in document.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            for payload in event.activity_task_scheduled_event_attributes.input.payloads:
                payload.ClearField("data")
    payloads = tk.payload_sizes(tk.read_history(document.SerializeToString()))
    stripped = payloads[(payloads["event_type"] == "ActivityTaskScheduled")
                        & (payloads["kind"] == "input")]  # fmt: skip
    assert len(stripped) and not stripped["known"].any()
    assert stripped["note"].str.contains("stripped").all()
    # The budget still sizes every event, and says which payload bytes it does not know.
    budget = tk.history_budget(tk.read_history(document.SerializeToString()))
    assert budget["history_bytes"].iloc[0] > 0 and budget["events"].iloc[0] == len(events)
    assert not budget["exact"].iloc[0] and "stripped" in budget["note"].iloc[0]


def test_loader_columns_carry_each_tasks_recorded_size_and_suggestion(every_history) -> None:
    # history_size_bytes / suggest_continue_as_new are read during the typed decode (or from
    # the protobuf fields): they must say what each WorkflowTaskStarted's own attributes say.
    checked = suggested = 0
    for name, events in every_history:
        started = events[events["event_type"] == "WorkflowTaskStarted"]
        for attributes, size, flag in zip(started["attributes"], started["history_size_bytes"],
                                          started["suggest_continue_as_new"], strict=True):
            recorded = int(attributes.get("historySizeBytes") or 0)
            assert (0 if size is pd.NA else size) == recorded, name
            flag = flag is not pd.NA and bool(flag)
            assert flag == bool(attributes.get("suggestContinueAsNew")), name
            checked += recorded > 0
            suggested += flag
        others = events[events["event_type"] != "WorkflowTaskStarted"]
        assert others["history_size_bytes"].isna().all(), name
        assert others["suggest_continue_as_new"].isna().all(), name
    assert checked > 1000 and suggested > 0  # the lab's size-limited runs carry both
