"""``duplicate_tools`` on every framework's own shape, and one finding per failure.

Each fixture under ``tests/fixtures/logs/duplicate_tools/`` is text written for this project in
the shape the named upstream source prints (its source is given next to the expectation).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.lab.hosted_runtime.evidence import delivery_timeline
from toolkit.logs.duplicate_shapes import BEHAVIOURS, DUPLICATE_SHAPES

FIXTURES = Path(__file__).parent / "fixtures" / "logs" / "duplicate_tools"
GO_LOGS = Path(__file__).parent.parent / "data" / "duplicate_tool" / "go"

# file, then per finding: (line, kind, framework, behaviour, retried_by, tool); the source.
CASES = [
    ("openai_agents_temporal.log", [
        (1, "openai_agents", "openai_agents", "retried", "workflow_task",
         "get_forecast, list_cities"),
        # before openai/openai-agents-python#3136 the names were printed as a Python set
        (10, "openai_agents", "openai_agents", "retried", "workflow_task", "get_forecast"),
        (12, "openai_agents_server", "openai_agents", "failed", None, "get_forecast"),
     ], "openai/openai-agents-python src/agents/mcp/util.py; temporalio _workflow_instance.py"),
    ("openai_agents_plain.log", [
        (1, "openai_agents", "openai_agents", "failed", None, "search_docs"),
     ], "openai/openai-agents-python src/agents/mcp/util.py"),
    ("pydantic_ai_temporal.log", [
        (1, "pydantic_ai", "pydantic_ai", "retried", "workflow_task", "lookup_order"),
     ], "pydantic/pydantic-ai pydantic_ai_slim/pydantic_ai/toolsets/combined.py"),
    ("cline.log", [
        (2, "cline", "cline", "failed", None, "github__create_or_update_file"),
        (3, "cline", "cline", "failed", None, "context7__resolve-library-id"),
     ], "https://github.com/cline/kanban/issues/320 and /347"),
    ("goose.log", [
        (1, "goose", "goose", "failed", None, "pydoll__analyze_performance"),
     ], "https://github.com/aaif-goose/goose/issues/5755"),
    ("claude_code.log", [
        (1, "anthropic_api", "claude_code", "failed", None, None),
     ], "https://github.com/baguskto/threads-mcp/issues/2"),
    ("gemini_cli.log", [
        (2, "gemini_cli", "gemini_cli", "shadowed", None, "save_memory"),
     ], "google-gemini/gemini-cli packages/core/src/tools/tool-registry.ts"),
    ("mcp_go.log", [
        (1, "mcp_go", "mcp_go", "failed", None, "export_report"),
     ], "mark3labs/mcp-go server/server.go (AddTools)"),
    ("langchain4j.log", [
        (1, "langchain4j", "langchain4j", "failed", None, "read_file"),
     ], "langchain4j/langchain4j dev.langchain4j.service.tool (IllegalConfigurationException)"),
]


@pytest.mark.parametrize(("name", "expected", "source"), CASES, ids=[c[0] for c in CASES])
def test_each_framework_shape(name: str, expected: list[tuple], source: str) -> None:
    found = tk.duplicate_tools(tk.read_logs(FIXTURES / name))
    columns = ["line", "kind", "framework", "behaviour", "retried_by", "tool"]
    got = [tuple(row) for row in found[columns].astype(object).itertuples(index=False)]
    assert got == expected, source


def test_pydantic_ai_names_both_toolsets() -> None:
    row = tk.duplicate_tools(tk.read_logs(FIXTURES / "pydantic_ai_temporal.log")).iloc[0]
    assert row["toolset"] == "MCPServerStreamableHTTP(url='http://127.0.0.1:8931/mcp')"
    assert row["existing"].endswith("/mcp?token=t1')")


def test_look_alikes_are_not_duplicates() -> None:
    """The fix's own skip line, a dedupe note, lower-case "tool names must be unique", a plugin
    "already registered" and "Duplicate tool name check" (no colon) all stay out."""
    logs = tk.read_logs(FIXTURES / "naive_traps.log")
    assert len(logs) == 5 and tk.duplicate_tools(logs).empty


def test_every_shape_has_a_fixture_or_an_older_test() -> None:
    kinds = {shape.kind for shape in DUPLICATE_SHAPES}
    seen = set()
    for path in [*FIXTURES.glob("*.log"), FIXTURES.parent / "python_shadow.log",
                 FIXTURES.parent / "duplicate_tool_incident.log"]:
        seen |= set(tk.duplicate_tools(tk.read_logs(path))["kind"])
    assert kinds == seen
    assert {shape.behaviour for shape in DUPLICATE_SHAPES} <= set(BEHAVIOURS)


@pytest.mark.parametrize("name", ["before.log", "before.jsonl"])
def test_go_before_log_counts_each_failure_once(name: str) -> None:
    """Issue 11: 5 failures, not 11 (retry and dead-letter records quote the error again)."""
    logs = tk.read_logs(GO_LOGS / name)
    found = tk.duplicate_tools(logs)
    assert len(found) == 5
    assert found["line"].tolist() == [4, 6, 8, 10, 12]
    assert found["attempt"].tolist() == [1, 2, 3, 4, 5]
    assert found["retry_line"].tolist() == [5, 7, 9, 11, 13]
    assert found["max_attempts"].tolist() == [5] * 5
    assert found["dead_letter_line"].tolist()[-1] == 14
    assert found["dead_letter_line"].isna().sum() == 4
    assert found["dead_letter_reason"].iloc[-1] == "terminal:unclassified"
    assert set(found["correlation_id"]) == {"command_id=cmd-2"}
    # Every record quoting the error is accounted for exactly once.
    quoting = logs[logs["raw"].str.contains('duplicate tool: ', regex=False)]["line"]
    linked = pd.concat([found["line"], found["retry_line"], found["dead_letter_line"].dropna()])
    assert sorted(linked.astype(int)) == sorted(quoting)


def test_python_activity_attempts_and_their_echoes() -> None:
    """The real google-adk worker log: the plugin's call-tool activity fails 3 times (one
    finding per attempt, like the Go deliveries); the agent runner then re-logs the same error
    twice from the workflow side (node failed, root node failed): echoes of the last attempt,
    not new failures. Each of the 4 model steps of the two runs logs 3 shadowed tools."""
    logs = tk.read_logs(GO_LOGS.parent / "python" / "worker.log")
    found = tk.duplicate_tools(logs)
    plugin = found[found["kind"] == "mcp_plugin"]
    assert plugin["line"].tolist() == [56, 76, 96]
    assert plugin["attempt"].tolist() == [1, 2, 3]
    assert set(plugin["retried_by"]) == {"activity"}
    assert plugin["echo_lines"].tolist() == [[], [], [110, 202]]
    shadow = found[found["kind"] == "python_adk"]
    assert len(shadow) == 12 and set(shadow["behaviour"]) == {"shadowed"}
    assert set(shadow["tool"]) == {"add", "get_weather", "lookup_order"}


def test_lab_timeline_is_built_from_the_public_detector() -> None:
    logs = tk.read_logs(GO_LOGS / "before.log")
    found = tk.duplicate_tools(logs)
    timeline = delivery_timeline(logs)
    errors = timeline[timeline["kind"] == "duplicate_tool"]["line"].tolist()
    assert errors == found["line"].tolist()
    assert timeline[timeline["kind"] == "retry"]["line"].tolist() == found["retry_line"].tolist()
    assert timeline[timeline["kind"] == "dead_letter"]["line"].tolist() == [14]


def test_a_retry_record_alone_is_one_finding() -> None:
    """Where only the runtime's retry record carries the error, it is the finding."""
    logs = tk.read_logs([
        'level=warn msg="retrying" command_id=c1 delivery_attempt=1 '
        'error="run: duplicate tool: \\"a\\""',
        'level=warn msg="retrying" command_id=c1 delivery_attempt=2 '
        'error="run: duplicate tool: \\"a\\""',
        'level=warn msg="command deadlettered (max attempts)" command_id=c1 '
        'error="run: duplicate tool: \\"a\\""',
    ])
    found = tk.duplicate_tools(logs)
    assert found["line"].tolist() == [1, 2]
    assert found["attempt"].tolist() == [1, 2]
    assert found["dead_letter_line"].tolist()[-1] == 3


