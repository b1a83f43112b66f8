"""Replay matrices as tables, and first_divergence checked against them, on the lab's data."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from toolkit.errors import ToolkitError
from toolkit.replay.report import (
    check_against_matrix,
    core_text,
    read_replay_matrix,
    replay_cells,
)

ROOT = Path(__file__).resolve().parents[1]
TWIN = ROOT / "data" / "go_twin"
TWIN_MATRIX = TWIN / "replay_matrix.csv"

WRAPPED = (
    'Workflow activation completion failed: Failure { failure: Some(Failure { message: "[TMPRL1100]'
    " Nondeterminism error: Activity type of scheduled event 'InvokeModel' does not match activity"
    ' type of activity command \'ListMcpTools\'", source: "", stack_trace: "" }), force_cause:'
    " NonDeterministicError }"
)


@pytest.fixture(scope="module")
def twin_matrix() -> pd.DataFrame:
    if not TWIN_MATRIX.is_file():
        pytest.skip(f"{TWIN_MATRIX} not recorded (make record)")
    return read_replay_matrix(TWIN_MATRIX)


def test_core_text_unwraps_the_replayer_message() -> None:
    assert core_text(WRAPPED) == (
        "[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'InvokeModel' does not"
        " match activity type of activity command 'ListMcpTools'"
    )
    assert core_text("") is None
    assert core_text(None) is None
    assert core_text("connection refused") is None


def test_matrix_keeps_every_row_and_adds_uniform_columns(twin_matrix: pd.DataFrame) -> None:
    raw = pd.read_csv(TWIN_MATRIX, dtype=str, keep_default_na=False)
    assert len(twin_matrix) == len(raw)
    assert set(raw.columns) < set(twin_matrix.columns)
    assert (twin_matrix["recorded"] == raw["recorded_variant"]).all()
    assert (twin_matrix["replayer"] == raw["replayer_variant"]).all()
    failing = twin_matrix["outcome"] == "nondeterminism"
    assert twin_matrix.loc[failing, "core_message"].str.startswith("[TMPRL1100]").all()
    assert twin_matrix.loc[~failing, "core_message"].isna().all()
    assert set(twin_matrix["scenario"]) >= {"one_call_then_plain", "plain_turns"}


def test_missing_or_malformed_matrix_is_named(tmp_path: Path) -> None:
    with pytest.raises(ToolkitError, match="no such replay matrix"):
        read_replay_matrix(tmp_path / "absent.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("history,outcome\na.json,ok\n")
    with pytest.raises(ToolkitError, match=r"bad\.csv.*recorded_\*"):
        read_replay_matrix(bad)


def test_cells_account_for_every_pair(twin_matrix: pd.DataFrame) -> None:
    cells = replay_cells(twin_matrix)
    assert cells["histories"].sum() == len(twin_matrix)
    assert cells["failed"].sum() == (twin_matrix["outcome"] != "ok").sum()
    diagonal = cells[cells["recorded"] == cells["replayer"]]
    assert (diagonal["failed"] == 0).all()
    fixed = cells[cells["recorded"].str.startswith("with_fix")
                  & cells["replayer"].str.startswith("with_fix")]  # fmt: skip
    assert len(fixed) == 4 and (fixed["failed"] == 0).all()
    crossing = cells[cells["recorded"].str[:4] != cells["replayer"].str[:4]]
    assert (crossing["failed"] == crossing["histories"]).all()


def test_model_agrees_with_the_replayer_on_the_one_call_scenario(
    twin_matrix: pd.DataFrame,
) -> None:
    subset = twin_matrix[twin_matrix["scenario"] == "one_call_then_plain"]
    checked = check_against_matrix(subset, TWIN)
    assert len(checked) == len(subset) == 16
    assert checked["agrees"].all()
    failing = checked[checked["outcome"] == "nondeterminism"]
    assert (failing["model_message"] == failing["core_message"]).all()
    assert failing["go_message"].str.startswith("[TMPRL1100] nondeterministic workflow").all()


def test_a_changed_verdict_or_message_disagrees(twin_matrix: pd.DataFrame) -> None:
    subset = twin_matrix[twin_matrix["scenario"] == "one_call_then_plain"].copy()
    ok_row = subset.index[subset["outcome"] == "ok"][0]
    failing_row = subset.index[subset["outcome"] == "nondeterminism"][0]
    subset.loc[ok_row, ["outcome", "message"]] = ["nondeterminism", WRAPPED]
    subset.loc[ok_row, "core_message"] = core_text(WRAPPED)
    subset.loc[failing_row, "core_message"] = "[TMPRL1100] Nondeterminism error: something else"
    checked = check_against_matrix(subset, TWIN)
    assert not checked.loc[ok_row, "agrees"]
    assert not checked.loc[failing_row, "agrees"]
    assert checked["agrees"].sum() == len(subset) - 2


def test_rows_without_a_counterpart_stay_unjudged(twin_matrix: pd.DataFrame) -> None:
    subset = twin_matrix[twin_matrix["scenario"] == "plain_turns"]
    checked = check_against_matrix(subset, TWIN, counterparts={"plain_turns.json": "absent.json"})
    assert len(checked) == len(subset)
    assert checked["agrees"].isna().all() and checked["counterpart"].isna().all()
    mapped = check_against_matrix(
        subset, TWIN, counterparts={"plain_turns.json": "plain_turns.json"}
    )
    assert mapped["agrees"].all()
