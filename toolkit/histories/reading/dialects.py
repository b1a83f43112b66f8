"""Which container a source uses; unwrap it to one list of raw events per history.

JSON containers recognised (see ``histories-and-replay.md``):

=============================================  ===============================================
shape                                          seen in
=============================================  ===============================================
``{"events": [...]}``                          CLI ``-o json``, UI download, SDK ``to_json``
``{"history": {"events": [...]}, ...}``        ``GetWorkflowExecutionHistoryResponse``
``[{...event...}, ...]``                       bare arrays (older tools, UI fixtures)
``[{"events": [...]}, ...]``                   arrays of histories
``{...event...}, {...event...}``               the CLI's output before 2023 (no brackets)
``[{"eventList": [...]}, ...]``                the Web UI's event groups
``{"<EventType>": {...event...}, ...}``        objects keyed by event type (UI fixtures)
``{"items": [{"history": ...}]}``              a Cloud export written as JSON
=============================================  ===============================================

Binary: one ``temporal.api.history.v1.History`` message, or a Cloud export
``temporal.api.export.v1.WorkflowExecutions`` (several histories per file).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from google.protobuf.message import DecodeError as ProtoDecodeError
from temporalio.api.export.v1 import ExportedExecutions
from temporalio.api.history.v1 import HistoryEvent

from toolkit.errors import HistoryFormatError
from toolkit.histories.columns.lazy_proto import LazyHistoryEvents
from toolkit.histories.reading.json_scan import scan_document
from toolkit.histories.reading.sources import Source, describe
from toolkit.histories.views import tagged_document_decoder, typed_document_decoder

__all__ = ["RawHistory", "bad_event_id", "check_proto_events", "split_histories"]

_EXPECTED = (
    'a Temporal history: proto-JSON {"events": [...]}, a history response, an array of events '
    "or histories, comma-separated events, UI event groups, or binary History/export protobuf"
)

_LEADING_SPACE = re.compile(rb"\s*")
# The common export shape, whose container and events can be decoded in one typed pass.
_EVENTS_FIRST = re.compile(rb'\s*\{\s*"events"\s*:')
_Container = dict[str, msgspec.Raw] | list[msgspec.Raw]
_container_decoder = msgspec.json.Decoder(_Container)
_object_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_list_decoder = msgspec.json.Decoder(list[msgspec.Raw])


class _EventsDocument(msgspec.Struct):
    events: list[msgspec.Raw] = []


#: A ``{"events": [...]}`` document's raw events in one scan (not the object, then the array).
_events_decoder = msgspec.json.Decoder(_EventsDocument)


@dataclass
class RawHistory:
    """One history as found in a source: raw JSON events or protobuf events, plus what is known.

    For JSON, ``json_array`` is the events array as one raw slice when the source has one; the
    per-event raw slices (``json_events``) are then split off only when someone needs them, so
    the common path scans the bytes once less. For a ``{"events": [...]}`` document the events
    are decoded straight into ``typed_events`` and ``document`` keeps the bytes for the raw slices.
    """

    json_array: msgspec.Raw | bytes | None = None
    typed_events: list[Any] | None = None
    document: bytes | None = None
    proto_events: Any = None  # a repeated field of HistoryEvent
    wire: bytes | None = None  # the serialized History the proto_events were parsed from
    workflow_id: str | None = None
    run_id: str | None = None
    namespace: str | None = None
    source_name: str = ""
    where: str = "$"
    _json_events: list[msgspec.Raw] | None = None
    scanned: Any = None  # the document's events as the compiled scanner read them (json_scan)
    #: The events of ``document`` split off so far by :meth:`json_event`, and where it goes on.
    _prefix: list[int] | None = None
    _prefix_at: int = -1
    _suffix: list[int] | None = None  # the spans of its last events, last first
    event_count: int = -1  # the events of the typed decode, once it is dropped (-1: unknown)
    event_spans: Any = None  # (starts, ends) of every event of ``document``: the scanner's

    @property
    def is_json(self) -> bool:
        return self.proto_events is None

    @property
    def json_events(self) -> list[msgspec.Raw]:
        """The raw JSON of each event (split off the array on first use)."""
        if self._json_events is None:
            if self.json_array is None and self.document is not None:
                try:
                    self._json_events = _events_decoder.decode(self.document).events
                except msgspec.MsgspecError:
                    array = _object_decoder.decode(self.document)["events"]
                    self._json_events = _events_of(array, self.source_name, self.where)
            else:
                self._json_events = _events_of(self.json_array or b"[]", self.source_name,
                                               self.where)  # fmt: skip
        return self._json_events

    def json_event(self, index: int) -> msgspec.Raw:
        """The raw JSON of event ``index``. Off a ``{"events": [...]}`` document the events are
        split off only as far as it (where the package was built with a C compiler): a run's
        version label reads its first workflow tasks, and the history need not be split whole
        for that."""
        if self.event_spans is not None and 0 <= index < len(self.event_spans[0]):
            starts, ends = self.event_spans  # the scanner's: every event's span is known
            return msgspec.Raw(memoryview(self.document)[starts[index] : ends[index]])
        if self._json_events is not None or self.document is None or _cellscan is None:
            return self.json_events[index]
        if index >= _PREFIX_EVENTS:
            return self._from_the_end(index)
        spans = self._prefix_spans()
        if spans is None:
            return self.json_events[index]
        if 2 * index >= len(spans) and self._prefix_at >= 0:
            known = len(spans) // 2  # at least doubling what is known: a few calls per run
            wanted = min(max(index + 1 - known, known, 8), _PREFIX_EVENTS - known)
            found, at, done = _cellscan.element_spans(self.document, self._prefix_at, wanted)
            spans.extend(memoryview(found).cast("q").tolist())
            self._prefix_at = -1 if done else at
        if 2 * index + 1 < len(spans):
            return msgspec.Raw(memoryview(self.document)[spans[2 * index] : spans[2 * index + 1]])
        return self.json_events[index]  # past the end: the split says what is wrong

    def _prefix_spans(self) -> list[int] | None:
        """The spans split off the front of ``document`` so far (none on first use); None where
        there is no compiled scanner or the document is no ``{"events": [...]}`` one."""
        if self._prefix is None:
            if self.document is None or _cellscan is None:
                return None
            head = _EVENTS_FIRST.match(self.document)
            at = _LEADING_SPACE.match(self.document, head.end()).end() if head else -1
            if at < 0 or self.document[at : at + 1] != b"[":
                return None
            self._prefix, self._prefix_at = [], at + 1
        return self._prefix

    def spans_of(self, indices: Sequence[int]) -> list[int] | None:
        """``start, end`` of the raw JSON of each event of ``indices`` in ``document``, one
        pair after another, the document split off as far as the last of them (as
        :meth:`json_event_texts` splits it); None where the events' places are not known (no
        compiled scanner, no ``{"events": [...]}`` document) or an index is past the last
        event. The ledger searches the texts in place, none sliced off."""
        if not indices:
            return []
        top = max(indices)
        if self.event_spans is not None:
            starts, ends = self.event_spans  # the scanner's: every event's span is known
            if min(indices) < 0 or top >= len(starts):
                return None
            return [int(x) for i in indices for x in (starts[i], ends[i])]
        spans = self.prefix_through(top) if min(indices) >= 0 else None
        if spans is None:
            return None
        return [x for i in indices for x in (spans[2 * i], spans[2 * i + 1])]

    def prefix_through(self, top: int) -> list[int] | None:
        """The spans (start and end pairs) of the document's first events, split off as far as
        event ``top`` as :meth:`spans_of` splits it (the list itself, spans_of's pairs of event
        ``i`` at ``2 * i``); None where spans_of places the events otherwise (the scanner's
        spans) or not at all, or ``top`` is past the last event. The ledger's version labels
        search all their runs in one call."""
        if self.event_spans is not None or top < 0:
            return None
        spans = self._prefix_spans()
        if spans is None:
            return None
        if 2 * top + 1 >= len(spans) and self._prefix_at >= 0:
            found, at, done = _cellscan.element_spans(self.document, self._prefix_at,
                                                      top + 1 - len(spans) // 2)  # fmt: skip
            spans.extend(memoryview(found).cast("q").tolist())
            self._prefix_at = -1 if done else at
        return spans if 2 * top + 1 < len(spans) else None

    def json_event_texts(self, indices: Sequence[int]) -> list[bytes]:
        """``bytes(self.json_event(index))`` of each of ``indices``, those of the events split
        off the document already sliced off it at once (the ledger reads a run's workflow tasks
        together: one call, not a lookup per event)."""
        out, document = [], self.document or b""
        top = max(indices, default=-1)
        if 0 <= top < _PREFIX_EVENTS and self.event_spans is None and self._json_events is None:
            # The prefix split as far as the last of them at once (one scan, as the doubling
            # below would make it in several): the others are then sliced off it.
            self.json_event(top)
        for index in indices:
            spans = self._prefix  # json_event below may start or extend it
            if (spans is not None and self.event_spans is None and self._json_events is None
                    and index >= 0 and 2 * index + 1 < len(spans)):  # fmt: skip
                out.append(document[spans[2 * index] : spans[2 * index + 1]])
            else:
                out.append(bytes(self.json_event(index)))
        return out

    def _from_the_end(self, index: int) -> msgspec.Raw:
        """:meth:`json_event` of one of the document's last events (a run's end, its failure),
        read backwards from the end of its array; any other by splitting the whole array."""
        count = len(self.typed_events) if self.typed_events is not None else self.event_count
        back = count - 1 - index
        if self._suffix is None and 0 <= back < _PREFIX_EVENTS:
            self._suffix = []
            end = _array_end(self.document)
            if end >= 0:  # the last events, as far back as this one (a run's end: its last)
                found, _ = _cellscan.last_spans(self.document, end, max(back + 1, 4))
                self._suffix = memoryview(found).cast("q").tolist()
        spans = self._suffix or []
        if back >= 0 and 2 * back + 1 < len(spans):
            return msgspec.Raw(memoryview(self.document)[spans[2 * back] : spans[2 * back + 1]])
        return self.json_events[index]


_TRAILING = re.compile(rb"\]\s*\}\s*\Z")


def _array_end(document: bytes) -> int:
    """Where the ``"events"`` array of a ``{"events": [...]}`` document closes, where it is the
    document's last member; -1 otherwise."""
    found = _TRAILING.search(document, max(len(document) - 256, 0))
    return found.start() if found else -1


