"""Event types, categories and enum values, normalised with temporalio's protobuf types.

Exported histories spell enums four ways: ``EVENT_TYPE_ACTIVITY_TASK_SCHEDULED`` (proto3 JSON),
``ActivityTaskScheduled`` (older CLI and UI), ``EventTypeActivityTaskScheduled`` (pre-1.0 Go) and
numbers. Everything here is derived from the descriptors shipped with ``temporalio`` so it follows
the API version installed; values the installed API does not know are kept verbatim.
"""

from __future__ import annotations

import re
from functools import cache

from google.protobuf.descriptor import EnumDescriptor
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

__all__ = [
    "ATTRIBUTE_KEYS",
    "CLOSE_STATUS",
    "COMMAND_EVENT_TYPES",
    "EVENT_TYPES",
    "attributes_key",
    "camel",
    "canonical_enum",
    "category_of",
    "event_type_name",
    "screaming_event_type",
]

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _pascal(screaming_suffix: str) -> str:
    return "".join(part.capitalize() for part in screaming_suffix.split("_"))


def _screaming(pascal: str) -> str:
    return _CAMEL_BOUNDARY.sub("_", pascal).upper()


def camel(snake: str) -> str:
    """``scheduled_event_id`` -> ``scheduledEventId`` (a protobuf field's JSON name)."""
    head, *rest = snake.split("_")
    return head + "".join(part.capitalize() for part in rest)


#: Short PascalCase names of every event type the installed API knows, in enum order.
EVENT_TYPES: tuple[str, ...] = tuple(
    _pascal(name.removeprefix("EVENT_TYPE_"))
    for name in EventType.keys()  # noqa: SIM118 - protobuf enum wrappers are not dicts
    if name != "EVENT_TYPE_UNSPECIFIED"
)

#: JSON names of the ``*EventAttributes`` fields of ``HistoryEvent`` (the ``attributes`` oneof).
ATTRIBUTE_KEYS: tuple[str, ...] = tuple(
    field.json_name for field in HistoryEvent.DESCRIPTOR.oneofs_by_name["attributes"].fields
)


def _build_event_type_lookup() -> dict[str | int, str]:
    lookup: dict[str | int, str] = {}
    for name, number in EventType.items():
        if name == "EVENT_TYPE_UNSPECIFIED":
            continue
        short = _pascal(name.removeprefix("EVENT_TYPE_"))
        for spelling in (name, short, "EventType" + short, str(number)):
            lookup[spelling] = short
        lookup[number] = short
    return lookup


_EVENT_TYPE_LOOKUP = _build_event_type_lookup()


def event_type_name(value: str | int | None) -> str:
    """Return the short PascalCase name of an event type in any spelling.

    Unknown values (``UnknownEvent``, a number the API does not define, a Cadence-era
    ``DecisionTaskScheduled``) are returned verbatim, as text.
    """
    if value is None:
        return "Unspecified"
    known = _EVENT_TYPE_LOOKUP.get(value)
    if known is not None:
        return known
    text = str(value)
    if text.startswith("EVENT_TYPE_"):
        return _pascal(text.removeprefix("EVENT_TYPE_"))
    if text.startswith("EventType") and len(text) > 9 and text[9].isupper():
        return text[9:]
    return text


def screaming_event_type(short: str) -> str:
    """``ActivityTaskScheduled`` -> ``EVENT_TYPE_ACTIVITY_TASK_SCHEDULED`` (proto3 JSON form)."""
    return "EVENT_TYPE_" + _screaming(short)


def attributes_key(short: str) -> str:
    """``ActivityTaskScheduled`` -> ``activityTaskScheduledEventAttributes``."""
    return short[:1].lower() + short[1:] + "EventAttributes"


#: Events that record a command issued by workflow code (the ones replay matches positionally),
#: plus the protocol-message results of update handlers.
COMMAND_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "ActivityTaskScheduled",
        "ActivityTaskCancelRequested",
        "TimerStarted",
        "TimerCanceled",
        "MarkerRecorded",
        "StartChildWorkflowExecutionInitiated",
        "SignalExternalWorkflowExecutionInitiated",
        "RequestCancelExternalWorkflowExecutionInitiated",
        "UpsertWorkflowSearchAttributes",
        "WorkflowPropertiesModified",
        "NexusOperationScheduled",
        "NexusOperationCancelRequested",
        "WorkflowExecutionCompleted",
        "WorkflowExecutionFailed",
        "WorkflowExecutionCanceled",
        "WorkflowExecutionContinuedAsNew",
        "WorkflowExecutionUpdateAccepted",
        "WorkflowExecutionUpdateCompleted",
        "WorkflowExecutionUpdateRejected",
    }
)

