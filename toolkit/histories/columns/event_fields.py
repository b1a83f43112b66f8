"""The top-level fields of each event of a raw JSON history, decoded once for all who read them.

Writing a dataset reads every event of a batch more than once: the derived tables read a few of
its attributes, and its ``attributes`` and ``extra`` cells become JSON text cut from the same
bytes (:mod:`toolkit.datasets.json_cells`). :func:`event_fields` splits each event into its
fields (name -> raw JSON) with one decoder call per history; inside :func:`shared_event_fields`
the result is kept for every later reader, outside it each caller decodes for itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import msgspec

from toolkit.histories.reading.dialects import RawHistory

__all__ = ["Fields", "event_fields", "shared_event_fields", "sharing_event_fields"]

#: One event's top-level fields, each value the raw JSON the source wrote.
Fields = dict[str, msgspec.Raw]

_fields_decoder = msgspec.json.Decoder(Fields)
_fields_list_decoder = msgspec.json.Decoder(list[Fields])
_document_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])


class _EventsDocument(msgspec.Struct):
    """A ``{"events": [...]}`` document: its events' fields in one pass over the bytes."""

    events: list[Fields]


_events_document_decoder = msgspec.json.Decoder(_EventsDocument)

# id(history) -> (the history, its events' fields): the history is held so that its id names
# no other object while the scope lasts.
_kept: ContextVar[dict[int, tuple[Any, list[Fields] | None]] | None] = ContextVar(
    "event_fields", default=None
)


@contextmanager
def shared_event_fields() -> Iterator[None]:
    """Keep each history's event fields, once decoded, until the block ends."""
    token = _kept.set({})
    try:
        yield
    finally:
        _kept.reset(token)


def sharing_event_fields() -> bool:
    """Whether a :func:`shared_event_fields` block is open (fields decoded now are kept)."""
    return _kept.get() is not None


def event_fields(history: Any) -> list[Fields] | None:
    """The top-level fields of each event of a raw JSON history, in event order (the order of
    its ``json_events``); None for any other history, or events the decoder refuses."""
    kept = _kept.get()
    if kept is None:
        return _decode(history)
    found = kept.get(id(history))
    if found is None:
        found = kept[id(history)] = (history, _decode(history))
    return found[1]


def _decode(history: Any) -> list[Fields] | None:
    if not isinstance(history, RawHistory) or not history.is_json:
        return None
    try:
        # The whole array in one call, even where the events were split already (one call
        # per event costs more than decoding the array again).
        array = history.json_array
        if array is None and history.document is not None:
            try:  # the events straight from the document, without finding the array first
                return _events_document_decoder.decode(history.document).events
            except msgspec.DecodeError:  # no events array there: as below, one step at a time
                array = _document_decoder.decode(history.document).get("events")
        if array is not None:
            return _fields_list_decoder.decode(array)
        if history._json_events is not None:
            return [_fields_decoder.decode(raw) for raw in history._json_events]
        return None
    except msgspec.DecodeError:
        return None  # such events are read one by one, through their cells
