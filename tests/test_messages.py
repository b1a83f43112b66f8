"""The nondeterminism message parser: every shape in histories-and-replay.md, and only those."""

from __future__ import annotations

import pytest

from toolkit.replay.messages import parse_nondeterminism, pascal_case_type

GO_EVENT = (
    "ActivityTaskScheduled: (ActivityId:5, ActivityType:(Name:ListMcpTools), "
    "TaskQueue:(Name:agents, Kind:Normal), Input:[...], ScheduleToCloseTimeout:0s)"
)
GO_COMMAND = (
    "ScheduleActivityTask: (ActivityId:5, ActivityType:(Name:InvokeModel), "
    "TaskQueue:(Name:agents, Kind:Normal), Input:[...])"
)


def test_core_no_command_scheduled() -> None:
    text = (
        "[TMPRL1100] Nondeterminism error: No command scheduled for event "
        "HistoryEvent(id: 42, ActivityTaskScheduled)"
    )
    got = parse_nondeterminism(text)
    assert got is not None
    assert (got["sdk"], got["kind"], got["event_id"], got["event_type"]) == (
        "core", "no_command_for_event", 42, "ActivityTaskScheduled",
    )
    assert got["check"]["kind"] == "activity"
    assert got["message"] == text


def test_core_activity_type_mismatch_in_python_replayer() -> None:
    text = (
        "temporalio.workflow.NondeterminismError: Workflow activation completion failed: "
        'Failure { failure: Some(Failure { message: "[TMPRL1100] Nondeterminism error: Activity '
        "type of scheduled event 'InvokeModel' does not match activity type of activity command "
        "'ListMcpTools'\", source: \"\", stack_trace: \"\", encoded_attributes: None"
    )
    got = parse_nondeterminism(text)
    assert got is not None
    assert got["sdk"] == "python"
    assert got["kind"] == "type_mismatch"
    assert (got["expected"], got["actual"]) == ("InvokeModel", "ListMcpTools")
    assert got["check"] == {
        "kind": "activity", "field": "activity_type", "activity_type": "InvokeModel",
    }
    assert got["message"].endswith("'ListMcpTools'")


def test_core_activity_id_mismatch() -> None:
    got = parse_nondeterminism(
        "[TMPRL1100] Nondeterminism error: Activity id of scheduled event '3' does not match "
        "activity id of activity command '4'"
    )
    assert got is not None
    assert (got["kind"], got["expected"], got["actual"]) == ("id_mismatch", "3", "4")
    assert got["check"]["field"] == "activity_id"


def test_core_timer_machine_in_worker_log_with_run_id() -> None:
    text = (
        "2024-01-01T00:00:00.000Z  WARN temporal_sdk_core::worker::workflow: Failing workflow "
        "task run_id=0d8a5a3e-1c4f-4b7e-9a3c-1f2e3d4c5b6a failure=Failure { failure: "
        'Some(Failure { message: "[TMPRL1100] Nondeterminism error: Timer machine does not '
        'handle this event: HistoryEvent(id: 5, ActivityTaskScheduled)", source: "" }) }'
    )
    got = parse_nondeterminism(text)
    assert got is not None
    assert got["sdk"] == "core"
    assert got["kind"] == "machine_mismatch"
    assert got["run_id"] == "0d8a5a3e-1c4f-4b7e-9a3c-1f2e3d4c5b6a"
    assert (got["event_id"], got["event_type"]) == (5, "ActivityTaskScheduled")
    assert got["check"]["kind"] == "timer"


def test_core_child_workflow_type_mismatch() -> None:
    got = parse_nondeterminism(
        "[TMPRL1100] Nondeterminism error: Child workflow type of scheduled event 'A' does not "
        "match child workflow type of child workflow command 'B'"
    )
    assert got is not None
    assert got["check"]["kind"] == "child_workflow"
    assert (got["expected"], got["actual"]) == ("A", "B")


def test_old_core_debug_shape() -> None:
    got = parse_nondeterminism(
        'Nondeterminism("No command scheduled for event HistoryEvent(id: 6, '
        'Some(ActivityTaskScheduled))")'
    )
    assert got is not None
    assert (got["sdk"], got["event_id"], got["event_type"]) == ("core", 6, "ActivityTaskScheduled")


