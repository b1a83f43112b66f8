"""sdk-core's replay matching, modelled on two histories: where it fails and what it prints.

The model follows ``WorkflowMachines`` (sdk-core bundled with temporalio 1.35):

- commands the code issues go to one queue, in order, and stay there across workflow tasks;
- each command event after a ``WorkflowTaskCompleted`` pops the queue front and feeds it to that
  command's state machine: another kind of event fails (``Activity machine does not handle this
  event: ...``), an empty queue fails (``No command scheduled for event ...``);
- activity, child-workflow and local-activity id and type are compared only when the internal
  flag 1 (``IdAndTypeDeterminismChecks``) is known from ``sdkMetadata.coreUsedFlags`` or the task is
  in the last stretch of history; timer ids are not compared when a timer starts; inputs, task
  queues, timeouts, headers are never compared; a Nexus operation's service and operation are
  compared when flag 4 (``NexusOperationDeterminismChecks``, sdk-core of temporalio 1.35) is
  known or in the last stretch, and never by new code on an older release
  (:mod:`toolkit.replay.flag_releases`; see :mod:`toolkit.replay.flags` for flags 2 and 3);
- ``core_patch`` markers: a patch command whose marker is absent is skipped; a deprecated marker
  without a command is skipped; a non-deprecated one fails; different ids fail;
- commands left in the queue when history ends are not an error.

The new code's commands are taken from the replayed history: a task's commands become available
once everything that task was delivered in the replayed run has been delivered by the recorded
history (results keyed by the position of the command they answer, signals and updates by name
and ordinal; see :mod:`toolkit.replay.new_code` for the looser rule on parallel results).

Where two histories cannot tell what the new code does, :func:`model_replay` says so in
``assumptions``: ``patched()`` returns False on a history without its marker, so the code takes
an old branch its own history never shows; an update the new code did not accept in its own run
(rejected by a validator, which replay does not run, or by a missing handler).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolkit.replay.divergence_messages import (
    CORE_PREFIX,
    core_history_event,
    core_kind_mismatch,
    core_machine_kind,
)
from toolkit.replay.flag_releases import core_flag_unread
from toolkit.replay.new_code import UNMATCHED_EVENTS, CommandQueue, Issuer, is_version_upsert
from toolkit.replay.tasks import CodeFailure, SplitHistory, Task

__all__ = ["CoreFailure", "ModelRun", "model_replay"]

ID_AND_TYPE_CHECKS = 1
NEXUS_CHECKS = 4  # sdk-core NexusOperationDeterminismChecks (temporalio 1.35's core)


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
        ``local_activity_type``, ``patch_id``, ``patch_marker`` or ``patch_old_branch`` (the code
        takes the old branch of ``patched()`` here; its command is in neither history).
    expected, actual : object
        The recorded value and the new code's value of the compared field.
    message : str
        The text sdk-core prints.
    exact : bool
        False where sdk-core prints a whole protobuf struct the model abbreviates here (the
        verdict writes it out from the recorded event: :mod:`toolkit.replay.debug_events`).
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


def _identity_check(
    event: Mapping[str, Any], command: Mapping[str, Any], checks_on: bool,
    nexus_checks: bool = False,
) -> tuple[str, Any, Any, str] | None:  # fmt: skip
    """Compare one matched pair as the command's machine does; returns the failing check."""
    machine = core_machine_kind(command)
    if machine == "ScheduleNexusOperation" and nexus_checks:
        # sdk-core flag 4 (NexusOperationDeterminismChecks): service, then operation.
        for field, text in (
            ("nexus_service", "Nexus operation service of scheduled event '{}' does not match "
                              "service of command '{}'"),
            ("nexus_operation", "Nexus operation of scheduled event '{}' does not match "
                                "operation of command '{}'"),
        ):  # fmt: skip
            if event.get(field) != command.get(field):
                message = text.format(event.get(field), command.get(field))
                return field, event.get(field), command.get(field), message
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


@dataclass(frozen=True)
class ModelRun:
    """What modelled sdk-core replay of a recorded history against new code comes to.

    Attributes
    ----------
    failure : CoreFailure or None
        The nondeterminism failure, if any.
    code_error : CodeFailure or None
        The workflow task failure the new code raises instead (its own run raised on the same
        deliveries), if any.
    assumptions : tuple of str
        What the verdict rests on that the two histories cannot show (empty: none).
    stopped_at : int or None
        Recorded event id past which the new code's commands are unknown (``patched()`` took
        an old branch); the verdict is "no failure found before it".
    """

    failure: CoreFailure | None
    code_error: CodeFailure | None = None
    assumptions: tuple[str, ...] = ()
    stopped_at: int | None = None


class _Stop(Exception):
    """The model cannot follow the new code past ``event_id``."""

    def __init__(self, event_id: int, reason: str) -> None:
        super().__init__(reason)
        self.event_id = event_id
        self.reason = reason


