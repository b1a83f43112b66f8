"""What both column builders (JSON and protobuf) share: type facts, failures, enum names."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
from google.protobuf.descriptor import EnumDescriptor
from temporalio.api.enums.v1 import RetryState
from temporalio.api.history.v1 import HistoryEvent

from toolkit.histories import enums
from toolkit.histories.payloads import decode_any
from toolkit.histories.views import FailureView, failure_decoder, failure_view_from_proto

__all__ = [
    "NULL",
    "BadFieldValue",
    "EventColumns",
    "TypeCodes",
    "TypeInfo",
    "failure_columns",
    "fill_types",
    "fill_types_by_number",
    "group_by_type",
    "int_array",
    "new_columns",
    "present",
    "retry_state_name",
    "scatter",
    "small_codes",
    "type_info",
]

NULL = msgspec.Raw(b"null")

#: Columns every builder fills, one list/array each (event_time and history-level ones apart).
EVENT_COLUMNS = (
    "event_id", "event_type", "category", "is_command", "activity_id", "activity_type",
    "task_queue", "scheduled_event_id", "started_event_id", "initiated_event_id", "attempt",
    "timer_id", "signal_name", "update_name", "update_id", "child_workflow_id",
    "child_workflow_type", "marker_name", "identity", "failure_message", "failure_type",
    "retry_state", "cause", "history_size_bytes", "suggest_continue_as_new", "input", "result",
    "details", "attributes", "extra",
)  # fmt: skip

_INT_COLUMNS = frozenset(
    {"scheduled_event_id", "started_event_id", "initiated_event_id", "attempt", "completed_by",
     "history_size_bytes", "suggest_continue_as_new"}
)


@dataclass
class EventColumns:
    """What a column builder hands to the frame builder, in the source's event order.

    Attributes
    ----------
    columns : dict
        ``EVENT_COLUMNS`` -> numpy array: object (``None`` where absent), ``int64`` for
        ``event_id`` and the id/attempt columns (``0``, the protobuf default, means absent),
        ``bool`` for ``is_command``.
    times : list or numpy array
        Per event: ISO-8601 text, epoch nanoseconds or ``None``; or ``datetime64[ns]`` values.
    completed_by : numpy.ndarray
        ``workflowTaskCompletedEventId`` of each event (``0`` where absent).
    started : dict
        Index of each ``WorkflowExecutionStarted`` event -> ``(originalExecutionRunId,
        workflow type name, own workflow id)``; an index left out is looked up in its
        ``attributes`` cell.
    counts : numpy.ndarray or None
        Events of each history, when the columns hold several histories one after another
        (``None``: one history).
    types : TypeCodes or None
        The event types as codes, where the builder has them (see :class:`TypeCodes`).
    """

    columns: dict[str, Any]
    times: Any
    completed_by: np.ndarray
    started: dict[int, tuple[Any, ...]]
    counts: np.ndarray | None = None
    types: TypeCodes | None = None


def new_columns(n: int) -> dict[str, Any]:
    """Empty column arrays for ``n`` events (plus ``completed_by``), to be filled per group."""
    columns: dict[str, Any] = {}
    for name in (*EVENT_COLUMNS, "completed_by"):
        if name == "event_id" or name in _INT_COLUMNS:
            columns[name] = np.zeros(n, dtype=np.int64)
        elif name == "is_command":
            columns[name] = np.zeros(n, dtype=bool)
        else:
            columns[name] = np.empty(n, dtype=object)  # numpy fills object arrays with None
    return columns


def scatter(target: np.ndarray, positions: Any, values: Sequence[Any]) -> None:
    """``target[positions] = values`` for an object array, without numpy probing the values.

    (Given a list, numpy would look into every element for nested sequences, which for a lazy
    cell means decoding it.)
    """
    target[positions] = np.fromiter(values, dtype=object, count=len(values))


class BadFieldValue(Exception):
    """A field value a column cannot hold; the loader turns it into a located error.

    Attributes
    ----------
    index : int
        Position of the value in the list given (the caller maps it to an event).
    value : object
        The value as read.
    expected : str
        What the column holds.
    """

    def __init__(self, index: int, value: Any, expected: str) -> None:
        super().__init__(f"{value!r} at {index}: expected {expected}")
        self.index, self.value, self.expected = index, value, expected


_INT64 = (-(2**63), 2**63 - 1)


def int_array(values: Sequence[Any]) -> np.ndarray:
    """int64 from ints, numeric strings and None (0, the protobuf default, stands for absent).

    Raises
    ------
    BadFieldValue
        For a value that is no integer, or one outside int64 (proto-JSON ``int64`` fields).
    """
    try:
        return np.array([v or 0 for v in values], dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.array([_checked_int(i, v) for i, v in enumerate(values)], dtype=np.int64)


def _checked_int(index: int, value: Any) -> int:
    try:
        number = int(value or 0)
    except (TypeError, ValueError, OverflowError):
        raise BadFieldValue(index, value, "an integer") from None
    if isinstance(value, float) and value != number:
        raise BadFieldValue(index, value, "an integer")
    if not _INT64[0] <= number <= _INT64[1]:
        raise BadFieldValue(index, value, "an integer within int64")
    return number


@dataclass
class TypeCodes:
    """Each event's type as a code into ``shorts``/``categories`` (the distinct types' names),
    handed to the linking pass so it need not factorize the ``event_type`` column again."""

    codes: np.ndarray
    shorts: list[str]
    categories: list[str]

    def take(self, order: np.ndarray) -> TypeCodes:
        """The codes of the events reordered by ``order``."""
        return TypeCodes(self.codes[order], self.shorts, self.categories)

    def of_type(self, short: str) -> np.ndarray:
        """Which events have the type ``short`` (a boolean mask)."""
        return np.array([name == short for name in self.shorts], dtype=bool)[self.codes]

    def of_category(self, category: str) -> np.ndarray:
        """Which events have the category ``category`` (a boolean mask)."""
        return np.array([name == category for name in self.categories], dtype=bool)[self.codes]


def small_codes(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(numbers, return_inverse=True)``, by counting where the numbers are small."""
    if len(numbers) and int(numbers.min()) >= 0 and int(numbers.max()) < 4096:
        distinct = np.flatnonzero(np.bincount(numbers))
        lookup = np.zeros(int(distinct[-1]) + 1, dtype=np.intp)
        lookup[distinct] = np.arange(len(distinct))
        return distinct, lookup[numbers]
    distinct, codes = np.unique(numbers, return_inverse=True)
    return distinct, codes.astype(np.intp, copy=False)


