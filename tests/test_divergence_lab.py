"""first_divergence agrees with the real Replayer on the lab's replay matrices and the gallery.

Every stored verdict of temporalio's ``Replayer`` is checked, both ways, with no pair left out:

- history mode (``first_divergence(recorded_history, replayed_history)``) on the ADK and Go-twin
  matrices and on all gallery pairs: an *exact* answer must equal the Replayer's verdict and core
  message; the pairs two histories cannot settle must say so (``confidence == "assumed"``) and
  are exactly the ones named in :data:`HISTORY_LIMITS`, with the reason;
- code mode (``first_divergence(recorded_history, [new workflow classes])``) on all gallery pairs:
  verdict and message equal, and the matching model, fed the commands the code really issued,
  reaches the same answer.

Each data set is checked once it is committed under data/ (``make record``); until then the
test skips and says which file is missing.
"""

from __future__ import annotations

import importlib
import json
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolkit.histories.reading.read import read_history
from toolkit.replay.messages import parse_nondeterminism
from toolkit.replay.verdict import InexactVerdictWarning, ReplayVerdict, replay_verdict

DATA = Path(__file__).resolve().parents[1] / "data"

#: A rolling-upgrade history ran turn 1 on the recorded version and turn 2 on a newer worker; its
#: inputs are those of ``two_turns.json``, which every version recorded.
COUNTERPARTS = {
    "rolling_upgrade_to_adk-1.29.0.json": "two_turns.json",
    "rolling_upgrade_to_adk-2.13.0.json": "two_turns.json",
}

#: Matrix scenarios whose verdicts rest on the parallel-results assumption: helper chains whose
#: activities complete in different workflow tasks in the two runs (see toolkit.replay.new_code).
MATRIX_ASSUMED = {"helpers_parallel.json"}

#: Gallery pairs two histories cannot settle, and why (the answer says ``assumed``; code mode
#: below gives the exact one). The test fails if a pair joins or leaves this set.
HISTORY_LIMITS = {
    "patch-introduced v1 on v2": "patched() old branch: the new code's history shows the new one",
    "patch-introduced-after-signal v1 on v2": "patched() old branch, as above",
    "patch-removed v2 on v1": "patched() old branch: its command is in neither history",
    "update-handler-removed v1 on v2": "update rejected without a trace: missing handler?",
    "update-validator-added v1 on v2": "update rejected without a trace: validator (not replayed)",
}


def _core_message(text: str) -> str:
    """The ``[TMPRL1100] ...`` text inside a matrix's replayer message (or the text)."""
    parsed = parse_nondeterminism(text)
    return parsed["message"] if parsed else text


def _problem(verdict: ReplayVerdict, outcome: str, message: str) -> str | None:
    """None when the verdict is the Replayer's (verdict and message); otherwise what differs."""
    found = verdict.divergence
    said = "" if found is None else found.core_message
    if verdict.outcome != outcome:
        return f"verdict {verdict.outcome} ({said!r}), Replayer said {outcome} ({message!r})"
    if found is None:
        return None
    if found.core_message_exact:
        same = said == message
    else:  # sdk-core printed a whole struct ({:?}); compare its head and identifying fields
        same = message.startswith(said.split("HistoryEvent", 1)[0]) and all(
            f"{key}: {value}" in message
            for key, value in (
                ("event_id", found.event_id),
                ("event_type", found.recorded_event["event_type"]),
            )
        )
    return None if same else f"model says {said!r}, Replayer said {message!r}"


@cache
def _events(path: Path) -> pd.DataFrame:
    return read_history(path)


def _history_verdict(recorded: Path, replayed: Path) -> ReplayVerdict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InexactVerdictWarning)
        return replay_verdict(_events(recorded), _events(replayed))


@pytest.mark.parametrize("dataset", ["adk", "go_twin"])
def test_replay_matrix(dataset: str) -> None:
    matrix_path = DATA / dataset / "replay_matrix.csv"
    if not matrix_path.is_file():
        pytest.skip(f"{matrix_path.relative_to(DATA.parent)} not recorded yet (make record)")
    matrix = pd.read_csv(matrix_path, dtype=str, keep_default_na=False)
    replayer_column = next(c for c in matrix.columns if c.startswith("replayer_"))
    problems, assumed = [], set()
    for row in matrix.to_dict("records"):
        recorded = DATA / dataset / row["history"]
        name = COUNTERPARTS.get(recorded.name, recorded.name)
        replayed = DATA / dataset / row[replayer_column] / name
        assert row["outcome"] in {"ok", "nondeterminism"}, row
        assert replayed.is_file(), f"no counterpart {replayed} for {row['history']}"
        verdict = _history_verdict(recorded, replayed)
        problem = _problem(verdict, row["outcome"], _core_message(row["message"]))
        if problem:
            problems.append(f"{row['history']} on {row[replayer_column]}: {problem}")
        if verdict.confidence == "assumed":
            assumed.add(recorded.name)
    assert not problems, f"{len(problems)} of {len(matrix)} disagree:\n" + "\n".join(problems)
    assert assumed <= MATRIX_ASSUMED, f"new assumptions needed for {assumed - MATRIX_ASSUMED}"


