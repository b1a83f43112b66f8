"""sdk-core's replay matching, modelled on two histories: where it fails and what it prints.

The model follows ``WorkflowMachines`` (sdk-core bundled with temporalio 1.35):

- commands the code issues go to one queue, in order, and stay there across workflow tasks;
- each command event after a ``WorkflowTaskCompleted`` pops the queue front and feeds it to that
  command's state machine: another kind of event fails (``Activity machine does not handle this
  event: ...``), an empty queue fails (``No command scheduled for event ...``);
- activity, child-workflow and local-activity id and type are compared only when the internal
  flag 1 (``IdAndTypeDeterminismChecks``) is known from ``sdkMetadata.coreUsedFlags`` or the task is
  in the last stretch of history; timer ids are not compared when a timer starts; inputs, task
  queues, timeouts, headers are never compared;
- ``core_patch`` markers: a patch command whose marker is absent is skipped; a deprecated marker
  without a command is skipped; a non-deprecated one fails; different ids fail;
- commands left in the queue when history ends are not an error.

The new code's commands are taken from the replayed history: a task's commands become available
once everything that task was delivered in the replayed run has been delivered by the recorded
history (results keyed by the position of the command they answer, signals and updates by name
and ordinal).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolkit.replay.divergence_messages import (
    CORE_PREFIX,
    core_history_event,
    core_kind_mismatch,
    core_machine_kind,
)
from toolkit.replay.tasks import Task

__all__ = ["CoreFailure", "core_replay"]

ID_AND_TYPE_CHECKS = 1


@dataclass(frozen=True)
class CoreFailure:
    """Where modelled sdk-core replay fails.

    Attributes
    ----------
    event : dict
        The recorded command row (``commands()`` columns) where replay fails.
    command : dict or None
        The new code's command popped for it (None when the queue was empty).
    check : str
        ``kind``, ``missing_command``, ``activity_id``, ``activity_type``, ``child_workflow_id``,
        ``child_workflow_type``, ``local_activity_seq``, ``local_activity_id``,
        ``local_activity_type``, ``patch_id`` or ``patch_marker``.
    expected, actual : object
        The recorded value and the new code's value of the compared field.
    message : str
        The text sdk-core prints.
    exact : bool
        False where sdk-core prints a whole protobuf struct the toolkit abbreviates.
    task : int
        Recorded workflow task (1-based) whose commands were being replayed.
    checks_on : bool
        Whether id/type checks were on at that point.
    """

    event: dict[str, Any]
    command: dict[str, Any] | None
    check: str
    expected: Any
    actual: Any
    message: str
    exact: bool
    task: int
    checks_on: bool


def _is_version_upsert(row: Mapping[str, Any], previous: Mapping[str, Any] | None) -> bool:
    """The search-attribute upsert sdk-core writes right after a patch marker (one unit with it)."""
    return (
        row.get("kind") == "UpsertWorkflowSearchAttributes"
        and previous is not None
        and previous.get("marker_name") == "core_patch"
    )


def _identity_check(
    event: Mapping[str, Any], command: Mapping[str, Any], checks_on: bool
) -> tuple[str, Any, Any, str] | None:
    """Compare one matched pair as the command's machine does; returns the failing check."""
    machine = core_machine_kind(command)
    if (
        machine == "ScheduleActivityTask"
        and event.get("kind") == "ScheduleActivityTask"
        and checks_on
    ):
        for field, label in (("activity_id", "id"), ("activity_type", "type")):
            if event.get(field) != command.get(field):
                text = (
                    f"Activity {label} of scheduled event '{event.get(field)}' does not match "
                    f"activity {label} of activity command '{command.get(field)}'"
                )
                return field, event.get(field), command.get(field), text
    if machine == "StartChildWorkflowExecution" and checks_on:
        for field, label in (("child_workflow_id", "id"), ("child_workflow_type", "type")):
            if event.get(field) != command.get(field):
                text = (
                    f"Child workflow {label} of scheduled event '{event.get(field)}' does not "
                    f"match child workflow {label} of command '{command.get(field)}'"
                )
                return field, event.get(field), command.get(field), text
    if machine == "LocalActivity":
        if event.get("local_activity_seq") != command.get("local_activity_seq"):
            text = (
                f"Local activity marker data has sequence number {event.get('local_activity_seq')}"
                f" but matched against LA command with sequence number "
                f"{command.get('local_activity_seq')}"
            )
            return (
                "local_activity_seq",
                event.get("local_activity_seq"),
                command.get("local_activity_seq"),
                text,
            )
        if checks_on:
            for field, label in (("local_activity_id", "id"), ("local_activity_type", "type")):
                if event.get(field) != command.get(field):
                    text = (
                        f"Activity {label} of recorded marker '{event.get(field)}' does not "
                        f"match activity {label} of local activity command '{command.get(field)}'"
                    )
                    return field, event.get(field), command.get(field), text
    if machine == "Patch" and event.get("patch_id") != command.get("patch_id"):
        recorded_id, new_id = event.get("patch_id"), command.get("patch_id")
        text = f"Change id {recorded_id} does not match expected id {new_id}"
        return "patch_id", recorded_id, new_id, text
    return None


def _available(replayed: list[Task], delivered: frozenset[tuple[Any, ...]], start: int) -> int:
    """Index past the replayed tasks whose deliveries the recorded history has made by now."""
    index = start
    while index < len(replayed) and replayed[index].delivered <= delivered:
        index += 1
    return index


#: Update acceptance is rebuilt from history's own event in replay (validators do not run), so
#: it is never matched against code; the handler's completion is.
_UPDATE_PROTOCOL = frozenset({"WorkflowExecutionUpdateAccepted", "WorkflowExecutionUpdateRejected"})


