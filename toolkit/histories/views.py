"""Typed views of the few event fields the events frame needs, decoded from JSON or protobuf.

The JSON path decodes each event with msgspec into :class:`EventHead` and its attributes into
:class:`AttrView`, reading only the fields declared here and skipping the rest at C speed; the
complete event stays available as raw bytes. The protobuf path builds the same views from messages,
so one row builder serves both. Field names are the proto3 JSON names, so they read like the files.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import msgspec
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from msgspec import Raw, Struct

from toolkit.histories.enums import ATTRIBUTE_KEYS

__all__ = ["AttrView", "EventHead", "FailureView", "attr_view_from_proto", "head_decoder"]

IntLike = int | str | None
NameLike = Any  # {"name": ...} object or a bare string in very old dialects


class Named(Struct):
    name: str | None = None


class UpdateMeta(Struct):
    updateId: str | None = None


class UpdateInput(Struct):
    name: str | None = None
    args: Raw = None  # type: ignore[assignment]


class UpdateRequest(Struct):
    meta: UpdateMeta | None = None
    input: UpdateInput | None = None


class Execution(Struct):
    workflowId: str | None = None
    runId: str | None = None


class AppFailureInfo(Struct):
    type: str | None = None


class FailureView(Struct):
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


class UpdateOutcome(Struct):
    success: Raw = None  # type: ignore[assignment]
    failure: FailureView | None = None


class AttrView(Struct):
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
    protocolInstanceId: str | None = None
    acceptedRequest: UpdateRequest | None = None
    request: UpdateRequest | None = None
    rejectedRequest: UpdateRequest | None = None
    meta: UpdateMeta | None = None
    outcome: UpdateOutcome | None = None


def _head_fields() -> list[tuple[str, Any, Any]]:
    fields: list[tuple[str, Any, Any]] = [
        ("eventId", IntLike, None),
        ("eventTime", str | None, None),
        ("eventType", str | int | None, None),
        ("timestamp", int | str | None, None),
    ]
    fields += [(key, Raw, None) for key in ATTRIBUTE_KEYS]
    return fields


#: The event envelope: id, time, type and every ``*EventAttributes`` key the API knows, as raw.
EventHead = msgspec.defstruct("EventHead", _head_fields())

head_decoder = msgspec.json.Decoder(EventHead)
attr_decoder = msgspec.json.Decoder(AttrView)
failure_decoder = msgspec.json.Decoder(FailureView)

# --------------------------------------------------------------------------- protobuf adapter

_NESTED = {
    "activityType": Named,
    "workflowType": Named,
    "taskQueue": Named,
    "workflowExecution": Execution,
    "meta": UpdateMeta,
}
_PAYLOAD_FIELDS = frozenset({"input", "result", "details"})
_REQUEST_FIELDS = frozenset({"acceptedRequest", "request", "rejectedRequest"})


@cache
def _plan(descriptor: Descriptor) -> tuple[tuple[str, str, str], ...]:
    """Which AttrView fields this attributes message has, and how to read each."""
    plan = []
    for json_name in AttrView.__struct_fields__:
        field = next((f for f in descriptor.fields if f.json_name == json_name), None)
        if field is None:
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            kind = "map"
        elif json_name in _NESTED:
            kind = "nested"
        elif json_name in _PAYLOAD_FIELDS or json_name in _REQUEST_FIELDS:
            kind = "message"
        elif json_name == "failure":
            kind = "failure"
        elif json_name == "outcome":
            kind = "outcome"
        elif field.enum_type is not None:
            kind = "enum"
        elif field.type in (field.TYPE_INT64, field.TYPE_INT32):
            kind = "int"
        else:
            kind = "scalar"
        plan.append((json_name, field.name, kind))
    return tuple(plan)


def failure_view_from_proto(failure: Message) -> FailureView:
    """A :class:`FailureView` of a protobuf ``Failure``; the other info kinds stay messages."""
    info = failure.WhichOneof("failure_info")
    view = FailureView(message=failure.message or None)
    if info == "application_failure_info":
        view.applicationFailureInfo = AppFailureInfo(
            type=failure.application_failure_info.type or None
        )
    elif info is not None:
        setattr(view, _snake_to_camel(info), getattr(failure, info))
    if failure.HasField("cause"):
        view.cause = failure.cause  # type: ignore[assignment]
    if failure.HasField("encoded_attributes"):
        view.encodedAttributes = failure.encoded_attributes  # type: ignore[assignment]
    return view


def _snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def attr_view_from_proto(attributes: Message) -> AttrView:
    """Build an :class:`AttrView` from an ``*EventAttributes`` protobuf message.

    Payload and request fields hold the protobuf messages themselves; the row builder decodes
    them with the protobuf payload decoder.
    """
    view = AttrView()
    for json_name, name, kind in _plan(attributes.DESCRIPTOR):
        if kind == "int" or kind == "enum" or kind == "scalar":
            value = getattr(attributes, name)
            if value:
                setattr(view, json_name, value)
        elif kind == "map":
            value = getattr(attributes, name)
            if len(value):
                setattr(view, json_name, value)
        elif not attributes.HasField(name):
            continue
        elif kind == "nested":
            message = getattr(attributes, name)
            nested = _NESTED[json_name]
            if nested is Named:
                setattr(view, json_name, Named(name=message.name or None))
            elif nested is Execution:
                view.workflowExecution = Execution(
                    workflowId=message.workflow_id or None, runId=message.run_id or None
                )
            else:
                view.meta = UpdateMeta(updateId=message.update_id or None)
        elif kind == "failure":
            view.failure = failure_view_from_proto(attributes.failure)
        elif kind == "outcome":
            outcome = attributes.outcome
            which = outcome.WhichOneof("value")
            view.outcome = UpdateOutcome(
                success=outcome.success if which == "success" else None,  # type: ignore[arg-type]
                failure=failure_view_from_proto(outcome.failure) if which == "failure" else None,
            )
        elif json_name in _REQUEST_FIELDS:
            request = getattr(attributes, name)
            setattr(
                view,
                json_name,
                UpdateRequest(
                    meta=UpdateMeta(updateId=request.meta.update_id or None),
                    input=UpdateInput(
                        name=request.input.name or None,
                        args=request.input.args if request.input.HasField("args") else None,
                    ),
                ),
            )
        else:
            setattr(view, json_name, getattr(attributes, name))
    return view
