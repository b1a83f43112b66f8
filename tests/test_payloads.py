"""Payload decoding: every encoding, UI-decoded variants, codecs; never garbage, never execution."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads, WorkflowExecution, WorkflowType
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import (
    History,
    HistoryEvent,
    WorkflowExecutionStartedEventAttributes,
)
from temporalio.converter import PayloadCodec

import toolkit as tk
from toolkit.histories.payloads import OpaquePayload, decode_payload


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


class ReversingCodec(PayloadCodec):
    """A stand-in for an encryption codec: reverses the bytes and marks them encrypted."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload(
                metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"test"},
                data=p.SerializeToString()[::-1],
            )
            for p in payloads
        ]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [Payload.FromString(p.data[::-1]) for p in payloads]


def _history_with_input(payload: Payload) -> History:
    started = HistoryEvent(
        event_id=1,
        event_type=EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
        workflow_execution_started_event_attributes=WorkflowExecutionStartedEventAttributes(
            workflow_type=WorkflowType(name="Agent"),
            input=Payloads(payloads=[payload]),
            original_execution_run_id="run-1",
        ),
    )
    started.event_time.FromSeconds(1_700_000_000)
    return History(events=[started])


def test_plain_json_null_and_bytes() -> None:
    assert decode_payload(
        {"metadata": {"encoding": b64("json/plain")}, "data": b64('{"a": 1}')}
    ) == {"a": 1}
    assert decode_payload({"metadata": {"encoding": b64("binary/null")}}) is None
    assert decode_payload(
        {"metadata": {"encoding": b64("binary/plain")}, "data": b64(b"\x00\x01")}
    ) == (b"\x00\x01")


def test_ui_decoded_variants_are_taken_as_they_are() -> None:
    # encodingDecoded marker: "workflow-result" is base64-alphabet text; it must stay text.
    marked = {
        "metadata": {"encoding": b64("json/plain"), "encodingDecoded": "json/plain"},
        "data": "workflow-result",
    }
    assert decode_payload(marked) == "workflow-result"
    plain_text_metadata = {"metadata": {"encoding": "json/plain"}, "data": {"x": [1, 2]}}
    assert decode_payload(plain_text_metadata) == {"x": [1, 2]}
    assert decode_payload(42) == 42  # a bare value a UI put in place of a payload


def test_protobuf_payloads() -> None:
    message = WorkflowExecution(workflow_id="w", run_id="r")
    known = {
        "metadata": {
            "encoding": b64("binary/protobuf"),
            "messageType": b64("temporal.api.common.v1.WorkflowExecution"),
        },
        "data": b64(message.SerializeToString()),
    }
    assert decode_payload(known) == {"workflowId": "w", "runId": "r"}
    unknown = dict(known, metadata={**known["metadata"], "messageType": b64("acme.v1.Secret")})
    opaque = decode_payload(unknown)
    assert isinstance(opaque, OpaquePayload) and opaque.encoding == "binary/protobuf"
    assert opaque.metadata["messageType"] == "acme.v1.Secret" and "acme.v1.Secret" in repr(opaque)
    as_json = {
        "metadata": {
            "encoding": b64("json/protobuf"),
            "messageType": b64("temporal.api.common.v1.WorkflowExecution"),
        },
        "data": b64(json_format.MessageToJson(message)),
    }
    assert decode_payload(as_json) == {"workflowId": "w", "runId": "r"}


@pytest.mark.parametrize("via", ["protobuf", "json"])
def test_encrypted_payloads_need_the_codec(via: str) -> None:
    import asyncio

    inner = Payload(metadata={"encoding": b"json/plain"}, data=b'{"secret": "plan"}')
    encrypted = asyncio.run(ReversingCodec().encode([inner]))[0]
    history = _history_with_input(encrypted)
    source = history if via == "protobuf" else json.loads(json_format.MessageToJson(history))
    opaque = tk.read_history(source)["input"].iloc[0][0]
    assert isinstance(opaque, OpaquePayload) and opaque.encoding == "binary/encrypted"
    decoded = tk.read_history(source, codec=ReversingCodec())["input"].iloc[0]
    assert decoded == [{"secret": "plan"}]


def test_payload_columns_can_be_skipped() -> None:
    history = _history_with_input(Payload(metadata={"encoding": b"json/plain"}, data=b"1"))
    assert tk.read_history(history)["input"].iloc[0] == [1]
    assert tk.read_history(history, decode_payloads=False)["input"].iloc[0] is None
