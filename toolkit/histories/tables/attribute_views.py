"""A few named fields of many events' ``attributes``, decoded together without the rest.

The column-wise tables read from ``attributes`` only what the events frame has no column for
(timeouts, retry policy, ``sdkMetadata``, ...). For raw JSON events (the loader's lazy cells) the
events' bytes are joined into one JSON array and decoded in one msgspec call into structs naming
just the wanted fields: the other fields (payloads above all) are skipped by msgspec's C parser,
no dict is built per event, and the cells themselves stay undecoded. Cells of any other kind
(protobuf, plain dicts), and events msgspec refuses as structs (attributes that are no object),
are read through their value, which holds the same fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import msgspec
import numpy as np

from toolkit.histories.columns.lazy import LazyAttributes, LazyCell
from toolkit.histories.tables.common import attr

__all__ = ["attribute_fields", "dig"]

_REFUSED = (msgspec.ValidationError, msgspec.DecodeError)


def attribute_fields(cells: Sequence[Any], fields: Sequence[str]) -> dict[str, np.ndarray]:
    """Field -> its value in each cell's attributes (None where absent, null or unreadable).

    Parameters
    ----------
    cells
        The ``attributes`` cells of the selected events (lazy cells, dicts, anything).
    fields
        Top-level attribute names to read (``"retryPolicy"``, ``"failure"``, ...).
    """
    names = tuple(fields)
    rows: list[tuple[Any, ...] | None] = [None] * len(cells)
    raw_rows = [i for i, cell in enumerate(cells) if type(cell) is LazyAttributes]
    for row, view in zip(raw_rows, _raw_views([cells[i] for i in raw_rows], names), strict=True):
        rows[row] = _read_value(cells[row], names) if view is _UNREAD else view
    is_raw = np.zeros(len(cells), dtype=bool)
    is_raw[raw_rows] = True
    for row in np.flatnonzero(~is_raw).tolist():
        rows[row] = _read_value(cells[row], names)
    absent = (None,) * len(names)
    # Transposed: one tuple per field (empty ones when there are no events).
    by_field = list(zip(*(absent if values is None else values for values in rows), strict=True))
    by_field = by_field or [()] * len(names)
    return {
        name: np.fromiter(values, dtype=object, count=len(cells))
        for name, values in zip(names, by_field, strict=True)
    }


def dig(value: Any, *path: str) -> Any:
    """:func:`~toolkit.histories.tables.common.attr` on decoded JSON, with a fast path for dicts."""
    for i, step in enumerate(path):
        if type(value) is not dict:
            return attr(value, *path[i:])
        value = value.get(step)
        if value is None:
            return None
    return value


#: A raw event the struct decoder refused: read through the cell's value instead.
_UNREAD: Any = object()


def _read_value(cell: Any, names: tuple[str, ...]) -> tuple[Any, ...] | None:
    value = cell.value if isinstance(cell, LazyCell) else cell
    if not isinstance(value, Mapping):
        return None
    return tuple(value.get(name) for name in names)


def _raw_views(cells: list[LazyAttributes], names: tuple[str, ...]) -> list[Any]:
    """The wanted fields of each raw event's attributes: a tuple, None, or ``_UNREAD``."""
    if not cells:
        return []
    keys = tuple(sorted({cell._key for cell in cells if cell._key is not None}))
    position = {key: i for i, key in enumerate(keys)}
    raws = [cell.raw for cell in cells]
    decoder = _decoder(keys, names)
    try:
        events = decoder.decode(b"[" + b",".join(raws) + b"]")
    except _REFUSED:  # one odd event: the others still decode on their own
        events = [_decode_one(decoder, raw) for raw in raws]
    views = []
    for cell, event in zip(cells, events, strict=True):
        if event is _UNREAD or cell._key is None:
            views.append(event if cell._key is not None else None)
            continue
        attributes = msgspec.structs.astuple(event)[position[cell._key]]
        views.append(None if attributes is None else msgspec.structs.astuple(attributes))
    return views


def _decode_one(decoder: msgspec.json.Decoder[Any], raw: Any) -> Any:
    try:
        return decoder.decode(b"[" + bytes(raw) + b"]")[0]
    except _REFUSED:
        return _UNREAD


@lru_cache(maxsize=64)
def _decoder(keys: tuple[str, ...], names: tuple[str, ...]) -> msgspec.json.Decoder[Any]:
    """A decoder of a list of events whose attributes sit at one of ``keys``, keeping ``names``.

    The kept fields are typed ``Any``: each decodes exactly as in a full decode of the event.
    """
    attributes = msgspec.defstruct(
        "AttributesView",
        [(f"f{i}", Any, msgspec.field(default=None, name=name)) for i, name in enumerate(names)],
        gc=False,
    )
    event = msgspec.defstruct(
        "EventView",
        [
            (f"k{i}", attributes | None, msgspec.field(default=None, name=key))  # type: ignore[operator]
            for i, key in enumerate(keys)
        ],
        gc=False,
    )
    return msgspec.json.Decoder(list[event])  # type: ignore[valid-type]