@dataclass
class _NewCode:
    """What the new code has issued so far, as sdk-core holds it."""

    queue: deque[dict[str, Any]]
    local_activities: dict[Any, dict[str, Any]]  # seq -> LA marker row
    blocked: bool = False  # waiting on a local activity history never resolves

    def issue(self, row: dict[str, Any], recorded_la_seqs: set[Any]) -> None:
        if self.blocked or row.get("event_type") in _UPDATE_PROTOCOL:
            return
        if core_machine_kind(row) == "LocalActivity":
            seq = row.get("local_activity_seq")
            self.local_activities[seq] = row
            if seq not in recorded_la_seqs:
                # No marker in history: the activity stays "executing" and the code waits.
                self.blocked = True
            return
        if row.get("kind") in {"CancelTimer", "RequestCancelActivityTask"}:
            started = self._unsent_start(row)
            if started is not None:
                # Cancelled before it was ever matched: sdk-core drops both commands.
                self.queue.remove(started)
                return
        self.queue.append(row)

    def _unsent_start(self, cancel: Mapping[str, Any]) -> dict[str, Any] | None:
        for queued in self.queue:
            if cancel.get("kind") == "CancelTimer" and queued.get("kind") == "StartTimer":
                if queued.get("timer_id") == cancel.get("timer_id"):
                    return queued
            elif cancel.get("kind") == "RequestCancelActivityTask" and queued.get(
                "event_id"
            ) == cancel.get("scheduled_event_id"):
                return queued
        return None


def core_replay(recorded: list[Task], replayed: list[Task]) -> CoreFailure | None:
    """Replay ``recorded`` against the code that produced ``replayed``, as sdk-core matches.

    Returns None when replay succeeds, otherwise the first failure.
    """
    code = _NewCode(deque(), {})
    recorded_la_seqs = {
        row.get("local_activity_seq")
        for task in recorded
        for row in task.commands
        if core_machine_kind(row) == "LocalActivity"
    }
    next_task = 0
    for task in recorded:
        available = _available(replayed, task.delivered, next_task)
        for new_task in replayed[next_task:available]:
            previous = None
            for row in new_task.commands:
                if not _is_version_upsert(row, previous):
                    code.issue(row, recorded_la_seqs)
                previous = row
        next_task = available
        checks_on = ID_AND_TYPE_CHECKS in task.core_flags or task.final_sequence
        failure = _match_task(task, code, checks_on)
        if failure is not None:
            return failure
    return None


def _match_task(task: Task, code: _NewCode, checks_on: bool) -> CoreFailure | None:
    queue = code.queue
    previous: dict[str, Any] | None = None
    for event in task.commands:
        if _is_version_upsert(event, previous) or event.get("event_type") in _UPDATE_PROTOCOL:
            previous = event
            continue
        previous = event
        if core_machine_kind(event) == "LocalActivity":
            # sdk-core finds a local-activity marker's machine by sequence number, not by queue.
            failure = _match_local_activity(task, event, code, checks_on)
            if failure is not None:
                return failure
            continue
        is_patch_marker = event.get("marker_name") == "core_patch"
        # Patch commands whose marker history lacks are skipped (``patched()`` returned False).
        while queue and core_machine_kind(queue[0]) == "Patch" and not is_patch_marker:
            queue.popleft()
        if is_patch_marker:
            front = queue[0] if queue else None
            front_is_patch = front is not None and core_machine_kind(front) == "Patch"
            deprecated = bool(event.get("patch_deprecated"))
            if deprecated and not (
                front_is_patch and front.get("patch_id") == event.get("patch_id")
            ):
                continue  # deprecated markers need no command
            if not front_is_patch:
                text = (
                    f"Non-deprecated patch marker encountered for change {event.get('patch_id')}, "
                    "but there is no corresponding change command!"
                )
                return CoreFailure(
                    dict(event),
                    front,
                    "patch_marker",
                    event.get("patch_id"),
                    None,
                    CORE_PREFIX + text,
                    True,
                    task.index,
                    checks_on,
                )
        if not queue:
            text = "No command scheduled for event " + core_history_event(
                event["event_id"], event["event_type"]
            )
            return CoreFailure(
                dict(event),
                None,
                "missing_command",
                event.get("identity"),
                None,
                CORE_PREFIX + text,
                True,
                task.index,
                checks_on,
            )
        command = queue.popleft()
        if core_machine_kind(command) != core_machine_kind(event):
            text, exact = core_kind_mismatch(command, event)
            return CoreFailure(
                dict(event),
                command,
                "kind",
                event.get("kind"),
                command.get("kind"),
                text,
                exact,
                task.index,
                checks_on,
            )
        mismatch = _identity_check(event, command, checks_on)
        if mismatch is not None:
            check, expected, actual, text = mismatch
            return CoreFailure(
                dict(event),
                command,
                check,
                expected,
                actual,
                CORE_PREFIX + text,
                True,
                task.index,
                checks_on,
            )
    return None


def _match_local_activity(
    task: Task, event: dict[str, Any], code: _NewCode, checks_on: bool
) -> CoreFailure | None:
    seq = event.get("local_activity_seq")
    command = code.local_activities.get(seq)
    if command is None:
        text = f"Missing associated machine for LocalActivity({seq})"
        return CoreFailure(
            dict(event), None, "local_activity_seq", seq, None,
            CORE_PREFIX + text, True, task.index, checks_on,
        )  # fmt: skip
    mismatch = _identity_check(event, command, checks_on)
    if mismatch is None:
        return None
    check, expected, actual, text = mismatch
    return CoreFailure(
        dict(event), command, check, expected, actual,
        CORE_PREFIX + text, True, task.index, checks_on,
    )  # fmt: skip
