"""Binary ``History`` bytes -> column arrays, read straight from the wire format.

The events, their times and their attributes are walked in one pass by the compiled reader
(``reading/_wirescan.c``) where the package was built with a C compiler, else with
:mod:`toolkit.histories.reading.wire` (numpy, a level at a time); both give the same arrays. Each
attributes field is routed to its column through a table built from the installed descriptors
(attributes type x field number -> column), never by hand. The
parsed protobuf ``History`` (which validated the bytes) backs the lazy ``attributes``/``extra``/
payload cells and the rare events read field by field: failures, updates, child workflows.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from itertools import repeat
from types import ModuleType
from typing import Any

import numpy as np
from temporalio.api.history.v1 import HistoryEvent

from toolkit.histories.columns.common import (
    EventColumns,
    TypeCodes,
    cause_name,
    failure_columns,
    fill_types_by_number,
    new_columns,
    retry_state_name,
    scatter,
)
from toolkit.histories.columns.from_proto import sparse_columns
from toolkit.histories.columns.lazy import LazyEventPayloads, lazy_proto_cells
from toolkit.histories.reading.dialects import RawHistory, bad_event_id
from toolkit.histories.reading.wire import (
    Fields,
    WireError,
    as_array,
    leading,
    packed_strings,
    scan,
    split_records,
    strings,
)
from toolkit.histories.views import failure_view_from_proto

__all__ = ["compiled", "wire_columns"]

_compiled: ModuleType | None
try:
    from toolkit.histories.reading import _wirescan as _compiled
except ImportError:  # installed without a C compiler: numpy does the same work
    _compiled = None

_ATTRIBUTES = {f.number: f for f in HistoryEvent.DESCRIPTOR.oneofs_by_name["attributes"].fields}
_KINDS = max(_ATTRIBUTES) + 1
# attributes field number -> its name (None for 0: the event has no attributes)
_FIELD_NAMES = np.array([_ATTRIBUTES[k].name if k in _ATTRIBUTES else None for k in range(_KINDS)])
_NUMBERS = 64  # attributes field numbers at or above this feed no column
# column -> attributes field name, by how the value becomes a cell
_STRINGS = {"activity_id": "activity_id", "timer_id": "timer_id", "signal_name": "signal_name",
            "marker_name": "marker_name", "identity": "identity"}  # fmt: skip
_NAMES = {"activity_type": "activity_type", "task_queue": "task_queue"}
_INTS = {"scheduled_event_id": "scheduled_event_id", "started_event_id": "started_event_id",
         "initiated_event_id": "initiated_event_id", "attempt": "attempt",
         "completed_by": "workflow_task_completed_event_id",
         "history_size_bytes": "history_size_bytes",
         "suggest_continue_as_new": "suggest_continue_as_new"}  # fmt: skip
_ENUMS = {"retry_state": "retry_state", "cause": "cause"}
_PAYLOADS = {"input": "input", "result": "result", "details": "details"}
_COMPLEX = {"failure": "failure"}
_RULES = {**_STRINGS, **_NAMES, **_INTS, **_ENUMS, **_PAYLOADS, **_COMPLEX}
_RULE_CODES = {column: code for code, column in enumerate(_RULES, start=1)}
# ActivityType and TaskQueue keep their name in field 1; checked here, not assumed silently.
_NAME_NUMBER = 1
assert all(
    f.message_type.fields_by_name[name].message_type.fields_by_name["name"].number == _NAME_NUMBER
    for f in _ATTRIBUTES.values()
    for name in _NAMES.values()
    if name in f.message_type.fields_by_name
), "a name field moved: update columns_wire"


# How the compiled reader treats each column code's field (see _wirescan.c).
_PLAIN, _TEXT, _NAMED_TEXT = 0, 1, 2
_SHAPES = np.zeros(len(_RULE_CODES) + 1, dtype=np.uint8)
_SHAPES[[_RULE_CODES[column] for column in _STRINGS]] = _TEXT
_SHAPES[[_RULE_CODES[column] for column in _NAMES]] = _NAMED_TEXT
# HistoryEvent field number -> whether it is one of the attributes.
_IS_ATTRIBUTES = np.zeros(_KINDS, dtype=np.uint8)
_IS_ATTRIBUTES[list(_ATTRIBUTES)] = 1


def compiled() -> bool:
    """Whether binary histories are read by the compiled reader (``_wirescan.c``), not numpy."""
    return _compiled is not None


@cache
def _routes() -> np.ndarray:
    """``routes[kind, number]``: the rule code fed by field ``number`` of attributes ``kind``."""
    routes = np.zeros((_KINDS, _NUMBERS), dtype=np.int16)
    for kind, oneof_field in _ATTRIBUTES.items():
        fields = oneof_field.message_type.fields_by_name
        for column, name in _RULES.items():
            field = fields.get(name)
            if field is not None and field.number < _NUMBERS:
                routes[kind, field.number] = _RULE_CODES[column]
    return routes


def _one_per_message(rows: Fields, n: int, what: str) -> None:
    if len(rows.message) and np.bincount(rows.message, minlength=n).max() > 1:
        raise WireError(f"{what} repeated within one message")


def _varint_column(fields: Fields, number: int, n: int) -> np.ndarray:
    rows = fields.select(fields.number == number)
    _one_per_message(rows, n, f"field {number}")
    if (rows.wire_type != 0).any():
        raise WireError(f"field {number} is not a varint")
    out = np.zeros(n, dtype=np.int64)
    out[rows.message] = rows.value.view(np.int64)
    return out


@dataclass
class _WireEvents:
    """What either reader finds in the bytes: per event, its byte range, id, type, time and
    attributes field number (``kinds``); and ``rows``, the attributes fields that feed a column,
    sorted by the column's code (``_RULE_CODES``, in ``rows.number``): code ``c`` has rows
    ``bounds[c]`` to ``bounds[c + 1]``. ``texts`` holds the decoded text of the text columns'
    rows, in row order (for ``activity_type``/``task_queue``: the ``name`` inside the message).
    """

    starts: np.ndarray
    ends: np.ndarray
    ids: np.ndarray
    types: np.ndarray
    seconds: np.ndarray
    nanos: np.ndarray
    kinds: np.ndarray
    rows: Fields
    bounds: np.ndarray
    texts: np.ndarray


def _read(data: bytes) -> _WireEvents:
    """The events of ``data``: in C where the package was built with it, else with numpy."""
    if _compiled is None:
        return _read_numpy(data)
    try:
        events, rows, wire_types, bounds, text, offsets = _compiled.read_events(
            data, _routes(), _NUMBERS, _SHAPES, _IS_ATTRIBUTES
        )
    except ValueError as exc:
        raise WireError(str(exc)) from None
    per_event = np.frombuffer(events, dtype=np.int64).reshape(7, -1)
    event, value, start, length = np.frombuffer(rows, dtype=np.int64).reshape(4, -1)
    bounds = np.frombuffer(bounds, dtype=np.int64)
    codes = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    wire_types = np.frombuffer(wire_types, dtype=np.int8)
    found = Fields(event, codes, wire_types, value.view(np.uint64), start, length)
    texts = packed_strings(text, np.frombuffer(offsets, dtype=np.int64))
    return _WireEvents(*per_event, found, bounds, texts)


def _read_numpy(data: bytes) -> _WireEvents:
    """:func:`_read` with numpy: a level of messages at a time (see ``reading/wire.py``)."""
    buf = as_array(data)
    starts, ends = split_records(data)
    n = len(starts)
    # event_id, event_time, event_type come first in every encoder's output: read them directly
    # (any other order falls back to the parsed messages), then everything else in lockstep.
    (ids, times, types), rest = leading(buf, starts, ends, (0x08, 0x12, 0x18))
    events = scan(buf, rest, ends, np.arange(n))
    if np.isin(events.number, (1, 2, 3)).any():
        raise WireError("event_id, event_time or event_type out of the usual order")
    found = events.select(np.isin(events.number, list(_ATTRIBUTES)) & (events.wire_type == 2))
    _one_per_message(found, n, "attributes")
    kinds = np.zeros(n, dtype=np.int64)
    kinds[found.message] = found.number
    fields = scan(buf, found.start, found.start + found.length, found.message)
    code = _routes()[kinds[fields.message], np.minimum(fields.number, _NUMBERS - 1)]
    rows = fields.select(code != 0)
    rows.number = code[code != 0].astype(np.int64)
    named = _SHAPES[rows.number] == _NAMED_TEXT
    if named.any():  # the name inside ActivityType / TaskQueue
        outer = rows.select(named)
        _expect(outer, 2, "activity_type/task_queue")
        inner = scan(buf, outer.start, outer.start + outer.length, np.arange(len(outer.start)))
        name = inner.select((inner.number == _NAME_NUMBER) & (inner.wire_type == 2))
        _one_per_message(name, len(outer.start), "name")
        outer = outer.select(name.message)
        outer.value, outer.start, outer.length = name.value, name.start, name.length
        rows = rows.select(~named)
        rows = Fields(*map(np.concatenate, zip(_arrays(rows), _arrays(outer), strict=True)))
    rows = rows.select(np.lexsort((rows.message, rows.number)))  # as the C reader's order
    text = _SHAPES[rows.number] != _PLAIN
    _expect(rows.select(text), 2, "a text column")
    texts = strings(data, rows.start[text], rows.length[text])
    bounds = np.searchsorted(rows.number, np.arange(len(_RULE_CODES) + 2))
    seconds, nanos = _times(buf, *times)
    return _WireEvents(
        starts, ends, ids[1].view(np.int64), types[1].view(np.int64), seconds, nanos, kinds,
        rows, bounds, texts,
    )  # fmt: skip


def _arrays(rows: Fields) -> tuple[np.ndarray, ...]:
    return tuple(getattr(rows, f.name) for f in fields(Fields))


def _times(
    buf: np.ndarray, present: np.ndarray, length: np.ndarray, start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Seconds and nanos of each event's ``Timestamp`` (0 where unset)."""
    n = len(present)
    end = start + length.astype(np.int64)
    ((_, seconds, _), (_, nanos, _)), rest = leading(buf, start, end, (0x08, 0x10))
    seconds = np.where(present, seconds.view(np.int64), 0)
    nanos = np.where(present, nanos.view(np.int64), 0)
    odd = np.flatnonzero(present & (rest != end))
    if len(odd):  # fields in another order, repeated, or unknown: read them all
        stamp = scan(buf, start[odd], end[odd], odd)
        seconds[odd] = _varint_column(stamp, 1, n)[odd]
        nanos[odd] = _varint_column(stamp, 2, n)[odd]
    return seconds, nanos


