"""A model activity's payloads and summary read off the events frame's raw JSON cells, each
decoded once.

:func:`toolkit.agents.model_io.model_call_of_cells` needs, of the scheduled event, the input's
values and the size of its data, and the activity summary; of the closing event, the result's
values and size. Read through the cells as values, the event's attributes are decoded whole
(every payload again) for the sizes alone, and the envelope's every field for the summary.
Where the cells are those of a raw JSON history (the payload cell keeps the raw ``Payloads``
JSON of its event's attributes, the attribute and extra cells the event's raw bytes), the same
results come from one decode of each ``Payloads`` and of the event's top level:

- the payload field's raw JSON is the one its event's attributes hold under that very key (the
  loader takes it from there), so its decoded ``Payloads`` is the one the attributes would give;
- ``userMetadata`` is no envelope field and no attributes key in any spelling, so the event's
  top level holds it as the extra cell would.

Other cells (protobuf histories, frames built by hand, cells decoded already) take the general
route; both give the same values.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping
from typing import Any

import msgspec
import orjson

from toolkit.agents.model_shapes import get_field
from toolkit.histories.columns.lazy import LazyAttributes, LazyExtra, LazyPayloads
from toolkit.histories.payloads import decode_payload, decode_payloads

__all__ = [
    "NeedFull",
    "learn_read_key",
    "ledger_values_of_data",
    "payload_bytes",
    "payload_value",
    "payload_values",
    "payload_values_and_bytes",
    "raw_data_and_bytes_of",
    "raw_payloads",
    "raw_summary",
    "raw_summary_field",
    "raw_values_and_bytes",
    "values_of_data",
]

#: The metadata of most payloads, as proto JSON writes it: ``encoding`` in base64.
_JSON_PLAIN = {"encoding": "anNvbi9wbGFpbg=="}  # json/plain
_NULL = {"encoding": "YmluYXJ5L251bGw="}  # binary/null

_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])


class _Payload(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A payload of the two common kinds' shape: its metadata and, base64, its data, decoded by
    msgspec as it reads the JSON (what msgspec accepts, ``a2b_base64(strict_mode=True)`` decodes
    to the same bytes: tested)."""

    metadata: dict[str, str]
    data: bytes | msgspec.UnsetType = msgspec.UNSET


