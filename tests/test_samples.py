"""The sample recorder: real workflows on the real dev server, histories that replay."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import fixtures_samples
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from toolkit.errors import LabError
from toolkit.lab.samples import QUICK_SCENARIOS, SCENARIOS, record_samples, sandbox_runner
from toolkit.lab.samples import workflows as wf
from toolkit.lab.server import DevServer

pytestmark = pytest.mark.server
samples = fixtures_samples.samples  # the session fixture, until conftest imports it


def load(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.stem, path.read_text(encoding="utf-8"))


def event_counts(path: Path) -> Counter[str]:
    return Counter(
        EventType.Name(event.event_type).removeprefix("EVENT_TYPE_") for event in load(path).events
    )


# Events each history must hold at least this many times (what the scenario exists to show).
EXPECTED: dict[str, dict[str, int]] = {
    "activities": {
        "ACTIVITY_TASK_SCHEDULED": 4, "ACTIVITY_TASK_COMPLETED": 1, "ACTIVITY_TASK_FAILED": 1,
        "ACTIVITY_TASK_TIMED_OUT": 1, "ACTIVITY_TASK_CANCEL_REQUESTED": 1,
        "ACTIVITY_TASK_CANCELED": 1, "WORKFLOW_EXECUTION_COMPLETED": 1,
    },
    "local_activities": {"MARKER_RECORDED": 2, "WORKFLOW_EXECUTION_COMPLETED": 1},
    "timers": {"TIMER_STARTED": 4, "TIMER_FIRED": 3, "TIMER_CANCELED": 1},
    "signals_updates": {
        "WORKFLOW_EXECUTION_SIGNALED": 3, "WORKFLOW_EXECUTION_UPDATE_ACCEPTED": 1,
        "WORKFLOW_EXECUTION_UPDATE_COMPLETED": 1,
    },
    "child_workflows": {
        "START_CHILD_WORKFLOW_EXECUTION_INITIATED": 2, "CHILD_WORKFLOW_EXECUTION_STARTED": 2,
        "CHILD_WORKFLOW_EXECUTION_COMPLETED": 1, "CHILD_WORKFLOW_EXECUTION_FAILED": 1,
    },
    "child_failed": {"WORKFLOW_EXECUTION_FAILED": 1},
    "continue_as_new": {"WORKFLOW_EXECUTION_CONTINUED_AS_NEW": 1},
    "continue_as_new_last": {"WORKFLOW_EXECUTION_COMPLETED": 1},
    "side_effects": {"MARKER_RECORDED": 2, "TIMER_FIRED": 1},
    "cancellation": {"WORKFLOW_EXECUTION_CANCEL_REQUESTED": 1, "WORKFLOW_EXECUTION_CANCELED": 1},
    "termination": {"WORKFLOW_EXECUTION_TERMINATED": 1},
    "nondeterminism": {"WORKFLOW_TASK_FAILED": 1, "WORKFLOW_EXECUTION_SIGNALED": 1},
}


def test_every_scenario_writes_the_histories_it_promises(samples: dict[str, Path]) -> None:
    assert set(samples) == set(EXPECTED)
    for name, path in samples.items():
        assert path.name == f"{name}.json" and path.stat().st_size > 0
        counts = event_counts(path)
        missing = {kind: n for kind, n in EXPECTED[name].items() if counts[kind] < n}
        assert not missing, f"{name}: fewer events than expected {missing}; holds {dict(counts)}"


def test_open_and_closed_histories_end_where_the_scenario_left_them(
    samples: dict[str, Path],
) -> None:
    last = {n: EventType.Name(load(path).events[-1].event_type) for n, path in samples.items()}
    # The nondeterminism history is exported while open: the retried task (scheduled, or already
    # started, depending on when the export happened) is its tail.
    assert last["nondeterminism"] in {
        "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED", "EVENT_TYPE_WORKFLOW_TASK_STARTED",
    }
    assert last["continue_as_new"] == "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"
    assert last["child_failed"] == "EVENT_TYPE_WORKFLOW_EXECUTION_FAILED"
    assert last["termination"] == "EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED"


def test_rejected_update_leaves_no_event(samples: dict[str, Path]) -> None:
    # Validator rejections never reach history (server behaviour): only the accepted update shows.
    history = load(samples["signals_updates"])
    update_ids = {
        event.workflow_execution_update_accepted_event_attributes.protocol_instance_id
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    }
    assert update_ids == {"update-accepted"}
    assert counts_of(history, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_REJECTED) == 0


def counts_of(history: WorkflowHistory, kind: int) -> int:
    return sum(1 for event in history.events if event.event_type == kind)


def test_recorded_histories_replay_with_the_code_that_made_them(samples: dict[str, Path]) -> None:
    replayer = Replayer(workflows=[*wf.MAIN_WORKFLOWS], workflow_runner=sandbox_runner())

    async def replay_all() -> dict[str, Exception | None]:
        outcomes = {}
        for name, path in samples.items():
            if name != "nondeterminism":
                outcomes[name] = (await replayer.replay_workflow(
                    load(path), raise_on_replay_failure=False,
                )).replay_failure
        return outcomes

    outcomes = asyncio.run(replay_all())
    assert len(outcomes) == len(samples) - 1
    assert {n: e for n, e in outcomes.items() if e is not None} == {}


def test_nondeterminism_history_replays_with_v1_and_fails_with_v2(
    samples: dict[str, Path],
) -> None:
    history = load(samples["nondeterminism"])
    runner = sandbox_runner()
    asyncio.run(Replayer(workflows=[wf.DriftingWorkflowV1], workflow_runner=runner)
                .replay_workflow(history))
    with pytest.raises(NondeterminismError, match="extra_step"):
        asyncio.run(Replayer(workflows=[wf.DriftingWorkflowV2], workflow_runner=runner)
                    .replay_workflow(history))


def test_quick_subset_records_only_its_scenarios(dev_server: DevServer, tmp_path: Path) -> None:
    written = record_samples(dev_server.address, tmp_path, quick=True)
    assert set(written) == set(QUICK_SCENARIOS) <= set(SCENARIOS)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.json" for n in written)


def test_unknown_scenario_and_unreachable_server_raise_lab_errors(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="unknown sample scenarios"):
        record_samples("127.0.0.1:1", tmp_path, scenarios=["no-such-thing"])
    with pytest.raises(LabError, match="cannot connect"):
        record_samples("127.0.0.1:1", tmp_path, scenarios=["timers"])