def _event_times(seconds: np.ndarray, nanos: np.ndarray) -> Any:
    """``datetime64[ns]`` values, NaT where the time is unset."""
    ns = seconds * 1_000_000_000 + nanos
    ns[(seconds == 0) & (nanos == 0)] = np.iinfo(np.int64).min
    return ns.view("datetime64[ns]")


def _check_ids(ids: np.ndarray, name: str) -> None:
    bad = np.flatnonzero(ids <= 0)
    if len(bad):
        index = int(bad[0])
        raise bad_event_id(name, index, ids[index])


def wire_columns(history: RawHistory, codec: Any, decode: bool) -> EventColumns:
    """Column arrays, event times and producing task ids of a binary history.

    Raises
    ------
    WireError
        When the bytes use the wire format in a way this reader does not handle (the caller then
        reads the parsed messages instead).
    """
    data = history.wire or b""
    found = _read(data)
    if hasattr(history.proto_events, "set_bounds"):
        history.proto_events.set_bounds(found.starts, found.ends)  # then parsed one at a time
    n = len(found.starts)
    c = new_columns(n)
    c["event_id"] = found.ids
    _check_ids(c["event_id"], history.source_name)
    types = fill_types_by_number(c, found.types)
    _fill(c, data, found, history.proto_events, codec, decode, types)
    _cells(c, found.kinds, history.proto_events)
    times = _event_times(found.seconds, found.nanos)
    return EventColumns(c, times, c.pop("completed_by"), {}, types=types)


