"""The OpenAI Agents recordings in data/openai_agents, and the openai_agents role preset on them.

Recorded by ``make record`` (part ``openai_agents``: a real worker of each openai-agents release in
its own virtual environment, temporalio's integration, the dev server, a real MCP server over
HTTP, the scripted model provider); too slow for CI, so these tests check what it wrote: every
scenario and release, the listings, what duplicate tool names do, the replay matrix, and that
``agent_steps`` / ``listings_per_turn`` / ``step_commands`` read the histories right.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lab_recordings import (
    assert_preset_reads_two_turns,
    event_attributes,
    load_recording,
    recordings_dir,
    scheduled_activity_types,
)

import toolkit as tk
from toolkit.agents.roles import PRESETS, detect_roles
from toolkit.lab.adk_python.matrix import MATRIX_NAME, history_files, read_matrix
from toolkit.lab.adk_python.scenarios import TOKEN_QUERY
from toolkit.lab.model import scripted_usage
from toolkit.lab.openai_agents.envs import ENVIRONMENTS, environment
from toolkit.lab.openai_agents.scenarios import SCENARIOS, UPGRADES
from toolkit.replay.divergence import first_divergence

DATA = recordings_dir("openai_agents")
LIST, MODEL = "weather-stateless-list-tools", "invoke_model_activity"
CALL = "weather-stateless-call-tool-v2"
V2_LIST, V2_CALL = "temporalio.mcp.weather.list-tools", "temporalio.mcp.weather.call-tool"
DUPLICATE = (
    "Duplicate tool names found across MCP servers: add, get_weather, lookup_order. Pass "
    "`include_server_in_tool_names=True` to `MCPUtil.get_all_function_tools()` or set "
    "`mcp_config={'include_server_in_tool_names': True}` on the agent to prefix tool names with "
    "their server name and avoid collisions.")

@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_every_scenario_is_recorded_with_the_pinned_versions(env: Any) -> None:
    recorded = {p.name for p in (DATA / env.name).glob("*.meta.json")}
    for scenario in SCENARIOS:
        if scenario.mcp_v2 and not env.mcp_v2:  # the contrib integration has no MCP v2 servers
            assert f"{scenario.name}.meta.json" not in recorded
            continue
        history, meta = load_recording(DATA, env.name, scenario.name)
        assert (meta["scenario"], meta["env"]) == (scenario.name, env.name)
        assert (meta["openai_agents"], meta["temporalio"]) == (env.openai_agents, env.temporalio)
        contrib = env.integration == "temporalio"
        assert meta["integration_module"] == ("temporalio.contrib.openai_agents" if contrib
                                              else "temporalio.openai_agents")
        assert meta["events"] == len(history["events"]) and meta["run_id"]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_every_release_lists_once_per_model_step_unless_cached(env: Any) -> None:
    _, plain = load_recording(DATA, env.name, "two_turns")
    assert plain["status"] == "COMPLETED"
    assert plain["activities"] == [LIST, MODEL, CALL, LIST, MODEL, LIST, MODEL]
    assert plain["listings_per_turn"] == [2, 1]
    _, cached = load_recording(DATA, env.name, "two_turns_cached")
    assert cached["status"] == "COMPLETED"
    assert cached["activities"] == [LIST, MODEL, CALL, MODEL, MODEL]
    assert cached["listings_per_turn"] == [1, 0]


@pytest.mark.parametrize("env", [e for e in ENVIRONMENTS if e.mcp_v2], ids=lambda e: e.name)
def test_mcp_v2_servers_list_once_per_workflow_by_default(env: Any) -> None:
    _, meta = load_recording(DATA, env.name, "mcp_v2")
    assert meta["status"] == "COMPLETED" and meta["temporalio_mcp"] == "0.2.0"
    assert meta["activities"] == [V2_LIST, MODEL, V2_CALL, MODEL, MODEL]
    assert meta["listings_per_turn"] == [1, 0]


def _cases(env: Any) -> list[tuple[str, list[int], list[str], str]]:
    cases = [("two_turns", [1, 1, 1], ["L M C", "L M", "L M"], CALL),
             ("two_turns_cached", [1, 0, 0], ["L M C", "M", "M"], CALL)]
    if env.mcp_v2:
        cases.append(("mcp_v2", [1, 0, 0], ["L M C", "M", "M"], V2_CALL))
    return cases


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_the_preset_reads_turns_steps_listings_and_calls(env: Any) -> None:
    for name, listed, sequences, call in _cases(env):
        steps = assert_preset_reads_two_turns(DATA, env.name, name, listed, call)
        assert steps["sequence"].tolist() == sequences


def test_every_history_is_recognised_as_openai_agents() -> None:
    for path in history_files(DATA):
        assert detect_roles(scheduled_activity_types(path)) is PRESETS["openai_agents"], path


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
@pytest.mark.parametrize("name", ["two_servers", "same_server_twice"])
def test_duplicate_names_across_servers_fail_the_workflow_task(env: Any, name: str) -> None:
    history, meta = load_recording(DATA, env.name, name)
    # Raised inside workflow code: the workflow task fails and retries, no activity fails.
    failed = event_attributes(history, "workflowTaskFailedEventAttributes")
    assert failed and {f["cause"] for f in failed} == {
        "WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE"}
    assert {(f["failure"]["applicationFailureInfo"]["type"], f["failure"]["message"])
            for f in failed} == {("UserError", DUPLICATE)}
    assert not event_attributes(history, "activityTaskFailedEventAttributes")
    second = "weather-token-stateless-list-tools" if name == "two_servers" else LIST
    assert meta["activities"] == [LIST, second]  # both listed, then nothing more
    assert meta["turns"][0]["status"] == "WORKFLOW_TASK_FAILED"
    sequence = meta["mcp_requests"]["tools_sequence"]
    assert [r["mcp_method"] for r in sequence] == ["tools/list", "tools/list"]
    queries = [r["query"] for r in sequence]
    assert queries == (["", TOKEN_QUERY] if name == "two_servers" else ["", ""])


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_a_server_listing_every_tool_twice_is_silently_accepted(env: Any) -> None:
    history, meta = load_recording(DATA, env.name, "list_twice")
    assert meta["status"] == "COMPLETED" and meta["turns"][0]["reply"].startswith("get_weather")
    assert meta["activities"].count(CALL) == 1
    assert not event_attributes(history, "workflowTaskFailedEventAttributes")


def test_rolling_upgrade_across_the_integration_move_completes() -> None:
    upgrade = UPGRADES[0]
    history, meta = load_recording(DATA, upgrade.before, upgrade.name)
    assert meta["integration_module"] == "temporalio.contrib.openai_agents"
    assert meta["versions_after"]["integration_module"] == "temporalio.openai_agents"
    assert meta["status"] == "COMPLETED" and all(t["reply"] for t in meta["turns"])
    assert meta["listings_per_turn"] == [2, 1]
    assert not event_attributes(history, "workflowTaskFailedEventAttributes")


def _written_by_standalone(row: dict[str, str]) -> bool:
    """Whether the history's last worker ran the temporalio-openai-agents package."""
    _, meta = load_recording(DATA, *row["history"].removesuffix(".json").split("/"))
    last = meta.get("versions_after", meta)
    return bool(last["integration_module"] == "temporalio.openai_agents")