#: How many of a document's first events :meth:`RawHistory.json_event` splits off by itself (a
#: run's first workflow tasks are among its first events; msgspec splits whole documents faster).
_PREFIX_EVENTS = 64

try:  # the compiled scanner of payload cells and arrays (setup.py builds it with a C compiler)
    from toolkit.histories import _cellscan
except ImportError:  # pragma: no cover - depends on the install
    _cellscan = None


def split_histories(source: Source) -> list[RawHistory]:
    """Return the histories held by ``source``, in source order.

    Raises
    ------
    HistoryFormatError
        When the content is empty, damaged, or not a history in any known dialect.
    """
    if source.histories is not None:
        return [
            RawHistory(proto_events=h.events, workflow_id=source.workflow_id)
            for h in source.histories
        ]
    data = source.data or b""
    start = _LEADING_SPACE.match(data).end()  # no copy of a large file, unlike lstrip()
    if start == len(data):
        raise HistoryFormatError(source.name, "the source is empty", expected=_EXPECTED)
    first = data[start : start + 1]
    if first in (b"{", b"["):
        histories = _typed_document(data, source.name) or _split_json(data, source.name)
    else:
        histories = _split_binary(data, source.name)
    for history in histories:
        history.run_id = history.run_id or source.run_id
        history.namespace = history.namespace or source.namespace
        history.workflow_id = history.workflow_id or source.workflow_id
    return histories


