"""JSON text of a whole column of cells, cut from the source's bytes where it can be.

A dataset stores the events' ``attributes``/``extra`` cells and the payload columns as JSON text.
Converting cell by cell (decode the event, build Python objects, dump them again) made these
columns a third of writing a dataset. Here:

- ``attributes``/``extra`` cells of a raw JSON history are cut out of its bytes: the history's
  events are split into their top-level fields once (one decoder call per history, not one per
  event) and each cell's text is the raw slice of its field;
- payload cells holding proto-JSON ``json/plain`` payloads (what every SDK writes by default)
  are decoded with a typed view and re-dumped, without the general payload machinery;
- anything else goes through :func:`toolkit.datasets.arrow.json_text`, cell by cell.

Each fast path gives the text the general path would (equal bytes for payloads, equal JSON for
cut-out slices), which the tests check on real histories.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
import orjson

from toolkit.histories.columns.lazy import LazyAttributes, LazyExtra, LazyPayloads
from toolkit.histories.reading.dialects import RawHistory

__all__ = ["cut_json_text", "json_texts"]

_ENVELOPE = frozenset({"eventId", "eventTime", "eventType"})  # as toolkit.histories.columns.lazy
_Fields = dict[str, msgspec.Raw]
_fields_decoder = msgspec.json.Decoder(_Fields)
_fields_list_decoder = msgspec.json.Decoder(list[_Fields])
_document_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_NULLISH = (b"null", b"")
_encode = msgspec.json.Encoder().encode


class _WirePayload(msgspec.Struct, forbid_unknown_fields=True):
    metadata: dict[str, str]
    data: str


class _WirePayloads(msgspec.Struct, forbid_unknown_fields=True):
    payloads: list[_WirePayload]


_payloads_decoder = msgspec.json.Decoder(_WirePayloads)
#: The only metadata of a default ``json/plain`` payload, as proto-JSON spells it (base64).
_JSON_PLAIN = {"encoding": base64.b64encode(b"json/plain").decode("ascii")}


def json_texts(
    values: np.ndarray,
    slow: Callable[[Any], str | None],
    memo: dict[int, str | None] | None = None,
) -> list[str | None]:
    """The JSON text of every cell of ``values`` (``slow``: the general conversion).

    ``memo`` keeps payload cells' texts by cell identity across columns and tables whose
    frames share the cells (the events' and the activities' ``input``, say); the caller keeps
    the frames alive while it is in use.
    """
    out: list[str | None] = []
    history: Any = None
    fields: list[_Fields] | None = None
    for value in values:
        if value is None:  # most payload cells: no call for them
            out.append(None)
            continue
        kind = type(value)
        if kind is LazyAttributes or kind is LazyExtra:
            if value._history is not history:
                history = value._history
                fields = _history_fields(history)
            if fields is None:
                out.append(slow(value))
            else:
                out.append(cut_json_text(fields[value._index], value))
        elif kind is LazyPayloads:
            key = id(value)
            if memo is not None and key in memo:
                out.append(memo[key])
                continue
            text = _json_plain_text(value)
            text = text if text is not None else slow(value)
            if memo is not None:
                memo[key] = text
            out.append(text)
        else:
            out.append(slow(value))
    return out


def _history_fields(history: Any) -> list[_Fields] | None:
    """The top-level fields of each event of a raw JSON history (None: not one)."""
    if not isinstance(history, RawHistory) or not history.is_json:
        return None
    try:
        # The whole array in one call, even where the events were split already (one call
        # per event costs more than decoding the array again).
        array = history.json_array
        if array is None and history.document is not None:
            array = _document_decoder.decode(history.document).get("events")
        if array is not None:
            return _fields_list_decoder.decode(array)
        if history._json_events is not None:
            return [_fields_decoder.decode(raw) for raw in history._json_events]
        return None
    except msgspec.DecodeError:
        return None  # the general path reads such events one by one


def cut_json_text(fields: _Fields, cell: LazyAttributes) -> str:
    """The attributes (or the other fields) of one event, from its raw fields."""
    if type(cell) is LazyExtra:
        kept = {k: raw for k, raw in fields.items() if k not in _ENVELOPE and k != cell._key}
        return _encode(kept).decode("utf-8")  # Raw values are written as they are
    raw = fields.get(cell._key) if cell._key is not None else None
    if raw is None:
        return "{}"
    text = bytes(raw)
    return "{}" if text.strip() in _NULLISH else text.decode("utf-8")


def _json_plain_text(cell: LazyPayloads) -> str | None:
    """The JSON text of a list of default ``json/plain`` payloads; None for anything else."""
    raw = cell._raw
    if cell._codec is not None or not isinstance(raw, (bytes, msgspec.Raw)):
        return None
    try:
        payloads = _payloads_decoder.decode(raw).payloads
        values = []
        for payload in payloads:
            if payload.metadata != _JSON_PLAIN:
                return None
            values.append(orjson.loads(base64.b64decode(payload.data, validate=True)))
        return orjson.dumps(values).decode("utf-8")
    except (msgspec.DecodeError, binascii.Error, ValueError, orjson.JSONDecodeError):
        return None  # e.g. data that is no JSON: the general path keeps it as text
