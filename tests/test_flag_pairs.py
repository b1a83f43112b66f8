"""The lab's flag pairs (data/flag_pairs) against the real Replayer's verdicts, both ways.

The same workflows were recorded under temporalio releases on either side of an SDK flag
(``python -m toolkit.lab.flag_pairs``), and each history was replayed by each release's real
``Replayer`` (``replay_matrix.csv``). For every stored verdict, the new code's history is that
release's own recording of the same scenario (for the ids built from the workflow id: each of its
recordings, all under other workflow ids), and ``replay_verdict(recorded, new)`` must either
equal the Replayer's verdict (and, when exact, its core message) or say it is not exact, with an
assumption naming the flag.
"""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

from toolkit.histories.reading.read import read_history
from toolkit.replay.report import read_replay_matrix
from toolkit.replay.verdict import InexactVerdictWarning, ReplayVerdict, replay_verdict

PAIRS = Path(__file__).resolve().parents[1] / "data" / "flag_pairs"


@cache
def _table(name: str) -> pd.DataFrame:
    if name == "replay_matrix.csv":  # read as every lab matrix is (recorded / replayer columns)
        return read_replay_matrix(PAIRS / name)
    return pd.read_csv(PAIRS / name, dtype=str, keep_default_na=False)


def _cases() -> list[tuple[dict[str, str], str]]:
    """(matrix row, the replaying release's own history) for every stored verdict.

    The replaying code is a release, or ``<release>/<code change>``: its own histories are the
    recordings of that release and code version (for the derived ids, all of its scenarios).
    """
    recordings = _table("recordings.csv")
    plain = recordings[recordings["single_batch"] == "False"]
    cases = []
    for row in _table("replay_matrix.csv").to_dict("records"):
        release, _, code = row["replayer"].partition("/")
        mine = plain[
            (plain["flag"] == row["flag"])
            & (plain["temporalio"] == release)
            & (plain["code"] == (code or "same"))
        ]
        cases += [(row, new) for new in mine["history"]]
    return cases


CASES = _cases()


@cache
def _verdict(recorded: str, new: str) -> ReplayVerdict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InexactVerdictWarning)
        return replay_verdict(read_history(PAIRS / recorded), read_history(PAIRS / new))


@pytest.mark.parametrize(
    ("row", "new"), CASES, ids=[f"{r['history']}@{r['replayer']}~{n}" for r, n in CASES]
)
def test_verdict_agrees_with_the_replayer_or_names_the_flag(row: dict[str, str], new: str) -> None:
    verdict = _verdict(row["history"], new)
    if verdict.assumptions:  # not settled by the histories: the flag must be named
        flag = row["flag"]
        assert not verdict.exact and any(flag in a for a in verdict.assumptions), verdict
        return
    assert verdict.outcome == row["outcome"], (verdict.divergence, row["message"])
    if verdict.divergence is not None and verdict.divergence.core_message_exact:
        assert verdict.divergence.core_message in row["message"]


def test_every_pair_is_replayed_both_ways() -> None:
    matrix = _table("replay_matrix.csv")
    for flag, rows in matrix.groupby("flag"):
        releases = set(rows["replayer"])
        recorded = {label.removesuffix("-single-batch") for label in rows["recorded"]}
        assert len(releases) >= 2 and recorded == {r.partition("/")[0] for r in releases}, flag
        for history, replays in rows.groupby("history"):
            assert set(replays["replayer"]) == releases, history


def _flags(label: str, flag: str) -> tuple[str, str]:
    recordings = _table("recordings.csv")
    row = recordings[(recordings["history"].str.startswith(f"{flag}/{label}/"))].iloc[0]
    return row["core_flags"], row["lang_flags"]


@pytest.mark.parametrize(
    ("flag", "label", "core", "lang"),
    [
        ("UpsertSearchAttributeOnPatch", "1.1.0", "", ""),
        ("UpsertSearchAttributeOnPatch", "1.2.0", "1 2", ""),
        ("MoveTerminalCommands", "1.6.0", "1 2", ""),
        ("MoveTerminalCommands", "1.7.0", "1 2 3", ""),
        ("RAISE_ON_CANCELLING_COMPLETED_ACTIVITY", "1.13.0", "1 2 3", ""),
        ("RAISE_ON_CANCELLING_COMPLETED_ACTIVITY", "1.14.0", "1 2 3", "1"),
        ("PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH", "1.35.0", "1 2 3 4", ""),
        ("PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH", "1.35.0-single-batch", "1 2 3 4", "2"),
        ("NexusOperationDeterminismChecks", "1.34.0", "1 2 3", ""),
        ("NexusOperationDeterminismChecks", "1.35.0", "1 2 3 4", ""),
    ],
)
def test_each_side_records_what_its_release_records(
    flag: str, label: str, core: str, lang: str
) -> None:
    assert _flags(label, flag) == (core, lang)