def _typed_document(data: bytes, name: str) -> list[RawHistory] | None:
    """``{"events": [...]}`` decoded in one typed pass; None for any other shape or a problem.

    The general path below then finds the shape, or the odd event, and reports errors.
    """
    if not _EVENTS_FIRST.match(data):
        return None
    scanned = scan_document(data)  # None: small, or not read exactly as msgspec would
    if scanned is not None:
        workflow_id, run_id, namespace = (_text(raw) for raw in scanned.top)
        return [
            RawHistory(
                scanned=scanned, document=data, source_name=name, where="$.events",
                workflow_id=workflow_id, run_id=run_id, namespace=namespace,
                event_spans=(scanned.starts, scanned.ends),
            )
        ]  # fmt: skip
    try:
        document = tagged_document_decoder.decode(data)  # the proto3 JSON spelling of types
    except msgspec.MsgspecError:
        try:
            document = typed_document_decoder.decode(data)  # any spelling
        except msgspec.MsgspecError:
            return None
    history = RawHistory(
        typed_events=document.events,
        document=data,
        source_name=name,
        where="$.events",
        workflow_id=_text(document.workflowId),
        run_id=_text(document.runId),
        namespace=_text(document.namespace),
    )
    return [history]


def _json_position(data: bytes, byte: int) -> str:
    line = data.count(b"\n", 0, byte) + 1
    column = byte - (data.rfind(b"\n", 0, byte) + 1) + 1
    return f"line {line} column {column} (byte {byte}, near {describe(data, byte)!r})"


