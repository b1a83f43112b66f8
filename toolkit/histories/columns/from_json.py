"""JSON events -> column arrays, one event type at a time.

All events of a history are decoded in one msgspec call into typed structs whose attributes are a
per-type slim view (only the fields the frame needs, everything else skipped at C speed). Events
are then grouped by type, and each group fills only the columns its attributes message defines,
so a column costs work only for the events that can have it. The raw bytes of each event stay
available for the ``attributes`` and ``extra`` cells, which decode on first use. Histories with an
event msgspec cannot type (a field of an unexpected type) are decoded event by event, so one odd
event never loses the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any

import msgspec
import numpy as np
from msgspec.structs import astuple

from toolkit.errors import HistoryFormatError
from toolkit.histories.columns.common import (
    NULL,
    BadFieldValue,
    EventColumns,
    TypeInfo,
    cause_name,
    failure_columns,
    fill_types,
    group_by_type,
    int_array,
    new_columns,
    present,
    retry_state_name,
    scatter,
)
from toolkit.histories.columns.lazy import LazyPayloads, lazy_json_cells
from toolkit.histories.reading.dialects import RawHistory
from toolkit.histories.views import (
    ATTRIBUTE_VIEWS,
    TAGGED_EVENTS,
    AttrView,
    Named,
    TypedEvent,
    attr_decoder,
    head_decoder,
    typed_event_decoder,
    typed_list_decoder,
)

__all__ = [
    "ATTRIBUTE_COLUMNS", "fill_group", "json_columns", "name_text", "not_a_number", "own_id",
]  # fmt: skip

_EMPTY = AttrView()
_EMPTY_VIEWS = {key: view() for key, view in ATTRIBUTE_VIEWS.items()}
_ALL_FIELDS = frozenset(AttrView.__struct_fields__)
# view field -> column, by how the value becomes a cell
_STRINGS = {"activityId": "activity_id", "timerId": "timer_id", "signalName": "signal_name",
            "markerName": "marker_name", "identity": "identity"}  # fmt: skip
_NAMES = {"activityType": "activity_type", "taskQueue": "task_queue"}
_INTS = {"scheduledEventId": "scheduled_event_id", "startedEventId": "started_event_id",
         "initiatedEventId": "initiated_event_id", "attempt": "attempt",
         "historySizeBytes": "history_size_bytes"}  # fmt: skip
_PAYLOADS = ("input", "result", "details")
#: view field -> the column its value fills as it is (the scanned path reads these the same way)
ATTRIBUTE_COLUMNS = {
    **_STRINGS, **_NAMES, **_INTS, "suggestContinueAsNew": "suggest_continue_as_new"
}  # fmt: skip


def name_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Named):
        return value.name or None
    return str(value) or None


def own_id(view: Any) -> str | None:
    """The run's own workflow id from its started event's view (see ``events._own_workflow_id``,
    which reads the same from an attributes cell)."""
    if view.workflowId:
        return str(view.workflowId)
    root = view.rootWorkflowExecution
    if root is not None and view.parentWorkflowExecution is None and root.workflowId:
        return str(root.workflowId)
    return None


def _names(values: list[Any]) -> list[str | None]:
    try:
        return [name or None for name in map(attrgetter("name"), values)]  # all {"name": ...}
    except AttributeError:
        return [name_text(v) for v in values]  # some missing, or bare text (old dialects)


def _flags(values: Sequence[Any]) -> list[bool]:
    """A bool field as 0/1 cells: proto3 JSON writes a bool, an exporter may have quoted it;
    anything else is a located error, not a silent <NA>."""
    out = []
    for index, value in enumerate(values):
        if value is None or isinstance(value, bool):
            out.append(bool(value))
        elif value in ("true", "false"):
            out.append(value == "true")
        else:
            raise BadFieldValue(index, value, "true or false")
    return out


def _decode_events(history: RawHistory, name: str) -> tuple[list[Any], set[int]]:
    """The typed events, and the indexes of those decoded tolerantly (views left empty)."""
    if history.typed_events is not None:
        return history.typed_events, set()  # dropped by json_columns once the columns exist
    if history.json_array is not None:
        try:
            return typed_list_decoder.decode(history.json_array), set()
        except msgspec.MsgspecError:
            pass  # find the odd event below, one at a time
    events, tolerant = [], set()
    for index, raw in enumerate(history.json_events):
        try:
            events.append(typed_event_decoder.decode(raw))
        except msgspec.MsgspecError:
            events.append(_tolerant_event(raw, name, index))
            tolerant.add(index)
    return events, tolerant


def _tolerant_event(raw: msgspec.Raw, name: str, index: int) -> Any:
    """An event whose attributes have an unexpected shape: keep the envelope, skip the view."""
    try:
        head = head_decoder.decode(raw)
    except msgspec.MsgspecError as exc:
        raise HistoryFormatError(
            name,
            f"not a history event ({exc})",
            position=f"event #{index}",
            expected="an object with eventId, eventType and its attributes",
        ) from None
    try:
        fields = msgspec.json.decode(raw, type=dict[str, Any])
    except msgspec.MsgspecError as exc:  # e.g. bytes that are not UTF-8 inside a string
        raise HistoryFormatError(
            name, f"unreadable event ({exc})", position=f"event #{index}",
            expected="JSON text in UTF-8",
        ) from None  # fmt: skip
    for key, value in fields.items():
        # Attributes of another shape are kept; attributes that are no object at all are not
        # attributes (every reader of the event would trip over them).
        if key.endswith("EventAttributes") and value is not None and not isinstance(value, dict):
            raise HistoryFormatError(
                name,
                f"{key} is {type(value).__name__} {value!r}"[:200],
                position=f"event #{index}",
                expected="an object of event attributes",
            )
        if key.endswith("EventAttributes") and value is not None:
            _check_numbers(value, name, index)
    return TypedEvent(
        eventId=head.eventId, eventTime=head.eventTime, eventType=head.eventType,
        timestamp=head.timestamp,
    )  # fmt: skip


#: Attribute fields the frame holds as int64 columns (ids linking events, attempts).
_NUMBER_FIELDS = (*_INTS, "workflowTaskCompletedEventId", "decisionTaskCompletedEventId")


def _check_numbers(attributes: dict[str, Any], name: str, index: int) -> None:
    """A located error for a number field holding a fraction, a list or an object, or for an
    id or name field holding a list or an object."""
    for field in _STRINGS:
        value = attributes.get(field)
        if isinstance(value, (dict, list, bool)):
            raise HistoryFormatError(
                name,
                f"{field} is {type(value).__name__} {value!r}"[:200],
                position=f"event #{index}",
                expected="text",
            )
    flag = attributes.get("suggestContinueAsNew")
    if not (flag is None or isinstance(flag, bool) or flag in ("true", "false")):
        raise HistoryFormatError(
            name,
            f"suggestContinueAsNew is {type(flag).__name__} {flag!r}"[:200],
            position=f"event #{index}",
            expected="true or false",
        )
    for field in _NUMBER_FIELDS:
        value = attributes.get(field)
        if value is None or isinstance(value, str) or (
            isinstance(value, int) and not isinstance(value, bool)
        ):
            continue  # text is checked when the column is filled
        raise HistoryFormatError(
            name,
            f"{field} is {type(value).__name__} {value!r}"[:200],
            position=f"event #{index}",
            expected="an integer",
        )


def _find_attributes(raw: msgspec.Raw) -> tuple[str | None, AttrView]:
    """For event types the API does not know: the key ending in 'EventAttributes'."""
    keys = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
    for key, value in keys.items():
        if key.endswith("EventAttributes") and value != NULL:
            try:
                return key, attr_decoder.decode(value)
            except msgspec.MsgspecError:
                return key, _EMPTY
    return None, _EMPTY


def _event_ids(events: list[Any], where: _Where) -> np.ndarray:
    ids = list(map(attrgetter("eventId"), events))
    try:
        return np.array(ids, dtype=np.int64)  # numbers and numeric strings alike
    except (TypeError, ValueError, OverflowError):
        pass
    try:
        return int_array(ids)
    except BadFieldValue as bad:
        name, index = where.locate(bad.index)
        raise HistoryFormatError(
            name,
            f"eventId {bad.value!r} is not an integer event id",
            position=f"event #{index}",
            expected=f"{bad.expected} eventId",
        ) from None


def _check_envelopes(events: list[Any], name: str) -> list[Any]:
    """Each event's ``eventType`` as spelled in the source; an error for an event without one."""
    if events and type(events[0]) in TAGGED_EVENTS:
        return list(map(TAGGED_EVENTS.__getitem__, map(type, events)))  # the type is the tag
    types = list(map(attrgetter("eventType"), events))
    if None in types:
        for index, event in enumerate(events):
            if event.eventId is None and event.eventType is None:
                raise HistoryFormatError(
                    name,
                    "object has neither eventId nor eventType",
                    position=f"event #{index}",
                    expected="a history event",
                )
    return types


