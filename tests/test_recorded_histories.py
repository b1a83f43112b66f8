"""The events frame on histories recorded on the dev server; the write/replay round trip."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd
import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

import toolkit as tk
from toolkit.lab.samples import workflows as wf
from toolkit.lab.samples.record import sandbox_runner

pytestmark = pytest.mark.server


def _replay(history: WorkflowHistory, workflows: list[type]) -> tuple[bool, str | None]:
    async def run() -> tuple[bool, str | None]:
        replayer = Replayer(workflows=workflows, workflow_runner=sandbox_runner())
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        failure = result.replay_failure
        return failure is None, None if failure is None else str(failure)

    return asyncio.run(run())


def test_columns_on_recorded_activities(samples: dict[str, Path]) -> None:
    events = tk.read_history(samples["activities"])
    started = events[events["event_type"] == "ActivityTaskStarted"]
    assert started["attempt"].max() >= 3  # a retried activity records its last attempt
    assert started["activity_type"].notna().all()
    failed = events[events["event_type"] == "ActivityTaskFailed"]
    assert (failed["retry_state"] == "RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED").any()
    assert failed["failure_message"].notna().all()
    timed_out = events[events["event_type"] == "ActivityTaskTimedOut"]
    assert (timed_out["failure_type"] == "TimeoutFailure").all() and len(timed_out) >= 1
    commands = events[events["is_command"]]
    assert commands["workflow_task"].notna().all()
    completed_tasks = events.loc[events["event_type"] == "WorkflowTaskCompleted", "workflow_task"]
    assert set(commands["workflow_task"]) <= set(completed_tasks)


def test_columns_on_recorded_messages_children_timers(samples: dict[str, Path]) -> None:
    messages = tk.read_history(samples["signals_updates"])
    assert messages["signal_name"].notna().any()
    updates = messages[messages["category"] == "update"]
    assert updates["update_id"].notna().all() and updates["update_name"].notna().all()
    children = tk.read_history(samples["child_workflows"])
    child_events = children[children["category"] == "child_workflow"]
    assert child_events["child_workflow_id"].notna().all()
    assert child_events["child_workflow_type"].notna().all()
    timers = tk.read_history(samples["timers"])
    assert set(timers["event_type"]) >= {"TimerStarted", "TimerFired", "TimerCanceled"}
    assert timers.loc[timers["category"] == "timer", "timer_id"].notna().all()


def test_nondeterminism_failure_is_a_column(samples: dict[str, Path]) -> None:
    events = tk.read_history(samples["nondeterminism"])
    failed = events[events["event_type"] == "WorkflowTaskFailed"].iloc[0]
    assert failed["cause"] == "WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR"
    assert "[TMPRL1100]" in failed["failure_message"]


def test_fetch_history_equals_the_exported_file(samples: dict[str, Path], dev_server) -> None:
    exported = tk.read_history(samples["activities"])
    workflow_id = WorkflowHistory.from_json("x", samples["activities"].read_text()).events[0]
    run_id = exported["run_id"].iloc[0]
    batch = tk.fetch_histories(dev_server.address, f"RunId = '{run_id}'")
    assert batch["workflow_id"].notna().all() and (batch["namespace"] == "default").all()
    live = tk.fetch_history(dev_server.address, batch["workflow_id"].iloc[0], run_id)
    columns = [c for c in exported.columns if c not in ("source", "workflow_id", "namespace")]
    left = exported[columns].drop(columns=["attributes", "extra"])
    right = live[columns].drop(columns=["attributes", "extra"])
    pd.testing.assert_frame_equal(left, right, check_dtype=True)
    assert [dict(a) for a in exported["attributes"]] == [dict(a) for a in live["attributes"]]
    assert workflow_id.event_id == 1


def test_fetch_from_unreachable_server_is_a_clear_error() -> None:
    from toolkit.lab.server import free_port

    with pytest.raises(tk.ServerError, match="cannot connect"):
        tk.fetch_history(f"127.0.0.1:{free_port()}", "nope")


@pytest.mark.parametrize(
    "name", ["activities", "timers", "signals_updates", "child_workflows", "side_effects"]
)
def test_write_history_replays_like_the_original(samples: dict[str, Path], name: str) -> None:
    original = WorkflowHistory.from_json("wf", samples[name].read_text())
    rewritten = WorkflowHistory.from_json("wf", tk.write_history(tk.read_history(samples[name])))
    assert list(rewritten.events) == list(original.events)
    assert (
        _replay(rewritten, wf.MAIN_WORKFLOWS)
        == _replay(original, wf.MAIN_WORKFLOWS)
        == (
            True,
            None,
        )
    )


def test_rewritten_history_fails_replay_exactly_like_the_original(
    samples: dict[str, Path], tmp_path: Path
) -> None:
    original = WorkflowHistory.from_json("wf", samples["nondeterminism"].read_text())
    frame = tk.read_history(samples["nondeterminism"])
    # Through a dialect the SDK cannot read itself: PascalCase enums, numbers, descending order.
    path = tmp_path / "rewritten.json"
    tk.write_history(frame, path)
    again = tk.to_workflow_history(tk.read_history(path))
    for workflows in ([wf.DriftingWorkflowV1], [wf.DriftingWorkflowV2]):
        assert _replay(again, workflows) == _replay(original, workflows)
    ok, message = _replay(again, [wf.DriftingWorkflowV2])
    assert not ok and "[TMPRL1100]" in (message or "")