def _decode_container(
    data: bytes, name: str
) -> tuple[dict[str, msgspec.Raw] | list[msgspec.Raw], bytes]:
    """The top-level JSON value (keys or elements kept raw) and the bytes it was read from."""
    try:
        return _container_decoder.decode(data), data
    except msgspec.DecodeError as exc:
        message = str(exc)
        if "trailing characters" in message:
            # msgspec reports the position just past the first unexpected character.
            byte = max(0, int(message.rsplit("byte ", 1)[1].rstrip(")")) - 1)
            if data[byte : byte + 64].lstrip()[:1] == b",":
                # The pre-2023 CLI: events separated by commas, no enclosing brackets.
                return _decode_container(b"[" + data + b"]", name)
            raise HistoryFormatError(
                name,
                "unexpected content after the JSON value",
                position=_json_position(data, byte),
                expected="end of file or ',' between events",
            ) from None
        if "truncated" in message:
            raise HistoryFormatError(
                name,
                "the JSON ends before it is complete (truncated file?)",
                position=f"end of input (byte {len(data)})",
                expected="the rest of the JSON document",
            ) from None
        byte = int(message.rsplit("byte ", 1)[1].rstrip(")")) if "byte " in message else 0
        raise HistoryFormatError(
            name, f"malformed JSON ({message})", position=_json_position(data, byte)
        ) from None


def _keys(raw: msgspec.Raw) -> dict[str, msgspec.Raw] | None:
    try:
        return _object_decoder.decode(raw)
    except msgspec.DecodeError:
        return None


def _text(raw: msgspec.Raw | None) -> str | None:
    if raw is None:
        return None
    value = msgspec.json.decode(raw)
    return value if isinstance(value, str) and value else None


def _events_of(raw: msgspec.Raw, name: str, where: str) -> list[msgspec.Raw]:
    try:
        return _list_decoder.decode(raw)
    except msgspec.DecodeError:
        raise HistoryFormatError(
            name, f"{where} is not an array", position=where, expected="an array of events"
        ) from None


def _is_event(keys: dict[str, msgspec.Raw] | None) -> bool:
    return keys is not None and ("eventType" in keys or "eventId" in keys)


