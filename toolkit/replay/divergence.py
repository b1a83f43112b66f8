"""First divergence: where replaying a recorded history against new code fails, and the words.

``first_divergence(recorded, replayed)`` takes the recorded history and either a history the
*new* code produced under the same inputs, or the new workflow code itself. With a history it
models how sdk-core matches commands to history (see :mod:`toolkit.replay.core_model`); with code
it runs temporalio's real ``Replayer`` (see :mod:`toolkit.replay.code_replay`). Either way it
answers with the event, the command in its place, what was compared and the message sdk-core
prints, plus Go's and Java's wording of the same mismatch, and says how sure it is
(:mod:`toolkit.replay.verdict`).

Examples
--------
>>> d = toolkit.first_divergence("v1.json", "v2.json")              # doctest: +SKIP
>>> d.core_message                                                   # doctest: +SKIP
"[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'A' does not match ..."
>>> d.aligned                                                        # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from toolkit.histories.enums import screaming_event_type
from toolkit.replay.core_model import CoreFailure
from toolkit.replay.divergence_messages import go_command, go_event, java_command_type
from toolkit.replay.tasks import Task

__all__ = ["Divergence", "aligned_commands", "first_divergence", "go_message", "java_message"]


@dataclass(frozen=True)
class Divergence:
    """The first place where replay of a recorded history fails against new code.

    Attributes
    ----------
    event_id : int or None
        Recorded history event where replay fails (None where the SDK names none: a local
        activity without its machine, or the code raising).
    check : str
        What differs: ``kind``, ``missing_command``, ``activity_id``, ``activity_type``,
        ``child_workflow_id``, ``child_workflow_type``, ``local_activity_*``, ``patch_id``,
        ``patch_marker``, ``patch_old_branch``; ``workflow_task_failure`` when the replay fails
        because the code raises (``outcome == "error"``).
    expected, actual : object
        The recorded value and the new code's value.
    recorded_event : dict
        The recorded command event (``commands()`` row).
    command : dict or None
        The new code's command in its place (None: the code issued none there).
    core_message : str
        The text sdk-core (Python, TypeScript, .NET, Ruby) prints.
    core_message_exact : bool
        False where the text cannot be certain: sdk-core prints a whole protobuf struct
        (``HistoryEvent { ... }``, written out from the recorded event) holding a map of
        several entries, or with another release's API than this interpreter's temporalio.
    go_message, java_message : str
        Go's and Java's wording (abbreviated where they print whole protobuf messages); empty
        where that SDK's matching would not fail on this pair (Go matches per workflow task and
        compares marker names only) or has no such check.
    task : int
        The recorded workflow task whose commands were being matched.
    id_type_checks : bool
        Whether sdk-core's id/type checks (internal flag 1) were on there.
    aligned : pandas.DataFrame
        Both command sequences side by side (see :func:`aligned_commands`).
    outcome : str
        ``nondeterminism``, or ``error`` when the workflow task fails for another reason (the
        code raises; ``core_message`` is then the failure's message).
    exact : bool
        Whether verdict and message are the ones the ``Replayer`` prints: always with code;
        with two histories only when no assumption was needed and the message is not
        abbreviated.
    confidence : str
        ``replayer`` (temporalio's Replayer ran the code), ``histories`` (the two histories
        determine the answer) or ``assumed`` (it rests on ``assumptions``).
    assumptions : tuple of str
        What the answer rests on that the histories cannot show.
    notes : tuple of str
        Exact inferences made on the way (ids re-derived for the replayed run's random seed, the
        model's agreement with the Replayer, ...).
    """

    event_id: int | None
    check: str
    expected: Any
    actual: Any
    recorded_event: dict[str, Any]
    command: dict[str, Any] | None
    core_message: str
    core_message_exact: bool
    go_message: str
    java_message: str
    task: int
    id_type_checks: bool
    aligned: pd.DataFrame = field(repr=False, compare=False)
    outcome: str = "nondeterminism"
    exact: bool = True
    confidence: str = "histories"
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """One row with the scalar fields (for concatenating many divergences)."""
        return pd.DataFrame(
            [
                {
                    "event_id": self.event_id,
                    "event_type": self.recorded_event.get("event_type"),
                    "task": self.task,
                    "check": self.check,
                    "expected": self.expected,
                    "actual": self.actual,
                    "recorded": self.recorded_event.get("identity"),
                    "command": None if self.command is None else self.command.get("identity"),
                    "id_type_checks": self.id_type_checks,
                    "outcome": self.outcome,
                    "exact": self.exact,
                    "confidence": self.confidence,
                    "core_message": self.core_message,
                    "go_message": self.go_message,
                    "java_message": self.java_message,
                }
            ]
        ).astype({"event_id": "Int64"})

    def __str__(self) -> str:
        return self.core_message

    def _repr_html_(self) -> str:
        head = (
            f"<p><b>First divergence</b> at event {self.event_id} (workflow task {self.task}, "
            f"check <code>{self.check}</code>)</p>"
            f"<pre>{_escape(self.core_message)}</pre>"
        )
        return head + self.aligned.to_html(index=False)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def aligned_commands(recorded: list[Task], replayed: list[Task]) -> pd.DataFrame:
    """Both command sequences side by side, by overall position.

    Columns: ``position``, ``recorded_task``, ``recorded_event_id``, ``recorded``,
    ``replayed_task``, ``replayed_event_id``, ``replayed``, ``same`` (identity labels equal).
    """
    left = [(task.index, row) for task in recorded for row in task.commands]
    right = [(task.index, row) for task in replayed for row in task.commands]
    rows = []
    for index in range(max(len(left), len(right))):
        lt, lrow = left[index] if index < len(left) else (None, None)
        rt, rrow = right[index] if index < len(right) else (None, None)
        rows.append(
            {
                "position": index + 1,
                "recorded_task": lt,
                "recorded_event_id": None if lrow is None else lrow["event_id"],
                "recorded": None if lrow is None else lrow["identity"],
                "replayed_task": rt,
                "replayed_event_id": None if rrow is None else rrow["event_id"],
                "replayed": None if rrow is None else rrow["identity"],
                "same": lrow is not None
                and rrow is not None
                and lrow["identity"] == rrow["identity"],
            }
        )
    out = pd.DataFrame(
        rows,
        columns=[
            "position",
            "recorded_task",
            "recorded_event_id",
            "recorded",
            "replayed_task",
            "replayed_event_id",
            "replayed",
            "same",
        ],
    )
    for column in ("recorded_task", "recorded_event_id", "replayed_task", "replayed_event_id"):
        out[column] = out[column].astype("Int64")
    return out


def java_message(failure: CoreFailure) -> str:
    """Java's wording; empty where Java has no such check (core patch / local-activity markers)."""
    event, command = failure.event, failure.command
    if failure.check.startswith(("patch", "local_activity")):
        return ""
    if command is None:
        return (
            "[TMPRL1100] No command scheduled that corresponds to event_id: "
            f"{event['event_id']}\nevent_type: {screaming_event_type(event['event_type'])}\n..."
        )
    java_check = {
        "kind": "eventType",
        "activity_id": "activityId",
        "activity_type": "activityType",
        "child_workflow_id": "workflowId",
        "child_workflow_type": "workflowType",
    }.get(failure.check, failure.check)
    expected, actual = failure.actual, failure.expected  # Java: expected = command, actual = event
    if failure.check == "kind":
        expected = screaming_event_type(_event_type_of(command))
        actual = screaming_event_type(event["event_type"])
    elif failure.check in {"activity_type", "child_workflow_type"}:
        expected, actual = f'name: "{expected}"\n', f'name: "{actual}"\n'
    return (
        f"[TMPRL1100] Command {java_command_type(str(command['kind']))} doesn't match event "
        f"{screaming_event_type(event['event_type'])} with EventId={event['event_id']} on check "
        f"{java_check} with an expected value '{expected}' and an actual value '{actual}'"
    )


def _event_type_of(command: Mapping[str, Any]) -> str:
    return str(command.get("event_type"))


_GO_PREFIX = "[TMPRL1100] nondeterministic workflow: "


def go_message(recorded: list[Task], replayed: list[Task]) -> str | None:
    """Go's per-task matching (no carry-over between tasks), abbreviated wording."""
    from toolkit.replay.core_model import _available  # strict: Go matches task by task

    next_task = 0
    for task in recorded:
        available = _available(replayed, task.delivered, next_task)
        issued = [row for new in replayed[next_task:available] for row in new.commands]
        next_task = available
        for index in range(max(len(task.commands), len(issued))):
            event = task.commands[index] if index < len(task.commands) else None
            command = issued[index] if index < len(issued) else None
            if command is None and event is not None:
                return f"{_GO_PREFIX}missing replay command for {go_event(event)}"
            if event is None and command is not None:
                if task is recorded[-1] and task.final_sequence:
                    return None  # new commands after the recorded history ends
                return f"{_GO_PREFIX}extra replay command for {go_command(command)}"
            assert event is not None and command is not None
            if not _go_match(event, command):
                return (
                    f"{_GO_PREFIX}history event is {go_event(event)}, "
                    f"replay command is {go_command(command)}"
                )
    return None


def _last_part(name: Any) -> Any:
    return name.rsplit(".", 1)[-1] if isinstance(name, str) and not name.endswith(".") else name


def _go_match(event: Mapping[str, Any], command: Mapping[str, Any]) -> bool:
    if event.get("kind") != command.get("kind"):
        return False
    kind = event.get("kind")
    if kind == "ScheduleActivityTask":
        return event.get("activity_id") == command.get("activity_id") and _last_part(
            event.get("activity_type")
        ) == _last_part(command.get("activity_type"))
    if kind in {"StartTimer", "CancelTimer"}:
        return event.get("timer_id") == command.get("timer_id")
    if kind == "RecordMarker":
        return event.get("marker_name") == command.get("marker_name")
    if kind == "StartChildWorkflowExecution":
        return _last_part(event.get("child_workflow_type")) == _last_part(
            command.get("child_workflow_type")
        )
    if kind == "SignalExternalWorkflowExecution":
        return event.get("signal_name") == command.get("signal_name") and event.get(
            "target_workflow_id"
        ) == command.get("target_workflow_id")
    return True


def first_divergence(recorded: Any, replayed: Any, **replayer_options: Any) -> Divergence | None:
    """Find where replaying ``recorded`` against new code fails.

    Parameters
    ----------
    recorded
        The recorded history: an events frame of one history, or anything ``read_history``
        accepts.
    replayed
        Either a history the new code produced under the same inputs (same start input,
        signals, updates, activity results) — the answer is then modelled — or the new code
        itself: a workflow class or a list of them (with any child workflow classes) — the
        answer is then temporalio's ``Replayer``'s own.
    **replayer_options
        With code only: ``workflow_id`` (the id the code sees; exported histories lack it), and
        anything ``temporalio.worker.Replayer`` takes (``workflow_runner`` for sandbox
        pass-through modules, ``data_converter``, ``interceptors``, ``runtime``, ...).

    Returns
    -------
    Divergence or None
        None when replay succeeds (commands issued after the recorded history ends are not a
        failure); otherwise where and why it fails, with each SDK's wording and how sure the
        answer is (``exact``, ``confidence``, ``assumptions``). A None resting on an assumption
        the histories cannot check comes with an ``InexactVerdictWarning``;
        :func:`toolkit.replay.verdict.replay_verdict` returns the full verdict either way.

    Raises
    ------
    toolkit.errors.HistoryFormatError
        When ``recorded`` (or a replayed history) is not exactly one non-empty history.
    """
    from toolkit.replay.verdict import first_divergence_of  # late: verdict imports this module

    return first_divergence_of(recorded, replayed, **replayer_options)