def _fill(
    c: dict[str, Any], data: bytes, found: _WireEvents, messages: Any, codec: Any, decode: bool,
    types: TypeCodes,
) -> None:  # fmt: skip
    """Route every attributes field to its column."""
    kinds, bounds = found.kinds, found.bounds
    n = len(kinds)
    texts = 0  # the text columns' rows taken so far from found.texts
    for column, code in _RULE_CODES.items():
        rows = found.rows.select(slice(bounds[code], bounds[code + 1]))
        if not len(rows.message):
            continue
        if column in _PAYLOADS:
            if decode:
                events = np.flatnonzero(np.bincount(rows.message, minlength=n))  # maps: many rows
                _payload_cells(c[column], events, kinds, messages, column, codec)
            continue
        _one_per_message(rows, n, column)
        at = rows.message
        if column in _COMPLEX:
            _failures(c, at, kinds, messages, codec, decode)
        elif _SHAPES[code] != _PLAIN:
            c[column][at] = found.texts[texts : texts + len(at)]
            texts += len(at)
        elif column in _INTS:
            _expect(rows, 0, column)
            c[column][at] = rows.value.view(np.int64)
        elif column == "retry_state":
            _expect(rows, 0, column)
            states = [retry_state_name(v) for v in rows.value.view(np.int64).tolist()]
            scatter(c[column], at, states)
        else:
            _causes(c, data, rows, kinds)
    # Update and child workflow columns come from a few nested messages: read the parsed ones.
    for category in ("update", "child_workflow"):
        at = np.flatnonzero(types.of_category(category) & (kinds != 0)).tolist()
        views = [getattr(messages[i], _ATTRIBUTES[int(kinds[i])].name) for i in at]
        if at:
            sparse_columns(c, at, views, category, codec, decode)


