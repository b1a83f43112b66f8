"""A few gallery cases recorded live on the dev server reproduce the committed gallery exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from toolkit.lab.gallery import TABLE_COLUMNS, get_case, record_gallery
from toolkit.lab.server import DevServer

GALLERY = Path(__file__).resolve().parents[1] / "data" / "gallery"

# A signal, an update, a cancelled timer, a patch, a stuck run (error outcome), an open run and
# continue-as-new: one of each mechanism the recorder has to get right.
LIVE_CASES = [
    "activity-renamed-after-signal",
    "update-handler-work",
    "timer-cancellation-removed",
    "patch-introduced",
    "activity-result-type-changed",
    "activity-added-open-run",
    "continue-as-new-added",
]


def _event_types(path: Path) -> list[str]:
    return [event["eventType"] for event in json.loads(path.read_text())["events"]]


@pytest.mark.server
def test_live_recording_reproduces_committed_outcomes(dev_server: DevServer,
                                                      tmp_path: Path) -> None:
    # One case goes in as a Case object, the others by name: both forms are accepted.
    cases: list = [get_case(LIVE_CASES[0]), *LIVE_CASES[1:]]
    table = record_gallery(tmp_path, dev_server.address, cases)

    assert list(table.columns) == TABLE_COLUMNS
    assert list(table["case"]) == LIVE_CASES
    committed = pd.read_csv(GALLERY / "cases.csv", dtype=str, keep_default_na=False)
    committed = committed.set_index("case").loc[LIVE_CASES].reset_index()
    assert table.astype(str).to_dict("records") == committed.to_dict("records")

    # The written table holds the same rows, in registry order.
    written = pd.read_csv(tmp_path / "gallery" / "cases.csv", dtype=str, keep_default_na=False)
    by_case = committed.set_index("case")
    assert written.to_dict("records") == by_case.loc[written["case"]].reset_index().to_dict(
        "records")
    assert sorted(written["case"]) == sorted(LIVE_CASES)
    for name in LIVE_CASES:
        new = json.loads((tmp_path / "gallery" / name / "case.json").read_text())
        old = json.loads((GALLERY / name / "case.json").read_text())
        for key in ("v1_on_v2", "v2_on_v1", "v1_on_v1", "v2_on_v2"):
            assert new["replays"][key]["outcome"] == old["replays"][key]["outcome"], (name, key)
            assert new["replays"][key]["message"] == old["replays"][key]["message"], (name, key)
        for label in ("v1", "v2"):
            assert new[label]["status"] == old[label]["status"], (name, label)
            assert new[label]["steps"] == old[label]["steps"], (name, label)
            assert _event_types(tmp_path / "gallery" / name / f"{label}.json") == _event_types(
                GALLERY / name / f"{label}.json"), (name, label)
