"""Agent roles, turns, model steps and listings per turn on real histories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.agents.roles import PRESETS, Roles, detect_roles
from toolkit.agents.turns import activity_spans, agent_steps, listings_per_turn
from toolkit.errors import ToolkitError
from toolkit.histories.reading.read import read_history

ROOT = Path(__file__).resolve().parents[1]
ADK = ROOT / "data" / "adk"


def test_presets_classify_their_activity_names() -> None:
    assert PRESETS["go_googleadk"].role_of("ListMcpTools") == "listing"
    assert PRESETS["python_adk"].role_of("weather-call-tool") == "tool_call"
    assert PRESETS["python_adk"].role_of("invoke_model") == "model"
    assert PRESETS["openai_agents"].role_of("invoke_model") == "other"
    pyd = PRESETS["pydantic_ai"]
    assert pyd.role_of("agent__support__model_request") == "model"
    assert pyd.role_of("agent__support__mcp_server__weather__get_tools") == "listing"
    assert pyd.role_of("agent__support__toolset__math__call_tool") == "tool_call"
    assert detect_roles(["ListMcpTools", "InvokeModel"]) is PRESETS["go_googleadk"]


def test_openai_agents_mcp_history_steps(corpus: Path) -> None:
    path = corpus / "histories/temporalio__sdk-python/mcp-history-stateful.json"
    steps = agent_steps(read_history(path))
    assert steps.turn.unique().tolist() == [1]
    assert steps.step.tolist() == [1, 2, 3]
    assert steps.listings_before.tolist() == [1, 1, 1]
    assert steps.tool_calls.tolist() == [1, 1, 0]
    assert steps.sequence.tolist() == ["o L M C", "L M C", "L M"]  # o = the server session
    spans = activity_spans(path)
    assert len(spans) == 9 and spans.closed.notna().sum() == 8  # the session never closes


def test_updates_are_turns(corpus: Path) -> None:
    path = corpus / "histories/temporalio__sdk-python/customer-service-workflow-history.json"
    turns = listings_per_turn(path)
    assert (turns.trigger == "update:process_user_message").all()
    assert turns.model_steps.tolist() == [1, 2, 1, 2]
    assert (turns.sdk_version == "1.13.0").all()


def test_custom_roles_and_unknown_framework(corpus: Path) -> None:
    path = corpus / "histories/temporalio__sdk-python/mcp-history-stateful.json"
    custom = Roles("custom", r"invoke_model_activity", r".*-list-tools", r"nothing")
    assert agent_steps(path, roles=custom).tool_calls.sum() == 0
    with pytest.raises(ToolkitError, match="no agent framework recognised"):
        agent_steps(corpus / "histories/temporalio__samples-go/helloworld.json")
    with pytest.raises(ToolkitError, match="unknown roles preset"):
        agent_steps(path, roles="langchain")


def test_lab_listings_agree_with_the_recorders_counts() -> None:
    metas = sorted(ADK.glob("*/*.meta.json")) if ADK.is_dir() else []
    if not metas:
        pytest.skip("data/adk not recorded yet (make record)")
    table = listings_per_turn(ADK)
    checked = 0
    for meta_path in metas:
        meta = json.loads(meta_path.read_text())
        if "listings_per_turn" not in meta:
            continue
        history = str(meta_path).removesuffix(".meta.json") + ".json"
        mine = table[table.source == history].sort_values("turn")
        assert mine.listings.tolist() == meta["listings_per_turn"], history
        assert (mine.label == meta["env"]).all()
        checked += 1
    assert checked >= 4
    one_call = table[(table.meta_scenario == "two_turns") & (table.tool_calls == 1)]
    assert len(one_call) >= 1
    for version, listings in zip(one_call.meta_google_adk, one_call.listings, strict=True):
        release = tuple(int(part) for part in str(version).split(".")[:2])
        assert listings == (3 if release < (1, 29) else 1), version


def test_a_stuck_turn_is_a_turn_and_a_closing_signal_is_not() -> None:
    upgrade = ADK / "adk-1.28.1" / "rolling_upgrade_to_adk-1.29.0.json"
    two_toolsets = ADK / "adk-1.27.5" / "two_toolsets.json"
    if not upgrade.is_file() or not two_toolsets.is_file():
        pytest.skip("data/adk not recorded yet (make record)")
    turns = listings_per_turn(upgrade)
    stuck = turns[turns.turn == 2].iloc[0]
    assert stuck.trigger == "signal:user_turn"
    assert (stuck.listings, stuck.model_steps, stuck.tool_calls, stuck.sequence) == (0, 0, 0, "")
    steps = agent_steps(upgrade)
    assert steps[steps.turn == 2].step.tolist() == [0]  # the stuck turn keeps a row
    # The "finish" signal closed the workflow in a completed task: no turn of its own.
    assert listings_per_turn(two_toolsets).trigger.tolist() == ["signal:user_turn"] * 2
