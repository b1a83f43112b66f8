"""A few named fields of many events' ``attributes``, decoded together without the rest.

The column-wise tables read from ``attributes`` only what the events frame has no column for
(timeouts, retry policy, ``sdkMetadata``, ...). For raw JSON events (the loader's lazy cells) the
events' bytes are joined into one JSON array and decoded in one msgspec call into structs naming
just the wanted fields: the other fields (payloads above all) are skipped by msgspec's C parser,
no dict is built per event, and the cells themselves stay undecoded. Cells of any other kind
(protobuf, plain dicts), and events msgspec refuses as structs (attributes that are no object),
are read through their value, which holds the same fields. Where the events' fields are shared
(:func:`~toolkit.histories.columns.event_fields.shared_event_fields`, as the dataset writer has
them), only the attributes' own bytes are joined, taken from those fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from toolkit.gc_pause import paused_gc
from toolkit.histories.columns.event_fields import event_fields, sharing_event_fields
from toolkit.histories.columns.lazy import LazyAttributes, LazyCell
from toolkit.histories.tables.common import attr

__all__ = ["attribute_fields", "dig"]

_REFUSED = (msgspec.ValidationError, msgspec.DecodeError)

try:  # the compiled join of raw attributes (toolkit/histories/columns/_jsoncells.c: setup.py)
    from toolkit.histories.columns._jsoncells import attribute_raws as _attribute_raws
except ImportError:  # pragma: no cover - depends on the install
    _attribute_raws = None


def attribute_fields(cells: Sequence[Any], fields: Sequence[str]) -> dict[str, np.ndarray]:
    """Field -> its value in each cell's attributes (None where absent, null or unreadable).

    Parameters
    ----------
    cells
        The ``attributes`` cells of the selected events (lazy cells, dicts, anything).
    fields
        Top-level attribute names to read (``"retryPolicy"``, ``"failure"``, ...).
    """
    # Decoding builds a container per event, none in a cycle; each few hundred would otherwise
    # start a collection walking the batch's whole heap (about 40% of the decoding time).
    with paused_gc():
        return _fields(cells, tuple(fields))


def _fields(cells: Sequence[Any], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    if sharing_event_fields():
        found = _shared_fields(cells, names)
        if found is not None:
            return found
    columns = {name: np.full(len(cells), None, dtype=object) for name in names}
    # The cells of each attributes key, in one pass (comparing every cell with every key took
    # as long as decoding them).
    groups: dict[Any, tuple[list[int], list[Any]]] = {}
    for row, cell in enumerate(cells):
        key = cell._key if type(cell) is LazyAttributes else _OTHER
        members = groups.get(key)
        if members is None:
            members = groups[key] = ([], [])
        members[0].append(row)
        members[1].append(cell)
    for key, (positions, group) in groups.items():
        if key is _OTHER:
            views = [_view_of_value(cell, names) for cell in group]
        elif key is None:  # a raw event without attributes: an empty dict
            continue
        else:
            views = _raw_views(group, key, names)
        rows = np.array(positions, dtype=np.intp)
        by_field = zip(*views, strict=True)  # transposed: one tuple per field
        for name, values in zip(names, by_field, strict=True):
            columns[name][rows] = np.fromiter(values, dtype=object, count=len(rows))
    return columns


def _shared_fields(cells: Sequence[Any], names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The fields of cells that are all raw JSON events' attributes whose event fields are
    shared, in one decode of all their attributes (wherever each event keeps them: only the
    attributes' own bytes are decoded, so the key does not matter to the decoder); None
    where a cell is of another kind, its history has no fields, or the decoder refuses one
    (:func:`_fields` then reads them group by group, as it reads any cells)."""
    # The cells' raw attributes joined in C where it is built (None: a cell it declines, which
    # the loop below then finds, as it finds any).
    joined = _attribute_raws(cells, LazyAttributes, event_fields) if _attribute_raws else None
    if joined is None:
        raws: list[Any] = []
        append = raws.append
        history: Any = None
        fields: Any = None
        for cell in cells:
            if type(cell) is not LazyAttributes:
                return None
            if cell._history is not history:
                history = cell._history
                fields = event_fields(history)
                if fields is None:
                    return None
            key = cell._key
            append(_EMPTY if key is None else fields[cell._index].get(key, _EMPTY))
        joined = b"[" + b",".join(raws) + b"]"
    try:
        views = _attributes_decoder(names).decode(joined)
    except _REFUSED:
        return None
    count = len(views)
    if not count:
        return {name: np.full(0, None, dtype=object) for name in names}
    # One tuple per event, transposed: faster than an attribute getter per field and event.
    by_field = zip(*map(msgspec.structs.astuple, views), strict=True)
    return {name: np.fromiter(values, dtype=object, count=count)
            for name, values in zip(names, by_field, strict=True)}  # fmt: skip


