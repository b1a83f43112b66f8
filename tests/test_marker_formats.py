"""Patch and version markers in every layout: tk.markers and tk.commands read the same identity.

The old sdk-core ``core_patch`` layout (``patch_id`` as ``binary/plain`` bytes, ``deprecated`` as
one byte; sdk-core's test history ``old_change_marker_format``) is rebuilt here from a gallery
recording, and temporalio's real Replayer (whose sdk-core still reads that layout) is the judge
that the rewritten history means the same thing.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from toolkit.histories.reading.read import read_history
from toolkit.histories.tables.marker import markers
from toolkit.lab.gallery import get_case, replay_with
from toolkit.replay.commands import commands
from toolkit.replay.divergence import first_divergence

GALLERY = Path(__file__).resolve().parents[1] / "data" / "gallery"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _old_layout(history: dict, deprecated: bool = False) -> dict:
    """The history with every ``core_patch`` marker written in sdk-core's old layout."""
    for event in history["events"]:
        attributes = event.get("markerRecordedEventAttributes")
        if not attributes or attributes.get("markerName") != "core_patch":
            continue
        payload = attributes["details"]["patch-data"]["payloads"][0]
        patch_id = json.loads(base64.b64decode(payload["data"]))["id"]
        plain = {"encoding": _b64(b"binary/plain")}
        attributes["details"] = {
            "patch_id": {"payloads": [{"metadata": plain, "data": _b64(patch_id.encode())}]},
            "deprecated": {"payloads": [{"metadata": plain, "data": _b64(bytes([deprecated]))}]},
        }
    return history


@pytest.fixture(scope="module")
def case_files() -> dict:
    record = json.loads((GALLERY / "patch-introduced" / "case.json").read_text())
    v1 = json.loads((GALLERY / "patch-introduced" / "v1.json").read_text())
    v2 = json.loads((GALLERY / "patch-introduced" / "v2.json").read_text())
    return {"workflow_id": record["workflow_id"], "v1": v1, "v2": v2,
            "v2_old": _old_layout(json.loads(json.dumps(v2)))}


def test_old_core_patch_layout_reads_like_the_current_one(case_files: dict) -> None:
    current = markers(read_history(case_files["v2"]))
    old = markers(read_history(case_files["v2_old"]))
    assert old.patch_id.tolist() == current.patch_id.tolist() == ["use-card"]
    assert old.deprecated.tolist() == current.deprecated.tolist() == [False]
    old_labels = commands(read_history(case_files["v2_old"])).identity.tolist()
    assert old_labels == commands(read_history(case_files["v2"])).identity.tolist()
    assert "RecordMarker(patch=use-card)" in old_labels


def test_old_layout_verdicts_agree_with_the_real_replayer(case_files: dict) -> None:
    case = get_case("patch-introduced")
    workflow_id = case_files["workflow_id"]

    async def outcomes() -> dict[str, str]:
        text = json.dumps(case_files["v2_old"])
        history = WorkflowHistory.from_json(workflow_id, text)
        return {
            "v2": (await replay_with(history, case.v2, case.support)).outcome,
            "v1": (await replay_with(history, case.v1, case.support)).outcome,
        }

    real = asyncio.run(outcomes())
    # The new code replays its own history in the old layout; the old code does not.
    assert real == {"v2": "ok", "v1": "nondeterminism"}
    old_on_v1 = first_divergence(read_history(case_files["v2_old"]), read_history(case_files["v1"]))
    assert old_on_v1 is not None and old_on_v1.exact
    same_on_v1 = first_divergence(read_history(case_files["v2"]), read_history(case_files["v1"]))
    assert (old_on_v1.event_id, old_on_v1.check, old_on_v1.core_message) == (
        same_on_v1.event_id, same_on_v1.check, same_on_v1.core_message,
    )
    v2, v2_old = read_history(case_files["v2"]), read_history(case_files["v2_old"])
    assert first_divergence(v2, v2_old) is None


def test_deprecated_byte_of_the_old_layout(case_files: dict) -> None:
    deprecated = _old_layout(json.loads(json.dumps(case_files["v2"])), deprecated=True)
    assert markers(read_history(deprecated)).deprecated.tolist() == [True]
    assert commands(read_history(deprecated)).patch_deprecated.dropna().tolist() == [True]


def test_go_and_java_version_markers_in_public_histories(corpus: Path) -> None:
    found = {}
    for path in sorted((corpus / "histories").glob("temporalio__sdk-*/*.json")):
        events = read_history(path)
        table = markers(events)
        versions = table[table.marker_name == "Version"]
        if versions.empty:
            continue
        assert versions.patch_id.notna().all() and versions.version.notna().all(), path.name
        labels = commands(events).identity.tolist()
        for row in versions.itertuples():
            assert f"RecordMarker(patch={row.patch_id}, version={row.version})" in labels
        found[path.parent.name] = found.get(path.parent.name, 0) + len(versions)
    assert set(found) >= {"temporalio__sdk-go", "temporalio__sdk-java"}, found
