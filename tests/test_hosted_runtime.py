"""The hosted-agent runtime (the Go service of the duplicate-tool note) on the real MCP server."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.errors import LogFormatError
from toolkit.lab.hosted_runtime.agent import DuplicateToolError, LlmRequest, McpTool, pack_tool
from toolkit.lab.hosted_runtime.bus import CommandOutcome
from toolkit.lab.hosted_runtime.evidence import (
    command_outcomes,
    delivery_timeline,
    naive_false_positives,
    pattern_comparison,
    plot_delivery_timeline,
    read_mcp_requests,
    toolset_activities,
)
from toolkit.lab.hosted_runtime.record import record_go
from toolkit.lab.hosted_runtime.registry import agent_servers
from toolkit.lab.hosted_runtime.runtime import run_session
from toolkit.lab.hosted_runtime.slog import SlogLogger, format_text_value
from toolkit.lab.hosted_runtime.toolsets import McpToolset, select_servers
from toolkit.lab.mcp_server import McpServer

TOKEN = "t0ken-42"
TOOL_TURN = "What is the weather in Paris?"
DATA = Path(__file__).resolve().parents[1] / "data" / "duplicate_tool" / "go"


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpServer]:
    with McpServer(request_log=tmp_path_factory.mktemp("mcp") / "requests.jsonl") as server:
        yield server


def _session(mcp: McpServer, turns: list[str], **options: object
             ) -> tuple[list[CommandOutcome], str, list[dict]]:
    """Run ``turns``; return the outcomes, the slog text and the MCP requests of this run."""
    before = len(mcp.requests())
    stream = io.StringIO()
    outcomes = run_session(mcp.url, turns, stream, token=TOKEN, backoff=0.01, **options)
    return outcomes, stream.getvalue(), mcp.requests()[before:]


def _served_calls(requests: list[dict]) -> list[str]:
    """Query strings of the ``tools/call`` requests the MCP server received."""
    return [r["query"] for r in requests if r["mcp_method"] == "tools/call"]


def test_text_turn_succeeds(mcp: McpServer) -> None:
    outcomes, text, requests = _session(mcp, ["Hello there."])
    assert [(o.status, o.deliveries) for o in outcomes] == [("completed", 1)]
    assert outcomes[0].result.text == "Noted: Hello there."
    logs = tk.read_logs(text.splitlines())
    assert set(logs["format"]) == {"slog_text"}
    assert tk.duplicate_tools(logs).empty
    assert _served_calls(requests) == []
    # Both registry entries were listed: the duplicate is there, it just does not bite yet.
    assert sorted(r["query"] for r in requests if r["mcp_method"] == "tools/list") == [
        "", f"token={TOKEN}"]


def test_tool_turn_fails_five_times_then_dead_letters(mcp: McpServer) -> None:
    outcomes, text, requests = _session(mcp, [TOOL_TURN])
    assert [(o.status, o.deliveries) for o in outcomes] == [("deadlettered", 5)]
    assert outcomes[0].error == 'agent run: duplicate tool: "get_weather"'
    logs = tk.read_logs(text.splitlines())
    errors = tk.duplicate_tools(logs)
    go_errors = errors[(errors["kind"] == "go_adk") & (errors["level"] == "error")]
    assert list(go_errors["tool"]) == ["get_weather"] * 5
    assert list(tk.retries(logs)["attempt"]) == [1, 2, 3, 4, 5]
    assert set(tk.retries(logs)["max_attempts"]) == {5}
    dead = tk.dead_letters(logs)
    assert list(dead["reason"]) == ["terminal:unclassified"]
    assert _served_calls(requests) == []
    assert 'error="agent run: duplicate tool: \\"get_weather\\""' in text


def test_the_fix_serves_the_call_on_the_scoped_entry(mcp: McpServer) -> None:
    outcomes, text, requests = _session(mcp, ["Hello there.", TOOL_TURN], endpoint_fix=True)
    assert [(o.status, o.deliveries) for o in outcomes] == [("completed", 1), ("completed", 1)]
    result = outcomes[1].result
    assert result.function_response_part_count == 1
    assert "sunny, 21" in result.text
    scoped = f"bundled-session-memory-{TOKEN}"
    skip = f'[mcp] skipping duplicate toolset "bundled": endpoint already served by "{scoped}"'
    logs = tk.read_logs(text.splitlines())
    assert list(logs["message"]).count(skip) == 2  # once per agent run
    assert tk.duplicate_tools(logs).empty
    assert len(naive_false_positives(logs)) == 2  # grep "duplicate tool" finds the skip lines
    table = command_outcomes(logs)
    assert list(table["status"]) == ["completed", "completed"]
    assert list(table["function_response_part_count"]) == [0, 1]
    assert list(table["served_by"].fillna("")) == ["", scoped]
    # Sensitive: the call reached the server with the session token (fails if the unscoped
    # entry is the one kept, see the next test).
    assert _served_calls(requests) == [f"token={TOKEN}"]


def test_keeping_the_unscoped_entry_loses_the_token(mcp: McpServer) -> None:
    """The naive fix (keep the first entry) also stops the crash: only the token check sees it."""
    outcomes, _, requests = _session(mcp, [TOOL_TURN], endpoint_fix=True, keep="first")
    assert outcomes[0].status == "completed"
    assert _served_calls(requests) == [""]


def test_without_session_memory_there_is_no_duplicate(mcp: McpServer) -> None:
    outcomes, _, requests = _session(mcp, [TOOL_TURN], session_memory=False)
    assert [(o.status, o.deliveries) for o in outcomes] == [("completed", 1)]
    assert _served_calls(requests) == [""]


def test_registry_and_endpoint_decision() -> None:
    registry, ids = agent_servers("http://127.0.0.1:9/mcp", session_memory=True, token="abc")
    assert ids == ["bundled", "bundled-session-memory-abc"]
    assert registry.get(ids[1]).url == "http://127.0.0.1:9/mcp?token=abc"
    assert select_servers(registry, ids) == (["bundled-session-memory-abc"],
                                             [("bundled", "bundled-session-memory-abc")])
    assert select_servers(registry, ids, keep="first") == (
        ["bundled"], [("bundled-session-memory-abc", "bundled")])
    alone, ids_alone = agent_servers("http://127.0.0.1:9/mcp", session_memory=False, token="x")
    assert select_servers(alone, ids_alone) == (["bundled"], [])


def test_pack_tool_refuses_a_name_already_declared() -> None:
    toolset = McpToolset("a", "http://127.0.0.1:9/mcp")
    request = LlmRequest()
    pack_tool(request, McpTool('say "hi"', "", toolset))
    with pytest.raises(DuplicateToolError) as caught:
        pack_tool(request, McpTool('say "hi"', "", McpToolset("b", "http://127.0.0.1:9/mcp")))
    assert str(caught.value) == 'duplicate tool: "say \\"hi\\""'  # Go's %q


def test_slog_shapes_read_back() -> None:
    assert format_text_value("plain") == "plain"
    assert format_text_value('a "b"') == '"a \\"b\\""'
    assert format_text_value("") == '""' and format_text_value(True) == "true"
    for fmt, family in (("text", "slog_text"), ("json", "slog_json")):
        stream = io.StringIO()
        SlogLogger(stream, fmt=fmt).with_attrs(command_id="c-1").warn(
            "command failed with retryable error", delivery_attempt=3,
            error='agent run: duplicate tool: "x"')
        logs = tk.read_logs(stream.getvalue().splitlines())
        assert list(logs["format"]) == [family]
        assert logs["level"].iloc[0] == "warning"
        assert logs["fields"].iloc[0]["error"] == 'agent run: duplicate tool: "x"'
        assert tk.retries(logs)["attempt"].iloc[0] == 3


def test_recorded_lab_data_agrees_with_its_metadata() -> None:
    meta = json.loads((DATA / "meta.json").read_text(encoding="utf-8"))
    for run in meta["runs"]:
        logs = tk.read_logs(DATA / run["log"])
        table = command_outcomes(logs)
        assert list(table["status"]) == [c["status"] for c in run["commands"]]
        assert list(table["deliveries"]) == [c["deliveries"] for c in run["commands"]]
        strict = tk.duplicate_tools(logs)
        if run["endpoint_fix"]:
            assert strict.empty and run["tool_calls"] == [
                {"query": f"token={meta['session_token']}", "tool": "get_weather", "count": 1}]
        else:
            assert set(strict["tool"]) == {"get_weather"} and run["tool_calls"] == []
    endpoints = tk.mcp_endpoints(DATA / "registry.json")
    assert endpoints["group_size"].tolist() == [2, 2]
    assert endpoints.loc[endpoints["keep"], "id"].tolist() == [
        f"bundled-session-memory-{meta['session_token']}"]


def test_delivery_timeline_reads_each_record_once() -> None:
    logs = tk.read_logs(DATA / "before.log")
    timeline = delivery_timeline(logs)
    assert timeline["line"].is_unique
    assert timeline["kind"].tolist() == ["duplicate_tool", "retry"] * 5 + ["dead_letter"]
    assert timeline["seconds"].is_monotonic_increasing and timeline["seconds"].iloc[0] == 0
    # The bus backs off (0.1 s, doubling): the gaps between deliveries grow.
    gaps = timeline.loc[timeline["kind"] == "retry", "seconds"].diff().dropna()
    assert gaps.is_monotonic_increasing
    fig = plot_delivery_timeline(timeline)
    assert len(fig.axes[0].collections) == 3


def test_pattern_comparison_and_request_log(tmp_path: Path) -> None:
    table = pattern_comparison({"before": tk.read_logs(DATA / "before.log"),
                                "after": tk.read_logs(DATA / "after.log")})
    assert table.to_dict("index") == {"before": {"naive": 11, "strict": 5, "false_positives": 0},
                                      "after": {"naive": 2, "strict": 0, "false_positives": 2}}
    requests = read_mcp_requests(DATA / "after.text.mcp.jsonl")
    assert requests["time"].dt.tz is not None
    assert requests.loc[requests["mcp_method"] == "tools/call", "query"].tolist() == [
        "token=s3ss10n"]
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"seq": 1}\nnot json\n', encoding="utf-8")
    with pytest.raises(LogFormatError, match="line 2"):
        read_mcp_requests(broken)


def test_toolset_activities_name_the_toolset_that_served_the_call() -> None:
    python = DATA.parent / "python"
    events = tk.read_history(python / "two_toolsets.json")
    table = toolset_activities(events)
    assert table.to_dict("index") == {"weather": {"list-tools": 2, "call-tool": 0},
                                      "weather-token": {"list-tools": 2, "call-tool": 1}}


@pytest.mark.slow
def test_record_go_writes_consistent_files(tmp_path: Path) -> None:
    paths = record_go(tmp_path, backoff=0.01)
    assert {p.name for p in paths} >= {"before.log", "after.log", "before.jsonl",
                                       "registry.json", "meta.json"}
    assert not list(tmp_path.glob("*.stderr.log"))
    meta = json.loads((tmp_path / "meta.json").read_text(encoding="utf-8"))
    assert [[c["status"] for c in run["commands"]] for run in meta["runs"]] == [
        ["completed", "deadlettered"], ["completed", "completed"],
        ["completed", "deadlettered"]]


@pytest.mark.slow
@pytest.mark.server
def test_python_capture_is_timestamped_and_correlates(dev_server: object, tmp_path: Path
                                                      ) -> None:
    from toolkit.lab.hosted_runtime.adk_capture import capture_python_duplicate_tools
    from toolkit.logs.correlate import correlate

    paths = capture_python_duplicate_tools(dev_server.address, tmp_path)  # type: ignore[attr-defined]
    logs = tk.read_logs(tmp_path / "worker.log")
    assert logs["ts"].notna().all() and logs["parse_error"].isna().all()
    kinds = set(tk.duplicate_tools(logs)["kind"])
    assert {"python_adk", "mcp_plugin"} <= kinds and "go_adk" not in kinds
    events = pd.concat([tk.read_history(p) for p in paths if p.suffix == ".json"
                        and p.name != "capture.meta.json"], ignore_index=True)
    assert set(toolset_activities(events[events["run_id"] == events["run_id"].iloc[0]])
               .index) == {"weather", "weather-token"}
    matched = correlate(logs, events, how="inner")
    assert "activity_attempt" in set(matched["match"])
