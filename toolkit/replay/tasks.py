"""Split a history into completed workflow tasks: what each delivered to the code, what it issued.

Replay is driven task by task: the SDK feeds the code what history delivered before a workflow
task (activity results, fired timers, signals, updates, ...) and matches the commands the code
issues against the command events after that task's ``WorkflowTaskCompleted``. To compare a
recorded history with one produced by new code, both are cut the same way here. Deliveries are
named so that they mean the same thing in both histories: results by the kind and per-kind ordinal
of the command they answer (these agree up to the first divergence), signals and updates by name
and ordinal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from toolkit.replay.commands import COMMAND_KIND, TASK_COMPLETED, commands_of_records, records

__all__ = ["CodeFailure", "SplitHistory", "Task", "split_history"]

#: Non-command events that wake workflow code, keyed by the event linking them to their command.
_RESULT_LINK = {
    "ActivityTaskCompleted": "scheduledEventId",
    "ActivityTaskFailed": "scheduledEventId",
    "ActivityTaskTimedOut": "scheduledEventId",
    "ActivityTaskCanceled": "scheduledEventId",
    "TimerFired": "startedEventId",
    "ChildWorkflowExecutionStarted": "initiatedEventId",
    "ChildWorkflowExecutionCompleted": "initiatedEventId",
    "ChildWorkflowExecutionFailed": "initiatedEventId",
    "ChildWorkflowExecutionCanceled": "initiatedEventId",
    "ChildWorkflowExecutionTimedOut": "initiatedEventId",
    "ChildWorkflowExecutionTerminated": "initiatedEventId",
    "StartChildWorkflowExecutionFailed": "initiatedEventId",
    "ExternalWorkflowExecutionSignaled": "initiatedEventId",
    "SignalExternalWorkflowExecutionFailed": "initiatedEventId",
    "ExternalWorkflowExecutionCancelRequested": "initiatedEventId",
    "RequestCancelExternalWorkflowExecutionFailed": "initiatedEventId",
    "NexusOperationStarted": "scheduledEventId",
    "NexusOperationCompleted": "scheduledEventId",
    "NexusOperationFailed": "scheduledEventId",
    "NexusOperationCanceled": "scheduledEventId",
    "NexusOperationTimedOut": "scheduledEventId",
}
_FRAME_LINK = {
    "scheduledEventId": "scheduled_event_id",
    "startedEventId": "started_event_id",
    "initiatedEventId": "initiated_event_id",
}


@dataclass
class Task:
    """One completed workflow task of a history.

    Attributes
    ----------
    index : int
        1-based ordinal among completed tasks.
    completed_event_id : int
        Its ``WorkflowTaskCompleted`` event id.
    delivered : frozenset
        Everything delivered to the code up to this task (cumulative), as comparable keys.
    commands : list of dict
        Its command rows (:func:`toolkit.replay.commands.commands` columns), in order.
    core_flags : frozenset of int
        sdk-core internal flags known when this task's commands are replayed (the task's own
        ``sdkMetadata.coreUsedFlags`` and every earlier task's, plus the next task's, which
        sdk-core peeks at).
    final_sequence : bool
        The task's commands are replayed in the last stretch of history, where sdk-core always
        runs its id/type checks.
    lang_flags : frozenset of int
        Language SDK flags (``sdkMetadata.langUsedFlags``) recorded up to this task.
    build_id : str or None
        The worker build id of its ``WorkflowTaskCompleted`` (``workerVersion.buildId`` or
        ``binaryChecksum``): TypeScript writes ``@temporalio/worker@<version>+<hash>`` there.
    """

    index: int
    completed_event_id: int
    delivered: frozenset[tuple[Any, ...]]
    commands: list[dict[str, Any]] = field(default_factory=list)
    core_flags: frozenset[int] = frozenset()
    final_sequence: bool = False
    lang_flags: frozenset[int] = frozenset()
    build_id: str | None = None


def _build_id(event: Mapping[str, Any]) -> str | None:
    attributes = event.get("attributes")
    if not isinstance(attributes, Mapping):
        return None
    version = attributes.get("workerVersion")
    build = version.get("buildId") if isinstance(version, Mapping) else None
    return _text(build) or _text(attributes.get("binaryChecksum"))


def _link(event: Mapping[str, Any], attribute: str) -> int | None:
    value = event.get(_FRAME_LINK[attribute])
    if value is None or (not isinstance(value, (int, str)) and pd.isna(value)):
        attributes = event.get("attributes")
        value = attributes.get(attribute) if isinstance(attributes, Mapping) else None
    return None if value is None or pd.isna(value) else int(value)


def _sdk_metadata(event: Mapping[str, Any]) -> Mapping[str, Any]:
    attributes = event.get("attributes")
    metadata = attributes.get("sdkMetadata") if isinstance(attributes, Mapping) else None
    return metadata if isinstance(metadata, Mapping) else {}


def _flags(event: Mapping[str, Any], key: str) -> set[int]:
    flags = _sdk_metadata(event).get(key)
    return {int(flag) for flag in flags or [] if str(flag).isdigit()}


def _core_flags(event: Mapping[str, Any]) -> set[int]:
    return _flags(event, "coreUsedFlags")


def _update_name(event: Mapping[str, Any]) -> str | None:
    name = event.get("update_name")
    if isinstance(name, str):
        return name
    attributes = event.get("attributes")
    request = attributes.get("acceptedRequest") if isinstance(attributes, Mapping) else None
    return (
        (((request or {}).get("input") or {}).get("name")) if isinstance(request, Mapping) else None
    )


@dataclass(frozen=True)
class CodeFailure:
    """A workflow task the code itself failed (an exception, not a nondeterminism verdict).

    Attributes
    ----------
    event_id : int
        The ``WorkflowTaskFailed`` event.
    delivered : frozenset
        Everything delivered to the code when it failed (same keys as :attr:`Task.delivered`).
    message, failure_type : str or None
        The failure's message and type (e.g. ``TypeError``).
    """

    event_id: int
    delivered: frozenset[tuple[Any, ...]]
    message: str | None
    failure_type: str | None


@dataclass(frozen=True)
class SplitHistory:
    """One history cut for replay modelling.

    Attributes
    ----------
    tasks : list of Task
        Its completed workflow tasks.
    failures : list of CodeFailure
        The workflow tasks its code failed by raising.
    delivered : frozenset
        Everything the history delivers to the code by its end (what the last activation of a
        replay sees, including deliveries after the last completed task).
    run_id : str or None
        ``originalExecutionRunId`` of its started event (the seed of the workflow's randomness).
    sdk_name, sdk_version : str or None
        The SDK that completed its first workflow task naming one (``sdkMetadata``).
    workflow_id : str or None
        The run's workflow id: its started event's ``workflowId`` (servers write it since
        2024), else the frame's ``workflow_id``.
    """

    tasks: list[Task]
    failures: list[CodeFailure]
    delivered: frozenset[tuple[Any, ...]]
    run_id: str | None
    sdk_name: str | None = None
    sdk_version: str | None = None
    workflow_id: str | None = None


#: ``WorkflowTaskFailed`` causes that mean the workflow code raised.
_CODE_FAILURE_CAUSES = frozenset({"WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE"})


def split_history(history: int, frame: pd.DataFrame) -> SplitHistory:
    """Cut one history (events sorted by id) into its completed workflow tasks.

    Parameters
    ----------
    history
        The history index (copied onto command rows).
    frame
        The events of that one history, sorted by ``event_id``.

    Returns
    -------
    SplitHistory
        The tasks, plus code failures, final deliveries and the run id.
    """
    events = records(frame)
    command_rows = {row["event_id"]: row for row in commands_of_records(history, events)}
    # A result is named by its command's kind and ordinal among commands of that kind (sdk-core
    # numbers commands per kind), so patch markers or upserts before it do not rename it.
    per_kind: Counter[str] = Counter()
    position_of: dict[int, tuple[str, int]] = {}
    for event_id, row in command_rows.items():
        per_kind[row["kind"]] += 1
        position_of[event_id] = (row["kind"], per_kind[row["kind"]])
    last_event_id = int(events[-1]["event_id"]) if events else 0
    started_ids = [int(e["event_id"]) for e in events if e["event_type"] in _TASK_STARTED]

    tasks: list[Task] = []
    failures: list[CodeFailure] = []
    delivered: set[tuple[Any, ...]] = set()
    ordinals: Counter[tuple[str, str | None]] = Counter()
    flags: set[int] = set()
    lang: set[int] = set()
    sdk: dict[str, str] = {}
    current: Task | None = None
    for event in events:
        event_type = event["event_type"]
        event_id = int(event["event_id"])
        if event_type in TASK_COMPLETED:
            flags |= _core_flags(event)
            lang |= _flags(event, "langUsedFlags")
            for key in ("sdkName", "sdkVersion"):
                value = _sdk_metadata(event).get(key)
                if isinstance(value, str) and value:
                    sdk.setdefault(key, value)
            later_starts = [s for s in started_ids if s > event_id]
            current = Task(
                index=len(tasks) + 1,
                completed_event_id=event_id,
                delivered=frozenset(delivered),
                core_flags=frozenset(flags),
                lang_flags=frozenset(lang),
                build_id=_build_id(event),
                final_sequence=not later_starts
                or (len(later_starts) == 1 and later_starts[0] == last_event_id),
            )
            if tasks:  # sdk-core peeks at the next completion's flags
                tasks[-1].core_flags = tasks[-1].core_flags | frozenset(flags)
            tasks.append(current)
            continue
        if event_type == "WorkflowTaskFailed" and event.get("cause") in _CODE_FAILURE_CAUSES:
            failures.append(
                CodeFailure(
                    event_id,
                    frozenset(delivered),
                    _text(event.get("failure_message")),
                    _text(event.get("failure_type")),
                )
            )
            continue
        if event_type in COMMAND_KIND:
            if current is not None:
                current.commands.append(command_rows[event_id])
            if event_type == "WorkflowExecutionUpdateAccepted":
                # The update request reached the code in the task just completed.
                key = ("update", _update_name(event))
                ordinals[key] += 1
                current_key = (*key, ordinals[key])
                delivered.add(current_key)
                if current is not None:
                    current.delivered = current.delivered | {current_key}
            continue
        key = _delivery_key(event, event_type, position_of, ordinals)
        if key is not None:
            delivered.add(key)
    run_id = workflow_id = None
    if events and events[0]["event_type"] == "WorkflowExecutionStarted":
        attributes = events[0].get("attributes")
        if isinstance(attributes, Mapping):
            run_id = _text(attributes.get("originalExecutionRunId"))
            workflow_id = _text(attributes.get("workflowId"))
    if workflow_id is None and events:
        workflow_id = _text(events[0].get("workflow_id"))
    return SplitHistory(
        tasks, failures, frozenset(delivered), run_id, sdk.get("sdkName"), sdk.get("sdkVersion"),
        workflow_id,
    )  # fmt: skip


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


_TASK_STARTED = frozenset({"WorkflowTaskStarted", "DecisionTaskStarted"})


def _delivery_key(
    event: Mapping[str, Any],
    event_type: str,
    position_of: Mapping[int, tuple[str, int]],
    ordinals: Counter[tuple[str, str | None]],
) -> tuple[Any, ...] | None:
    """Name what ``event`` delivers to workflow code, or None when it wakes nothing."""
    link = _RESULT_LINK.get(event_type)
    if link is not None:
        linked = _link(event, link)
        return ("result", event_type, position_of.get(linked) if linked is not None else None)
    if event_type == "WorkflowExecutionStarted":
        return ("start",)
    if event_type == "WorkflowExecutionCancelRequested":
        return ("cancel",)
    if event_type == "WorkflowExecutionSignaled":
        name = event.get("signal_name")
        key = ("signal", name if isinstance(name, str) else None)
        ordinals[key] += 1
        return (*key, ordinals[key])
    return None
