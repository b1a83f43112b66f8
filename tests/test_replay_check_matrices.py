"""Every cell of every replay matrix in data/, reproduced by tk.replay_check run as the replaying
version would run it: in that version's environment, over the histories the matrix lists.

Versions whose virtual environment is not built here (``data/venvs/``, built by ``make record``
from exact pins) are skipped with the reason; the project's own interpreter replays the Go plugin
twin, the gallery, google-adk 2.13.0 and temporalio 1.35.0 on every machine.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolkit.lab.replay_matrices import (
    MATRICES,
    explained_off_the_replayer,
    replayings,
    reproduce,
    run_check,
)
from toolkit.replay_check.groups import own_ids_masked

DATA = Path(__file__).resolve().parents[1] / "data"
# The twin has its own module (tests/test_replay_check.py); the rest is here.
CASES = [r for m in MATRICES if m != "go_twin" for r in replayings(m, DATA)]


def _masked(text: object) -> str:
    return re.sub(r"\b\d+\b", "N", str(text))


@pytest.mark.slow
@pytest.mark.parametrize("replaying", CASES, ids=[f"{r.matrix}:{r.name}" for r in CASES])
def test_the_check_reproduces_every_cell_and_names_the_divergences(replaying) -> None:
    if not replaying.available():
        pytest.skip(f"{replaying.name}: environment not built ({replaying.python()})")
    check = run_check(replaying, DATA)
    cells = reproduce(replaying, DATA, check=check)
    assert len(cells) and cells["agrees"].all(), cells.loc[
        ~cells["agrees"], ["history", "outcome", "check_outcome", "core_message",
                           "check_core_message"]].to_dict("records")  # fmt: skip
    # Groups mask the ids a run builds from its own workflow id and run id (one group for every
    # run), so the matrix's messages are masked the same way, with each row's own ids.
    failing = cells.index[cells["outcome"] != "ok"]
    rows = check.results.to_dict("records")
    assert {_masked(m) for m in check.groups["message"]} == {
        _masked(own_ids_masked(rows[i], cells.at[i, "core_message"])) for i in failing}
    nondeterministic = check.results[check.results["outcome"] == "nondeterminism"]
    assert nondeterministic["explanation"].notna().all()
    # Every explanation the model gives is in the Replayer's own words (HistoryEvent debug texts
    # and sdk-core flag 3 included), and every nondeterministic failure gets one.
    assert not explained_off_the_replayer(check)
    assert set(nondeterministic.index) <= set(check.divergences)