def test_matrix_breaks_only_when_the_contrib_integration_replays_newer_histories() -> None:
    rows = read_matrix(DATA / MATRIX_NAME)
    histories = [p.relative_to(DATA).as_posix() for p in history_files(DATA)]
    assert sorted((r["history"], r["replayer_env"]) for r in rows) == sorted(
        (h, e.name) for h in histories for e in ENVIRONMENTS)
    for row in rows:
        contrib = environment(row["replayer_env"]).integration == "temporalio"
        if contrib and row["history"].endswith("/mcp_v2.json"):
            # The workflow code of the contrib integration has no MCP v2 server to build.
            assert (row["outcome"], row["error_type"]) == ("error", "RuntimeError"), row
            assert "temporal_mcp_server" in row["message"]
        elif contrib and _written_by_standalone(row):
            # Not a nondeterminism error: the listing result the new stack recorded (mcp 2)
            # decodes to dicts in the old one (mcp 1), and openai-agents reads tool.name.
            assert (row["outcome"], row["error_type"]) == ("error", "RuntimeError"), row
            assert "'dict' object has no attribute 'name'" in row["message"]
        else:
            assert row["outcome"] == "ok", row


def test_moving_to_mcp_v2_servers_breaks_running_workflows() -> None:
    # Same listings (the cache on), other activity names: sdk-core's model of the new code's
    # commands against the old history.
    env = next(e for e in ENVIRONMENTS if e.mcp_v2)
    found = first_divergence(DATA / env.name / "two_turns_cached.json",
                             DATA / env.name / "mcp_v2.json")
    assert found is not None and found.core_message == (
        "[TMPRL1100] Nondeterminism error: Activity type of scheduled event "
        f"'{LIST}' does not match activity type of activity command '{V2_LIST}'")