def dig(value: Any, *path: str) -> Any:
    """:func:`~toolkit.histories.tables.common.attr` on decoded JSON, with a fast path for dicts."""
    if value is None:  # most fields are absent from most events
        return None
    for i, step in enumerate(path):
        if type(value) is not dict:
            return attr(value, *path[i:])
        value = value.get(step)
        if value is None:
            return None
    return value


#: The key of cells that are no raw JSON events.
_OTHER: Any = object()


def _view_of_value(cell: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    """The wanted fields read through the cell's value (a dict for any cell of the loader)."""
    value = cell.value if isinstance(cell, LazyCell) else cell
    if not isinstance(value, Mapping):
        return (None,) * len(names)
    return tuple(value.get(name) for name in names)


def _raw_views(cells: list[LazyAttributes], key: str, names: tuple[str, ...]) -> list[Any]:
    """The wanted fields of raw events whose attributes sit at ``key``, as tuples."""
    decoder = _decoder(key, names)
    shared = _shared_attributes(cells, key) if sharing_event_fields() else None
    try:
        if shared is not None:
            views = _attributes_decoder(names).decode(b"[" + b",".join(shared) + b"]")
            return list(map(msgspec.structs.astuple, views))
        raws = [cell.raw for cell in cells]
        events = decoder.decode(b"[" + b",".join(raws) + b"]")
    except _REFUSED:  # an odd event (attributes null or no object): the others still decode
        return [_one_raw_view(decoder, cell, names) for cell in cells]
    return list(map(msgspec.structs.astuple, map(_ATTRIBUTES, events)))


def _shared_attributes(cells: list[LazyAttributes], key: str) -> list[Any] | None:
    """Each cell's attributes as raw JSON (``{}`` where its event has none), from the shared
    event fields; None when a cell's history has none (its events are read whole)."""
    raws: list[Any] = []
    history: Any = None
    fields: Any = None
    for cell in cells:
        if cell._history is not history:
            history = cell._history
            fields = event_fields(history)
            if fields is None:
                return None
        raws.append(fields[cell._index].get(key, _EMPTY))
    return raws


def _one_raw_view(decoder: msgspec.json.Decoder[Any], cell: Any, names: tuple[str, ...]) -> Any:
    try:
        event = decoder.decode(b"[" + bytes(cell.raw) + b"]")[0]
    except _REFUSED:
        return _view_of_value(cell, names)
    return msgspec.structs.astuple(event.attributes)


_ATTRIBUTES = attrgetter("attributes")
_EMPTY = b"{}"  # an event without attributes: each wanted field absent


@lru_cache(maxsize=256)
def _attributes_view(names: tuple[str, ...]) -> type[msgspec.Struct]:
    """Attributes keeping ``names``, typed ``Any``: each decodes exactly as in a full decode of
    the event; attributes that are null or no object are refused."""
    return msgspec.defstruct(
        "AttributesView",
        [(f"f{i}", Any, msgspec.field(default=None, name=name)) for i, name in enumerate(names)],
        gc=False,
    )


@lru_cache(maxsize=256)
def _attributes_decoder(names: tuple[str, ...]) -> msgspec.json.Decoder[Any]:
    """A decoder of a list of attributes (see :func:`_attributes_view`)."""
    return msgspec.json.Decoder(list[_attributes_view(names)])  # type: ignore[valid-type]


@lru_cache(maxsize=256)
def _decoder(key: str, names: tuple[str, ...]) -> msgspec.json.Decoder[Any]:
    """A decoder of a list of events whose attributes sit at ``key``, keeping ``names``
    (:func:`_attributes_view`). An event without ``key`` has empty attributes; one whose
    attributes are refused is read through its cell.
    """
    attributes = _attributes_view(names)
    event = msgspec.defstruct(
        "EventView",
        [("attributes", attributes, msgspec.field(default_factory=attributes, name=key))],
        gc=False,
    )
    return msgspec.json.Decoder(list[event])  # type: ignore[valid-type]
