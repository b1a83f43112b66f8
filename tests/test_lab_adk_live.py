"""Recorder A live: the installed google-adk, real dev server, real MCP server, real plugin."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")

from toolkit.lab.adk_python import record_live
from toolkit.lab.adk_python.envs import MAIN_ENV
from toolkit.lab.adk_python.recorder import record_env
from toolkit.lab.adk_python.scenarios import TOKEN_QUERY, scenario

pytestmark = pytest.mark.server

LIST, MODEL, CALL = "weather-list-tools", "invoke_model", "weather-call-tool"


@pytest.fixture(scope="module")
def live(dev_server: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("adk-live")
    return {path.stem: path for path in record_live(dev_server.address, out)}


def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    history = json.loads(path.read_text())
    meta = json.loads(path.with_suffix(".meta.json").read_text())
    return history, meta


def test_two_turns_lists_once_per_turn(live: dict[str, Path]) -> None:
    history, meta = _load(live["two_turns"])
    assert history["events"][0]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"
    assert meta["google_adk"] == MAIN_ENV.google_adk and meta["env"] == MAIN_ENV.name
    assert meta["status"] == "COMPLETED"
    # google-adk >= 1.29: L M C M for the tool turn, L M for the plain turn.
    assert meta["activities"] == [LIST, MODEL, CALL, MODEL, LIST, MODEL]
    assert meta["listings_per_turn"] == [1, 1]
    assert [t["reply"] for t in meta["turns"]] == [
        "get_weather says: The weather in Paris is sunny, 21 °C.",
        "Noted: Thanks, that is all.",
    ]
    calls = [r for r in meta["mcp_requests"]["tools_sequence"] if r["mcp_method"] == "tools/call"]
    assert calls == [{"mcp_method": "tools/call", "tool": "get_weather", "query": ""}]


def test_two_toolsets_route_the_call_to_the_token_endpoint(live: dict[str, Path]) -> None:
    history, meta = _load(live["two_toolsets"])
    token_call = "weather-token-call-tool"
    assert token_call in meta["activities"] and CALL not in meta["activities"]
    assert meta["activities"].count(LIST) == meta["activities"].count("weather-token-list-tools")
    # The history shows the endpoint the call went to (the toolset's factory argument).
    scheduled = [e["activityTaskScheduledEventAttributes"] for e in history["events"]
                 if "activityTaskScheduledEventAttributes" in e]
    call_input = next(a for a in scheduled if a["activityType"]["name"] == token_call)["input"]
    assert TOKEN_QUERY.encode().hex() in _payload_hex(call_input)
    calls = [r for r in meta["mcp_requests"]["tools_sequence"] if r["mcp_method"] == "tools/call"]
    assert [(c["tool"], c["query"]) for c in calls] == [("get_weather", TOKEN_QUERY)]
    sequence = meta["mcp_requests"]["tools_sequence"]
    listed_on = {r["query"] for r in sequence if r["mcp_method"] == "tools/list"}
    assert listed_on == {"", TOKEN_QUERY}


def _payload_hex(payloads: dict[str, Any]) -> str:
    import base64

    return "".join(base64.b64decode(p["data"]).hex() for p in payloads["payloads"])


def test_a_server_listing_twice_fails_the_call_tool_activity(
    dev_server: Any, tmp_path: Path
) -> None:
    (path,) = asyncio.run(record_env(MAIN_ENV, dev_server.address, tmp_path,
                                     scenarios=(scenario("list_twice"),)))
    history, meta = _load(path)
    assert meta["status"] == "FAILED"
    assert meta["activities"] == [LIST, MODEL, CALL]
    failures = [e["activityTaskFailedEventAttributes"]["failure"]["message"]
                for e in history["events"] if "activityTaskFailedEventAttributes" in e]
    assert failures == ["Found multiple MCP tools with the same name: get_weather"]
    assert history["events"][-1]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_FAILED"