def model_replay(
    recorded: SplitHistory, replayed: SplitHistory, *, loose_parallel: bool = True
) -> ModelRun:
    """Replay ``recorded`` against the code that produced ``replayed``, as sdk-core matches.

    Parameters
    ----------
    recorded, replayed
        The two histories, split (:func:`toolkit.replay.tasks.split_history`).
    loose_parallel
        Let a task of the new code release a share of its commands when the recorded history
        has delivered some of the parallel results it got at once (see
        :mod:`toolkit.replay.new_code`).
    """
    code = CommandQueue(
        recorded_la_seqs={
            row.get("local_activity_seq")
            for task in recorded.tasks
            for row in task.commands
            if core_machine_kind(row) == "LocalActivity"
        }
    )
    issuer = Issuer(replayed.tasks, loose_parallel=loose_parallel)
    accepted_by_new_code = {
        key for task in replayed.tasks for key in task.delivered if key[0] == "update"
    }
    assumptions: list[str] = []
    # An sdk-core from before flag 4 has no Nexus checks, whatever the recorded history holds.
    nexus_known = not core_flag_unread(NEXUS_CHECKS, replayed.sdk_name, replayed.sdk_version)
    try:
        for task in recorded.tasks:
            issuer.release(task.delivered, code)
            error = _code_error(replayed.failures, task.delivered, issuer)
            if error is not None:
                return _run(None, assumptions, issuer, code_error=error)
            # Only updates matter here: sorting every cumulative delivery was quadratic.
            updates = (key for key in task.delivered - accepted_by_new_code if key[0] == "update")
            for key in sorted(updates, key=str):
                if _update_note(key) not in assumptions:
                    assumptions.append(_update_note(key))
            checks_on = ID_AND_TYPE_CHECKS in task.core_flags or task.final_sequence
            nexus_checks = nexus_known and (NEXUS_CHECKS in task.core_flags or task.final_sequence)
            failure = _match_task(task, code, checks_on, nexus_checks)
            if failure is not None:
                if failure.check == "patch_old_branch":
                    assumptions.append(_OLD_BRANCH_NOTE.format(event_id=failure.event["event_id"]))
                return _run(failure, assumptions, issuer)
    except _Stop as stop:
        assumptions.append(stop.reason)
        return _run(None, assumptions, issuer, stopped_at=stop.event_id)
    # The last activation sees everything history delivered after the last completed task.
    issuer.release(recorded.delivered, code)
    error = _code_error(replayed.failures, recorded.delivered, issuer)
    return _run(None, assumptions, issuer, code_error=error)


def _run(
    failure: CoreFailure | None,
    assumptions: list[str],
    issuer: Issuer,
    *,
    code_error: CodeFailure | None = None,
    stopped_at: int | None = None,
) -> ModelRun:
    return ModelRun(failure, code_error, tuple(issuer.assumptions + assumptions), stopped_at)


_OLD_BRANCH_NOTE = (
    "patched() is False when replaying this history, and the recorded history already does "
    "at event {event_id} what the new branch does (the patch was removed since): the old "
    "branch is taken to differ, so replay fails there with a command neither history shows"
)


def _update_note(key: tuple[Any, ...]) -> str:
    return (
        f"update {key[1]!r} #{key[2]}: the new code did not accept it in its own run (rejected "
        "by a validator or by a missing handler; the history does not say which). Modelled as "
        "a missing handler; replay does not run validators, so a validator-rejected update "
        "would run its handler instead"
    )


def _code_error(
    failures: list[CodeFailure], delivered: frozenset[tuple[Any, ...]], issuer: Issuer
) -> CodeFailure | None:
    """The new code's own task failure that replay reaches with these deliveries, if any."""
    for failure in failures:
        if failure.delivered <= delivered and issuer.done_before(failure.event_id):
            return failure
    return None


def _match_task(
    task: Task, code: CommandQueue, checks_on: bool, nexus_checks: bool = False
) -> CoreFailure | None:
    queue = code.queue
    previous: dict[str, Any] | None = None
    for event in task.commands:
        if is_version_upsert(event, previous) or event.get("event_type") in UNMATCHED_EVENTS:
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
        while queue and core_machine_kind(queue[0]) == "Patch" and not is_patch_marker:
            patch = queue.popleft()
            if not patch.get("patch_deprecated"):
                old_branch = _old_branch(task, event, patch, queue, checks_on)
                if old_branch is not None:
                    return old_branch
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
        mismatch = _identity_check(event, command, checks_on, nexus_checks)
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


def _old_branch(
    task: Task,
    event: dict[str, Any],
    patch: Mapping[str, Any],
    queue: Any,
    checks_on: bool,
) -> CoreFailure | None:
    """The new code's ``patched(id)`` met a history without its marker: it returns False.

    The code then runs the old branch, which the new code's own history (where ``patched()``
    returned True) never shows. When the recorded history already does what the new branch does
    here, it was made by code that took the new behaviour without the marker (the patch was
    removed since): the old branch differs from it and replay fails at this event, with a
    command no history shows. Otherwise the old branch is taken to be what the recorded history
    did, and the new code's later commands are unknown: the model stops.
    """
    new_branch = queue[0] if queue else None
    patch_id = patch.get("patch_id")
    if new_branch is not None and _same_command(event, new_branch):
        text = (
            f"(not predictable from the histories) patched('{patch_id}') is False when "
            "replaying this history, so the code takes its old branch, whose command meets "
            + core_history_event(event["event_id"], event["event_type"])
        )
        return CoreFailure(
            dict(event), None, "patch_old_branch", event.get("identity"), None,
            CORE_PREFIX + text, False, task.index, checks_on,
        )  # fmt: skip
    raise _Stop(
        int(event["event_id"]),
        f"patched('{patch_id}') is False when replaying this history (no marker at event "
        f"{event['event_id']}): the code takes its old branch, which the new code's history "
        "does not show; taken to issue what the recorded history did, so nothing after this "
        "point is checked",
    )


def _same_command(event: Mapping[str, Any], command: Mapping[str, Any]) -> bool:
    """Whether sdk-core would accept ``command`` for ``event`` (kind and identity)."""
    if core_machine_kind(event) != core_machine_kind(command):
        return False
    if event.get("timer_id") != command.get("timer_id") and event.get("kind") == "StartTimer":
        return False
    return _identity_check(event, command, checks_on=True) is None


def _match_local_activity(
    task: Task, event: dict[str, Any], code: CommandQueue, checks_on: bool
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
