"""A codec decodes a whole ``Payloads`` list in one call, with what one call per payload gives."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadCodec

from toolkit.histories.payloads import (
    decode_any,
    decode_payload,
    decode_payloads,
    decode_proto_payload,
    decode_proto_payloads,
)


class CountingCodec(PayloadCodec):
    """Reverses the bytes (a stand-in for decryption), counts calls, fails on ``b"bad"``."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload(metadata={"encoding": b"binary/encrypted"}, data=p.SerializeToString()[::-1])
            for p in payloads
        ]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        self.calls.append(len(payloads))
        for p in payloads:
            if p.data == b"bad":
                raise ValueError("cannot decrypt")
        return [Payload.FromString(p.data[::-1]) for p in payloads]


def _encrypted(values: list[bytes]) -> list[Payload]:
    inner = [Payload(metadata={"encoding": b"json/plain"}, data=v) for v in values]
    return asyncio.run(CountingCodec().encode(inner))


def _as_json(payload: Payload) -> dict:
    return json_format.MessageToDict(payload)


def test_proto_payloads_one_codec_call() -> None:
    payloads = Payloads(payloads=_encrypted([b"1", b'"two"', b"[3]"]))
    codec = CountingCodec()
    assert decode_proto_payloads(payloads, codec) == [1, "two", [3]]
    assert codec.calls == [3]
    one_by_one = [decode_proto_payload(p, CountingCodec()) for p in payloads.payloads]
    assert decode_proto_payloads(payloads, CountingCodec()) == one_by_one
    assert decode_proto_payloads(Payloads(), codec) == [] and codec.calls == [3]


def test_json_payloads_one_codec_call_values_as_before() -> None:
    items = [_as_json(p) for p in _encrypted([b"1", b'{"a": 2}'])]
    ui_decoded = {"metadata": {"encoding": "json/plain", "encodingDecoded": "true"}, "data": 5}
    items.insert(1, ui_decoded)
    items.append(7)  # a bare value in place of a payload
    codec = CountingCodec()
    assert decode_payloads({"payloads": items}, codec) == [1, 5, {"a": 2}, 7]
    assert codec.calls == [2]
    assert decode_payloads(items, CountingCodec()) == [
        decode_payload(p, CountingCodec()) for p in items
    ]
    assert decode_any(Payloads(payloads=_encrypted([b"8"])), CountingCodec()) == [8]


@pytest.mark.parametrize("via", ["protobuf", "json"])
def test_codec_errors_propagate(via: str) -> None:
    bad = Payload(metadata={"encoding": b"binary/encrypted"}, data=b"bad")
    payloads = Payloads(payloads=[*_encrypted([b"1"]), bad])
    codec = CountingCodec()
    with pytest.raises(ValueError, match="cannot decrypt"):
        if via == "protobuf":
            decode_proto_payloads(payloads, codec)
        else:
            decode_payloads(json_format.MessageToDict(payloads), codec)
    assert codec.calls == [2]  # one call for the list; the codec's own error propagates


def test_malformed_metadata_is_kept_as_written_and_never_sent_to_the_codec() -> None:
    # Nothing lost, nothing falls over: a payload whose metadata is no map is not a payload the
    # codec could decode; it stays as the source wrote it.
    item = {"metadata": ["not", "a", "map"], "data": base64.b64encode(b"1").decode()}
    codec = CountingCodec()
    assert decode_payload(item, codec) == item
    assert decode_payloads([item], codec) == [item]
    assert codec.calls == []