def test_every_detector_over_the_public_corpus(corpus: Path) -> None:
    """Every public log: no duplicate tool, dead letter, MCP failure or nondeterminism is in
    them, and the only retries are the Go SDK's ``Attempt=1`` activity lines (containerd's
    ``ContainerMetadata{...,Attempt:7,}`` restart counters in the journald file are not)."""
    from toolkit.logs.detectors import LOG_DETECTORS

    counts: dict[str, int] = dict.fromkeys(LOG_DETECTORS, 0)
    retried: set[str] = set()
    paths = sorted(p for p in (corpus / "logs").iterdir() if p.is_file())
    assert len(paths) >= 30
    for path in paths:
        logs = tk.read_logs(path, year=2026)
        for name, detect in LOG_DETECTORS.items():
            found = len(detect(logs))
            counts[name] += found
            if name == "retries" and found:
                retried.add(path.name)
    assert counts == {"duplicate_tools": 0, "retries": 3, "dead_letters": 0,
                      "mcp_client_failures": 0, "nondeterminism": 0}
    assert retried == {"temporalio__sdk-go__integration-test.log"}


def test_fixtures_read_whole() -> None:
    """Every fixture line is accounted for and parsed (a shape hidden in a parse error would
    prove nothing about the detector)."""
    for path in sorted(FIXTURES.glob("*.log")):
        logs = tk.read_logs(path)
        assert logs["lines"].sum() == len(path.read_text(encoding="utf-8").splitlines()), path
        assert logs["parse_error"].isna().all(), path