_CATEGORY_PREFIXES: tuple[tuple[str, str], ...] = (
    ("WorkflowTask", "workflow_task"),
    ("DecisionTask", "workflow_task"),  # Cadence-era name of workflow tasks
    ("ActivityTask", "activity"),
    ("Timer", "timer"),
    ("WorkflowExecutionSignaled", "signal"),
    ("SignalExternal", "external"),
    ("ExternalWorkflowExecutionSignaled", "external"),
    ("RequestCancelExternal", "external"),
    ("ExternalWorkflowExecutionCancelRequested", "external"),
    ("WorkflowExecutionUpdate", "update"),
    ("StartChildWorkflow", "child_workflow"),
    ("ChildWorkflow", "child_workflow"),
    ("MarkerRecorded", "marker"),
    ("UpsertWorkflowSearchAttributes", "search_attributes"),
    ("WorkflowPropertiesModified", "search_attributes"),
    ("NexusOperation", "nexus"),
    ("WorkflowExecution", "workflow"),
)


@cache
def category_of(short: str) -> str:
    """Return the category of an event type: ``activity``, ``timer``, ``workflow_task``, ...

    Unknown types fall in ``other``.
    """
    for prefix, category in _CATEGORY_PREFIXES:
        if short.startswith(prefix):
            return category
    return "other"


@cache
def _enum_values(enum: EnumDescriptor) -> dict[str | int, str]:
    """Map every spelling of every value of ``enum`` to its canonical proto name.

    Spellings seen in exports: the proto name (``TIMEOUT_TYPE_START_TO_CLOSE``), its PascalCase
    suffix (``StartToClose``), the bare suffix (``START_TO_CLOSE``, older Java/Go exports),
    the PascalCase with the type's prefix (``TimeoutTypeStartToClose``, pre-1.0 Go) and the
    number.
    """
    names = [value.name for value in enum.values]
    prefix = _common_prefix(names)
    type_prefix = _pascal(prefix.rstrip("_")) if prefix else ""
    lookup: dict[str | int, str] = {}
    for value in enum.values:
        bare = value.name.removeprefix(prefix)
        short = _pascal(bare)
        for spelling in (value.name, short, bare, type_prefix + short, value.number):
            lookup.setdefault(spelling, value.name)
        lookup.setdefault(str(value.number), value.name)
    return lookup


def _common_prefix(names: list[str]) -> str:
    unspecified = [n for n in names if n.endswith("_UNSPECIFIED")]
    if unspecified:
        return unspecified[0].removesuffix("UNSPECIFIED")
    return ""


def canonical_enum(enum: EnumDescriptor, value: str | int | None) -> str | None:
    """Return the canonical proto name (``RETRY_STATE_TIMEOUT``) of an enum value in any spelling.

    ``None`` and ``""`` give ``None``; a value the installed API does not know (or that is no
    enum spelling at all, such as a float) is returned verbatim as text.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        return str(value)  # a float 2.0 must not pass for value 2
    lookup = _enum_values(enum)
    found = lookup.get(value)
    if found is None and isinstance(value, str):
        # Zero-padded numbers; camelCase and other casings of the names above.
        found = lookup.get(int(value)) if value.isdigit() else lookup.get(_screaming(value))
    return found if found is not None else str(value)


#: How a run ended, by its closing event type (a run without one is ``running``).
CLOSE_STATUS: dict[str, str] = {
    "WorkflowExecutionCompleted": "completed",
    "WorkflowExecutionFailed": "failed",
    "WorkflowExecutionTimedOut": "timed_out",
    "WorkflowExecutionTerminated": "terminated",
    "WorkflowExecutionCanceled": "canceled",
    "WorkflowExecutionContinuedAsNew": "continued_as_new",
}
