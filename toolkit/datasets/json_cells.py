"""JSON text of a whole column of cells, cut from the source's bytes where it can be.

A dataset stores the events' ``attributes``/``extra`` cells and the payload columns as JSON text.
Converting cell by cell (decode the event, build Python objects, dump them again) made these
columns a third of writing a dataset. Here:

- ``attributes``/``extra`` cells of a raw JSON history are cut out of its bytes: the history's
  events are split into their top-level fields once (one decoder call per history, not one per
  event) and each cell's text is the raw slice of its field (an ``extra`` cell's fields joined;
  a column's cells, and its Arrow buffers, made in one C loop where it is built);
- payload cells holding proto-JSON ``json/plain`` payloads (what every SDK writes by default)
  are decoded with a typed view and re-dumped, without the general payload machinery; where
  the compiled part (``toolkit/histories/columns/_jsoncells.c``) is built, it rewrites the
  data's JSON text itself for nearly all of them (no Python object made for any value) and
  leaves the others (floats, above all) to that path;
- anything else goes through :func:`toolkit.datasets.arrow.json_text`, cell by cell.

Each fast path gives the text the general path would (equal bytes for payloads, equal JSON for
cut-out slices), which the tests check on real histories.

Inside :func:`toolkit.histories.columns.event_fields.shared_event_fields` (as the dataset
writer converts a batch) each history's fields are decoded once for both columns, and for the
derived tables before them.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import numpy as np
import orjson
import pyarrow as pa

from toolkit.histories.columns.event_fields import Fields, event_fields
from toolkit.histories.columns.lazy import LazyAttributes, LazyExtra, LazyPayloads

__all__ = ["Piece", "cut_json_text", "json_array", "json_texts"]

_ENVELOPE = ("eventId", "eventTime", "eventType")  # as toolkit.histories.columns.lazy
_EMPTY_OBJECT = b"{}"  # attributes absent or null, as the general path gives them
_NOTHING = b""
_encode = msgspec.json.Encoder().encode


class _WirePayload(msgspec.Struct, forbid_unknown_fields=True):
    metadata: dict[str, str]
    data: str


class _WirePayloads(msgspec.Struct, forbid_unknown_fields=True):
    payloads: list[_WirePayload]


class _DecodedPayload(msgspec.Struct, forbid_unknown_fields=True):
    """A payload whose data msgspec decodes from base64 itself (no text object, no call)."""

    metadata: dict[str, str]
    data: bytes


class _DecodedPayloads(msgspec.Struct, forbid_unknown_fields=True):
    payloads: list[_DecodedPayload]


try:  # the compiled cells' JSON text (setup.py builds it with a C compiler)
    from toolkit.histories.columns import _jsoncells
except ImportError:  # pragma: no cover - depends on the install
    _jsoncells = None

#: :func:`_extra_piece` in C (None where it says a Python string must be written by msgspec).
_c_extra_piece = _jsoncells.extra_piece if _jsoncells is not None else None

_payloads_decoder = msgspec.json.Decoder(_WirePayloads)
_decoded_payloads_decoder = msgspec.json.Decoder(_DecodedPayloads)
#: The only metadata of a default ``json/plain`` payload, as proto-JSON spells it (base64).
_JSON_PLAIN = {"encoding": base64.b64encode(b"json/plain").decode("ascii")}


def json_texts(
    values: np.ndarray,
    slow: Callable[[Any], str | None],
    memo: dict[int, Piece] | None = None,
) -> list[str | None]:
    """The JSON text of every cell of ``values`` (``slow``: the general conversion).

    ``memo`` keeps payload cells' texts by cell identity across columns and tables whose
    frames share the cells (the events' and the activities' ``input``, say); the caller keeps
    the frames alive while it is in use.
    """
    return [None if piece is None else str(piece, "utf-8") for piece in _pieces(values, slow, memo)]


def json_array(
    values: np.ndarray,
    slow: Callable[[Any], str | None],
    memo: dict[int, Piece] | None = None,
) -> pa.Array:
    """:func:`json_texts` as an Arrow string array, built from the texts' UTF-8 bytes: the
    slices cut from the source go in as they are, with no Python string made for each (that
    and its copy into Arrow cost more than cutting them)."""
    pieces = _pieces(values, slow, memo)
    try:
        return _string_array(pieces)
    except (pa.ArrowInvalid, OverflowError):  # no UTF-8, or over 2 GiB: as pyarrow takes text
        return pa.array([None if p is None else str(p, "utf-8") for p in pieces], pa.string())


#: A cell's JSON text as UTF-8: bytes, or the source's own slice; None for a null cell.
Piece = bytes | msgspec.Raw | None


def _pieces(
    values: np.ndarray, slow: Callable[[Any], str | None], memo: dict[int, Piece] | None
) -> list[Piece]:
    if _jsoncells is None:
        return _python_pieces(values, slow, memo)
    # The attributes and extra cells of raw JSON events, default payload cells and null cells
    # in one C loop, as the loop below makes them; the cells it leaves (other kinds, events
    # without fields, payloads it declines) go through that loop, in their order (the memo
    # filled as it would be: a cell's piece is the same whichever loop makes it).
    pieces, left = _jsoncells.lazy_pieces(
        values, LazyAttributes, LazyExtra, event_fields, LazyPayloads, msgspec.Raw, memo
    )
    if left:
        rest = _python_pieces([values[i] for i in left], slow, memo)
        for at, piece in zip(left, rest, strict=True):
            pieces[at] = piece
    return pieces


def _python_pieces(
    values: Sequence[Any], slow: Callable[[Any], str | None], memo: dict[int, Piece] | None
) -> list[Piece]:
    out: list[Piece] = []
    append = out.append
    history: Any = None
    fields: list[Fields] | None = None
    c_extra = _c_extra_piece
    for value in values:
        if value is None:  # most payload cells: no call for them
            append(None)
            continue
        kind = type(value)
        if kind is LazyAttributes or kind is LazyExtra:
            if value._history is not history:
                history = value._history
                fields = event_fields(history)
            if fields is None:
                append(_utf8(slow(value)))
            elif kind is LazyAttributes:  # _attributes_piece, inline: a call per cell saved
                key = value._key
                raw = fields[value._index].get(key) if key is not None else None
                if raw is None or (len(raw) == 4 and bytes(raw) == b"null"):
                    raw = _EMPTY_OBJECT
                append(raw)
            else:  # a call of its own: 10x faster in C (the dict's few fields joined there)
                one = fields[value._index]
                piece = c_extra(one, value._key) if c_extra is not None else None
                append(piece if piece is not None else _extra_piece(one, value._key))
        elif kind is LazyPayloads:
            key = id(value)
            if memo is not None and key in memo:
                append(memo[key])
                continue
            piece = _json_plain_piece(value)
            piece = piece if piece is not None else _utf8(slow(value))
            if memo is not None:
                memo[key] = piece
            append(piece)
        else:
            append(_utf8(slow(value)))
    return out


def _utf8(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _string_array(pieces: list[Piece]) -> pa.Array:
    """An Arrow string array of ``pieces`` (UTF-8 checked, as pyarrow checks text)."""
    if _jsoncells is not None:  # the same buffers, made in one pass over the pieces
        bits, offsets, data = _jsoncells.string_buffers(pieces)
        buffers = [None if bits is None else pa.py_buffer(bits), pa.py_buffer(offsets),
                   pa.py_buffer(data)]  # fmt: skip
        array = pa.Array.from_buffers(pa.string(), len(pieces), buffers)
        array.validate(full=True)
        return array
    validity = None
    if None in pieces:  # null cells: no bytes, a 0 bit
        present = np.array([p is not None for p in pieces], dtype=bool)
        validity = pa.py_buffer(np.packbits(present, bitorder="little"))
        pieces = [_NOTHING if p is None else p for p in pieces]
    lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    if lengths.sum() >= 2**31:
        raise OverflowError("more text than one array's 32-bit offsets address")
    offsets = np.zeros(len(pieces) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join(pieces)  # type: ignore[arg-type]  # no None left
    array = pa.Array.from_buffers(
        pa.string(), len(pieces), [validity, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    array.validate(full=True)
    return array


def cut_json_text(fields: Fields, cell: LazyAttributes) -> str:
    """The attributes (or the other fields) of one event, from its raw fields."""
    if type(cell) is LazyExtra:
        return str(_extra_piece(fields, cell._key), "utf-8")
    return str(_attributes_piece(fields, cell._key), "utf-8")


def _attributes_piece(fields: Fields, key: str | None) -> Piece:
    """The raw value of the attributes field ``key`` (``{}`` where absent or null)."""
    raw = fields.get(key) if key is not None else None
    if raw is None:
        return _EMPTY_OBJECT
    # A Raw is its value's exact span, no blanks around it: only 4 bytes can be null.
    return _EMPTY_OBJECT if len(raw) == 4 and bytes(raw) == b"null" else raw


def _extra_piece(fields: Fields, key: str | None) -> bytes:
    """Every field but the envelope and the attributes, as one JSON object."""
    kept = fields.copy()  # the fields stay whole for the attributes column
    for name in _ENVELOPE:
        kept.pop(name, None)
    if key is not None:
        kept.pop(key, None)
    return _encode(kept)  # Raw values are written as they are


def _json_plain_piece(cell: LazyPayloads) -> bytes | None:
    """The JSON text (UTF-8) of a list of default ``json/plain`` payloads; None for anything
    else."""
    raw = cell._raw
    if cell._codec is not None or not isinstance(raw, (bytes, msgspec.Raw)):
        return None
    if _jsoncells is not None:
        # Base64 decoded and the text rewritten in C, in one pass: a ninth of the time of
        # decoding to values and dumping them (None: a cell it cannot be sure of).
        piece = _jsoncells.plain_payloads(raw)
        if piece is not None:
            return piece
    try:  # msgspec's base64: what it accepts, b64decode(validate=True) decodes alike (tested)
        decoded = _decoded_payloads_decoder.decode(raw).payloads
    except msgspec.DecodeError:  # data it refuses (or no payloads): decoded as text below
        return _json_plain_text_piece(raw)
    values = []
    for payload in decoded:
        if payload.metadata != _JSON_PLAIN:
            return None
        try:
            values.append(orjson.loads(payload.data))
        except ValueError:  # orjson.JSONDecodeError: data that is no JSON
            return None
    return _dumped(values)


def _json_plain_text_piece(raw: bytes | msgspec.Raw) -> bytes | None:
    """:func:`_json_plain_piece` with each payload's data taken as text and decoded from
    base64 by :func:`_b64decode`."""
    try:
        payloads = _payloads_decoder.decode(raw).payloads
        values = []
        for payload in payloads:
            if payload.metadata != _JSON_PLAIN:
                return None
            values.append(orjson.loads(_b64decode(payload.data)))
    except (msgspec.DecodeError, binascii.Error, ValueError, orjson.JSONDecodeError):
        return None  # e.g. data that is no JSON: the general path keeps it as text
    return _dumped(values)


#: A number in exponent notation as msgspec writes it (``1e16``, ``2.5e-7``): orjson writes
#: ``1e+16``. Text in strings may match too; that only sends a cell to orjson. Written to
#: start with the literal ``e`` (the preceding digit checked behind it): the regex engine then
#: skips to each ``e`` instead of testing a class of digits at every byte (half the work).
_EXPONENT = re.compile(rb"e(?<=[0-9]e)[-0-9]")


def _dumped(values: list[Any]) -> bytes:
    """``orjson.dumps(values)`` of values ``orjson.loads`` gave, by msgspec's encoder (a
    quarter of the time): for such values (dicts with text keys, lists, text, ints within 64
    bits, finite floats, booleans, None) both write the same bytes but for floats in exponent
    notation, which msgspec writes without the ``+``; text holding one goes to orjson."""
    try:
        text = _encode(values)
    except Exception:  # orjson decides: it writes or refuses as it always did
        return orjson.dumps(values)
    return text if _EXPONENT.search(text) is None else orjson.dumps(values)


def _b64decode(data: str) -> bytes:
    """``base64.b64decode(data, validate=True)``, for valid data at half its cost.

    What binascii's strict mode accepts, the validating decoder accepts too and decodes alike
    (its pattern check took as long as the decoding); anything strict mode refuses is left to
    that decoder, to accept or refuse as always.
    """
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return base64.b64decode(data, validate=True)
