"""The twin recorded live on the real dev server, with the real MCP server and Replayer.

The default run records three scenarios for every variant (about half a minute); the others,
slow mostly because the dev server fires short timers about once a second, are marked slow.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolkit.lab.go_twin import (
    MATRIX_FILE,
    SCENARIOS,
    VARIANTS,
    read_matrix,
    record_into,
    scenario_named,
)
from toolkit.lab.go_twin.history import load_history
from toolkit.lab.server import DevServer

pytestmark = pytest.mark.server

BEFORE_250, BEFORE_260, FIX_250, FIX_260 = (v.name for v in VARIANTS)
LIVE = ("one_call_then_plain", "helpers_parallel", "confirmation_signal")


@pytest.fixture(scope="module")
def recorded(dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("go_twin")
    asyncio.run(record_into(out, dev_server.address, [scenario_named(s) for s in LIVE]))
    yield out


def _meta(root: Path, variant: str, scenario: str) -> dict[str, Any]:
    return json.loads((root / variant / f"{scenario}.meta.json").read_text(encoding="utf-8"))


def _activity_inputs(root: Path, variant: str, scenario: str, kind: str) -> list[dict[str, Any]]:
    """Decoded JSON inputs of every ``kind`` activity in the history (payloads read as JSON)."""
    inputs = []
    for event in load_history(root / variant / f"{scenario}.json").events:
        attributes = event.activity_task_scheduled_event_attributes
        if attributes.activity_type.name == kind:
            inputs.append(json.loads(attributes.input.payloads[0].data))
    return inputs


def test_listings_per_turn_match_the_documented_numbers(recorded: Path) -> None:
    expected = {
        "one_call_then_plain": {BEFORE_250: [3, 2], BEFORE_260: [4, 2], FIX_250: [2, 1],
                                FIX_260: [2, 1]},
        "helpers_parallel": {BEFORE_250: [12], BEFORE_260: [16], FIX_250: [8], FIX_260: [8]},
        # Turn 4 is the run the approval signal resumes.
        "confirmation_signal": {BEFORE_250: [3, 3, 2, 2], BEFORE_260: [4, 4, 2, 2],
                                FIX_250: [2, 2, 1, 1], FIX_260: [2, 2, 1, 1]},
    }
    for scenario, per_variant in expected.items():
        for variant, listings in per_variant.items():
            assert _meta(recorded, variant, scenario)["listings_per_turn"] == listings


def test_order_of_commands_in_the_one_call_turn(recorded: Path) -> None:
    first_turn = {v: _meta(recorded, v, "one_call_then_plain")["commands_per_turn"][0]
                  for v in (BEFORE_250, BEFORE_260, FIX_250, FIX_260)}
    assert first_turn == {BEFORE_250: "L L M C L M", BEFORE_260: "L L M C L L M",
                          FIX_250: "L M C L M", FIX_260: "L M C L M"}


def test_the_mcp_request_log_shows_each_listing_and_call_on_its_toolset(recorded: Path) -> None:
    for variant in (v.name for v in VARIANTS):
        meta = _meta(recorded, variant, "helpers_parallel")
        listings = _activity_inputs(recorded, variant, "helpers_parallel", "ListMcpTools")
        calls = _activity_inputs(recorded, variant, "helpers_parallel", "CallMcpTool")
        served = meta["mcp_tool_requests"]
        assert sorted(r for r in served if r.startswith("tools/list")) == sorted(
            f"tools/list toolset={i['toolset']}" for i in listings)
        assert sorted(r for r in served if r.startswith("tools/call")) == [
            "tools/call add toolset=orders", "tools/call get_weather toolset=weather"]
        assert sorted(c["name"] for c in calls) == ["add", "get_weather"]


def test_the_approval_signal_carries_the_confirmation_id_and_the_tool_runs_once(
    recorded: Path,
) -> None:
    for variant in (v.name for v in VARIANTS):
        meta = _meta(recorded, variant, "confirmation_signal")
        history = load_history(recorded / variant / "confirmation_signal.json")
        approvals = [
            json.loads(e.workflow_execution_signaled_event_attributes.input.payloads[0].data)
            for e in history.events
            if e.workflow_execution_signaled_event_attributes.signal_name == "approve"
        ]
        assert approvals == meta["confirmation_ids"] and len(approvals) == 1
        assert approvals[0].startswith("adk-")
        assert [r for r in meta["mcp_tool_requests"] if "lookup_order" in r] == [
            "tools/call lookup_order toolset=lab"]


def test_live_histories_replay_across_compatible_variants_only(recorded: Path) -> None:
    rows = read_matrix(recorded / MATRIX_FILE)
    assert len(rows) == len(LIVE) * len(VARIANTS) ** 2
    for row in rows:
        pair = {row["recorded_variant"], row["replayer_variant"]}
        if len(pair) == 1 or pair == {FIX_250, FIX_260}:
            assert row["outcome"] == "ok", row
        else:
            assert row["outcome"] == "nondeterminism", row
            assert "[TMPRL1100]" in row["message"]


COMMITTED = Path(__file__).resolve().parents[1] / "data" / "go_twin"


def _same_commands_as_committed(root: Path, scenarios: list[str]) -> None:
    """A live recording schedules exactly the commands of the committed one, turn by turn."""
    if not COMMITTED.is_dir():
        pytest.skip(f"no committed twin recordings in {COMMITTED}")
    for scenario in scenarios:
        for variant in (v.name for v in VARIANTS):
            live = _meta(root, variant, scenario)["commands_per_turn"]
            committed = _meta(COMMITTED, variant, scenario)["commands_per_turn"]
            if scenario == "helpers_parallel":
                # Parallel helper runs interleave as their activities happen to complete: the
                # same commands per turn, in an order that varies from run to run.
                live = [sorted(turn.split()) for turn in live]
                committed = [sorted(turn.split()) for turn in committed]
            assert live == committed, (scenario, variant)


def test_live_recordings_schedule_the_committed_commands(recorded: Path) -> None:
    _same_commands_as_committed(recorded, list(LIVE))


@pytest.mark.slow
def test_every_other_scenario_live(dev_server: DevServer, tmp_path: Path) -> None:
    """The rest of the scenarios (timers fire about once a second on the dev server: slow)."""
    others = [s for s in SCENARIOS if s.name not in LIVE]
    asyncio.run(record_into(tmp_path, dev_server.address, others))
    _same_commands_as_committed(tmp_path, [s.name for s in others])
    i, f = "T(instruction)", "T(tool_filter:lab)"
    for variant in (FIX_250, FIX_260):
        assert _meta(tmp_path, variant, "instruction_timer")["commands_per_turn"] == [
            f"L {i} M C {i} L M"] * 2
        assert _meta(tmp_path, variant, "filter_timer")["commands_per_turn"] == [
            f"L {f} {i} {f} M C {i} L {f} M"] * 2
    assert _meta(tmp_path, BEFORE_260, "instruction_timer")["commands_per_turn"] == [
        f"L {i} L M C L {i} L M"] * 2
