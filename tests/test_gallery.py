"""The committed gallery (data/gallery): coverage of the table, file format, and replay verdicts.

The replay test re-runs temporalio's Replayer on every committed history with the other version's
code (and its own), and demands the committed outcome and exact core message.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest
from temporalio.client import WorkflowHistory

from toolkit.errors import LabError
from toolkit.lab.gallery import (
    FORMAT,
    KINDS,
    TABLE_COLUMNS,
    WHERE,
    Case,
    Expect,
    all_cases,
    core_message,
    get_case,
    replay_outcome,
    replay_with,
)
from toolkit.lab.gallery.builtin.activity_cases import (
    ActivityRenamedV1,
    ActivityRenamedV2,
    ActivitySwappedV1,
)
from toolkit.lab.gallery.record import case_row, write_table

GALLERY = Path(__file__).resolve().parents[1] / "data" / "gallery"
CASE_NAMES = sorted(path.parent.name for path in GALLERY.glob("*/case.json"))


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return pd.read_csv(GALLERY / "cases.csv", dtype=str, keep_default_na=False)


def _record(name: str) -> dict:
    return json.loads((GALLERY / name / "case.json").read_text())


def test_table_covers_every_kind_place_and_outcome(table: pd.DataFrame) -> None:
    assert list(table.columns) == TABLE_COLUMNS
    assert len(table) >= 30
    assert table["case"].is_unique
    assert set(KINDS) <= set(table["kind"])
    assert set(WHERE) <= set(table["where"])
    assert {"True", "False"} == set(table["safe"])
    outcomes = set(table["v1_on_v2_outcome"]) | set(table["v2_on_v1_outcome"])
    assert outcomes == {"ok", "nondeterminism", "error"}
    # Every built-in case is recorded, and the recording agrees with its author's expectation.
    assert {case.name for case in all_cases()} == set(table["case"])
    assert set(table["matches_expectation"]) == {"True"}


def test_table_rows_equal_case_files(table: pd.DataFrame) -> None:
    assert sorted(table["case"]) == CASE_NAMES
    for row in table.to_dict("records"):
        expected = {key: str(value) for key, value in case_row(_record(row["case"])).items()}
        assert row == expected


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_files_are_complete(name: str) -> None:
    record = _record(name)
    assert record["format"] == FORMAT
    case = get_case(name)
    assert (record["kind"], record["where"], record["workflow_type"]) == (
        case.kind, case.where, case.workflow_type)
    for label in ("v1", "v2"):
        history = json.loads((GALLERY / name / record[label]["history"]).read_text())
        events = history["events"]
        assert len(events) == record[label]["events"]
        assert events[0]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"
        assert events[0]["workflowExecutionStartedEventAttributes"]["workflowType"]["name"] == (
            case.workflow_type)
    for replay in record["replays"].values():
        assert (replay["outcome"] == "ok") == (replay["message"] == "")
        if replay["outcome"] == "nondeterminism":
            assert replay["message"].startswith("[TMPRL1100] Nondeterminism error: ")
        if replay["replayer_error"]:
            assert "/work/" not in replay["replayer_error"]  # stack traces are left out


@pytest.mark.parametrize("name", CASE_NAMES)
def test_committed_histories_replay_to_committed_outcomes(name: str) -> None:
    record = _record(name)
    case = get_case(name)
    code = {"v1": case.v1, "v2": case.v2}

    async def replay_all() -> dict[str, dict]:
        results = {}
        for key in record["replays"]:
            history_label, code_label = key.split("_on_")
            text = (GALLERY / name / f"{history_label}.json").read_text()
            history = WorkflowHistory.from_json(record["workflow_id"], text)
            outcome = await replay_with(history, code[code_label], case.support)
            results[key] = {"outcome": outcome.outcome, "message": outcome.message}
        return results

    got = asyncio.run(replay_all())
    want = {key: {"outcome": value["outcome"], "message": value["message"]}
            for key, value in record["replays"].items()}
    assert got == want
    assert got["v1_on_v1"]["outcome"] == got["v2_on_v2"]["outcome"] == "ok"


def test_open_stuck_and_continued_runs_are_part_of_the_gallery() -> None:
    statuses = {_record(name)[label]["status"] for name in CASE_NAMES for label in ("v1", "v2")}
    assert {"completed", "running", "stuck", "continued_as_new"} <= statuses
    rejected = _record("update-validator-added")["v2"]["steps"][0]
    assert rejected["accepted"] is False
    assert "at most 10 per order" in rejected["rejection"]


def test_core_message_unescapes_the_rust_debug_text() -> None:
    text = ('Workflow activation completion failed: Failure { failure: Some(Failure { message: '
            '"can\'t \\"x\\" \\u{e9}", source: "", stack_trace: "a\\nb" }) }')
    assert core_message(text) == 'can\'t "x" é'
    assert core_message("no failure here") == "no failure here"
    assert replay_outcome(None).outcome == "ok"
    outcome = replay_outcome(RuntimeError('4: Failure { message: "boom", stack_trace: "/x.py" }'))
    assert (outcome.outcome, outcome.message) == ("error", "boom")
    assert outcome.replayer_error is not None and "/x.py" not in outcome.replayer_error


def test_case_declarations_are_checked() -> None:
    safe = Expect(v1_on_v2="ok", v2_on_v1="ok")
    with pytest.raises(LabError, match="same class"):
        Case("x", "d", "k", "middle", ActivityRenamedV1, ActivityRenamedV1, safe)
    with pytest.raises(LabError, match="ActivitySwapped"):
        Case("x", "d", "k", "middle", ActivityRenamedV1, ActivitySwappedV1, safe)
    with pytest.raises(LabError, match="where="):
        Case("x", "d", "k", "somewhere", ActivityRenamedV1, ActivityRenamedV2, safe)
    with pytest.raises(LabError, match="name must match"):
        Case("Bad Name", "d", "k", "middle", ActivityRenamedV1, ActivityRenamedV2, safe)
    with pytest.raises(LabError, match="no gallery case named"):
        get_case("no-such-case")


def test_message_stable_flag_matches_the_messages(table: pd.DataFrame) -> None:
    # Unstable messages quote seed-drawn UUIDs or whole events with their times; stable ones never.
    run_specific = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|event_time"
    messages = table["v1_on_v2_message"] + " " + table["v2_on_v1_message"]
    quotes_run_values = messages.str.contains(run_specific, regex=True)
    assert (quotes_run_values == (table["message_stable"] == "False")).all()


def test_partial_recording_keeps_the_other_rows(table: pd.DataFrame, tmp_path: Path) -> None:
    gallery_dir = tmp_path / "gallery"
    gallery_dir.mkdir()
    table.to_csv(gallery_dir / "cases.csv", index=False)
    changed = case_row(_record("timer-retimed")) | {"description": "re-recorded"}
    write_table(gallery_dir, [changed])
    merged = pd.read_csv(gallery_dir / "cases.csv", dtype=str, keep_default_na=False)
    assert len(merged) == len(table)
    assert set(merged["case"]) == set(table["case"])
    assert merged.set_index("case").loc["timer-retimed", "description"] == "re-recorded"