def test_typescript_determinism_violation() -> None:
    got = parse_nondeterminism(
        "DeterminismViolationError: Replay failed with a nondeterminism error. This means that "
        "the workflow code as written is not compatible with the history that was fed in. "
        "Details: Workflow activation completion failed: Failure { failure: Some(Failure { "
        'message: "[TMPRL1100] Nondeterminism error: No command scheduled for event '
        'HistoryEvent(id: 7, TimerStarted)", source: "" }) }'
    )
    assert got is not None
    assert (got["sdk"], got["event_id"], got["event_type"]) == ("typescript", 7, "TimerStarted")
    assert got["check"]["kind"] == "timer"


def test_go_missing_extra_and_mismatch() -> None:
    missing = parse_nondeterminism(
        f"[TMPRL1100] nondeterministic workflow: missing replay command for {GO_EVENT}"
    )
    assert missing is not None
    assert (missing["sdk"], missing["kind"], missing["event_type"]) == (
        "go", "missing_replay_command", "ActivityTaskScheduled",
    )
    assert missing["check"]["activity_type"] == "ListMcpTools"
    assert missing["check"]["activity_id"] == "5"

    extra = parse_nondeterminism(
        f"[TMPRL1100] nondeterministic workflow: extra replay command for {GO_COMMAND}"
    )
    assert extra is not None
    assert (extra["kind"], extra["command_type"], extra["actual"]) == (
        "extra_replay_command", "ScheduleActivityTask", "InvokeModel",
    )

    both = parse_nondeterminism(
        "2024/01/01 00:00:00 ERROR Workflow panic Namespace default TaskQueue q Error "
        f"[TMPRL1100] nondeterministic workflow: history event is {GO_EVENT}, "
        f"replay command is {GO_COMMAND}"
    )
    assert both is not None
    assert both["kind"] == "event_command_mismatch"
    assert (both["event_type"], both["command_type"]) == (
        "ActivityTaskScheduled", "ScheduleActivityTask",
    )
    assert (both["expected"], both["actual"]) == ("ListMcpTools", "InvokeModel")
    assert both["check"]["field"] == "activity_type"


def test_go_matching_command_expected_and_lookup() -> None:
    got = parse_nondeterminism(
        "[TMPRL1100] During replay, a matching Timer command was expected in history event "
        "position 12. However, the replayed code did not produce that. Possible causes are "
        "nondeterministic workflow definition code, or an incompatible change in the workflow "
        "definition."
    )
    assert got is not None
    assert (got["kind"], got["event_id"], got["check"]["kind"]) == (
        "missing_matching_command", 12, "timer",
    )
    lookup = parse_nondeterminism(
        "[TMPRL1100] lookup failed for scheduledEventID to activityID: scheduleEventID: 9, "
        "activityID: 4"
    )
    assert lookup is not None
    assert (lookup["kind"], lookup["event_id"]) == ("lookup_failed", 9)
    assert lookup["check"]["activity_id"] == "4"


def test_java_check_mismatch() -> None:
    got = parse_nondeterminism(
        "io.temporal.worker.NonDeterministicException: [TMPRL1100] Failure handling event 5 of "
        "type 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' during replay. [TMPRL1100] Command "
        "COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK doesn't match event "
        "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED with EventId=5 on check activityType with an "
        "expected value 'name: \"ChargeCustomer\"\n' "
        "and an actual value 'name: \"RefundCustomer\"\n'."
    )
    assert got is not None
    assert got["sdk"] == "java"
    assert (got["event_id"], got["event_type"], got["command_type"]) == (
        5, "ActivityTaskScheduled", "ScheduleActivityTask",
    )
    assert (got["expected"], got["actual"]) == ("ChargeCustomer", "RefundCustomer")
    assert got["check"]["field"] == "activity_type"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "workflow completed",
        "We talked about nondeterminism in the design review",
        "[TMPRL1100] something entirely new",
        "Nondeterminism error: the cat ate the history",
        "nondeterministic workflow: maybe",
    ],
)
def test_unknown_shapes_are_not_parsed(text: str) -> None:
    assert parse_nondeterminism(text) is None


def test_pascal_case_type() -> None:
    assert pascal_case_type("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED") == "ActivityTaskScheduled"
    assert pascal_case_type("COMMAND_TYPE_START_TIMER") == "StartTimer"
    assert pascal_case_type("TimerStarted") == "TimerStarted"
