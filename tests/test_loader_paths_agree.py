"""The three ways into the events frame (wire-format bytes, protobuf messages, proto-JSON) agree."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest
from google.protobuf import json_format
from temporalio.api.history.v1 import History

import toolkit as tk

PLAIN = [
    "history", "event_id", "event_time", "event_type", "category", "is_command", "workflow_task",
    "activity_id", "activity_type", "task_queue", "scheduled_event_id", "started_event_id",
    "initiated_event_id", "attempt", "timer_id", "signal_name", "update_name", "update_id",
    "child_workflow_id", "child_workflow_type", "marker_name", "identity", "failure_message",
    "failure_type", "retry_state", "cause", "run_id", "workflow_type",
]  # fmt: skip


def _binaries(corpus: Path) -> list[Path]:
    files = sorted((corpus / "histories").rglob("*.bin"))
    assert files
    return files


def _assert_same(left: pd.DataFrame, right: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(
        left[PLAIN].reset_index(drop=True), right[PLAIN].reset_index(drop=True), check_dtype=False
    )
    for column in ("attributes", "input", "result", "details"):
        assert [
            None if v is None else v.value if hasattr(v, "value") else v for v in left[column]
        ] == [
            None if v is None else v.value if hasattr(v, "value") else v for v in right[column]
        ], column


def test_bytes_messages_and_json_give_one_frame(corpus: Path) -> None:
    for path in _binaries(corpus):
        data = path.read_bytes()
        history = History.FromString(data)
        from_bytes = tk.read_history(data)
        _assert_same(from_bytes, tk.read_history(history))
        _assert_same(from_bytes, tk.read_history(json_format.MessageToJson(history)))


def test_odd_but_valid_encodings_read_like_the_message(corpus: Path) -> None:
    """Fields in another order, repeated scalars (last wins), unknown fields: all legal protobuf."""
    rng = random.Random(7)
    history = History.FromString(_binaries(corpus)[0].read_bytes())
    pieces = []
    for event in history.events:
        body = event.SerializeToString()
        # An unknown varint field (number 999) before and after: parsers must skip it.
        unknown = b"\xb8\x3e\x01"
        # A repeated event_id (field 1): protobuf keeps the last value.
        repeated = b"\x08\x7f" + body if rng.random() < 0.5 else body
        pieces.append(unknown + repeated + unknown)
    odd = b"".join(b"\x0a" + _varint(len(p)) + p for p in pieces)
    parsed = History.FromString(odd)
    assert [e.event_id for e in parsed.events] == [e.event_id for e in history.events]
    _assert_same(tk.read_history(odd), tk.read_history(parsed))


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


@pytest.mark.parametrize("name", ["temporalio__sdk-python/hitl_workflow.json"])
def test_json_and_binary_of_a_json_history_agree(corpus: Path, name: str) -> None:
    text = (corpus / "histories" / name).read_text()
    history = json_format.Parse(text, History(), ignore_unknown_fields=True)
    _assert_same(tk.read_history(text), tk.read_history(history.SerializeToString()))
