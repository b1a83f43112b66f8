"""Recorder A's committed outputs in data/adk: every scenario and version, and the replay matrix.

The multi-version recording itself is too slow for CI (``make record``); these tests check what
it wrote, and replay the committed histories with the installed google-adk to confirm the
outcomes the matrix recorded for it.
"""

from __future__ import annotations

from typing import Any

import pytest
from lab_recordings import load_recording, recordings_dir

from toolkit.lab.adk_python.envs import ENVIRONMENTS, MAIN_ENV, environment
from toolkit.lab.adk_python.matrix import MATRIX_NAME, history_files, read_matrix
from toolkit.lab.adk_python.scenarios import SCENARIOS, TOKEN_QUERY, UPGRADES

ADK_DIR = recordings_dir("adk")
LIST, MODEL, CALL = "weather-list-tools", "invoke_model", "weather-call-tool"

def _parallel_listing(env: str) -> bool:
    """Whether ``env`` schedules its two toolsets' listings in one workflow task."""
    history, _ = load_recording(ADK_DIR, env, "two_toolsets")
    tasks = {}
    for event in history["events"]:
        attributes = event.get("activityTaskScheduledEventAttributes")
        if attributes and attributes["activityType"]["name"].endswith("-list-tools"):
            tasks.setdefault(attributes["activityType"]["name"],
                             attributes["workflowTaskCompletedEventId"])
    return len(set(tasks.values())) == 1


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_every_scenario_is_recorded_with_the_pinned_versions(env: Any) -> None:
    for scenario in SCENARIOS:
        history, meta = load_recording(ADK_DIR, env.name, scenario.name)
        assert (meta["scenario"], meta["env"]) == (scenario.name, env.name)
        assert (meta["google_adk"], meta["temporalio"]) == (env.google_adk, env.temporalio)
        assert meta["events"] == len(history["events"]) and meta["run_id"]
        assert history["events"][0]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_listings_per_turn_follow_the_policy_of_the_version(env: Any) -> None:
    _, meta = load_recording(ADK_DIR, env.name, "two_turns")
    assert meta["status"] == "COMPLETED"
    if env.listing_policy == "per-step":  # google-adk < 1.29
        assert meta["activities"] == [LIST, MODEL, LIST, CALL, LIST, MODEL, LIST, MODEL, LIST]
        assert meta["listings_per_turn"] == [3, 2]
    else:
        assert meta["activities"] == [LIST, MODEL, CALL, MODEL, LIST, MODEL]
        assert meta["listings_per_turn"] == [1, 1]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_two_toolsets_on_one_endpoint_always_route_the_call_to_the_last(env: Any) -> None:
    _, meta = load_recording(ADK_DIR, env.name, "two_toolsets")
    assert meta["status"] == "COMPLETED"
    assert "weather-token-call-tool" in meta["activities"] and CALL not in meta["activities"]
    calls = [r for r in meta["mcp_requests"]["tools_sequence"] if r["mcp_method"] == "tools/call"]
    assert [(c["tool"], c["query"]) for c in calls] == [("get_weather", TOKEN_QUERY)]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_a_server_listing_twice_fails_the_call(env: Any) -> None:
    history, meta = load_recording(ADK_DIR, env.name, "list_twice")
    assert meta["status"] == "FAILED"
    failures = [e["activityTaskFailedEventAttributes"]["failure"]["message"]
                for e in history["events"] if "activityTaskFailedEventAttributes" in e]
    assert len(failures) == 1 and failures[0].endswith(": get_weather")


def test_rolling_upgrade_across_the_boundary_fails_the_workflow_task() -> None:
    upgrade = UPGRADES[0]
    history, meta = load_recording(ADK_DIR, upgrade.before, upgrade.name)
    assert environment(upgrade.before).listing_policy != environment(upgrade.after).listing_policy
    failed = [e["workflowTaskFailedEventAttributes"] for e in history["events"]
              if "workflowTaskFailedEventAttributes" in e]
    assert [f["cause"] for f in failed] == ["WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR"]
    assert failed[0]["failure"]["message"] == (
        "[TMPRL1100] Nondeterminism error: Activity type of scheduled event "
        "'weather-list-tools' does not match activity type of activity command "
        "'weather-call-tool'")
    assert meta["versions_after"]["google_adk"] == environment(upgrade.after).google_adk
    assert history["events"][-1]["eventType"] != "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"


def test_rolling_upgrade_on_one_side_of_the_boundary_completes() -> None:
    upgrade = UPGRADES[1]
    history, meta = load_recording(ADK_DIR, upgrade.before, upgrade.name)
    assert environment(upgrade.before).listing_policy == environment(upgrade.after).listing_policy
    assert meta["status"] == "COMPLETED" and all(t["reply"] for t in meta["turns"])
    assert not any("workflowTaskFailedEventAttributes" in e for e in history["events"])


def _expected_ok(row: dict[str, str]) -> bool:
    """Replays fine iff the listing policy matches and, with two toolsets, the replayer does not
    list sequentially what the history listed in one workflow task (google-adk 2.x lists
    toolsets concurrently; the reverse direction replays fine: commands match in order)."""
    recorded, replayer = environment(row["recorded_env"]), environment(row["replayer_env"])
    same = recorded.listing_policy == replayer.listing_policy
    if row["history"].endswith("/two_toolsets.json"):
        same = same and (_parallel_listing(replayer.name) or not _parallel_listing(recorded.name))
    return same


def test_matrix_fails_exactly_across_the_listing_boundaries() -> None:
    rows = read_matrix(ADK_DIR / MATRIX_NAME)
    histories = [p.relative_to(ADK_DIR).as_posix() for p in history_files(ADK_DIR)]
    pairs = [(r["history"], r["replayer_env"]) for r in rows]
    assert sorted(pairs) == sorted((h, e.name) for h in histories for e in ENVIRONMENTS)
    for row in rows:
        expected = "ok" if _expected_ok(row) else "nondeterminism"
        assert row["outcome"] == expected, row
        if expected == "nondeterminism":
            assert row["error_type"] == "NondeterminismError"
            assert "[TMPRL1100] Nondeterminism error" in row["message"]
    # The single-toolset boundary is exactly google-adk 1.28.1 / 1.29.0.
    boundary = {(r["recorded_env"], r["replayer_env"]) for r in rows
                if r["outcome"] != "ok" and r["history"].endswith("/two_turns.json")}
    assert ("adk-1.28.1", "adk-1.29.0") in boundary and ("adk-1.29.0", "adk-1.28.1") in boundary
    assert ("adk-1.27.5", "adk-1.28.1") not in boundary
    # Two toolsets: a second, one-way boundary between google-adk 1.x and 2.x.
    assert not _parallel_listing("adk-1.39.1") and _parallel_listing("adk-2.2.0")


def test_committed_histories_replay_as_the_matrix_says_with_the_installed_version() -> None:
    pytest.importorskip("google.adk")
    from toolkit.lab.adk_python.replay import replay_files

    recorded = {r["history"]: r for r in read_matrix(ADK_DIR / MATRIX_NAME)
                if r["replayer_env"] == MAIN_ENV.name}
    paths = history_files(ADK_DIR)
    for path, result in zip(paths, replay_files(paths), strict=True):
        row = recorded[path.relative_to(ADK_DIR).as_posix()]
        got = (result["outcome"], result["error_type"], result["message"])
        assert got == (row["outcome"], row["error_type"], row["message"]), path