@pytest.mark.parametrize(
    ("history", "replayer", "exact"),
    [
        # temporalio 1.1.0's sdk-core reads only the old patch-marker layout: what its old branch
        # issues is in neither history.
        ("UpsertSearchAttributeOnPatch/1.2.0/patched.json", "1.1.0", False),
        # 1.6.0's sdk-core drops the activity the code schedules after completing (no flag 3);
        # it prints the event type as Ok(ActivityTaskScheduled), not claimed exact.
        ("MoveTerminalCommands/1.7.0/late_command.json", "1.6.0", False),
        # 1.12.0 does not read RAISE_ON_CANCELLING_COMPLETED_ACTIVITY (1.13.0 does): it replays
        # as its own run went, which its history shows.
        ("RAISE_ON_CANCELLING_COMPLETED_ACTIVITY/1.14.0/cancel_completed.json", "1.12.0", True),
        # 1.30.0 does not read PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH.
        (
            "PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH/1.35.0-single-batch/"
            "signal_and_activity.json",
            "1.30.0",
            True,
        ),
    ],
)
def test_a_release_before_the_flag_fails_where_the_model_says_so(
    history: str, replayer: str, exact: bool
) -> None:
    """The pairs the real Replayer fails on: the model finds the failure, at the same event."""
    matrix = _table("replay_matrix.csv")
    row = matrix[(matrix["history"] == history) & (matrix["replayer"] == replayer)].iloc[0]
    assert row["outcome"] == "nondeterminism"
    new = next(new for r, new in CASES if r["history"] == history and r["replayer"] == replayer)
    verdict = _verdict(history, new)
    assert (verdict.outcome, verdict.exact) == ("nondeterminism", exact), verdict.assumptions
    assert verdict.divergence is not None
    if exact:
        assert verdict.divergence.core_message in row["message"]
    else:
        event_id = verdict.divergence.event_id
        assert f"HistoryEvent(id: {event_id}, " in row["message"], row["message"]


@pytest.mark.parametrize(
    ("history", "replayer", "outcome"),
    [
        # sdk-core flag 4 recorded: the renamed operation fails the check.
        ("NexusOperationDeterminismChecks/1.35.0/nexus.json", "1.35.0/nexus-operation-renamed",
         "nondeterminism"),
        # Not recorded, and the operation is not in the last stretch of history: no check.
        ("NexusOperationDeterminismChecks/1.34.0/nexus.json", "1.35.0/nexus-operation-renamed",
         "ok"),
        # Recorded, but 1.34.0's sdk-core has no Nexus checks at all.
        ("NexusOperationDeterminismChecks/1.35.0/nexus.json", "1.34.0/nexus-operation-renamed",
         "ok"),
    ],
)  # fmt: skip
def test_nexus_operation_checks_follow_flag_4(history: str, replayer: str, outcome: str) -> None:
    matrix = _table("replay_matrix.csv")
    row = matrix[(matrix["history"] == history) & (matrix["replayer"] == replayer)].iloc[0]
    assert row["outcome"] == outcome
    new = next(new for r, new in CASES if r["history"] == history and r["replayer"] == replayer)
    verdict = _verdict(history, new)
    assert (verdict.outcome, verdict.exact) == (outcome, True), verdict.assumptions
    if outcome != "ok":
        assert verdict.divergence is not None and verdict.divergence.check == "nexus_operation"
        assert verdict.divergence.core_message in row["message"]


def test_ids_built_from_the_workflow_id_are_rebased() -> None:
    recordings = _table("recordings.csv")
    derived = recordings[recordings["flag"] == "derived_ids"]
    assert derived["workflow_id"].is_unique and len(derived) >= 6
    code_of = dict(zip(derived["history"], derived["code"], strict=True))
    workflow_id_of = dict(zip(derived["history"], derived["workflow_id"], strict=True))
    checked = {"ok": 0, "nondeterminism": 0}
    for row, new in CASES:
        if row["flag"] != "derived_ids" or row["history"] == new:
            continue
        verdict = _verdict(row["history"], new)
        assert verdict.exact and verdict.outcome == row["outcome"], verdict.assumptions
        checked[verdict.outcome] += 1
        if code_of[row["history"]] == code_of[new]:
            assert verdict.outcome == "ok"
            rebased = [note for note in verdict.notes if "built from the workflow id" in note]
            assert len(rebased) == 2, verdict.notes  # the activity id and the child id
        else:  # the child id changed: compared as the recorded run builds it
            assert verdict.divergence is not None
            assert verdict.divergence.check == "child_workflow_id"
            assert workflow_id_of[row["history"]] in verdict.divergence.core_message
    assert checked["ok"] >= 8 and checked["nondeterminism"] >= 8, checked