def _from_object(obj: dict[str, msgspec.Raw], name: str, where: str) -> list[RawHistory]:
    if "events" in obj:
        return [
            RawHistory(
                json_array=obj["events"],
                source_name=name,
                where=f"{where}.events",
                workflow_id=_text(obj.get("workflowId")),
                run_id=_text(obj.get("runId")),
                namespace=_text(obj.get("namespace")),
            )
        ]
    if "history" in obj:
        inner = _keys(obj["history"])
        if inner is not None and "events" in inner:
            return _from_object(inner, name, f"{where}.history")
    if "items" in obj:
        items = _events_of(obj["items"], name, f"{where}.items")
        histories = []
        for index, item in enumerate(items):
            keys = _keys(item)
            if keys is None or "history" not in keys:
                raise HistoryFormatError(
                    name, "export item without a history", position=f"{where}.items[{index}]"
                )
            histories += _from_object(keys, name, f"{where}.items[{index}]")
        return histories
    if _is_event(obj):
        return [RawHistory(_json_events=[msgspec.json.encode(obj)])]
    values = [_keys(v) for v in obj.values()]
    if values and all(_is_event(v) for v in values):
        return [RawHistory(_json_events=list(obj.values()))]
    shown = ", ".join(list(obj)[:8])
    raise HistoryFormatError(
        name,
        f"JSON object with keys [{shown}] is not a history",
        position=where,
        expected='an "events" array, a "history" object, or event objects',
    )


def _split_json(data: bytes, name: str) -> list[RawHistory]:
    top, data = _decode_container(data, name)
    if isinstance(top, dict):
        return _from_object(top, name, "$")
    if not top:
        raise HistoryFormatError(name, "the JSON array is empty", expected="events or histories")
    first = _keys(top[0])
    if first is None:
        raise HistoryFormatError(
            name, "the array's first element is not an object", position="$[0]", expected=_EXPECTED
        )
    if "eventList" in first:
        events: list[msgspec.Raw] = []
        for index, group in enumerate(top):
            keys = _keys(group) or {}
            if "eventList" not in keys:
                raise HistoryFormatError(
                    name, "event group without eventList", position=f"$[{index}]"
                )
            events += _events_of(keys["eventList"], name, f"$[{index}].eventList")
        return [RawHistory(_json_events=events)]
    if "events" in first or "history" in first:
        histories = []
        for index, item in enumerate(top):
            keys = _keys(item)
            if keys is None:
                raise HistoryFormatError(name, "not an object", position=f"$[{index}]")
            histories += _from_object(keys, name, f"$[{index}]")
        return histories
    if _is_event(first):
        return [RawHistory(_json_events=top, json_array=data)]
    raise HistoryFormatError(
        name,
        f"array of objects with keys [{', '.join(list(first)[:8])}] is not a history",
        position="$[0]",
        expected=_EXPECTED,
    )


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    return -1, pos


def _split_binary(data: bytes, name: str) -> list[RawHistory]:
    # Field 1, length-delimited, in both History (events) and the export (items). What follows
    # tells them apart: an event starts with its event_id varint (tag 0x08), an export item with
    # its history message (tag 0x0a).
    if data[:1] != b"\x0a":
        raise HistoryFormatError(
            name,
            f"neither JSON nor a protobuf History (first byte 0x{data[0]:02x})",
            position="byte 0",
            expected=_EXPECTED,
        )
    _, body = _read_varint(data, 1)
    is_export = data[body : body + 1] == b"\x0a"
    try:
        if is_export:
            export = ExportedExecutions.FromString(data)
            histories = [RawHistory(proto_events=item.history.events) for item in export.workflows]
        else:
            # The columns are read from the wire bytes (which checks their structure and the
            # event ids); the messages are parsed when a cell or the fallback reader needs them.
            events = LazyHistoryEvents(data, name)
            return [RawHistory(proto_events=events, wire=data, source_name=name)]
    except ProtoDecodeError as exc:
        raise HistoryFormatError(
            name, f"damaged protobuf ({exc})", expected="a serialized History or export message"
        ) from None
    for history in histories:
        check_proto_events(history.proto_events, name)
    return histories


def check_proto_events(events: Any, name: str) -> None:
    """Raise unless every event has a positive id (bytes that merely parse as a History)."""
    for index, event in enumerate(events):
        if event.event_id <= 0 or not isinstance(event, HistoryEvent):
            raise bad_event_id(name, index, event.event_id)


def bad_event_id(name: str, index: int, event_id: Any) -> HistoryFormatError:
    """The error for event ``index`` of binary ``name`` having a non-positive ``event_id``."""
    return HistoryFormatError(
        name,
        f"bytes parse as protobuf but event #{index} has event_id {event_id}",
        position=f"event #{index}",
        expected="a serialized temporal.api.history.v1.History",
    )
