"""The pydantic-ai recordings in data/pydantic_ai, and the pydantic_ai role preset on them.

Recorded by ``make record`` (part ``pydantic_ai``: a real worker of each pydantic-ai release in its
own virtual environment with ``TemporalAgent`` s, the dev server, real MCP servers over HTTP, a
``FunctionModel`` as the scripted model); these tests check what it wrote: listings per turn per
release, what two toolsets on one endpoint do, the rolling upgrade across the listing change, the
replay matrix, and that ``agent_steps`` / ``listings_per_turn`` / ``step_commands`` read them.
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

from toolkit.agents.roles import PRESETS, detect_roles
from toolkit.lab.adk_python.matrix import MATRIX_NAME, history_files, read_matrix
from toolkit.lab.adk_python.scenarios import TOKEN_QUERY
from toolkit.lab.pydantic_ai.envs import ENVIRONMENTS
from toolkit.lab.pydantic_ai.scenarios import SCENARIOS, UPGRADES

DATA = recordings_dir("pydantic_ai")
CONFLICT = (
    "MCPToolset 'weather_token' defines a tool whose name conflicts with existing tool from "
    "MCPToolset 'weather': 'get_weather'. Rename the tool or wrap the toolset in a "
    "`PrefixedToolset` to avoid name conflicts.")

def _names(agent: str) -> tuple[str, str, str]:
    prefix = f"agent__{agent}"
    return (f"{prefix}__mcp_server__weather__get_tools", f"{prefix}__model_request",
            f"{prefix}__mcp_server__weather__call_tool")


def _caches_per_process(env: Any) -> bool:
    """pydantic-ai 2.2.0 keeps the cached tool list on the agent's Temporal toolset object,
    shared by every workflow of the worker process (later runs schedule no listing)."""
    return tuple(int(p) for p in env.pydantic_ai.split(".")[:2]) < (2, 40)


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_every_scenario_is_recorded_with_the_pinned_versions(env: Any) -> None:
    for scenario in SCENARIOS:
        history, meta = load_recording(DATA, env.name, scenario.name)
        assert (meta["scenario"], meta["env"]) == (scenario.name, env.name)
        assert (meta["pydantic_ai"], meta["temporalio"]) == (env.pydantic_ai, env.temporalio)
        assert meta["events"] == len(history["events"]) and meta["run_id"]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_listings_per_turn_per_release(env: Any) -> None:
    get_tools, model, call = _names("two_turns")
    _, cached = load_recording(DATA, env.name, "two_turns")
    assert cached["status"] == "COMPLETED"
    if _caches_per_process(env):
        assert cached["activities"] == [get_tools, model, call, model, model]
        assert cached["listings_per_turn"] == [1, 0]
    else:
        assert cached["activities"] == [get_tools, model, call, model, get_tools, model]
        assert cached["listings_per_turn"] == [1, 1]
    get_tools, model, call = _names("two_turns_uncached")
    _, uncached = load_recording(DATA, env.name, "two_turns_uncached")
    assert uncached["activities"] == [get_tools, model, call, get_tools, model, get_tools, model]
    assert uncached["listings_per_turn"] == [2, 1]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_the_preset_reads_turns_steps_listings_and_calls(env: Any) -> None:
    cached_turn_2 = [0] if _caches_per_process(env) else [1]
    for name, listed in (("two_turns", [1, 0, *cached_turn_2]),
                         ("two_turns_uncached", [1, 1, 1])):
        assert_preset_reads_two_turns(DATA, env.name, name, listed, _names(name)[2])


def test_every_history_is_recognised_as_pydantic_ai() -> None:
    for path in history_files(DATA):
        assert detect_roles(scheduled_activity_types(path)) is PRESETS["pydantic_ai"], path


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_two_toolsets_on_one_endpoint_fail_the_workflow(env: Any) -> None:
    history, meta = load_recording(DATA, env.name, "two_servers")
    # UserError is one of the plugin's workflow failure types: the run fails at once, before
    # any model request, after both toolsets listed their tools.
    assert meta["status"] == "FAILED"
    failed = event_attributes(history, "workflowExecutionFailedEventAttributes")
    assert [(f["failure"]["applicationFailureInfo"]["type"], f["failure"]["message"])
            for f in failed] == [("UserError", CONFLICT)]
    assert not event_attributes(history, "workflowTaskFailedEventAttributes")
    assert meta["activities"] == ["agent__two_servers__mcp_server__weather__get_tools",
                                  "agent__two_servers__mcp_server__weather_token__get_tools"]
    assert [r["query"] for r in meta["mcp_requests"]["tools_sequence"]] == ["", TOKEN_QUERY]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_a_server_listing_every_tool_twice_is_silently_accepted(env: Any) -> None:
    history, meta = load_recording(DATA, env.name, "list_twice")
    assert meta["status"] == "COMPLETED" and meta["turns"][0]["reply"].startswith("get_weather")
    assert meta["activities"].count(_names("list_twice")[2]) == 1
    assert not event_attributes(history, "activityTaskFailedEventAttributes")


def test_rolling_upgrade_across_the_listing_change_fails_the_workflow_task() -> None:
    upgrade = UPGRADES[0]
    history, meta = load_recording(DATA, upgrade.before, upgrade.name)
    assert [t["status"] for t in meta["turns"]] == ["RUNNING", "RUNNING", "WORKFLOW_TASK_FAILED"]
    failed = event_attributes(history, "workflowTaskFailedEventAttributes")
    assert [f["cause"] for f in failed] == ["WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR"]
    assert failed[0]["failure"]["message"] == (
        "[TMPRL1100] Nondeterminism error: Activity type of scheduled event "
        "'agent__two_turns__model_request' does not match activity type of activity command "
        "'agent__two_turns__mcp_server__weather__get_tools'")


def test_rolling_upgrade_with_the_same_listings_completes() -> None:
    upgrade = UPGRADES[1]
    history, meta = load_recording(DATA, upgrade.before, upgrade.name)
    assert meta["status"] == "COMPLETED" and all(t["reply"] for t in meta["turns"])
    assert meta["listings_per_turn"] == [1, 1, 1]
    assert not event_attributes(history, "workflowTaskFailedEventAttributes")


def _agent(history: Path) -> str:
    scheduled = event_attributes(json.loads(history.read_text()),
                                 "activityTaskScheduledEventAttributes")
    return str(scheduled[0]["activityType"]["name"].split("__")[1])


def _expected_outcome(row: dict[str, str], envs: dict[str, Any], cached: set[str]) -> str:
    """What replaying ``row["history"]`` with ``row["replayer_env"]`` gives.

    In 2.2.0 the cached tool list lives on the agent's Temporal toolset object, which every
    workflow of the process shares: once any run of an agent (``cache_tools`` on) has listed, no
    later run in that process schedules the listing, so a replay process fails every later
    history of that agent (``cached`` holds the agents listed so far, in replay order). From
    2.40.0 on each run lists once; histories whose second turn reused the cache then fail.
    """
    history = DATA / row["history"]
    _, meta = load_recording(DATA, *row["history"].removesuffix(".json").split("/"))
    old_replayer = _caches_per_process(envs[row["replayer_env"]])
    # The releases whose commands the history holds (a failed workflow task adds none).
    writers = {_caches_per_process(envs[meta["env"]])}
    if meta.get("env_after") and meta["status"] == "COMPLETED":
        writers.add(_caches_per_process(envs[meta["env_after"]]))
    agent = _agent(history)
    if old_replayer and agent != "two_turns_uncached":
        if agent in cached:
            return "nondeterminism"
        cached.add(agent)
    several_turns = meta["scenario"] in ("two_turns", "rolling_upgrade")
    return "nondeterminism" if several_turns and writers != {old_replayer} else "ok"


def test_matrix_breaks_exactly_across_the_listing_change() -> None:
    rows = read_matrix(DATA / MATRIX_NAME)
    envs = {e.name: e for e in ENVIRONMENTS}
    histories = [p.relative_to(DATA).as_posix() for p in history_files(DATA)]
    assert sorted((r["history"], r["replayer_env"]) for r in rows) == sorted(
        (h, e) for h in histories for e in envs)
    for replayer in envs:
        cached: set[str] = set()
        for row in (r for r in rows if r["replayer_env"] == replayer):  # replay order
            expected = _expected_outcome(row, envs, cached)
            assert row["outcome"] == expected, row
            if expected == "nondeterminism":
                assert row["error_type"] == "NondeterminismError"
                assert "[TMPRL1100] Nondeterminism error" in row["message"]
    # pydantic-ai 2.2.0 cannot even replay its own two-turn history after another run of the
    # agent in the same process.
    own = next(r for r in rows if (r["history"], r["replayer_env"])
               == ("pa-2.2.0/two_turns.json", "pa-2.2.0"))
    assert "Activity type of scheduled event 'agent__two_turns__mcp_server__weather__get_tools' "\
        "does not match activity type of activity command 'agent__two_turns__model_request'" \
        in own["message"]