def json_columns(
    histories: Sequence[RawHistory], names: Sequence[str], codec: Any, decode: bool
) -> EventColumns:
    """Column arrays, event times, producing task ids and start facts of JSON histories.

    Several histories (``names[k]`` is the source of ``histories[k]``) are built as one: their
    events are grouped by type across all of them, so a batch of small files costs a dozen
    column fills rather than a dozen per file. Indexes in the result are over the
    concatenated events; ``counts`` says how many belong to each history. A located error
    names the history's source and the event's position within that history.
    """
    decoded = [_decode_events(h, name) for h, name in zip(histories, names, strict=True)]
    counts = np.fromiter((len(events) for events, _ in decoded), dtype=np.int64,
                         count=len(decoded))  # fmt: skip
    where = _Where(names, counts)
    tolerant: set[int] = set()
    for (_, found), start in zip(decoded, where.starts.tolist(), strict=True):
        tolerant.update(start + i for i in found)
    if len(decoded) == 1:
        events = decoded[0][0]
        types = _check_envelopes(events, names[0])
    else:
        events = list(chain.from_iterable(events for events, _ in decoded))
        types = list(chain.from_iterable(
            _check_envelopes(events, name) for (events, _), name in zip(decoded, names, strict=True)
        ))  # fmt: skip
    n = len(events)
    c = new_columns(n)
    c["event_id"] = _event_ids(events, where)
    started: dict[int, tuple[Any, ...]] = {}
    groups, type_codes = group_by_type(types)
    infos = [info for info, _ in groups]
    fill_types(c, infos, type_codes.codes)
    # Each event's attributes key: its type's, or (types the API does not know) found below.
    known_keys = np.array([i.key if i.known else None for i in infos], dtype=object)
    keys: list[str | None] = known_keys[type_codes.codes].tolist()
    for info, positions in groups:
        at = positions.tolist()
        group = itemgetter(*at)(events) if len(at) > 1 else (events[at[0]],)
        if info.known:
            empty = _EMPTY_VIEWS[info.key]
            views = list(map(attrgetter(info.key), group))
            if views.count(None):
                views = [v if v is not None else empty for v in views]
            fields = frozenset(type(empty).__struct_fields__)
        else:
            found = [_find_attributes(where.raw_event(histories, i)) for i in at]
            views = [view for _, view in found]
            fields = _ALL_FIELDS
            for i, (key, _) in zip(at, found, strict=True):
                keys[i] = key
        try:
            fill_group(c, positions, views, fields, info, codec, decode)
        except BadFieldValue as bad:
            raise not_a_number(*where.locate(int(positions[bad.index])), info, bad) from None
        if info.short == "WorkflowExecutionStarted":
            for i, view in zip(at, views, strict=True):
                if i not in tolerant:
                    started[i] = (
                        view.originalExecutionRunId, name_text(view.workflowType), own_id(view)
                    )
    c["attributes"], c["extra"] = _cells(histories, keys, where)
    times = [e.eventTime or e.timestamp for e in events]
    for history in histories:
        # The cells keep each history alive; they need only its raw bytes, not the structs.
        if history.typed_events is not None:
            history.event_count = len(history.typed_events)
        history.typed_events = None
    return EventColumns(c, times, c.pop("completed_by"), started, counts, type_codes)


