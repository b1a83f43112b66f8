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
from typing import Any

import msgspec
import orjson

from toolkit.agents.model_shapes import get_field
from toolkit.histories.columns.lazy import LazyAttributes, LazyExtra, LazyPayloads
from toolkit.histories.payloads import decode_payload, decode_payloads

__all__ = ["payload_values", "raw_payloads", "raw_summary_field"]

#: The metadata of most payloads, as proto JSON writes it: ``encoding`` in base64.
_JSON_PLAIN = {"encoding": "anNvbi9wbGFpbg=="}  # json/plain
_NULL = {"encoding": "YmluYXJ5L251bGw="}  # binary/null

_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])


def raw_payloads(cell: Any, attributes: Any) -> tuple[Any, Any] | None:
    """``(Payloads as the attributes hold it, decoded values)`` of a payload cell of a raw JSON
    event, from one decode of its raw JSON; None when the cells are not of that kind."""
    if type(cell) is not LazyPayloads or type(attributes) is not LazyAttributes:
        return None
    raw = cell._raw
    if not isinstance(raw, (bytes, msgspec.Raw)):
        return None
    # The values as the cell decodes them (LazyPayloads -> decode_any: the same two calls); they
    # may share objects with the Payloads, which neither the sizes nor the readers change.
    payloads = msgspec.json.decode(raw)
    codec = cell._codec
    return payloads, (decode_payloads(payloads, codec) if codec is not None
                      else payload_values(payloads))  # fmt: skip


def payload_values(payloads: Any) -> Any:
    """``decode_payloads(payloads)`` (no codec), its two common payloads read without the
    general steps: ``json/plain`` with base64 data (decoded as ``decode_payload`` decodes it:
    strict base64, then the JSON, else the text) and ``binary/null`` without data. Any other
    payload, and anything that is no ``{"payloads": [...]}``, takes the general route."""
    items = payloads.get("payloads") if type(payloads) is dict else None
    if type(items) is not list:
        return decode_payloads(payloads)
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
                    continue
            elif len(item) == 1 and metadata == _NULL:
                out.append(None)
                continue
        out.append(decode_payload(item))
    return out


def raw_summary_field(extra: Any) -> tuple[bool, Any]:
    """``(True, get_field(extra, "userMetadata", "user_metadata"))`` of an extra cell of a raw
    JSON event, decoding that field alone; ``(False, None)`` when the cell is not of that kind."""
    if type(extra) is not LazyExtra:
        return False, None
    found = get_field(_TOP_LEVEL.decode(extra.raw), "userMetadata", "user_metadata")
    return True, (None if found is None else msgspec.json.decode(found))
