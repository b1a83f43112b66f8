"""The words each SDK prints for a replay mismatch, built from a recorded event and a command.

sdk-core (Python, TypeScript, .NET, Ruby) wording follows the state machines of the sdk-core
release bundled with temporalio 1.35 (``crates/sdk-core/src/worker/workflow/machines``): a command
whose machine meets an event of another kind says ``<Machine> does not handle this event:
HistoryEvent(id: N, Type)``; identity checks say ``<Field> of scheduled event 'x' does not match
<field> of <command> 'y'``; an event with no command left says ``No command scheduled for event
HistoryEvent(id: N, Type)``. Every text is prefixed ``[TMPRL1100] Nondeterminism error: ``.

Go (``matchReplayWithHistory``) and Java (``WorkflowStateMachines.assertMatch``) print whole
protobuf messages; their texts here keep the leading structure and the compared fields and end
with ``...`` where the SDK would print more attributes (``go_exact``/``java_exact`` say so).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolkit.histories.enums import _screaming

__all__ = [
    "CORE_PREFIX",
    "core_history_event",
    "core_kind_mismatch",
    "core_message_matches",
    "go_command",
    "go_event",
    "java_command_type",
]

CORE_PREFIX = "[TMPRL1100] Nondeterminism error: "

#: Command kind -> the sdk-core machine sentence used when that machine meets a foreign event.
#: ``{e}`` is ``HistoryEvent(id: N, Type)``; a few machines print the event with ``{:?}`` (the
#: whole protobuf struct): abbreviated here, written out whole from the recorded event by
#: :mod:`toolkit.replay.debug_events`.
_CORE_MACHINE_SENTENCE: dict[str, tuple[str, bool]] = {
    "ScheduleActivityTask": ("Activity machine does not handle this event: {e}", True),
    "RequestCancelActivityTask": ("Activity machine does not handle this event: {e}", True),
    "StartTimer": ("Timer machine does not handle this event: {e}", True),
    "CancelTimer": ("Timer machine does not handle this event: {e}", True),
    "StartChildWorkflowExecution": (
        "Child workflow machine does not handle this event: {e}",
        False,
    ),
    "SignalExternalWorkflowExecution": (
        "Signal external WF machine does not handle this event: {e}",
        True,
    ),
    "RequestCancelExternalWorkflowExecution": (
        "Cancel external WF machine does not handle this event: {e}",
        True,
    ),
    # sdk-core reuses the cancel-external sentence for the Nexus cancel machine.
    "RequestCancelNexusOperation": (
        "Cancel external WF machine does not handle this event: {e}",
        True,
    ),
    "ScheduleNexusOperation": ("Nexus operation machine does not handle this event: {e}", False),
    "CompleteWorkflowExecution": (
        "Complete workflow machine does not handle this event: {e}",
        True,
    ),
    "FailWorkflowExecution": ("Fail workflow machine does not handle this event: {e}", True),
    "CancelWorkflowExecution": ("Cancel workflow machine does not handle this event: {e}", True),
    "ContinueAsNewWorkflowExecution": (
        "Continue as new workflow machine does not handle this event: {e}",
        True,
    ),
    "UpsertWorkflowSearchAttributes": (
        "UpsertWorkflowSearchAttributesMachine does not handle {e}",
        True,
    ),
    "ModifyWorkflowProperties": ("ModifyWorkflowPropertiesMachine does not handle {e}", True),
    "ProtocolMessage": ("Update machine does not handle this event: {e}", True),
    "LocalActivity": ("Local activity machine cannot handle this event: {e}", True),
    "Patch": ("Change machine cannot handle this event: {e}", True),
}


def core_history_event(event_id: int | None, event_type: str) -> str:
    """sdk-core's ``Display`` of an event, e.g. ``HistoryEvent(id: 42, ActivityTaskScheduled)``."""
    return f"HistoryEvent(id: {event_id}, {event_type})"


def core_message_matches(
    modelled: str, message: str, event_id: Any, event_type: Any, *, anywhere: bool = False
) -> bool:
    """Whether an abbreviated modelled sdk-core message is the one sdk-core printed.

    Where sdk-core prints a whole protobuf struct (``{:?}``) the model abbreviates it: the head
    (the text before ``HistoryEvent``) and the identifying fields (``event_id``, ``event_type``)
    must then match. The head must open ``message``, or with ``anywhere`` appear in it.
    """
    head = modelled.split("HistoryEvent", 1)[0]
    found = head in message if anywhere else message.startswith(head)
    return found and all(
        f"{key}: {value}" in message
        for key, value in (("event_id", event_id), ("event_type", event_type))
    )


def core_machine_kind(command: Mapping[str, Any]) -> str:
    """The sdk-core machine family of a command row (markers split into patch / local activity)."""
    kind = str(command.get("kind"))
    if kind == "RecordMarker":
        if command.get("marker_name") == "core_local_activity":
            return "LocalActivity"
        if command.get("marker_name") == "core_patch":
            return "Patch"
    return kind


def core_kind_mismatch(command: Mapping[str, Any], event: Mapping[str, Any]) -> tuple[str, bool]:
    """Message for a command whose machine is fed an event of another kind, and whether exact."""
    sentence, exact = _CORE_MACHINE_SENTENCE.get(
        core_machine_kind(command), ("{kind} machine does not handle this event: {e}", False)
    )
    if exact:
        shown = core_history_event(event.get("event_id"), str(event.get("event_type")))
    else:
        # sdk-core prints the whole struct with {:?}; keep its head and the identifying fields.
        shown = (
            f"HistoryEvent {{ event_id: {event.get('event_id')}, ..., "
            f"event_type: {event.get('event_type')}, ... }}"
        )
    text = sentence.format(e=shown, kind=command.get("kind"))
    return CORE_PREFIX + text, exact


def java_command_type(kind: str) -> str:
    """Java's ``CommandType`` name: ``COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK``."""
    return "COMMAND_TYPE_" + _screaming(kind)  # the proto enum's spelling, as for event types


def _go_fields(row: Mapping[str, Any]) -> str:
    kind = row.get("kind")
    fields: list[str] = []
    if kind == "ScheduleActivityTask":
        fields = [
            f"ActivityId:{row.get('activity_id')}",
            f"ActivityType:(Name:{row.get('activity_type')})",
        ]
    elif kind in {"StartTimer", "CancelTimer"}:
        fields = [f"TimerId:{row.get('timer_id')}"]
    elif kind == "StartChildWorkflowExecution":
        fields = [
            f"WorkflowId:{row.get('child_workflow_id')}",
            f"WorkflowType:(Name:{row.get('child_workflow_type')})",
        ]
    elif kind == "RecordMarker":
        fields = [f"MarkerName:{row.get('marker_name')}"]
    elif kind == "SignalExternalWorkflowExecution":
        fields = [f"SignalName:{row.get('signal_name')}"]
    elif kind == "RequestCancelActivityTask":
        fields = [f"ScheduledEventId:{row.get('scheduled_event_id')}"]
    return "(" + ", ".join([*fields, "..."]) + ")" if fields else "(...)"


def go_event(row: Mapping[str, Any]) -> str:
    """Go's ``util.HistoryEventToString``, abbreviated to the compared fields."""
    return f"{row.get('event_type')}: {_go_fields(row)}"


def go_command(row: Mapping[str, Any]) -> str:
    """Go's ``util.CommandToString``, abbreviated to the compared fields."""
    return f"{row.get('kind')}: {_go_fields(row)}"
