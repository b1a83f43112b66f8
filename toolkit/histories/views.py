"""Typed views of the few event fields the events frame needs, decoded from JSON or protobuf.

The JSON path decodes every event with msgspec into :class:`TypedEvent`, whose attributes are a
per-type slim view (the :class:`AttrView` fields that type's message defines), reading only the
fields declared here and skipping the rest at C speed; the complete event stays available as raw
bytes. Events of types the API does not know are decoded into the full :class:`AttrView`. Field
names are the proto3 JSON names, so they read like the files. Failures read from protobuf become
:class:`FailureView` too, so one failure reader serves both paths.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from msgspec import Raw, Struct
from temporalio.api.history.v1 import HistoryEvent

from toolkit.histories.enums import ATTRIBUTE_KEYS, camel, screaming_event_type

__all__ = [
    "ATTRIBUTE_VIEWS",
    "TAGGED_EVENTS",
    "AttrView",
    "EventHead",
    "FailureView",
    "TaggedDocument",
    "TypedDocument",
    "TypedEvent",
    "failure_view_from_proto",
    "head_decoder",
]

# Every view is declared ``gc=False``: they hold only text, numbers, raw JSON and other views (never
# a cycle), and a history decodes into ~100,000 of them, which the cyclic collector would otherwise
# track and rescan while they are being built.

IntLike = int | str | None
NameLike = Any  # {"name": ...} object or a bare string in very old dialects


class Named(Struct, gc=False):
    name: str | None = None


class UpdateMeta(Struct, gc=False):
    updateId: str | None = None


class UpdateInput(Struct, gc=False):
    name: str | None = None
    args: Raw = None  # type: ignore[assignment]


class UpdateRequest(Struct, gc=False):
    meta: UpdateMeta | None = None
    input: UpdateInput | None = None


class Execution(Struct, gc=False):
    workflowId: str | None = None
    runId: str | None = None


class AppFailureInfo(Struct, gc=False):
    type: str | None = None


class FailureView(Struct, gc=False):
    message: str | None = None
    applicationFailureInfo: AppFailureInfo | None = None
    timeoutFailureInfo: Raw = None  # type: ignore[assignment]
    canceledFailureInfo: Raw = None  # type: ignore[assignment]
    terminatedFailureInfo: Raw = None  # type: ignore[assignment]
    serverFailureInfo: Raw = None  # type: ignore[assignment]
    resetWorkflowFailureInfo: Raw = None  # type: ignore[assignment]
    activityFailureInfo: Raw = None  # type: ignore[assignment]
    childWorkflowExecutionFailureInfo: Raw = None  # type: ignore[assignment]
    nexusOperationExecutionFailureInfo: Raw = None  # type: ignore[assignment]
    nexusHandlerFailureInfo: Raw = None  # type: ignore[assignment]
    cause: Raw = None  # type: ignore[assignment]
    encodedAttributes: Raw = None  # type: ignore[assignment]


class UpdateOutcome(Struct, gc=False):
    success: Raw = None  # type: ignore[assignment]
    failure: FailureView | None = None


class AttrView(Struct, gc=False):
    """The attributes the events frame exposes as columns (every other field stays in the raw)."""

    activityId: str | None = None
    activityType: Named | str | None = None
    workflowType: Named | str | None = None
    taskQueue: Named | str | None = None
    scheduledEventId: IntLike = None
    startedEventId: IntLike = None
    initiatedEventId: IntLike = None
    workflowTaskCompletedEventId: IntLike = None
    decisionTaskCompletedEventId: IntLike = None
    attempt: IntLike = None
    historySizeBytes: IntLike = None
    suggestContinueAsNew: bool | str | None = None
    timerId: str | None = None
    signalName: str | None = None
    markerName: str | None = None
    identity: str | None = None
    failure: FailureView | None = None
    retryState: str | int | None = None
    cause: str | int | None = None
    input: Raw = None  # type: ignore[assignment]
    result: Raw = None  # type: ignore[assignment]
    details: Raw = None  # type: ignore[assignment]
    workflowExecution: Execution | None = None
    workflowId: str | None = None
    namespace: str | None = None
    originalExecutionRunId: str | None = None
    rootWorkflowExecution: Execution | None = None
    parentWorkflowExecution: Execution | None = None
    protocolInstanceId: str | None = None
    acceptedRequest: UpdateRequest | None = None
    request: UpdateRequest | None = None
    rejectedRequest: UpdateRequest | None = None
    meta: UpdateMeta | None = None
    outcome: UpdateOutcome | None = None


def _attributes_descriptor(key: str) -> Descriptor:
    return HistoryEvent.DESCRIPTOR.fields_by_camelcase_name[key].message_type


#: The envelope fields of every event struct: ``(name, type, default)``.
_ENVELOPE_FIELDS: tuple[tuple[str, Any, Any], ...] = (
    ("eventId", IntLike, None),
    ("eventTime", str | None, None),
    ("eventType", str | int | None, None),
    ("timestamp", int | str | None, None),
)


def _head_fields() -> list[tuple[str, Any, Any]]:
    return [*_ENVELOPE_FIELDS, *((key, Raw, None) for key in ATTRIBUTE_KEYS)]


#: The event envelope: id, time, type and every ``*EventAttributes`` key the API knows, as raw.
EventHead = msgspec.defstruct("EventHead", _head_fields(), gc=False)

head_decoder = msgspec.json.Decoder(EventHead)
attr_decoder = msgspec.json.Decoder(AttrView)
failure_decoder = msgspec.json.Decoder(FailureView)

# --------------------------------------------------------------------------- one view per type

#: AttrView fields no current attributes message has: spellings of older API versions, which any
#: event type may carry.
LEGACY_FIELDS: frozenset[str] = frozenset(
    set(AttrView.__struct_fields__)
    - {f.json_name for key in ATTRIBUTE_KEYS for f in _attributes_descriptor(key).fields}
)


def _slim_view(key: str) -> type[Struct]:
    """The AttrView fields that the ``key`` attributes message defines (plus legacy spellings).

    Declaring only these lets msgspec skip the rest at C speed and keeps the per-type structs
    small; a field the message does not define would never be filled by a conforming source.
    """
    names = {f.json_name for f in _attributes_descriptor(key).fields} | LEGACY_FIELDS
    fields = [(f.name, f.type, None) for f in msgspec.structs.fields(AttrView) if f.name in names]
    return msgspec.defstruct(key[:1].upper() + key[1:] + "View", fields, gc=False)


#: ``*EventAttributes`` JSON key -> its slim view type.
ATTRIBUTE_VIEWS: dict[str, type[Struct]] = {key: _slim_view(key) for key in ATTRIBUTE_KEYS}


def _typed_event_fields() -> list[tuple[str, Any, Any]]:
    views = ((key, view | None, None) for key, view in ATTRIBUTE_VIEWS.items())
    return [*_ENVELOPE_FIELDS, *views]


#: One event: its envelope and, under its own key, the slim view of its attributes.
TypedEvent = msgspec.defstruct("TypedEvent", _typed_event_fields(), gc=False)


class TypedDocument(Struct, gc=False):
    """A ``{"events": [...]}`` document decoded in one pass (the common CLI/UI/SDK export)."""

    events: list[TypedEvent]  # type: ignore[valid-type]
    workflowId: Raw = None  # type: ignore[assignment]
    runId: Raw = None  # type: ignore[assignment]
    namespace: Raw = None  # type: ignore[assignment]


def _tagged_event(key: str, view: type[Struct]) -> tuple[type[Struct], str]:
    short = key[:1].upper() + key[1:].removesuffix("EventAttributes")
    tag = screaming_event_type(short)
    # eventType is the tag, not a field
    fields = [f for f in _ENVELOPE_FIELDS if f[0] != "eventType"] + [(key, view | None, None)]
    return msgspec.defstruct(short + "Event", fields, tag_field="eventType", tag=tag, gc=False), tag


#: One struct per event type, told apart by ``eventType`` in its proto3 JSON spelling
#: (``EVENT_TYPE_ACTIVITY_TASK_SCHEDULED``): each holds only its own attributes, so decoding and
#: freeing an event touches 4 fields instead of :class:`TypedEvent`'s 60. The struct class ->
#: its ``eventType`` spelling.
TAGGED_EVENTS: dict[type[Struct], str] = dict(
    _tagged_event(key, view) for key, view in ATTRIBUTE_VIEWS.items()
)


class TaggedDocument(Struct, gc=False):
    """A ``{"events": [...]}`` document whose event types are all spelled the proto3 JSON way."""

    events: list[Union[tuple(TAGGED_EVENTS)]]  # type: ignore[valid-type]  # noqa: UP007
    workflowId: Raw = None  # type: ignore[assignment]
    runId: Raw = None  # type: ignore[assignment]
    namespace: Raw = None  # type: ignore[assignment]


tagged_document_decoder = msgspec.json.Decoder(TaggedDocument)
typed_list_decoder = msgspec.json.Decoder(list[TypedEvent])  # type: ignore[valid-type]
typed_event_decoder = msgspec.json.Decoder(TypedEvent)
typed_document_decoder = msgspec.json.Decoder(TypedDocument)

# --------------------------------------------------------------------------- protobuf adapter


def failure_view_from_proto(failure: Message) -> FailureView:
    """A :class:`FailureView` of a protobuf ``Failure``; the other info kinds stay messages."""
    info = failure.WhichOneof("failure_info")
    view = FailureView(message=failure.message or None)
    if info == "application_failure_info":
        view.applicationFailureInfo = AppFailureInfo(
            type=failure.application_failure_info.type or None
        )
    elif info is not None:
        setattr(view, camel(info), getattr(failure, info))
    if failure.HasField("cause"):
        view.cause = failure.cause  # type: ignore[assignment]
    if failure.HasField("encoded_attributes"):
        view.encodedAttributes = failure.encoded_attributes  # type: ignore[assignment]
    return view
