"""Replay a recorded history with the new workflow code itself, and keep the commands it issued.

Two histories cannot always say what new code does when it replays an old history: a
``patched()`` call takes a branch the new code's own run never took, ids drawn from
``workflow.uuid4()`` depend on the run being replayed, a validator rejects an update that replay
hands to the handler. With the code at hand nothing has to be guessed: temporalio's ``Replayer``
runs it on the recorded history and gives the exact verdict and message. A workflow runner that
wraps the Replayer's own (sandboxed or not) records every activation and the commands the code
answered it with, so the answer also shows *what* the code did (one row per command, as
:func:`toolkit.commands` lists them), for display next to the recorded commands.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from temporalio.bridge.proto.workflow_commands import WorkflowCommand

from toolkit.event_loop import run_sync
from toolkit.replay.check_worker import Replayed, Session
from toolkit.replay.commands import COMMAND_KIND, identity_label
from toolkit.replay.replayer import to_workflow_histories

__all__ = [
    "RUST_DEBUG_STRING",
    "Activation",
    "CodeReplay",
    "code_replay_of",
    "command_row",
    "replay_code",
    "rust_debug_field",
]

_EVENT_OF_KIND = {kind: event for event, kind in COMMAND_KIND.items()}
_EVENT_OF_KIND["ProtocolMessage"] = "WorkflowExecutionUpdateAccepted"


@dataclass
class Activation:
    """One activation the code handled: its job kinds and the command rows it answered with."""

    jobs: list[str]
    local_resolutions_only: bool
    commands: list[dict[str, Any]] = field(default_factory=list)
    failed: bool = False


@dataclass(frozen=True)
class CodeReplay:
    """What temporalio's ``Replayer`` made of one history with the given code.

    Attributes
    ----------
    outcome : str
        ``ok``, ``nondeterminism`` (``NondeterminismError``) or ``error`` (any other workflow
        task failure, e.g. the code raising on a recorded value).
    message : str
        The failure's own message exactly as sdk-core carries it (empty for ``ok``).
    error_type : str or None
        The replayer's exception type.
    failure_type : str or None
        The failure's application type where the code raised (e.g. ``TypeError``).
    error_text : str or None
        The replayer's whole exception text.
    activations : list of Activation
        Every activation the code handled, in order, with its commands.
    """

    outcome: str
    message: str
    error_type: str | None
    failure_type: str | None
    error_text: str | None
    activations: list[Activation]


def _row(kind: str, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"event_id": None, "kind": kind, "event_type": _EVENT_OF_KIND.get(kind)}
    row.update(values)
    row["identity"] = identity_label(row)
    return row


def command_row(command: WorkflowCommand) -> dict[str, Any] | None:
    """A command the code issued as a ``commands()``-style row (None: no history event follows).

    Queries answered, rejected updates and cancelled local activities produce no event.
    """
    variant = command.WhichOneof("variant")
    body: Any = getattr(command, variant) if variant else None
    if variant in {"start_timer", "cancel_timer"}:
        kind = "StartTimer" if variant == "start_timer" else "CancelTimer"
        return _row(kind, timer_id=str(body.seq))
    if variant == "schedule_activity":
        return _row(
            "ScheduleActivityTask", activity_type=body.activity_type, activity_id=body.activity_id
        )
    if variant == "request_cancel_activity":
        return _row("RequestCancelActivityTask", seq=body.seq)
    if variant == "schedule_local_activity":
        return _row(
            "RecordMarker", marker_name="core_local_activity",
            local_activity_type=body.activity_type, local_activity_id=body.activity_id,
            local_activity_seq=body.seq,
        )  # fmt: skip
    if variant == "set_patch_marker":
        return _row(
            "RecordMarker", marker_name="core_patch", patch_id=body.patch_id,
            patch_deprecated=body.deprecated,
        )  # fmt: skip
    if variant == "start_child_workflow_execution":
        return _row(
            "StartChildWorkflowExecution",
            child_workflow_type=body.workflow_type,
            child_workflow_id=body.workflow_id,
        )
    if variant == "signal_external_workflow_execution":
        target = body.workflow_execution.workflow_id or body.child_workflow_id
        return _row(
            "SignalExternalWorkflowExecution",
            signal_name=body.signal_name,
            target_workflow_id=target,
        )
    if variant in {"request_cancel_external_workflow_execution", "cancel_child_workflow_execution"}:
        return _row("RequestCancelExternalWorkflowExecution")
    if variant == "update_response":
        if body.HasField("accepted"):
            return _row("ProtocolMessage", update_id=body.protocol_instance_id)
        if body.HasField("completed"):
            row = _row("ProtocolMessage", update_id=body.protocol_instance_id)
            row["event_type"] = "WorkflowExecutionUpdateCompleted"
            return row
        return None  # a rejection is a message only: no command, no event
    if variant == "schedule_nexus_operation":
        return _row(
            "ScheduleNexusOperation", nexus_service=body.service, nexus_operation=body.operation
        )
    simple = {
        "request_cancel_nexus_operation": "RequestCancelNexusOperation",
        "upsert_workflow_search_attributes": "UpsertWorkflowSearchAttributes",
        "modify_workflow_properties": "ModifyWorkflowProperties",
        "complete_workflow_execution": "CompleteWorkflowExecution",
        "fail_workflow_execution": "FailWorkflowExecution",
        "cancel_workflow_execution": "CancelWorkflowExecution",
        "continue_as_new_workflow_execution": "ContinueAsNewWorkflowExecution",
    }
    return _row(simple[variant]) if variant in simple else None


#: A Rust ``Debug`` string literal, ``"..."`` with backslash escapes (group 1: its inside).
RUST_DEBUG_STRING = r'"((?:[^"\\]|\\.)*)"'
_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]+\}|.)", re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape.startswith("u{"):
            return chr(int(escape[2:-1], 16))
        return _ESCAPES.get(escape, "\\" + escape)  # not a Rust escape: kept as it is

    return _ESCAPE.sub(one, text)


@functools.lru_cache(maxsize=16)
def _field_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(name)}: " + RUST_DEBUG_STRING)


def rust_debug_field(text: str, name: str = "message") -> str | None:
    """The first ``<name>: "..."`` string of a Rust ``Debug`` rendering, unescaped.

    The Replayer reports a failed workflow task as the ``Debug`` text of sdk-core's failure;
    ``name`` is e.g. ``message`` or ``r#type``. None when the text has no such field.
    """
    match = _field_pattern(name).search(text)
    return _unescape(match.group(1)) if match else None


def code_replay_of(replayed: Replayed) -> CodeReplay:
    """A :class:`CodeReplay` from what :class:`toolkit.replay.check_worker.Session` reported (in
    this process or in a worker process, whose commands arrive serialized)."""
    activations = []
    for one in replayed.activations:
        commands = (
            WorkflowCommand.FromString(c) if isinstance(c, bytes) else c for c in one.commands
        )
        rows = [row for row in map(command_row, commands) if row is not None]
        activations.append(Activation(one.jobs, one.local_resolutions_only, rows, one.failed))
    if replayed.outcome == "ok":
        return CodeReplay("ok", "", None, None, None, activations)
    text = replayed.message or ""
    return CodeReplay(
        "nondeterminism" if replayed.outcome == "nondeterminism" else "error",
        rust_debug_field(text, "message") or text,
        replayed.error_type,
        rust_debug_field(text, "r#type") or None,
        text,
        activations,
    )


async def replay_code_async(
    recorded: Any,
    workflows: Sequence[type],
    *,
    workflow_id: str | None = None,
    **replayer_options: Any,
) -> CodeReplay:
    """Async form of :func:`replay_code`."""
    pairs = to_workflow_histories(recorded)
    if len(pairs) != 1:
        from toolkit.errors import HistoryFormatError

        raise HistoryFormatError(
            pairs[0][0] if pairs else repr(recorded),
            f"holds {len(pairs)} histories",
            expected="exactly one recorded history",
        )
    history = pairs[0][1]
    if workflow_id is not None:
        history = dataclasses.replace(history, workflow_id=workflow_id)
    session = Session(workflows, replayer_options)
    return code_replay_of(await session.replay(history.workflow_id, history.events))


def replay_code(
    recorded: Any,
    workflows: Sequence[type],
    *,
    workflow_id: str | None = None,
    **replayer_options: Any,
) -> CodeReplay:
    """Replay one recorded history with ``workflows`` through temporalio's ``Replayer``.

    Parameters
    ----------
    recorded
        One history: a path, JSON bytes, an events frame or a ``WorkflowHistory``.
    workflows
        The workflow classes to replay with (the new code, plus any child workflow classes).
    workflow_id
        The workflow id the code sees (``workflow.info().workflow_id``; exported histories do
        not carry it). Default: the ``WorkflowHistory``'s, the frame's ``workflow_id``, else
        the file name.
    **replayer_options
        Passed to ``temporalio.worker.Replayer`` (``data_converter``, ``interceptors``,
        ``workflow_runner``, ``runtime``, ...); a given workflow runner is wrapped, not replaced.

    Returns
    -------
    CodeReplay
        The verdict, the exact failure message and every activation with its commands.
    """
    coroutine = replay_code_async(recorded, workflows, workflow_id=workflow_id, **replayer_options)
    return run_sync(coroutine)