def not_a_number(name: str, index: int, info: TypeInfo, bad: BadFieldValue) -> HistoryFormatError:
    """The error for a value a number column cannot hold, at event ``index`` of ``name``."""
    return HistoryFormatError(
        name,
        f"{info.short} has the value {bad.value!r} where a number belongs",
        position=f"event #{index}",
        expected=bad.expected,
    )


class _Where:
    """Maps an index over the concatenated events of several histories back to one of them."""

    def __init__(self, names: Sequence[str], counts: np.ndarray) -> None:
        self.names = names
        self.starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)

    def owner(self, index: int) -> int:
        return int(np.searchsorted(self.starts, index, side="right")) - 1

    def locate(self, index: int) -> tuple[str, int]:
        """``(source name, index within its history)`` of a concatenated index."""
        k = self.owner(index)
        return self.names[k], index - int(self.starts[k])

    def raw_event(self, histories: Sequence[RawHistory], index: int) -> msgspec.Raw:
        k = self.owner(index)
        return histories[k].json_events[index - int(self.starts[k])]


def _cells(
    histories: Sequence[RawHistory], keys: list[str | None], where: _Where
) -> tuple[np.ndarray, np.ndarray]:
    if len(histories) == 1:
        return lazy_json_cells(histories[0], keys)
    bounds = [*where.starts.tolist(), len(keys)]
    pieces = [lazy_json_cells(h, keys[bounds[k] : bounds[k + 1]]) for k, h in enumerate(histories)]
    return (
        np.concatenate([attributes for attributes, _ in pieces]),
        np.concatenate([extra for _, extra in pieces]),
    )