def _reply(result: dict[str, Any]) -> dict[str, Any]:
    """The script's reply a recorded ``ModelResponse`` holds (a tool call or a text)."""
    (item,) = result["output"]
    if item["type"] == "function_call":
        return {"function_call": {"name": item["name"], "args": json.loads(item["arguments"])}}
    return {"text": item["content"][0]["text"]}


def _usage_against_payloads(paths: list[Path]) -> list[tuple[int, int]]:
    """``(input tokens, model-call input bytes)`` of every completed model call in ``paths``,
    asserting its recorded ``Usage`` is ``scripted_usage`` of the activity's own payloads."""
    checked = []
    for path in paths:
        events = tk.read_history(path)
        acts = tk.activities(events)
        sizes = dict(tk.model_calls(events)[["event_id", "input_bytes"]].itertuples(index=False))
        for act in acts[acts["activity_type"] == MODEL].to_dict("records"):
            if act["outcome"] != "completed":
                continue
            (request,), (result,) = act["input"], act["result"]
            sent = {"system_instructions": request["system_instructions"],
                    "input": request["input"],
                    "tools": [{"name": t["name"], "description": t["description"],
                               "parameters": t["params_json_schema"]}
                              for t in request["tools"]]}  # fmt: skip
            usage = result["usage"]
            assert scripted_usage(sent, _reply(result)) == (
                usage["input_tokens"], usage["output_tokens"]), (path.name, act["activity_id"])
            checked.append((usage["input_tokens"], sizes[act["scheduled_event_id"]]))
    return checked


def test_the_scripted_usage_counts_the_request_the_activity_carried() -> None:
    # One token per 4 bytes of what the model was sent (instructions, the conversation, the
    # declared tools) and of its reply, as the activity's payloads hold them: a turn's count
    # follows its bytes (turn 2 of two_turns was once counted off the text of a pydantic
    # iterator, 3,512 tokens for 2,114 bytes).
    checked = _usage_against_payloads(history_files(DATA))
    assert len(checked) == 41
    # The request is most of the activity's input, in 4-byte tokens (the input also carries
    # the model settings): the ledger's input_tokens stay near input_bytes / 4.
    assert all(nbytes / 8 < tokens < nbytes / 4 for tokens, nbytes in checked), checked


def test_the_history_budget_loops_count_the_request_the_activity_carried() -> None:
    # The same count in the history-budget lab's long tool loops (data/history_budget): every
    # model call after the first holds the assistant's tool calls, which the script once counted
    # off a pydantic iterator's text (59 of 231 calls over-counted, up to 2.85x).
    budget_dir = DATA.parent / "history_budget" / "oa-0.22.3"
    if not budget_dir.is_dir():
        pytest.skip(f"no recorded data in {budget_dir} (run `make record-history-budget`)")
    checked = _usage_against_payloads(sorted(budget_dir.glob("*.json.gz")))
    assert len(checked) == 231
    assert all(nbytes / 8 < tokens < nbytes / 4 for tokens, nbytes in checked), checked