OPENAI_LOGS = sorted(
    (Path(__file__).parent.parent / "data" / "openai_agents").glob("*/logs/worker.log"))


@pytest.mark.parametrize("path", OPENAI_LOGS, ids=lambda p: p.parent.parent.name)
def test_openai_agents_worker_log_one_finding_per_failed_activation(path: Path) -> None:
    # The real worker log of the lab's OpenAI Agents recordings: sdk-core's WARN line and the
    # Python worker's traceback quote the same failure, and bare traceback lines join several
    # runs' failures into one record. Independent count: the worker's "Failed activation" lines.
    text = path.read_text(encoding="utf-8")
    failed = r"Failed activation on workflow \S+ with ID \S+ and run ID (\S+)"
    expected = pd.Series(re.findall(failed, text)).value_counts().sort_index()
    found = tk.duplicate_tools(tk.read_logs(path))
    assert set(found["framework"]) == {"openai_agents"}
    assert set(found["retried_by"]) == {"workflow_task"}
    per_run = found["correlation_id"].str.removeprefix("run_id=").value_counts().sort_index()
    assert len(expected) == 2
    assert per_run.to_dict() == expected.to_dict()


FRAMEWORK_DATA = Path(__file__).parent.parent / "data"


@pytest.mark.parametrize(("folder", "event_type", "behaviour", "retried_by"), [
    ("openai_agents", "WorkflowTaskFailed", "retried", "workflow_task"),
    ("pydantic_ai", "WorkflowExecutionFailed", "failed", None),
])
def test_duplicate_tools_recorded_in_histories(folder: str, event_type: str, behaviour: str,
                                               retried_by: str | None) -> None:
    # The real recordings of two toolsets on one endpoint: these frameworks raise the error in
    # workflow code, so it is in the history, not only in the logs.
    events = tk.read_histories(FRAMEWORK_DATA / folder, progress=False).events
    found = tk.duplicate_tools(events)
    # After the failures, the model calls that declared a tool twice (read from their inputs):
    # only OpenAI Agents 0.17.8 sends both copies of a tool its server lists twice.
    declared = found[found["kind"] == "declared_twice"]
    found = found[found["kind"] != "declared_twice"]
    assert set(declared["source"].str.split("/").str[-2:].str.join("/")) == (
        {"oa-0.17.8/list_twice.json"} if folder == "openai_agents" else set())
    failures = events[events["failure_message"].fillna("").str.contains(
        "Duplicate tool names found|conflicts with existing tool")]
    assert len(found) == len(failures) > 0  # one row per failure event, independently counted
    assert set(found["event_type"]) == {event_type}
    assert set(found["behaviour"]) == {behaviour}
    assert set(found["retried_by"].fillna("none")) == {retried_by or "none"}
    assert set(found["source"].str.rsplit("/", n=1).str[-1]) <= {
        "two_servers.json", "same_server_twice.json"}
    if folder == "pydantic_ai":  # names both toolsets of the one endpoint
        assert set(found["toolset"]) == {"MCPToolset 'weather_token'"}
        assert set(found["existing"]) == {"MCPToolset 'weather'"}
        assert set(found["tool"]) == {"get_weather"}


@pytest.mark.parametrize("folder", ["openai_agents", "pydantic_ai"])
def test_investigate_finds_the_duplicate_tool_of_every_framework(folder: str) -> None:
    events = tk.read_histories(FRAMEWORK_DATA / folder, progress=False).events
    investigation = tk.investigate(FRAMEWORK_DATA / folder)
    found = investigation.findings[investigation.findings["kind"] == "duplicate_tool"]
    declared = found["title"].str.contains("declared twice to the model")
    assert len(found[~declared]) == 1 and declared.sum() == (folder == "openai_agents")
    rows = tk.duplicate_tools(events)
    failed_runs = set(rows.loc[rows["kind"] != "declared_twice", "run_id"])
    assert set(found.loc[~declared, "runs"].iloc[0]) == failed_runs
    assert investigation.errors["status"].eq("skipped").all()  # sidecars, never broken files
