"""The committed twin recordings in data/go_twin: complete, consistent, and replaying as stored.

Regenerate them with ``toolkit.lab.go_twin.record_all`` (``make record``).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from toolkit.lab.go_twin import MATRIX_FILE, SCENARIOS, VARIANTS, read_matrix
from toolkit.lab.go_twin.history import abbreviate, commands_per_turn, load_history
from toolkit.lab.go_twin.matrix import MATRIX_COLUMNS, replay_one
from toolkit.lab.go_twin.variants import variant_named

TWIN = Path(__file__).resolve().parents[1] / "data" / "go_twin"
BEFORE_250, BEFORE_260, FIX_250, FIX_260 = (v.name for v in VARIANTS)

pytestmark = pytest.mark.skipif(
    not (TWIN / MATRIX_FILE).is_file(), reason=f"no twin recordings in {TWIN} (run make record)")


def _meta(variant: str, scenario: str) -> dict[str, object]:
    return json.loads((TWIN / variant / f"{scenario}.meta.json").read_text(encoding="utf-8"))


def _turns(variant: str, scenario: str) -> list[list[str]]:
    return commands_per_turn(load_history(TWIN / variant / f"{scenario}.json"))


@pytest.mark.parametrize("variant", [v.name for v in VARIANTS])
@pytest.mark.parametrize("scenario", [s.name for s in SCENARIOS])
def test_every_recording_is_there_and_its_metadata_matches_its_history(
    scenario: str, variant: str
) -> None:
    meta = _meta(variant, scenario)
    turns = _turns(variant, scenario)
    assert (meta["scenario"], meta["variant"]) == (scenario, variant)
    assert meta["plugin_state"] == variant_named(variant).plugin_state
    assert meta["listings_per_turn"] == [t.count("ListMcpTools") for t in turns]
    assert meta["commands_per_turn"] == [abbreviate(t) for t in turns]
    # The MCP server saw one tools/list per ListMcpTools and one tools/call per CallMcpTool.
    requests = Counter(r.split(" ")[0] for r in meta["mcp_tool_requests"])
    assert requests["tools/list"] == sum(t.count("ListMcpTools") for t in turns)
    assert requests["tools/call"] == sum(t.count("CallMcpTool") for t in turns)


def test_recorded_listings_reproduce_the_documented_numbers() -> None:
    expected = {
        "one_call_then_plain": {BEFORE_250: [3, 2], BEFORE_260: [4, 2], FIX_250: [2, 1],
                                FIX_260: [2, 1]},
        "plain_turns": {BEFORE_250: [2, 2], BEFORE_260: [2, 2], FIX_250: [1, 1],
                        FIX_260: [1, 1]},
        "helpers_parallel": {BEFORE_250: [12], BEFORE_260: [16], FIX_250: [8], FIX_260: [8]},
        "helpers_sequential": {BEFORE_250: [12], BEFORE_260: [16], FIX_250: [8], FIX_260: [8]},
    }
    for scenario, per_variant in expected.items():
        for variant, listings in per_variant.items():
            assert _meta(variant, scenario)["listings_per_turn"] == listings, (scenario, variant)


def test_with_the_fix_the_first_step_lists_before_and_later_steps_after_the_instruction() -> None:
    for variant in (FIX_250, FIX_260):
        assert _meta(variant, "instruction_timer")["commands_per_turn"] == [
            "L T(instruction) M C T(instruction) L M"] * 2


def test_the_matrix_holds_every_pair_and_fails_exactly_across_incompatible_variants() -> None:
    rows = read_matrix(TWIN / MATRIX_FILE)
    assert rows and tuple(rows[0]) == MATRIX_COLUMNS
    assert len(rows) == len(SCENARIOS) * len(VARIANTS) ** 2
    for row in rows:
        recorded, replayer = row["recorded_variant"], row["replayer_variant"]
        scenario = Path(row["history"]).stem
        same_commands = _turns(recorded, scenario) == _turns(replayer, scenario)
        if same_commands:
            assert row["outcome"] == "ok", row
        else:
            assert row["outcome"] == "nondeterminism", row
            assert row["error_type"] == "NondeterminismError"
            assert "[TMPRL1100] Nondeterminism error: " in row["message"]
        if {recorded, replayer} == {FIX_250, FIX_260}:
            assert row["outcome"] == "ok", row  # the fix: both releases replay each other
        if variant_named(recorded).plugin_fixed != variant_named(replayer).plugin_fixed:
            assert row["outcome"] == "nondeterminism", row  # the accepted breaking change


REPLAYED_BY_DEFAULT = ("one_call_then_plain", "confirmation_signal", "filter_timer")


@pytest.mark.parametrize("scenario", [
    pytest.param(s.name, marks=() if s.name in REPLAYED_BY_DEFAULT else pytest.mark.slow)
    for s in SCENARIOS
])
def test_committed_histories_replay_with_the_stored_outcome_and_message(scenario: str) -> None:
    rows = [r for r in read_matrix(TWIN / MATRIX_FILE) if Path(r["history"]).stem == scenario]
    assert len(rows) == len(VARIANTS) ** 2

    async def replay_all() -> list[tuple[str, str, str]]:
        return [await replay_one(TWIN / r["history"], variant_named(r["replayer_variant"]))
                for r in rows]

    for row, (outcome, error_type, message) in zip(rows, asyncio.run(replay_all()), strict=True):
        assert (outcome, error_type, message) == (
            row["outcome"], row["error_type"], row["message"]), row["history"]


def test_the_toolkit_loader_counts_the_same_listings_per_turn() -> None:
    """Cross-check with the package's own loader and turn splitter (``toolkit.read_history``,
    ``toolkit.listings_per_turn``): nothing lost, same listings in every turn of every history."""
    toolkit = pytest.importorskip("toolkit")
    if not hasattr(toolkit, "listings_per_turn"):
        pytest.skip("toolkit.listings_per_turn is not exported yet")
    for variant in (v.name for v in VARIANTS):
        for scenario in (s.name for s in SCENARIOS):
            path = TWIN / variant / f"{scenario}.json"
            assert len(toolkit.read_history(path)) == len(load_history(path).events)
            table = toolkit.listings_per_turn(path)
            assert table["listings"].tolist() == _meta(variant, scenario)["listings_per_turn"], (
                variant, scenario)
