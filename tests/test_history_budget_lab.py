"""The history-budget recordings in data/history_budget, and one recorded live.

Recorded by ``make record`` (part ``history_budget``: real workers of ADK, OpenAI Agents and
pydantic-ai on Temporal, a real MCP server whose ``read_page`` returns a page of a set size, the
scripted model, dev servers with lowered limits). These tests check what the server and the
frameworks did, as the histories, the server's own numbers and the logs say it: where the server
terminated a run and why, that the server's ``history_size_bytes`` is the protobuf size of the
events, that every model call re-sends the conversation, what an oversize payload does, and that
a run continuing as new at turn boundaries survives where the same turns in one run do not.
A run recorded live is tests/test_history_budget_live.py.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import gzip
import json
import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowHistory

from toolkit.lab.history_budget.frameworks import FRAMEWORKS
from toolkit.lab.history_budget.scenarios import BUDGETS, GRID

DATA = Path(__file__).resolve().parents[1] / "data" / "history_budget"
SIZE_REASON = "Workflow history size exceeds limit."
COUNT_REASON = "Workflow history count exceeds limit."
MODEL = {fw.name: fw.model_activity for fw in FRAMEWORKS}


def _rows() -> list[dict[str, str]]:
    path = DATA / "recordings.csv"
    if not path.exists():
        pytest.skip(f"no recordings in {DATA} (run `make record`)", allow_module_level=True)
    with path.open(encoding="utf-8") as table:
        return list(csv.DictReader(table))


ROWS = _rows()


def _load(history: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    path = DATA / history
    meta = path.with_name(path.name.removesuffix(".json.gz") + ".meta.json")
    return (json.loads(gzip.decompress(path.read_bytes())),
            json.loads(meta.read_text(encoding="utf-8")))


def _row(framework: str, scenario: str) -> dict[str, str]:
    (row,) = [r for r in ROWS if (r["framework"], r["scenario"]) == (framework, scenario)]
    return row


def _attributes(event: dict[str, Any]) -> dict[str, Any]:
    return next(v for k, v in event.items() if k.endswith("EventAttributes"))


def _payload_bytes(payloads: dict[str, Any] | None) -> int:
    return sum(len(base64.b64decode(p.get("data", ""))) for p in (payloads or {}).get(
        "payloads", []))


def _model_inputs(history: dict[str, Any], model_activity: str) -> list[int]:
    """Bytes of each model call's input payloads, in order."""
    return [_payload_bytes(_attributes(e).get("input")) for e in history["events"]
            if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
            and _attributes(e)["activityType"]["name"] == model_activity]


