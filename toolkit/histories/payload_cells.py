"""Payload cells of the events frame measured as the server counts them, without decoding.

A payload cell (``input``, ``result``, ``details``) keeps its raw proto-JSON (or its protobuf
message); the payload limit (``limit.blobSize.error``) compares the encoded size of one
``Payloads`` field. These functions read that size, and the one ``json/plain`` payload's text, off
the raw text: a cell of one payload whose only metadata is its encoding (nearly every cell) by the
length of its data string; any other shape through slim msgspec structs whose data stays raw.
:mod:`toolkit.histories.sizes` measures whole events with them.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

import msgspec
import numpy as np
from google.protobuf.message import Message

from toolkit.histories.write import is_b64_text, is_decoded_payload, normalized_payload

__all__ = [
    "DATA_ALWAYS",
    "PayloadTexts",
    "framed",
    "json_payload_size",
    "measure_payload_cell",
    "measure_payload_cells",
    "payload_json",
    "payload_texts",
    "payloads_field_size",
    "varint_size",
]

#: Encodings whose payloads always carry data (``null`` is the four bytes ``null``).
DATA_ALWAYS = frozenset({"json/plain", "json/protobuf", "binary/protobuf", "binary/encrypted"})


def varint_size(value: int) -> int:
    """Bytes a protobuf varint of ``value`` (>= 0) takes."""
    return max(1, (int(value).bit_length() + 6) // 7)


def framed(size: int) -> int:
    """Bytes a length-delimited field of ``size`` bytes with a one-byte tag takes (an event in a
    ``History`` batch, a payload in ``Payloads``)."""
    return 1 + varint_size(size) + size


def payloads_field_size(cell: Any) -> tuple[int, bool] | None:
    """The encoded size of one payload cell of the events frame (``input``, ``result``,
    ``details``): a ``Payloads`` as the payload limit compares it (for marker details, a map of
    them: their sum), and whether it is exact (not where an exporter decoded a payload or
    stripped its data). None for an empty cell.

    Works on the raw proto-JSON or the message the cell keeps: no payload's data is decoded.
    """
    return measure_payload_cell(cell)[0]


def payload_json(cell: Any) -> tuple[Any, bool] | None:
    """The data of a payload cell holding one ``json/plain`` payload (``binary/null`` ones
    aside), undecoded, and whether it is base64 text: its base64 text (a buffer, quotes left
    out) from a JSON history, its bytes from a binary one; None for any other cell (several
    JSON payloads, encrypted, protobuf, decoded by an exporter)."""
    return measure_payload_cell(cell)[1]


def measure_payload_cell(cell: Any) -> tuple[tuple[int, bool] | None, tuple[Any, bool] | None]:
    """:func:`payloads_field_size` and :func:`payload_json` of a cell, from one decoding of its
    raw text (the slow part of both, for a cell of megabytes)."""
    raw = _cell_raw(cell)
    if raw is None:
        return None, None
    if isinstance(raw, Message):
        items = [(p.metadata.get("encoding", b""), p.data) for p in getattr(raw, "payloads", [])]
        stripped = any(not data and e.decode("utf-8", "replace") in DATA_ALWAYS
                       for e, data in items)  # fmt: skip
        found = [data for e, data in items if e == b"json/plain"]
        others = [e for e, _ in items if e not in (b"json/plain", b"binary/null")]
        one = (found[0], False) if len(found) == 1 and not others else None
        return (int(raw.ByteSize()), not stripped), one
    if not isinstance(raw, (bytes, bytearray, memoryview, msgspec.Raw)):  # a map of Payloads
        return (sum(int(v.ByteSize()) for v in raw.values()), True), None
    found = _one_payload(raw)
    if found is not None:
        return found
    try:  # the common shape, in slim structs; data stays raw text (its length is enough)
        typed = _sizes_decoder.decode(raw)
    except msgspec.ValidationError:
        typed = None
    if typed is not None and typed.payloads is not None:
        size = _typed_size(typed.payloads)
        if size is not None:
            return size, _typed_json(typed.payloads)
    value = msgspec.json.decode(bytes(raw))
    if isinstance(value, Mapping) and ("metadata" in value or "data" in value):
        return json_payload_size(value), None  # a single Payload (a Nexus operation's input)
    if isinstance(value, Mapping) and "payloads" not in value and all(
        isinstance(v, Mapping) for v in value.values()
    ):  # marker details: name -> Payloads
        sizes = [_json_payloads_size(v) for v in value.values()]
        return (sum(size for size, _ in sizes), all(exact for _, exact in sizes)), None
    return _json_payloads_size(value), None


#: The shape nearly every payload cell has: one payload whose only metadata is its encoding.
_WS = rb"[ \t\n\r]*"  # JSON's whitespace (not \s: it takes \f and \v, which JSON does not)


def _tokens(*parts: bytes) -> bytes:
    return _WS.join(parts)


_ONE_HEAD = re.compile(_tokens(rb"\{", rb'"payloads"', rb":", rb"\[", rb"\{", rb'"metadata"', rb":",
                               rb"\{", rb'"encoding"', rb":", rb'"([A-Za-z0-9+/]*={0,2})"', rb"\}",
                               rb",", rb'"data"', rb":", rb'"'))  # fmt: skip
_ONE_TAIL = re.compile(_tokens(rb'"', rb"\}", rb"\]", rb"\}", rb"\Z"))


def _one_payload(raw: Any) -> tuple[tuple[int, bool], tuple[Any, bool] | None] | None:
    """:func:`measure_payload_cell` of a cell of one payload with only an ``encoding``, read off
    its text without decoding it (its data string's length is all its size needs); None for any
    other shape, which is decoded. Gives what the slim decoding gives, to the byte.

    The patterns run on the cell's buffer itself: a copy of it would cost more than all the
    searching (the data of a model call's input is most of a history's bytes).
    """
    head = _ONE_HEAD.match(raw)
    if head is None:
        return None
    size = len(raw)
    tail = _ONE_TAIL.search(raw, max(head.end(), size - 24))
    if tail is None or _QUOTE.search(raw, head.end(), tail.start()) is not None:
        return None  # not one string up to the end: another shape
    encoding = head.group(1).decode("ascii")
    metadata = _metadata_size((("encoding", encoding),))
    if metadata is None:
        return None
    start, end = head.end(), tail.start()
    text = memoryview(raw)
    padded = end
    while padded > start and text[padded - 1] == 0x3D:  # "=" padding
        padded -= 1
    data = (padded - start) * 3 // 4
    known = bool(data) or encoding not in _ALWAYS_DATA_B64
    size = framed(metadata + (framed(data) if data else 0))
    if encoding != _JSON_B64:
        return (size, known), None
    return (size, known), (text[start:end], True)  # a string is never absent data


_QUOTE = re.compile(rb'"')


def measure_payload_cells(cells: list[Any], groups: np.ndarray | None = None
                          ) -> tuple[np.ndarray, np.ndarray, PayloadTexts]:  # fmt: skip
    """:func:`measure_payload_cell` of every cell of a column at once: the encoded sizes (0 for
    an empty cell), whether each is inexact (decoded or stripped by an exporter), and each
    one ``json/plain`` payload's text (made on first use).

    Cells of the common shapes (one or two payloads whose metadata is only an encoding) are read
    in C where the package was built with a compiler (``toolkit/histories/_cellscan.c``: one call
    for the column), the rest, and all of them without it, one at a time.

    ``groups``: one number per cell, the run whose model input it is (-1: none; each run's
    inputs in order, run after run); the C scan then also finds each run's re-sent share as it
    reads the inputs (``PayloadTexts.shares``, :func:`toolkit.agents.resent.resent_of_run`)."""
    sizes = np.zeros(len(cells), dtype=np.int64)
    inexact = np.zeros(len(cells), dtype=bool)
    texts = PayloadTexts()
    rest: Any = range(len(cells))
    if _cellscan is not None and len(cells):
        rest = _spans_measured(cells, sizes, inexact, texts, groups).tolist()
    for index in rest:
        cell = cells[index]
        if cell is None:
            continue
        measured, texts.made[index] = measure_payload_cell(cell)
        if measured is not None:
            sizes[index] = measured[0]
            inexact[index] = not measured[1]
    return sizes, inexact, texts


class PayloadTexts:
    """The one ``json/plain`` payload's text of each cell :func:`measure_payload_cells`
    measured (:func:`payload_json`), by the cell's position: a buffer over the cell's raw
    text made when asked for (most are never asked for)."""

    def __init__(self) -> None:
        self.made: dict[int, tuple[Any, bool] | None] = {}
        self.cells: list[Any] = []  # the cells measured (their raw texts found when asked)
        self.start = self.end = np.zeros(0, np.int64)
        #: Per group of :func:`measure_payload_cells`: re-sent bytes, total bytes, and the
        #: inputs read (-1: left to the pure path); None without groups or the C scan.
        self.shares: np.ndarray | None = None

    def __getitem__(self, index: int) -> tuple[Any, bool] | None:
        if index in self.made:
            return self.made[index]
        if index < len(self.start) and self.start[index] >= 0:
            raw = _cell_raw(self.cells[index])  # a cell with a text: a lazy one
            return memoryview(raw)[self.start[index] : self.end[index]], True
        return None


try:  # the compiled scanner (setup.py builds it where a C compiler is present)
    from toolkit.histories import _cellscan
except ImportError:  # pragma: no cover - depends on the install
    _cellscan = None


def _spans_measured(cells: list[Any], sizes: np.ndarray, inexact: np.ndarray,
                    texts: PayloadTexts,
                    groups: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Fill in the cells of the common shapes from their payloads' spans (read in C, each cell's
    raw text found there as :func:`_cell_raw` finds it); the positions of the others (empty
    cells aside): other shapes, metadata an exporter decoded."""
    if groups is None:
        spans, names = _cellscan.payload_spans(cells, None, True)
    else:
        spans, names, shares = _cellscan.payload_spans(
            cells, np.ascontiguousarray(groups, dtype=np.int64), True)  # fmt: skip
        texts.shares = np.frombuffer(shares, np.int64).reshape(3, -1)
    first, start1, padded1, end1, second, start2, padded2, end2 = np.frombuffer(
        spans, np.int64).reshape(8, len(cells))  # fmt: skip
    shape = first
    first, second = np.maximum(first, -1), np.maximum(second, -1)  # -2: an empty cell
    encodings = [name.decode("ascii") for name in names]
    # One entry per encoding, then one for "no such payload" (codes -1 and -2 pick it).
    found = [_metadata_size((("encoding", e),)) for e in encodings]
    metadata = np.array([-1 if size is None else size for size in found] + [0], np.int64)
    always = np.array([e in _ALWAYS_DATA_B64 for e in encodings] + [False], bool)
    plain = np.array([e == _JSON_B64 for e in encodings] + [False], bool)
    null = np.array([e == _NULL_B64 for e in encodings] + [False], bool)
    read = (first >= 0) & (metadata[first] >= 0) & ((second < 0) | (metadata[second] >= 0))
    total = np.zeros(len(cells), np.int64)
    stripped = np.zeros(len(cells), bool)
    for code, start, padded in ((first, start1, padded1), (second, start2, padded2)):
        data = np.where(start >= 0, (padded - start) * 3 // 4, 0)
        inner = metadata[code] + np.where(data > 0, _framed_sizes(data), 0)
        total += np.where(code >= 0, _framed_sizes(inner), 0)
        stripped |= (code >= 0) & (data == 0) & always[code]
    sizes[read], inexact[read] = total[read], stripped[read]
    # The text of the one json/plain payload, binary/null ones that hold nothing aside.
    empty1 = null[first] & ((start1 < 0) | (start1 == end1))
    empty2 = (second < 0) | (null[second] & ((start2 < 0) | (start2 == end2)))
    from_first = read & plain[first] & (start1 >= 0) & empty2
    from_second = read & (second >= 0) & plain[second] & (start2 >= 0) & empty1
    texts.cells = cells
    texts.start = np.where(from_first, start1, np.where(from_second, start2, -1))
    texts.end = np.where(from_first, end1, end2)
    return np.flatnonzero((shape != -2) & ~read)


def _framed_sizes(sizes: np.ndarray) -> np.ndarray:
    """:func:`framed` of each size (>= 0)."""
    varint = 1 + sum((sizes >= 1 << (7 * k)).astype(np.int64) for k in range(1, 9))
    return 1 + varint + sizes


def _typed_size(payloads: list[_PayloadSizeView]) -> tuple[int, bool] | None:
    """Encoded size of slim-decoded payloads and whether exact; None where an exporter decoded
    one (it is measured the general way)."""
    total, known = 0, True
    for payload in payloads:
        metadata = _metadata_size(tuple(payload.metadata.items()))
        data = _raw_b64_size(payload.data)
        if metadata is None or data is None:
            return None
        if not data and payload.metadata.get("encoding") in _ALWAYS_DATA_B64:
            known = False  # stripped by the exporter: the server stored more
        total += framed(metadata + (framed(data) if data else 0))
    return total, known


def _typed_json(payloads: list[_PayloadSizeView]) -> tuple[memoryview, bool] | None:
    """The base64 text of the one ``json/plain`` payload among slim-decoded payloads
    (``binary/null`` ones aside), as a buffer without its quotes; None otherwise."""
    found = None
    for payload in payloads:
        encoding = payload.metadata.get("encoding")
        data = memoryview(payload.data)
        absent = len(data) == 0 or data == b"null"
        if encoding == _NULL_B64 and (absent or data == b'""'):
            continue
        if encoding != _JSON_B64 or absent or found is not None:
            return None
        found = data[1:-1]  # the sizes' decoding has checked it is a plain string
    return None if found is None else (found, True)


def _json_payloads_size(value: Any) -> tuple[int, bool]:
    """Encoded size of a proto-JSON ``Payloads`` (``{"payloads": [...]}``) and whether exact."""
    payloads = value.get("payloads") if isinstance(value, Mapping) else value
    if not isinstance(payloads, list):
        return 0, True
    total, exact = 0, True
    for payload in payloads:
        size, payload_exact = json_payload_size(payload)
        total += framed(size)
        exact = exact and payload_exact
    return total, exact


def json_payload_size(payload: Any) -> tuple[int, bool]:
    """Encoded size of one proto-JSON ``Payload`` (metadata values and data in base64) and
    whether it is exact: a payload an exporter decoded is measured re-encoded as compact
    ``json/plain``, as :func:`toolkit.histories.write.event_message` writes it."""
    exact = True
    if not isinstance(payload, Mapping) or is_decoded_payload(payload, check_data=False):
        payload, exact = normalized_payload(payload), False
    size = 0
    for key, value in (payload.get("metadata") or {}).items():
        entry = framed(len(key.encode("utf-8"))) + framed(_b64_size(value))
        size += framed(entry)
    data = _b64_size(payload.get("data"))
    if data:
        size += framed(data)
    return size, exact


def payload_texts(cell: Any) -> list[bytes] | None:
    """The data of each ``json/plain`` payload of a payload cell, as bytes (``binary/null``
    ones, which hold nothing, are left out); None where another payload holds data that is not
    JSON (encrypted, protobuf, decoded by an exporter) or where nothing is left."""
    raw = _cell_raw(cell)
    if raw is None:
        return None
    if isinstance(raw, Message):
        items = [(p.metadata.get("encoding", b""), p.data) for p in getattr(raw, "payloads", [])]
        if any(e not in (b"json/plain", b"binary/null") for e, _ in items):
            return None
        return [data for e, data in items if e == b"json/plain"] or None
    try:
        typed = _payloads_decoder.decode(raw)
    except msgspec.ValidationError:
        return None
    texts = []
    for payload in typed.payloads or []:
        encoding = payload.metadata.get("encoding")
        if encoding == _NULL_B64 and not payload.data:
            continue
        if encoding != _JSON_B64 or payload.data is None:
            return None
        try:
            texts.append(binascii.a2b_base64(payload.data, strict_mode=True))
        except binascii.Error:
            return None
    return texts or None


_JSON_B64 = "anNvbi9wbGFpbg=="  # base64 of json/plain, as proto-JSON writes metadata
#: The base64 metadata of the encodings whose payloads always hold data.
_ALWAYS_DATA_B64 = frozenset(binascii.b2a_base64(e.encode(), newline=False).decode()
                             for e in DATA_ALWAYS)
_NULL_B64 = "YmluYXJ5L251bGw="  # binary/null


def _cell_raw(cell: Any) -> Any:
    """What a payload cell decodes from: its raw proto-JSON, or its protobuf message (a cell
    of a binary history looks its field up in the parsed events)."""
    raw = getattr(cell, "_raw", None)
    if raw is None and getattr(cell, "_events", None) is not None:
        message = getattr(cell._events[cell._index], cell._attributes)
        raw = getattr(message, cell._field)
    return raw


class _PayloadView(msgspec.Struct, gc=False):
    metadata: dict[str, str] = {}
    data: str | None = None


class _PayloadsView(msgspec.Struct, gc=False):
    payloads: list[_PayloadView] | None = None


_payloads_decoder = msgspec.json.Decoder(_PayloadsView)


class _PayloadSizeView(msgspec.Struct, gc=False):
    metadata: dict[str, str] = {}
    data: msgspec.Raw = msgspec.Raw(b"")  # absent: no data


class _PayloadsSizeView(msgspec.Struct, gc=False):
    payloads: list[_PayloadSizeView] | None = None


_sizes_decoder = msgspec.json.Decoder(_PayloadsSizeView)


def _raw_b64_size(raw: msgspec.Raw) -> int | None:
    """Decoded size of a base64 JSON string given as its raw text (quotes included), or None
    where it is not a plain string (a decoded value, escapes)."""
    text = memoryview(raw)
    if len(text) == 0 or bytes(text) == b"null":
        return 0
    if len(text) < 2 or text[0] != 0x22 or text[-1] != 0x22:
        return None
    end = len(text) - 1
    while end > 1 and text[end - 1] == 0x3D:  # "=" padding
        end -= 1
    return (end - 1) * 3 // 4


@cache
def _metadata_size(items: tuple[tuple[str, str], ...]) -> int | None:
    """Encoded size of a payload's metadata entries (the same few recur in every payload), or
    None where a value is not base64 (an exporter decoded the payload)."""
    if any(key == "encodingDecoded" for key, _ in items):
        return None
    size = 0
    for key, value in items:
        if not is_b64_text(value):
            return None
        size += framed(framed(len(key.encode("utf-8"))) + framed(_b64_size(value)))
    return size


def _b64_size(text: Any) -> int:
    """Decoded size of base64 ``text`` (a str or a buffer, padded or not), without decoding
    it; 0 for anything else."""
    if isinstance(text, str):
        return len(text.rstrip("=")) * 3 // 4
    if not isinstance(text, bytes | bytearray | memoryview):
        return 0
    end = len(text)
    while end and text[end - 1] == 0x3D:  # "=" padding
        end -= 1
    return end * 3 // 4