def fill_types(c: dict[str, Any], infos: list[TypeInfo], codes: np.ndarray) -> TypeCodes:
    """``event_type``, ``category`` and ``is_command`` of every event (``infos[codes[i]]``),
    one lookup each rather than one scatter per type."""
    shorts = [info.short for info in infos]
    categories = [info.category for info in infos]
    c["event_type"] = np.array(shorts, dtype=object)[codes]
    c["category"] = np.array(categories, dtype=object)[codes]
    c["is_command"] = np.array([info.is_command for info in infos], dtype=bool)[codes]
    return TypeCodes(codes, shorts, categories)


def fill_types_by_number(c: dict[str, Any], numbers: np.ndarray) -> TypeCodes:
    """:func:`fill_types` for event types given as enum numbers (binary histories)."""
    distinct, codes = small_codes(numbers)
    return fill_types(c, [type_info(number) for number in distinct.tolist()], codes)


def group_by_type(spellings: Sequence[Any]) -> tuple[list[tuple[TypeInfo, np.ndarray]], TypeCodes]:
    """``(type facts, positions)`` per distinct event type spelling, in first-seen order, and
    each event's code into them (a :class:`TypeCodes`)."""
    index = {spelling: code for code, spelling in enumerate(dict.fromkeys(spellings))}
    codes = np.fromiter(map(index.__getitem__, spellings), dtype=np.intp, count=len(spellings))
    order = np.argsort(codes, kind="stable")
    ends = np.cumsum(np.bincount(codes, minlength=len(index)))
    groups = []
    for spelling, code in index.items():
        start = ends[code - 1] if code else 0
        groups.append((type_info(spelling), order[start : ends[code]]))
    infos = [info for info, _ in groups]
    return groups, TypeCodes(codes, [i.short for i in infos], [i.category for i in infos])


_WRAPPER_INFOS = (
    "activityFailureInfo",
    "childWorkflowExecutionFailureInfo",
    "nexusOperationExecutionFailureInfo",
)
_INFO_NAMES = {
    "timeoutFailureInfo": "TimeoutFailure",
    "canceledFailureInfo": "CanceledFailure",
    "terminatedFailureInfo": "TerminatedFailure",
    "serverFailureInfo": "ServerFailure",
    "resetWorkflowFailureInfo": "ResetWorkflowFailure",
    "activityFailureInfo": "ActivityFailure",
    "childWorkflowExecutionFailureInfo": "ChildWorkflowFailure",
    "nexusOperationExecutionFailureInfo": "NexusOperationFailure",
    "nexusHandlerFailureInfo": "NexusHandlerFailure",
}