def fill_group(
    c: dict[str, Any], positions: np.ndarray, views: list[Any], fields: frozenset[str],
    info: TypeInfo, codec: Any, decode: bool,
) -> None:  # fmt: skip
    """Fill every column the group's attributes can hold, at the group's positions."""
    by_field: dict[str, tuple[Any, ...]] = {}
    if views and type(views[0]) is not AttrView and len({type(v) for v in views}) == 1:
        # One C call per view and one transposition: cheaper than a pass per field.
        names = type(views[0]).__struct_fields__
        by_field = dict(zip(names, zip(*map(astuple, views), strict=True), strict=True))

    def values(field: str) -> Sequence[Any] | None:
        if field not in fields:
            return None
        found = by_field.get(field)
        if found is None:
            found = list(map(attrgetter(field), views))
        return None if found.count(None) == len(found) else found

    for field, column in _STRINGS.items():
        if (found := values(field)) is not None:
            scatter(c[column], positions, [v or None for v in found])
    for field, column in _NAMES.items():
        if (found := values(field)) is not None:
            scatter(c[column], positions, _names(found))
    for field, column in _INTS.items():
        if (found := values(field)) is not None:
            c[column][positions] = int_array(found)
    if (found := values("suggestContinueAsNew")) is not None:
        c["suggest_continue_as_new"][positions] = _flags(found)
    producer = values("workflowTaskCompletedEventId")
    legacy = values("decisionTaskCompletedEventId")
    if producer is not None or legacy is not None:
        merged = (
            [a or b for a, b in zip(producer, legacy, strict=True)]
            if producer is not None and legacy is not None
            else producer or legacy
        )
        c["completed_by"][positions] = int_array(merged)  # type: ignore[arg-type]
    if (found := values("retryState")) is not None:
        scatter(c["retry_state"], positions, [retry_state_name(v) for v in found])
    if (found := values("cause")) is not None:
        enum = info.cause_enum
        causes = [cause_name(enum, v) if v is not None else None for v in found]
        scatter(c["cause"], positions, causes)
    if decode:
        for field in _PAYLOADS:
            if (found := values(field)) is not None:
                cells = [LazyPayloads(v, codec) if v is not None and v != NULL else None
                         for v in found]  # fmt: skip
                scatter(c[field], positions, cells)
    failures = values("failure")
    outcomes = values("outcome")
    if failures is not None or outcomes is not None:
        _fill_failures(c, positions, failures, outcomes, codec, decode)
    if info.category == "update":
        _fill_updates(c, positions.tolist(), views, codec, decode)
    elif info.category == "child_workflow":
        for i, a in zip(positions.tolist(), views, strict=True):
            execution = getattr(a, "workflowExecution", None)
            c["child_workflow_id"][i] = (
                getattr(a, "workflowId", None)
                or (execution.workflowId if execution else None)
                or None
            )
            c["child_workflow_type"][i] = name_text(getattr(a, "workflowType", None))


def _fill_failures(
    c: dict[str, Any], positions: np.ndarray, failures: list[Any] | None,
    outcomes: list[Any] | None, codec: Any, decode: bool,
) -> None:  # fmt: skip
    for k, i in enumerate(positions.tolist()):
        failure = failures[k] if failures is not None else None
        if failure is None and outcomes is not None and outcomes[k] is not None:
            failure = outcomes[k].failure
        if failure is not None:
            c["failure_message"][i], c["failure_type"][i] = failure_columns(failure, codec, decode)


def _fill_updates(
    c: dict[str, Any], positions: list[int], views: list[Any], codec: Any, decode: bool
) -> None:
    for i, a in zip(positions, views, strict=True):
        request = (
            getattr(a, "acceptedRequest", None)
            or getattr(a, "request", None)
            or getattr(a, "rejectedRequest", None)
        )
        meta = getattr(a, "meta", None)
        c["update_id"][i] = (
            (request.meta.updateId if request and request.meta else None)
            or (meta.updateId if meta else None)
            or getattr(a, "protocolInstanceId", None)
            or None
        )
        if request is not None and request.input is not None:
            c["update_name"][i] = request.input.name or None
            if decode and present(request.input.args):
                c["input"][i] = LazyPayloads(request.input.args, codec)
        outcome = getattr(a, "outcome", None)
        if decode and outcome is not None and present(outcome.success):
            c["result"][i] = LazyPayloads(outcome.success, codec)