def _completed_model_calls(history: dict[str, Any], model_activity: str) -> int:
    types = {e["eventId"]: _attributes(e)["activityType"]["name"] for e in history["events"]
             if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"}
    return sum(types[_attributes(e)["scheduledEventId"]] == model_activity
               for e in history["events"] if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_COMPLETED")


def _server_size(history: dict[str, Any]) -> int:
    """The history's events as one protobuf ``History``: what the server counts."""
    events = WorkflowHistory.from_json("budget", json.dumps(history)).events
    return len(History(events=events).SerializeToString())


def _log_lines(meta_history: str, kind: str) -> list[str]:
    path = (DATA / meta_history).parent / "logs" / (
        Path(meta_history).name.split(".")[0].split("_run")[0] + f".{kind}.log")
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_the_table_lists_every_recording_once_per_run() -> None:
    on_disk = sorted(str(p.relative_to(DATA)) for p in DATA.glob("*/*.json.gz"))
    assert sorted(r["history"] for r in ROWS) == on_disk
    expected = {(fw.name, b.name) for fw in FRAMEWORKS for b in BUDGETS}
    assert {(r["framework"], r["scenario"]) for r in ROWS} == expected
    for row in ROWS:
        history, meta = _load(row["history"])
        assert (row["run_id"], row["workflow_id"], row["status"]) == (
            meta["run_id"], meta["workflow_id"], meta["budget"]["server"]["status"])
        assert int(row["history_length"]) == len(history["events"]) == meta["events"]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["history"])
def test_the_servers_history_size_is_the_protobuf_size_of_the_events(row: dict[str, str]) -> None:
    history, meta = _load(row["history"])
    # A failure's stack trace names files of the recording machine: the committed history names
    # them relative to the repository, which the metadata says took that many bytes away.
    scrubbed = meta["budget"]["scrubbed_bytes"]
    assert scrubbed == 0 or row["status"] == "FAILED"
    assert _server_size(history) + scrubbed == int(row["history_size_bytes"])


@pytest.mark.parametrize("row", [r for r in ROWS if r["limits"] in ("history_size",
                                                                    "history_count")
                                 or r["scenario"] == "continue_as_new_control"],
                         ids=lambda r: r["history"])
def test_the_server_terminates_every_long_loop_at_its_limit(row: dict[str, str]) -> None:
    history, meta = _load(row["history"])
    last = history["events"][-1]
    assert last["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED"
    attributes = _attributes(last)
    by_count = row["limits"] == "history_count"
    assert attributes == {"reason": COUNT_REASON if by_count else SIZE_REASON,
                          "identity": "history-service"}
    assert row["status"] == "TERMINATED" and row["stopped_by_lab"] == "False"
    if by_count:  # the event that crossed the limit is the last one the server kept
        assert len(history["events"]) == int(row["limit_events"]) + 1
    else:
        assert int(row["history_size_bytes"]) > int(row["limit_bytes"])
        # What the run had before its last transaction was under the limit.
        started = [int(_attributes(e)["historySizeBytes"]) for e in history["events"]
                   if e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_STARTED"]
        assert started[-1] < int(row["limit_bytes"])
    # The loop never got near its own step budget.
    completed = _completed_model_calls(history, MODEL[row["framework"]])
    assert completed == int(row["model_calls_completed"]) == meta["budget"][
        "model_calls_completed"]
    assert 5 <= completed < meta["budget"]["max_model_calls"] // 2


@pytest.mark.parametrize("row", [r for r in ROWS if r["limits"] == "history_size"],
                         ids=lambda r: r["history"])
def test_every_model_call_carries_the_whole_conversation_again(row: dict[str, str]) -> None:
    history, meta = _load(row["history"])
    inputs = _model_inputs(history, MODEL[row["framework"]])
    assert all(later > earlier for earlier, later in pairwise(inputs))
    # The first call carries the user message; each later one adds at least one tool result.
    assert inputs[0] > meta["budget"]["conversation_bytes"]
    steps = [b - a for a, b in pairwise(inputs)]
    assert min(steps) > meta["budget"]["tool_output_bytes"]
    # Re-sent inputs are most of the history (sdk-python#1890: 99.8% at 50 MB).
    assert sum(inputs) > 0.6 * int(row["history_size_bytes"])


@pytest.mark.parametrize("framework", [fw.name for fw in FRAMEWORKS])
def test_bigger_conversations_and_tool_outputs_die_sooner(framework: str) -> None:
    reached = {(b.conversation_bytes, b.tool_output_bytes):
               int(_row(framework, b.name)["model_calls_completed"]) for b in GRID}
    conversations = sorted({c for c, _ in reached})
    outputs = sorted({t for _, t in reached})
    for t in outputs:
        calls = [reached[(c, t)] for c in conversations]
        assert calls == sorted(calls, reverse=True) and calls[0] > calls[-1]
    for c in conversations:
        assert reached[(c, outputs[0])] > reached[(c, outputs[-1])]


@pytest.mark.parametrize("row", [r for r in ROWS if r["limits"] == "history_size"],
                         ids=lambda r: r["history"])
def test_the_servers_log_says_where_it_warned_and_where_it_stopped(row: dict[str, str]) -> None:
    _, meta = _load(row["history"])
    warn = meta["budget"]["dynamic_config"]["limit.historySize.warn"]
    lines = [line for line in _log_lines(row["history"], "server")
             if 'msg="history size exceeds' in line]
    assert all(f"wf-run-id={row['run_id']} " in line for line in lines)
    sizes = [int(line.rsplit("wf-history-size=", 1)[1]) for line in lines]
    # A warning for every transaction past the warn limit, then one past the error limit.
    assert ['error limit' in line for line in lines] == [False] * (len(lines) - 1) + [True]
    assert warn <= sizes[0] and sizes == sorted(sizes)
    assert int(row["limit_bytes"]) < sizes[-1] <= int(row["history_size_bytes"])


@pytest.mark.parametrize("row", [r for r in ROWS if r["end_reason"] in (SIZE_REASON,
                                                                        COUNT_REASON)],
                         ids=lambda r: r["history"])
def test_the_worker_log_says_the_server_refused_a_completion(row: dict[str, str]) -> None:
    history, _ = _load(row["history"])
    refused = [line for line in _log_lines(row["history"], "worker")
               if "temporalio_sdk_core" in line and row["end_reason"] in line]
    if not refused:  # the server took the last completion, then terminated the run
        before = [e["eventType"] for e in history["events"][-3:-1]]
        assert before == ["EVENT_TYPE_ACTIVITY_TASK_COMPLETED",
                          "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED"]
        return
    assert len(refused) == 1
    assert ("Network error while completing activity" in refused[0]
            or "Error while completing workflow activation" in refused[0])


def _chain() -> Iterator[tuple[str, list[tuple[dict[str, Any], dict[str, Any]]]]]:
    for fw in FRAMEWORKS:
        rows = sorted((r for r in ROWS if (r["framework"], r["scenario"]) == (
            fw.name, "continue_as_new")), key=lambda r: int(r["run_index"]))
        yield fw.name, [_load(r["history"]) for r in rows]


@pytest.mark.parametrize(("framework", "runs"), list(_chain()), ids=lambda v: str(v)[:20])
def test_continuing_as_new_at_turn_boundaries_survives(
        framework: str, runs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    assert len(runs) >= 3
    limit = runs[0][1]["budget"]["dynamic_config"]["limit.historySize.error"]
    for (history, meta), (next_history, next_meta) in pairwise(runs):
        last = _attributes(history["events"][-1])
        assert history["events"][-1]["eventType"] == (
            "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW")
        assert last["newExecutionRunId"] == next_meta["run_id"]
        started = _attributes(next_history["events"][0])
        assert started["continuedExecutionRunId"] == meta["run_id"]
        assert meta["budget"]["server"]["history_size_bytes"] < limit
        # The server suggested it, and the run carried a summary instead of the conversation.
        suggested = [_attributes(e).get("suggestContinueAsNew", False)
                     for e in history["events"]
                     if e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_STARTED"]
        assert suggested[-1] and not suggested[0]
        spec = json.loads(base64.b64decode(started["input"]["payloads"][0]["data"]))
        assert spec["summary"].startswith("Summary of the conversation so far: Read pages 1 to")
    history, meta = runs[-1]
    assert history["events"][-1]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"
    result = _attributes(history["events"][-1])["result"]["payloads"][0]["data"]
    replies = json.loads(base64.b64decode(result))
    turns = meta["budget"]["turns"]
    pages = meta["budget"]["pages_per_turn"]
    assert replies == [f"Read pages {i * pages + 1} to {(i + 1) * pages}." for i in range(turns)]
    control = _row(framework, "continue_as_new_control")
    assert control["status"] == "TERMINATED" and control["end_reason"] == SIZE_REASON


def test_the_adk_histories_replay_with_the_installed_workflow_code(tmp_path: Path) -> None:
    """Terminated mid-turn, refused payloads, continue-as-new: every ADK run replays cleanly."""
    pytest.importorskip("google.adk")
    from temporalio.worker import Replayer

    from toolkit.lab.adk_python.replay import replay_with, replayer_options
    from toolkit.lab.adk_python.workflow import LabAdkAgentWorkflow

    # debug_mode: no deadlock timer; importing ADK in a fresh sandbox takes seconds under load.
    replayer = Replayer(workflows=[LabAdkAgentWorkflow], debug_mode=True, **replayer_options())
    paths = []
    for row in (r for r in ROWS if r["framework"] == "adk"):
        path = tmp_path / Path(row["history"]).name.removesuffix(".gz")
        path.write_bytes(gzip.decompress((DATA / row["history"]).read_bytes()))
        paths.append(path)
    assert [(p.name, r["outcome"], r["message"]) for p, r in zip(
        paths, asyncio.run(replay_with(replayer, paths)), strict=True)] == [
        (p.name, "ok", "") for p in paths]


TMPRL1103 = "[TMPRL1103] Attempted to upload payloads with size that exceeded the error limit."


def _refused_uploads(row: dict[str, str]) -> list[tuple[int, int]]:
    """``(size, limit)`` of each payload sdk-core refused to upload, from the worker log."""
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in _log_lines(row["history"], "worker")]
    return [(int(m[1]), int(m[2])) for m in (re.search(r"size=(\d+) limit=(\d+)", line)
                                             for line in plain if TMPRL1103 in line) if m]


@pytest.mark.parametrize("framework", [fw.name for fw in FRAMEWORKS])
def test_a_tool_result_over_the_payload_limit_never_reaches_the_server(framework: str) -> None:
    row = _row(framework, "tool_result_over_payload_limit")
    history, meta = _load(row["history"])
    limit = int(row["payload_limit_bytes"])
    # sdk-core knows the server's limit and refuses the upload itself.
    refused = _refused_uploads(row)
    assert refused and all(size > limit == refused_limit for size, refused_limit in refused)
    types = [e["eventType"] for e in history["events"]]
    if framework == "pydantic_ai":  # fails the workflow at once, naming the tool
        assert len(refused) == 1 and row["status"] == "FAILED"
        assert row["end_reason"].startswith(
            f"Tool 'read_page' returned a result too large for Temporal. {TMPRL1103}")
        assert [f["message"] for f in meta["budget"]["failures"]] == [TMPRL1103]
        return
    # ADK and OpenAI Agents retry it forever: nothing in the history but the scheduled call,
    # the attempts are in the server's pending activity.
    assert row["stopped_by_lab"] == "True" and meta["budget"]["failures"] == []
    assert "EVENT_TYPE_ACTIVITY_TASK_FAILED" not in types
    assert types.count("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED") == types.count(
        "EVENT_TYPE_ACTIVITY_TASK_COMPLETED") + 1
    (pending,) = meta["budget"]["pending_activities"]
    assert pending["attempt"] >= 3 and pending["last_failure"]["message"] == TMPRL1103
    assert len(refused) >= pending["attempt"] - 1


@pytest.mark.parametrize("framework", [fw.name for fw in FRAMEWORKS])
def test_a_model_input_over_the_payload_limit_fails_the_workflow_task_again_and_again(
        framework: str) -> None:
    row = _row(framework, "model_input_over_payload_limit")
    _, meta = _load(row["history"])
    assert row["stopped_by_lab"] == "True"
    assert {(f["event"], f["cause"], f["message"]) for f in meta["budget"]["failures"]} == {
        ("WorkflowTaskFailed", "WORKFLOW_TASK_FAILED_CAUSE_PAYLOADS_TOO_LARGE", TMPRL1103)}
    refused = _refused_uploads(row)
    assert len(refused) >= 3 and all(size > limit for size, limit in refused)


@pytest.mark.parametrize("framework", [fw.name for fw in FRAMEWORKS])
def test_how_many_bytes_a_tool_result_costs_in_the_history(framework: str) -> None:
    """ADK and OpenAI Agents keep an MCP result's text twice (``content`` and
    ``structuredContent``); pydantic-ai once."""
    row = _row(framework, "loop_c1k_t2k")
    history, _ = _load(row["history"])
    types = {e["eventId"]: _attributes(e)["activityType"]["name"] for e in history["events"]
             if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"}
    results = [_payload_bytes(_attributes(e).get("result")) for e in history["events"]
               if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_COMPLETED"
               and "call" in types[_attributes(e)["scheduledEventId"]]]
    copies = 1 if framework == "pydantic_ai" else 2
    page = int(row["tool_output_bytes"])
    assert results and all(copies * page < r < copies * page + 512 for r in results)