def _gallery_pairs() -> list[tuple[dict[str, Any], Path, str, str]]:
    cases = sorted((DATA / "gallery").glob("*/case.json"))
    if not cases:
        pytest.skip("data/gallery not recorded yet (make record)")
    out = []
    for case_path in cases:
        case = json.loads(case_path.read_text())
        for recorded, replayed in (("v1", "v2"), ("v2", "v1")):
            out.append((case, case_path.parent, recorded, replayed))
    return out


def test_gallery_histories() -> None:
    problems, limited = [], {}
    pairs = _gallery_pairs()
    for case, folder, recorded, replayed in pairs:
        real = case["replays"][f"{recorded}_on_{replayed}"]
        verdict = _history_verdict(folder / f"{recorded}.json", folder / f"{replayed}.json")
        pair = f"{case['name']} {recorded} on {replayed}"
        if verdict.confidence == "assumed":
            assert verdict.assumptions and not verdict.exact, pair
            limited[pair] = verdict
            continue
        problem = _problem(verdict, real["outcome"], real["message"])
        if problem:
            problems.append(f"{pair}: {problem}")
    assert len(pairs) >= 60 and {real_outcome(p) for p in pairs} >= {"ok", "error"}
    assert not problems, f"{len(problems)} of {len(pairs)} disagree:\n" + "\n".join(problems)
    assert set(limited) == set(HISTORY_LIMITS), (
        f"newly unsettled: {sorted(set(limited) - set(HISTORY_LIMITS))}; "
        f"now settled: {sorted(set(HISTORY_LIMITS) - set(limited))}"
    )


def real_outcome(pair: tuple[dict[str, Any], Path, str, str]) -> str:
    case, _, recorded, replayed = pair
    return case["replays"][f"{recorded}_on_{replayed}"]["outcome"]


def test_history_mode_reports_a_code_error_and_rederives_run_seeded_ids() -> None:
    folder = DATA / "gallery"
    if not (folder / "uuid-draw-added").is_dir():
        pytest.skip("data/gallery not recorded yet (make record)")
    stuck = _history_verdict(
        folder / "activity-result-type-changed/v1.json",
        folder / "activity-result-type-changed/v2.json",
    )
    assert stuck.outcome == "error" and stuck.exact
    assert stuck.divergence is not None and stuck.divergence.check == "workflow_task_failure"
    assert stuck.divergence.actual == "TypeError"
    drawn = _history_verdict(folder / "uuid-draw-added/v1.json", folder / "uuid-draw-added/v2.json")
    assert drawn.exact and any("drawn at word" in note for note in drawn.notes)
    assert drawn.divergence is not None and drawn.divergence.check == "activity_id"
    with pytest.warns(InexactVerdictWarning, match="patched"):
        from toolkit.replay.divergence import first_divergence

        first_divergence(
            read_history(folder / "patch-introduced/v1.json"),
            read_history(folder / "patch-introduced/v2.json"),
        )


def _classes(case: dict[str, Any], version: str) -> list[type]:
    names = [case[version]["class"], *case.get("support", [])]
    out = []
    for qualified in names:
        module, _, name = qualified.rpartition(".")
        out.append(getattr(importlib.import_module(module), name))
    return out


def test_gallery_code_mode() -> None:
    from toolkit.lab.gallery.drive import workflow_runner
    from toolkit.lab.gallery.replay import quiet_runtime

    problems, disagreements = [], []
    pairs = _gallery_pairs()
    for case, folder, recorded, replayed in pairs:
        real = case["replays"][f"{recorded}_on_{replayed}"]
        verdict = replay_verdict(
            folder / f"{recorded}.json",
            _classes(case, replayed),
            workflow_id=case["workflow_id"],
            workflow_runner=workflow_runner(),
            runtime=quiet_runtime(),
        )
        pair = f"{case['name']} {recorded} on {replayed}"
        assert verdict.confidence == "replayer" and verdict.exact, pair
        problem = _problem(verdict, real["outcome"], real["message"])
        if problem:
            problems.append(f"{pair}: {problem}")
        if verdict.model_agrees is False:
            disagreements.append(f"{pair}: {verdict.notes}")
    assert not problems, f"{len(problems)} of {len(pairs)} differ:\n" + "\n".join(problems)
    assert not disagreements, "the model, fed the real commands, disagrees:\n" + "\n".join(
        disagreements
    )