class _Payloads(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    payloads: list[_Payload]


_PAYLOADS = msgspec.json.Decoder(_Payloads)


class _RawPayload(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """:class:`_Payload` with its data kept as the raw JSON (a view of the text, not decoded:
    the compiled decoder decodes the base64 several times faster than msgspec)."""

    metadata: dict[str, str]
    data: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class _RawPayloads(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    payloads: list[_RawPayload]


_RAW_PAYLOADS = msgspec.json.Decoder(_RawPayloads)

try:  # the compiled scanner (setup.py builds it where a C compiler is present)
    from toolkit.histories import _cellscan
except ImportError:  # pragma: no cover - depends on the install
    _cellscan = None

#: The compiled top-level key finder (None without it, or in a build that predates it).
_key_value = getattr(_cellscan, "key_value", None)
#: The compiled reader of many payload cells' common payloads at once (likewise).
_plain_payloads = getattr(_cellscan, "plain_payloads", None)
#: The compiled reader of an event's usual summary (likewise).
_summary_data = getattr(_cellscan, "summary_data", None)


class _UserMetadata(msgspec.Struct, gc=False):
    """An event's ``userMetadata`` as its raw JSON, the other fields skipped."""

    userMetadata: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_USER_METADATA = msgspec.json.Decoder(_UserMetadata)


class _SummaryMetadata(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A ``userMetadata`` of the usual keys (any other, such as another spelling of
    ``summary``, is refused: the general route reads it)."""

    summary: _RawPayload | msgspec.UnsetType = msgspec.UNSET
    details: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_SUMMARY_METADATA = msgspec.json.Decoder(_SummaryMetadata)


_NOT_RAW = object()
#: A ``userMetadata`` not read yet (:func:`raw_summary_field`'s default).
_UNREAD: Any = object()


def _decoded(cell: Any, attributes: Any) -> Any:
    """The Payloads of a payload cell of a raw JSON event, decoded from its raw JSON once;
    ``_NOT_RAW`` when the cells are not of that kind."""
    if type(cell) is not LazyPayloads or type(attributes) is not LazyAttributes:
        return _NOT_RAW
    raw = cell._raw
    if not isinstance(raw, (bytes, msgspec.Raw)):
        return _NOT_RAW
    return msgspec.json.decode(raw)


def raw_payloads(cell: Any, attributes: Any) -> tuple[Any, Any] | None:
    """``(Payloads as the attributes hold it, decoded values)`` of a payload cell of a raw JSON
    event, from one decode of its raw JSON; None when the cells are not of that kind."""
    payloads = _decoded(cell, attributes)
    if payloads is _NOT_RAW:
        return None
    # The values as the cell decodes them (LazyPayloads -> decode_any: the same two calls); they
    # may share objects with the Payloads, which neither the sizes nor the readers change.
    codec = cell._codec
    return payloads, (decode_payloads(payloads, codec) if codec is not None
                      else payload_values(payloads))  # fmt: skip


def raw_values_and_bytes(cell: Any, attributes: Any) -> tuple[Any, int | None] | None:
    """``(values, payload_bytes(Payloads))`` of a payload cell of a raw JSON event (what
    :func:`raw_payloads` reads, the size counted in the same pass over the payloads); None
    when the cells are not of that kind."""
    if (type(cell) is LazyPayloads and type(attributes) is LazyAttributes
            and cell._codec is None):  # fmt: skip
        typed = _typed_values_and_bytes(cell._raw)
        if typed is not None:
            return typed
    payloads = _decoded(cell, attributes)
    if payloads is _NOT_RAW:
        return None
    codec = cell._codec
    if codec is not None:
        return decode_payloads(payloads, codec), payload_bytes(payloads)
    return payload_values_and_bytes(payloads)


def raw_data_and_bytes_of(cells: list[Any], attributes: list[Any]) -> list[Any]:
    """Per payload cell and its event's attributes, where the compiled reader reads the cell's
    raw ``Payloads`` JSON (``json/plain`` payloads of plain base64, ``binary/null`` ones): its
    payloads' decoded data (None for ``binary/null``) and their total bytes, all cells read in
    one compiled call (no msgspec decode and a handful of Python calls per cell saved);
    :func:`values_of_data` of the data and the total are :func:`raw_values_and_bytes` of the
    cell. None where it does not read a cell (another kind of cell, another payload, an
    escape), which the caller reads by :func:`raw_values_and_bytes`; None for every cell
    without the compiled scanner."""
    if _plain_payloads is None:
        return [None] * len(cells)
    return _plain_payloads(  # type: ignore[no-any-return]
        [_plain_raw(cell, attribute) for cell, attribute in zip(cells, attributes, strict=True)])


def _plain_raw(cell: Any, attributes: Any) -> Any:
    """The raw ``Payloads`` JSON of a payload cell of a raw JSON event as
    :func:`_typed_values_and_bytes` reads it (a cell without a codec); None for anything else."""
    if (type(cell) is LazyPayloads and type(attributes) is LazyAttributes
            and cell._codec is None):  # fmt: skip
        raw = cell._raw
        kind = type(raw)
        if kind is bytes or kind is msgspec.Raw:
            return raw
    return None


def values_of_data(datas: list[Any]) -> list[Any]:
    """The values of payloads' decoded data (:func:`raw_data_and_bytes_of`'s) as
    :func:`_plain_values` makes them: each data's JSON, else its text; None for a
    ``binary/null`` payload (None). Made by the caller one call at a time: every call's values
    made at once would hold them all (several times the data's bytes) in memory together."""
    loads = orjson.loads
    try:
        return [None if data is None else loads(data) for data in datas]
    except orjson.JSONDecodeError:  # one is no JSON: its text (the rest as before)
        out = []
        for data in datas:
            try:
                out.append(None if data is None else loads(data))
            except orjson.JSONDecodeError:
                out.append(data.decode("utf-8", errors="replace"))
        return out


try:  # the ledger's partial decode (setup.py builds it where a C compiler is present)
    from toolkit.agents import _ledgerjson
except ImportError:  # pragma: no cover - depends on the install
    _ledgerjson = None


class _NoNeedFull(Exception):
    """Never raised: what :data:`NeedFull` is without the compiled decoder."""


#: Raised by any use of a stand-in of :func:`ledger_values_of_data` (args: the member's key).
NeedFull: type[Exception] = _ledgerjson.NeedFull if _ledgerjson is not None else _NoNeedFull

#: Members the ledger's readers read (:mod:`toolkit.agents.model_shapes`), decoded however long
#: they are: a stand-in of one would send its call to the whole decode. Keys a reader is found
#: to use (:func:`learn_read_key`) join them. Any other member longer than
#: :data:`_UNREAD_LONGER` bytes is left unread (tools, settings, messages, contents, ...).
_READ_KEYS: set[str] = {
    # OpenAI Agents: the input items (their types, call ids, contents, outputs), the response.
    "input", "output", "usage", "response", "content", "model", "model_name",
    # ADK: the request's config (its instruction and labels), the responses' parts and usage.
    "llm_request", "llmRequest", "config", "labels", "parts", "function_call", "functionCall",
    "usage_metadata", "usageMetadata", "model_version", "modelVersion", "partial",
    # pydantic-ai: the response's parts (their kinds and names) and usage.
    "part_kind", "tool_name", "kind",
}  # fmt: skip
_UNREAD_LONGER = 64
#: A bound on the keys learnt (keys are field names; a bound all the same).
_READ_KEYS_MAX = 1024


def learn_read_key(key: Any) -> None:
    """Let the member ``key`` (a :data:`NeedFull`'s) be decoded from now on: a reader used its
    stand-in (the call was read again from its whole decode)."""
    if type(key) is str and len(_READ_KEYS) < _READ_KEYS_MAX:
        _READ_KEYS.add(key)


def ledger_values_of_data(datas: list[Any]) -> list[Any] | None:
    """:func:`values_of_data` of ``datas`` for the ledger's readers: each data the compiled check
    is sure orjson reads (valid UTF-8 and escapes, numbers of a plain form, ...) decoded with
    its members the ledger does not read (:data:`_READ_KEYS`), where long, left as stand-ins
    that raise :data:`NeedFull` on any use, not decoded; any other data as
    :func:`values_of_data` decodes it. None without the compiled decoder.

    The values decoded are orjson's (``_ledgerjson.c`` says how); a reader that completes
    without :data:`NeedFull` used no stand-in, and reads what it reads of the whole values."""
    if _ledgerjson is None:
        return None
    values = _ledgerjson.partial_values(datas, _READ_KEYS, _UNREAD_LONGER, orjson.loads)
    for at, value in enumerate(values):
        if type(value) is bytes:  # not sure: decoded as before (no JSON value is bytes)
            values[at] = values_of_data([value])[0]
    return values  # type: ignore[no-any-return]


def _typed_values_and_bytes(raw: Any) -> tuple[list[Any], int] | None:
    """:func:`payload_values_and_bytes` of the ``Payloads`` JSON ``raw`` whose payloads are all
    ``json/plain`` with data or ``binary/null`` without (their data decoded from base64 by
    msgspec in the one decode, no text object and no ``binascii`` call made); None for any
    other JSON (no such shape, base64 msgspec refuses, another payload), which the general
    route reads."""
    if not isinstance(raw, (bytes, msgspec.Raw)):
        return None
    if _cellscan is not None:
        found = _compiled_values_and_bytes(raw)
        if found is not _DECLINED:
            return found  # type: ignore[return-value]
    try:
        items = _PAYLOADS.decode(raw).payloads
    except msgspec.DecodeError:
        return None
    return _plain_values(items, bytes)  # type: ignore[return-value]  # msgspec decoded the data


_DECLINED = object()


def _plain_values(items: Any, data_of: Any) -> tuple[list[Any], int] | object | None:
    """The values and data bytes of decoded ``json/plain`` and ``binary/null`` payloads, each
    data made bytes by ``data_of`` (``_DECLINED`` from it: the same back); None for a payload
    of another kind. As the dict route reads a {metadata, data} payload whose strict base64
    decodes to data: its JSON, else its text."""
    out: list[Any] = []
    size = 0
    for item in items:
        data = item.data
        if data is msgspec.UNSET:
            if item.metadata != _NULL:
                return None
            out.append(None)  # binary/null: no data, 0 bytes
            continue
        if item.metadata != _JSON_PLAIN:
            return None
        decoded = data_of(data)
        if decoded is _DECLINED:
            return _DECLINED
        try:
            out.append(orjson.loads(decoded))
        except orjson.JSONDecodeError:
            out.append(decoded.decode("utf-8", errors="replace"))
        size += len(decoded)
    return out, size


def _compiled_values_and_bytes(raw: Any) -> tuple[list[Any], int] | object | None:
    """:func:`_typed_values_and_bytes` of ``raw`` with each payload's base64 decoded by
    ``_cellscan.b64_decode`` off the JSON text (what it decodes, it decodes to the bytes of
    ``a2b_base64(strict_mode=True)``, which are msgspec's: both tested); ``_DECLINED`` where a
    data is no JSON string of base64 digits alone (an escape, another value), which msgspec
    then reads. None as :func:`_typed_values_and_bytes` returns it: a payload of another kind
    (its data, whatever it is, makes no value there either)."""
    try:
        items = _RAW_PAYLOADS.decode(raw).payloads
    except msgspec.DecodeError:
        return _DECLINED
    return _plain_values(items, _compiled_data)


def _compiled_data(data: Any) -> Any:
    """A payload's raw JSON ``data`` string decoded from base64 in C; ``_DECLINED`` where it is
    no JSON string of base64 digits alone (an escape, another value), which msgspec reads (or
    refuses)."""
    text = memoryview(data)
    if len(text) < 2 or text[0] != 34 or text[-1] != 34:  # no JSON string: msgspec says
        return _DECLINED
    decoded = _cellscan.b64_decode(text[1:-1])
    return _DECLINED if decoded is None else decoded


def payload_values(payloads: Any) -> Any:
    """``decode_payloads(payloads)`` (no codec), its two common payloads read without the
    general steps: ``json/plain`` with base64 data (decoded as ``decode_payload`` decodes it:
    strict base64, then the JSON, else the text) and ``binary/null`` without data. Any other
    payload, and anything that is no ``{"payloads": [...]}``, takes the general route."""
    items = payloads.get("payloads") if type(payloads) is dict else None
    if type(items) is not list:
        return decode_payloads(payloads)
    return _values(items, None)


def payload_value(payload: Any) -> Any:
    """``decode_payload(payload)`` (no codec), the two common payloads read as
    :func:`payload_values` reads them (an activity's summary is one ``json/plain`` payload)."""
    return _values([payload], None)[0]


def payload_values_and_bytes(payloads: Any) -> tuple[Any, int | None]:
    """``(payload_values(payloads), payload_bytes(payloads))`` in one pass over the payloads:
    a common ``json/plain`` payload's size is that of the bytes its strict base64 decodes to
    (what :func:`payload_bytes` counts of its text), a ``binary/null`` one's 0 (no data)."""
    items = payloads.get("payloads") if type(payloads) is dict else None
    if type(items) is not list:
        return decode_payloads(payloads), payload_bytes(payloads)
    sizes: list[int] = []
    return _values(items, sizes), sum(sizes)


def _values(items: list[Any], sizes: list[int] | None) -> list[Any]:
    """:func:`payload_values` of a list of payloads; each one's :func:`_item_bytes` appended
    to ``sizes`` unless None."""
    out = []
    for item in items:
        if type(item) is dict:
            metadata = item.get("metadata")
            if len(item) == 2 and metadata == _JSON_PLAIN and type(item.get("data")) is str:
                try:
                    raw = binascii.a2b_base64(item["data"], strict_mode=True)
                except (binascii.Error, ValueError, TypeError):
                    raw = None  # no base64: the general route keeps the text as it is
                if raw is not None:
                    try:
                        out.append(orjson.loads(raw))
                    except orjson.JSONDecodeError:
                        out.append(raw.decode("utf-8", errors="replace"))
                    if sizes is not None:  # strict base64: len(raw) is _b64_size(data)
                        sizes.append(len(raw))
                    continue
            elif len(item) == 1 and metadata == _NULL:
                out.append(None)
                if sizes is not None:
                    sizes.append(0)  # no data
                continue
        out.append(decode_payload(item))
        if sizes is not None:
            sizes.append(_item_bytes(item))
    return out


def _b64_size(text: str) -> int:
    """Bytes a base64 text decodes to, without decoding it."""
    stripped = text.rstrip("=")
    return len(stripped) * 3 // 4


def payload_bytes(payloads: Any) -> int | None:
    """Size of the data of a ``Payloads`` field as the event holds it (``{"payloads": [...]}``
    with base64 ``data``, or a protobuf ``Payloads``); None when absent. A UI "decoded" download
    holds values, not bytes: their compact JSON size is counted instead."""
    if payloads is None:
        return None
    items = getattr(payloads, "payloads", None)
    if items is None:
        items = get_field(payloads, "payloads")
    if items is None:
        return None
    total = 0
    for item in items:
        total += _item_bytes(item)
    return total


def _item_bytes(item: Any) -> int:
    """:func:`payload_bytes`' count of one payload."""
    data = getattr(item, "data", None) if not isinstance(item, Mapping) else item.get("data")
    if isinstance(data, bytes):
        return len(data)
    if isinstance(data, str):
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        # A decoded download marks its values, or writes its metadata as plain text.
        decoded = isinstance(meta, Mapping) and (
            "encodingDecoded" in meta or "/" in str(meta.get("encoding", "")))
        return len(data.encode()) if decoded else _b64_size(data)
    if data is not None:
        return len(orjson.dumps(data, default=str))
    return 0


def raw_summary_field(extra: Any, spelt: Any = _UNREAD) -> tuple[bool, Any]:
    """``(True, get_field(extra, "userMetadata", "user_metadata"))`` of an extra cell of a raw
    JSON event, decoding that field alone; ``(False, None)`` when the cell is not of that kind.
    ``spelt``: what :func:`raw_summary` read of the event already (its ``userMetadata`` raw, or
    UNSET), not decoded again."""
    if type(extra) is not LazyExtra:
        return False, None
    raw = extra.raw
    if spelt is _UNREAD:
        spelt = _spelt_metadata(raw)
    if spelt is not msgspec.UNSET:  # get_field's first name, present: the value it returns
        return True, msgspec.json.decode(spelt)
    found = get_field(_TOP_LEVEL.decode(raw), "userMetadata", "user_metadata")
    return True, (None if found is None else msgspec.json.decode(found))


def _spelt_metadata(raw: Any) -> Any:
    """An event's ``userMetadata`` in the proto-JSON spelling as its raw JSON (the one field
    kept: no object of the event's top level); UNSET where it has none, or where the event is
    not read so (the general decode reads, or refuses, it).

    The compiled scanner finds the key among the top level's (its payloads stepped over 64
    bytes a step, several times faster than msgspec's skip of them); where it cannot say (an
    escaped key, a key twice, no object) the typed decoder reads the event, as without it."""
    if _key_value is not None:
        try:
            found = _key_value(raw, b"userMetadata")
        except TypeError:  # no buffer: the decoder says what it is
            found = None
        if found is not None:  # its raw JSON (a copy: a few dozen bytes), b"" where absent
            return found or msgspec.UNSET
    return _spelt_by_decoder(raw)


def _spelt_by_decoder(raw: Any) -> Any:
    """:func:`_spelt_metadata` by msgspec alone (the reference of the compiled path)."""
    try:
        return _USER_METADATA.decode(raw).userMetadata
    except msgspec.DecodeError:
        return msgspec.UNSET


def raw_summary(extra: Any) -> tuple[bool, Any]:
    """``(True, summary_of(extra))`` of an extra cell of a raw JSON event whose ``userMetadata``
    holds only a ``summary`` (and ``details``), a ``json/plain`` payload of plain base64 or a
    ``binary/null`` one, read by typed decoders and the compiled base64 decoder (no dict of
    the metadata, no lookup by spellings); for anything else ``(False, spelt)``, ``spelt``
    what :func:`raw_summary_field` then reads on from (the event is scanned once)."""
    if type(extra) is not LazyExtra or _cellscan is None:
        return False, _UNREAD
    raw = extra.raw
    if _summary_data is not None:
        # The usual summary read off the text in one compiled pass (its base64 decoded there):
        # the value _plain_values makes of it below; None for any other shape.
        try:
            data = _summary_data(raw)
        except TypeError:  # no buffer: the decoders say what it is
            data = None
        if data is not None:
            try:
                return True, orjson.loads(data)
            except orjson.JSONDecodeError:
                return True, data.decode("utf-8", errors="replace")
    spelt = _spelt_metadata(raw)
    if spelt is msgspec.UNSET:
        return False, spelt
    try:
        summary = _SUMMARY_METADATA.decode(spelt).summary
    except msgspec.DecodeError:  # a ValidationError too: another shape, read in general
        return False, spelt
    if summary is msgspec.UNSET:  # no key spelt "summary" either (the others are refused)
        return True, None
    found = _plain_values([summary], _compiled_data)
    if found is None or found is _DECLINED:
        return False, spelt
    return True, found[0][0]  # type: ignore[index]