def present(value: Any) -> bool:
    """A field is present unless it is missing or JSON null (emit-defaults files write nulls)."""
    return value is not None and not (isinstance(value, msgspec.Raw) and value == NULL)


@dataclass(frozen=True)
class TypeInfo:
    """Facts about one event type spelling, computed once per spelling."""

    short: str
    key: str  # the JSON name of its attributes field
    field: str | None  # the protobuf oneof field name, when the API knows the type
    category: str
    is_command: bool
    known: bool
    cause_enum: EnumDescriptor | None


_TYPE_INFO: dict[Any, TypeInfo] = {}


def type_info(spelling: Any) -> TypeInfo:
    """Type facts for any spelling of an event type (cached)."""
    info = _TYPE_INFO.get(spelling)
    if info is not None:
        return info
    short = enums.event_type_name(spelling)
    key = enums.attributes_key(short)
    field = HistoryEvent.DESCRIPTOR.fields_by_camelcase_name.get(key)
    cause = None
    if field is not None and field.message_type is not None:
        cause_field = field.message_type.fields_by_name.get("cause")
        cause = cause_field.enum_type if cause_field is not None else None
    info = TypeInfo(
        short=short,
        key=key,
        field=field.name if field is not None else None,
        category=enums.category_of(short),
        is_command=short in enums.COMMAND_EVENT_TYPES,
        known=field is not None,
        cause_enum=cause,
    )
    with contextlib.suppress(TypeError):  # an unhashable spelling: just don't cache it
        _TYPE_INFO[spelling] = info
    return info


_RETRY_STATES: dict[Any, str | None] = {}


def retry_state_name(value: Any) -> str | None:
    """Canonical ``RETRY_STATE_*`` name of any spelling (cached); 0/unspecified -> None."""
    if value is None or value == 0 or value == "":
        return None
    name = _RETRY_STATES.get(value)
    if name is None:
        name = enums.canonical_enum(RetryState.DESCRIPTOR, value)
        _RETRY_STATES[value] = name
    return None if name == "RETRY_STATE_UNSPECIFIED" else name


def cause_name(enum: EnumDescriptor | None, value: Any) -> str | None:
    """Canonical name of a cause enum value; unknown enums and values verbatim."""
    if value is None or value == 0 or value == "":
        return None
    if enum is None:
        return str(value)
    return enums.canonical_enum(enum, value)


def _failure_kind(failure: FailureView) -> str | None:
    info = failure.applicationFailureInfo
    if info is not None:
        return info.type or "ApplicationFailure"
    for key, name in _INFO_NAMES.items():
        if present(getattr(failure, key)):
            return name
    return None


def _cause_view(cause: Any) -> FailureView | None:
    if isinstance(cause, msgspec.Raw):
        try:
            return failure_decoder.decode(cause)
        except msgspec.MsgspecError:
            return None
    return failure_view_from_proto(cause)


def failure_columns(
    failure: FailureView | None, codec: Any, decode: bool
) -> tuple[str | None, str | None]:
    """``(failure_message, failure_type)`` of a failure, following wrapper failures' causes.

    An activity/child/Nexus failure wraps the real one: the message becomes
    ``"<outer>: <innermost>"`` and the type the innermost one's. With an encoding failure
    converter the real message is a payload under ``encodedAttributes``.
    """
    if failure is None:
        return None, None
    message = failure.message
    if decode and present(failure.encodedAttributes):
        decoded = decode_any(_as_payloads(failure.encodedAttributes), codec)
        first = decoded[0] if isinstance(decoded, list) and decoded else None
        if isinstance(first, dict) and first.get("message"):
            message = first["message"]
    kind = _failure_kind(failure)
    wrapper = any(present(getattr(failure, info)) for info in _WRAPPER_INFOS)
    if wrapper and present(failure.cause):
        inner_message, inner_kind = failure_columns(_cause_view(failure.cause), codec, decode)
        if inner_message:
            message = f"{message}: {inner_message}" if message else inner_message
        kind = inner_kind or kind
    return message or None, kind


def _as_payloads(payload: Any) -> Any:
    if isinstance(payload, msgspec.Raw):
        return msgspec.Raw(b'{"payloads":[' + bytes(payload) + b"]}")
    return payload
