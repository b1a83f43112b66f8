"""The pieces behind the two modes of first_divergence, on the gallery's real histories."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from temporalio.bridge.proto.workflow_commands import WorkflowCommand

from toolkit.errors import ToolkitError
from toolkit.histories.reading.read import read_history
from toolkit.replay.code_replay import command_row
from toolkit.replay.divergence import first_divergence
from toolkit.replay.run_random import reseed_ids, uuid_offsets
from toolkit.replay.verdict import InexactVerdictWarning, is_workflow_code, replay_verdict

GALLERY = Path(__file__).resolve().parents[1] / "data" / "gallery"


def _case(name: str) -> Path:
    folder = GALLERY / name
    if not (folder / "case.json").is_file():
        pytest.skip(f"{folder} not recorded yet (make record)")
    return folder


def _run_and_ids(path: Path) -> tuple[str, list[str]]:
    events = json.loads(path.read_text())["events"]
    run_id = events[0]["workflowExecutionStartedEventAttributes"]["originalExecutionRunId"]
    ids = [
        e["activityTaskScheduledEventAttributes"]["activityId"]
        for e in events
        if "activityTaskScheduledEventAttributes" in e
    ]
    return run_id, ids


def test_uuid4_ids_are_found_in_their_runs_stream_and_rederived() -> None:
    folder = _case("uuid-draw-added")
    v1_run, (v1_id,) = _run_and_ids(folder / "v1.json")
    v2_run, (v2_id,) = _run_and_ids(folder / "v2.json")
    # v1 draws its id first; v2 draws one UUID (4 words) before it.
    assert uuid_offsets(v1_id, v1_run) == [(v1_id, 0)]
    assert uuid_offsets(v2_id, v2_run) == [(v2_id, 4)]
    assert uuid_offsets(v2_id, v1_run) == []  # another run's stream does not hold it
    row = {"activity_id": f"task-{v2_id}"}
    notes = reseed_ids([row], v2_run, v1_run)
    # What the Replayer printed for v1 replayed on v2 names this id.
    real = json.loads((folder / "case.json").read_text())["replays"]["v1_on_v2"]["message"]
    assert row["activity_id"].removeprefix("task-") in real and len(notes) == 1
    assert reseed_ids([{"activity_id": v1_id}], v1_run, v1_run) == []  # same run: untouched


def test_command_rows_of_core_commands() -> None:
    command = WorkflowCommand()
    command.schedule_activity.seq = 3
    command.schedule_activity.activity_type = "charge"
    command.schedule_activity.activity_id = "3"
    row = command_row(command)
    assert row is not None
    assert (row["kind"], row["event_type"], row["activity_type"], row["activity_id"]) == (
        "ScheduleActivityTask", "ActivityTaskScheduled", "charge", "3",
    )  # fmt: skip
    timer = WorkflowCommand()
    timer.start_timer.seq = 2
    assert command_row(timer)["timer_id"] == "2"  # type: ignore[index]
    rejected = WorkflowCommand()
    rejected.update_response.protocol_instance_id = "u1"
    rejected.update_response.rejected.message = "no"
    assert command_row(rejected) is None  # a rejection is a message, not a command
    query = WorkflowCommand()
    query.respond_to_query.query_id = "q"
    assert command_row(query) is None


def test_modes_and_their_confidence() -> None:
    folder = _case("patch-introduced")
    v1, v2 = read_history(folder / "v1.json"), read_history(folder / "v2.json")
    with pytest.warns(InexactVerdictWarning, match="patched\\('use-card'\\)"):
        assert first_divergence(v1, v2) is None
    verdict = replay_verdict(v1, v2)
    assert (verdict.outcome, verdict.confidence, verdict.exact) == ("ok", "assumed", False)
    with pytest.raises(ToolkitError, match="replayed is a history"):
        replay_verdict(v1, v2, workflow_id="x")
    assert is_workflow_code(int) and is_workflow_code([int, str])
    assert not is_workflow_code([]) and not is_workflow_code(v2)


def test_code_mode_from_an_events_frame() -> None:
    from toolkit.lab.gallery.builtin.patch_cases import PatchRemovedV1
    from toolkit.lab.gallery.drive import workflow_runner
    from toolkit.lab.gallery.replay import quiet_runtime

    folder = _case("patch-removed")
    case = json.loads((folder / "case.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error", InexactVerdictWarning)  # code mode never guesses
        found = first_divergence(
            read_history(folder / "v2.json"),
            [PatchRemovedV1],
            workflow_id=case["workflow_id"],
            workflow_runner=workflow_runner(),
            runtime=quiet_runtime(),
        )
    assert found is not None and found.confidence == "replayer" and found.exact
    assert found.core_message == case["replays"]["v2_on_v1"]["message"]
    assert (found.event_id, found.check, found.actual) == (11, "activity_type", "charge")
    assert found.command is not None and found.command["activity_type"] == "charge"
    assert found.aligned["replayed"].tolist()[:2] == [
        "ScheduleActivityTask(reserve, id=1)",
        "ScheduleActivityTask(charge, id=2)",
    ]
