"""agent_steps' payload columns (agent, declared_tools, requested_tools, handoff) and its tool
calls matched to what ran, on the public OpenAI Agents and ADK test histories
(tests/fixtures/agent_histories) and every lab recording; duplicate declarations found by
``duplicate_tools(events)`` and ``investigate`` from the histories alone."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.agents.roles import detect_roles

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ROOT / "tests" / "fixtures" / "agent_histories"
DATA = ROOT / "data"
LAB = {
    "adk": [*DATA.glob("adk/*/*.json"), *DATA.glob("duplicate_tool/python/*.json")],
    "openai_agents": list(DATA.glob("openai_agents/*/*.json")),
    "pydantic_ai": list(DATA.glob("pydantic_ai/*/*.json")),
    "go_twin": list(DATA.glob("go_twin/*/*.json")),
}
IN_WORKFLOW = {"H", "A", "W"}


def steps_of(name: str) -> pd.DataFrame:
    return tk.agent_steps(PUBLIC / name)


def test_a_function_tool_run_as_an_activity_is_a_tool_call() -> None:
    for name in ("tools-workflow-history.json", "single_agent.json"):
        steps = steps_of(name)
        assert steps["sequence"].tolist() == ["M C", "M"], name
        assert steps["tool_calls"].tolist() == [1, 0] and steps["other"].tolist() == [0, 0]
        assert steps["tool_call_activities"].tolist() == [["get_weather"], []]
        assert steps["tool_call_kinds"].tolist() == [["activity"], []]
        assert steps["requested_tools"].tolist() == [["get_weather"], []]
        assert steps["declared_tools"].tolist() == [["get_weather"]] * 2
    assert steps_of("single_agent.json")["agent"].tolist() == ["test_agent"] * 2


def test_handoffs_and_tools_run_in_the_workflow() -> None:
    steps = steps_of("customer-service-workflow-history.json")
    assert steps["sequence"].tolist() == ["M", "M H", "M", "M", "M W", "M"]
    assert steps["handoff"].tolist() == [None, "Seat Booking Agent", None, None, None, None]
    assert steps["agent"].tolist() == [None, None] + ["Seat Booking Agent"] * 4
    assert steps.loc[4, "tool_call_names"] == ["update_seat"]
    assert steps.loc[4, "tool_call_kinds"] == ["workflow"]
    assert steps.loc[1, "tool_call_kinds"] == ["handoff"]
    assert steps["declared_tools"].iloc[2] == ["update_seat", "transfer_to_triage_agent"]
    multi = steps_of("multi_agent.json")
    assert multi["sequence"].tolist() == ["M H", "M H", "M"]
    assert multi["agent"].tolist() == ["coordinator", "researcher", "writer"]
    assert multi["handoff"].tolist() == ["researcher", "writer", None]


def test_an_agent_used_as_a_tool() -> None:
    steps = steps_of("agents-as-tools-workflow-history.json")
    assert steps["sequence"].tolist() == ["M A", "M", "M", "M"]
    assert steps.loc[0, "tool_call_names"] == ["translate_to_spanish"]
    assert steps.loc[0, "tool_call_kinds"] == ["agent_as_tool"]


def test_a_call_still_open_has_no_requested_tools() -> None:
    steps = steps_of("input-guardrail-workflow-history.json")
    assert steps["requested_tools"].isna().sum() == 1  # the guardrail's call never completed
    assert steps["declared_tools"].map(len).tolist() == [0, 0, 0, 0]


def _mcp_calls(path: Path) -> int:
    history = json.loads(path.read_text())
    types = [e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
             for e in history["events"] if "activityTaskScheduledEventAttributes" in e]
    roles = detect_roles(types)
    return sum(roles.role_of(t) == "tool_call" for t in types)


@pytest.mark.parametrize("framework", sorted(LAB))
def test_lab_steps_say_what_the_payloads_say(framework: str) -> None:
    paths = [p for p in LAB[framework] if not p.name.endswith(".meta.json")]
    assert paths
    model_steps = 0
    for path in paths:
        steps = tk.agent_steps(path)
        models = steps[steps["model_event_id"].notna()]
        model_steps += len(models)
        # Every model step shows what it was offered and who asked.
        assert models["declared_tools"].map(bool).all(), path
        assert models["agent"].notna().all(), path
        # Every tool call is counted once, in the sequence too; on the lab every one is MCP.
        letters = steps["sequence"].map(
            lambda s: sum(x == "C" or x in IN_WORKFLOW for x in s.split()))
        assert (letters == steps["tool_calls"]).all(), path
        assert steps["tool_calls"].sum() == _mcp_calls(path), path
        assert {k for kinds in steps["tool_call_kinds"] for k in kinds} <= {"mcp"}, path
        # What ran is what the model asked for (but a tool filtered out before it ran).
        asked = Counter(n for names in models["requested_tools"].dropna() for n in names)
        ran = Counter(n for names in steps["tool_call_names"] for n in names)
        assert ran <= asked, path
        if path.stem != "confirmation_excluded":
            assert ran == asked, path
    assert model_steps > 0


def test_two_toolsets_on_one_endpoint_show_the_duplicate_declaration() -> None:
    path = DATA / "duplicate_tool" / "python" / "two_toolsets.json"
    steps = tk.agent_steps(path)
    assert all(Counter(d) == {"add": 2, "get_weather": 2, "lookup_order": 2}
               for d in steps["declared_tools"])  # fmt: skip
    found = tk.duplicate_tools(tk.read_history(path))
    declared = found[found["kind"] == "declared_twice"]
    assert len(declared) == len(steps)
    assert set(declared["tool"]) == {"add, get_weather, lookup_order"}
    assert declared["event_id"].tolist() == steps["model_event_id"].astype(int).tolist()
    assert set(declared["behaviour"]) == {"declared"}
    assert set(declared["framework"]) == {"python_adk"}
    # The other recording of that capture lists each tool twice on one toolset: the same.
    again = tk.duplicate_tools(tk.read_history(path.with_name("list_twice.json")))
    assert (again["kind"] == "declared_twice").sum() >= 1


def test_a_single_toolset_declares_each_tool_once() -> None:
    found = tk.duplicate_tools(tk.read_history(DATA / "adk" / "adk-2.13.0" / "two_turns.json"))
    assert found.empty


def test_investigate_reports_declarations_from_the_histories_alone() -> None:
    found = tk.investigate(DATA / "adk")
    findings = found.findings
    twice = findings[findings["title"].str.contains("declared twice to the model")]
    assert len(twice) == 1 and twice["kind"].iloc[0] == "duplicate_tool"
    assert "add, get_weather, lookup_order" in twice["title"].iloc[0]
    change = findings[findings["title"].str.startswith("Tools declared to the model change")]
    assert len(change) == 1 and change["kind"].iloc[0] == "listing_change"
    # google-adk 2.5.0 declares the same tools in another order than 2.2.0 and before.
    text = change["explanation"].iloc[0]
    assert "[get_weather, add, lookup_order] (adk-1.27.5 ... adk-2.2.0)" in text
    assert "[add, get_weather, lookup_order] (adk-2.5.0, adk-2.9.2, adk-2.13.0)" in text
    rows = found.evidence["declared_duplicates"]
    counted = f": {len(rows)} model calls in {twice['run_count'].iloc[0]} runs"
    assert counted in twice["title"].iloc[0]
    assert set(rows["kind"]) == {"declared_twice"}
    assert "declared_twice" not in set(found.evidence["duplicate_tools_in_history"]["kind"])
    summary = found.evidence["declared_summary"]
    assert set(summary["label"]) == set(found.runs["label"])
    assert len(found.evidence["declared_tools"]) == sum(
        len(tk.agent_steps(p).dropna(subset=["model_event_id"]))
        for p in DATA.glob("adk/*/*.json") if not p.name.endswith(".meta.json"))