def _expect(rows: Fields, wire_type: int, column: str) -> None:
    if (rows.wire_type != wire_type).any():
        raise WireError(f"{column}: unexpected wire type")


def _causes(c: dict[str, Any], data: bytes, rows: Fields, kinds: np.ndarray) -> None:
    """The ``cause`` field: an enum in most attributes, free text in a few."""
    for kind in np.unique(kinds[rows.message]).tolist():
        mine = rows.select(kinds[rows.message] == kind)
        field = _ATTRIBUTES[kind].message_type.fields_by_name["cause"]
        if field.type == field.TYPE_STRING:
            _expect(mine, 2, "cause")
            values: list[Any] = strings(data, mine.start, mine.length).tolist()
        else:
            _expect(mine, 0, "cause")
            values = mine.value.view(np.int64).tolist()
        enum = field.enum_type
        scatter(c["cause"], mine.message, [cause_name(enum, v) for v in values])


def _failures(
    c: dict[str, Any], at: np.ndarray, kinds: np.ndarray, messages: Any, codec: Any, decode: bool
) -> None:
    """Failure message and type, read from the parsed messages (few events have one)."""
    for i in at.tolist():
        attributes = getattr(messages[i], _ATTRIBUTES[int(kinds[i])].name)
        view = failure_view_from_proto(attributes.failure)
        c["failure_message"][i], c["failure_type"][i] = failure_columns(view, codec, decode)


def _payload_cells(
    target: np.ndarray, at: np.ndarray, kinds: np.ndarray, messages: Any, field: str, codec: Any
) -> None:
    names = _FIELD_NAMES[kinds[at]].tolist()
    shared = repeat(None), repeat(codec), repeat(messages)
    cells = list(map(LazyEventPayloads, *shared, at.tolist(), names, repeat(field)))
    scatter(target, at, cells)


def _cells(c: dict[str, Any], kinds: np.ndarray, messages: Any) -> None:
    """``attributes`` and ``extra``: cells reading the parsed event on first use."""
    c["attributes"], c["extra"] = lazy_proto_cells(
        messages, _FIELD_NAMES[kinds].tolist(), np.flatnonzero(kinds == 0)
    )
