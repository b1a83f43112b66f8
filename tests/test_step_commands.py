"""Each model step's commands in order, on the Go plugin twin's recorded histories."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from toolkit.agents.roles import PRESETS, Roles
from toolkit.agents.step_commands import STEP_COMMAND_COLUMNS, command_letter, step_commands
from toolkit.agents.turns import listings_per_turn
from toolkit.errors import ToolkitError
from toolkit.histories.reading.read import read_history

ROOT = Path(__file__).resolve().parents[1]
TWIN = ROOT / "data" / "go_twin"
GALLERY = ROOT / "data" / "gallery"


def _twin(variant: str, scenario: str) -> Path:
    path = TWIN / variant / f"{scenario}.json"
    if not path.is_file():
        pytest.skip(f"{path} not recorded (make record)")
    return path


def _before_model(variant: str, scenario: str) -> dict[tuple[int, int], str]:
    steps = step_commands(_twin(variant, scenario))
    steps = steps[steps["step"] > 0]
    return {(t, s): b for t, s, b in zip(steps.turn, steps.step, steps.before_model, strict=True)}


def test_instruction_timer_positions_per_variant() -> None:
    old = _before_model("before_fix-adk_v2.5.0", "instruction_timer")
    new = _before_model("before_fix-adk_v2.6.0", "instruction_timer")
    assert old[(1, 1)] == new[(1, 1)] == "L T(instruction) L"
    # v2.6.0 calls Tools() again in step 2, before the instruction processor's timer.
    assert old[(1, 2)] == "T(instruction) L"
    assert new[(1, 2)] == "L T(instruction) L"
    for variant in ("with_fix-adk_v2.5.0", "with_fix-adk_v2.6.0"):
        fixed = _before_model(variant, "instruction_timer")
        assert fixed[(1, 1)] == fixed[(2, 1)] == "L T(instruction)"
        assert fixed[(1, 2)] == fixed[(2, 2)] == "T(instruction) L"


def test_tool_calls_stay_with_their_step_and_letters_cover_every_command() -> None:
    path = _twin("before_fix-adk_v2.6.0", "one_call_then_plain")
    steps = step_commands(path)
    assert list(steps.columns) == STEP_COMMAND_COLUMNS
    first = steps[(steps.turn == 1) & (steps.step > 0)]
    assert first["before_model"].tolist() == ["L L", "L L"]
    assert first["after_model"].tolist() == ["C", ""]
    assert first["turn_sequence"].iloc[0] == "L L M C L L M"
    # Same listing count as listings_per_turn, turn by turn.
    counts = listings_per_turn(path).set_index("turn")["listings"]
    per_turn = steps.drop_duplicates("turn").set_index("turn")["turn_sequence"]
    for turn, listings in counts.items():
        assert per_turn[turn].split().count("L") == listings


def test_a_user_message_without_commands_keeps_a_row() -> None:
    steps = step_commands(_twin("with_fix-adk_v2.5.0", "instruction_timer"))
    finish = steps[steps["trigger"] == "signal:finish"]
    assert len(finish) == 1
    assert finish["step"].iloc[0] == 0 and finish["turn_sequence"].iloc[0] == ""
    only_turns = Roles("twin", "InvokeModel", "ListMcpTools", "CallMcpTool", user_signals="turn")
    assert "signal:finish" not in set(step_commands(
        _twin("with_fix-adk_v2.5.0", "instruction_timer"), only_turns)["trigger"])  # fmt: skip


def test_timer_without_summary_is_labelled_by_id() -> None:
    events = read_history(_twin("with_fix-adk_v2.6.0", "instruction_timer"))
    events = events.assign(extra=[{} for _ in range(len(events))])
    steps = step_commands(events)
    assert steps["before_model"].iloc[0] == "L T(1)"
    assert command_letter({"kind": "RecordMarker", "marker_name": "core_patch"},
                          PRESETS["go_googleadk"]) == "Marker(core_patch)"  # fmt: skip
    assert command_letter({"kind": "ScheduleActivityTask", "activity_type": "Fetch"},
                          PRESETS["go_googleadk"]) == "Fetch"  # fmt: skip


def test_several_histories_and_no_agent() -> None:
    both = pd.concat(
        [
            read_history(_twin("with_fix-adk_v2.5.0", "plain_turns")).assign(history=0),
            read_history(_twin("before_fix-adk_v2.5.0", "plain_turns")).assign(history=1),
        ]
    )
    steps = step_commands(both)
    plain = steps[steps["step"] == 1]
    assert plain.groupby("history")["before_model"].first().tolist() == ["L", "L L"]
    cases = sorted(GALLERY.glob("*/v1.json"))
    if not cases:
        pytest.skip("data/gallery not recorded")
    with pytest.raises(ToolkitError, match="no agent framework recognised"):
        step_commands(cases[0])
