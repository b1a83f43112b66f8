"""The compiled reader of binary histories (``_wirescan.c``) and the numpy reader agree.

Binary histories are read in C where the package was built with a C compiler, else with numpy
(``columns/from_wire.py``). Both must find the same events, fields and texts in every real
history, refuse only bytes the protobuf library refuses too, and give the same frames.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from temporalio.api.history.v1 import History, HistoryEvent

import toolkit as tk
from toolkit.histories.columns import from_wire
from toolkit.histories.reading.wire import WireError

ROOT = Path(__file__).resolve().parents[1]
PLAIN = [
    "event_id", "event_time", "event_type", "category", "is_command", "workflow_task",
    "activity_id", "activity_type", "task_queue", "scheduled_event_id", "started_event_id",
    "initiated_event_id", "attempt", "timer_id", "signal_name", "update_name", "update_id",
    "child_workflow_id", "child_workflow_type", "marker_name", "identity", "failure_message",
    "failure_type", "retry_state", "cause", "run_id", "workflow_type", "workflow_id",
]  # fmt: skip
COMPILED = from_wire._compiled


@pytest.fixture
def numpy_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read binary histories with numpy for the rest of the test."""
    monkeypatch.setattr(from_wire, "_compiled", None)


def _histories(corpus: Path) -> list[tuple[str, bytes]]:
    """Every real history as binary bytes: the corpus' binaries, and every lab and corpus
    proto-JSON history the protobuf library reads, serialized."""
    found = [(p.name, p.read_bytes()) for p in sorted((corpus / "histories").rglob("*.bin"))]
    jsons = [*sorted((ROOT / "data").rglob("*.json")), *sorted(corpus.rglob("*.json"))]
    for path in jsons:
        if path.name.endswith(".meta.json"):
            continue
        try:
            history = json_format.Parse(path.read_text(), History(), ignore_unknown_fields=True)
        except (json_format.ParseError, UnicodeDecodeError, ValueError):
            continue  # not a proto-JSON history (sidecars, UI downloads, logs)
        if len(history.events):
            found.append((path.name, history.SerializeToString()))
    return found


def _with(reader: object, data: bytes) -> object:
    saved = from_wire._compiled
    from_wire._compiled = reader
    try:
        return from_wire._read(data)
    except WireError as exc:
        return exc
    finally:
        from_wire._compiled = saved


def _assert_same_reading(name: str, a: object, b: object) -> None:
    if isinstance(a, WireError) or isinstance(b, WireError):
        # The numpy reader gives up on layouts the C one reads (fields out of the usual order):
        # then the caller reads the parsed messages, so the frame is the same either way.
        assert isinstance(b, WireError), f"{name}: only the compiled reader refused: {a}"
        return
    for field in ("starts", "ends", "ids", "types", "seconds", "nanos", "kinds", "bounds"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), f"{name}: {field}"
    for field in ("message", "number", "wire_type", "value", "start", "length"):
        assert np.array_equal(getattr(a.rows, field), getattr(b.rows, field)), f"{name}: {field}"
    assert a.texts.tolist() == b.texts.tolist(), f"{name}: texts"


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[PLAIN].reset_index(drop=True)


def test_the_compiled_reader_is_built() -> None:
    # `make` installs the package with gcc at hand (setup.py); without it numpy does the work,
    # about twice as slowly. This checkout must have it, or the speed claims do not hold here.
    assert from_wire.compiled(), (
        "toolkit/histories/reading/_wirescan.c is not built: `pip install -e .` with a C compiler"
    )


@pytest.mark.skipif(COMPILED is None, reason="the compiled reader is not built")
def test_both_readers_find_the_same_in_every_real_history(corpus: Path) -> None:
    histories = _histories(corpus)
    assert len(histories) > 200
    for name, data in histories:
        _assert_same_reading(name, _with(COMPILED, data), _with(None, data))


@pytest.mark.skipif(COMPILED is None, reason="the compiled reader is not built")
def test_frames_are_the_same_with_either_reader(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    histories = rng.sample(_histories(corpus), 40)
    compiled = [tk.read_history(data) for _, data in histories]
    monkeypatch.setattr(from_wire, "_compiled", None)
    for (name, data), frame in zip(histories, compiled, strict=True):
        other = tk.read_history(data)
        pd.testing.assert_frame_equal(_plain(frame), _plain(other), obj=name)
        for column in ("attributes", "input", "result", "details"):
            assert [None if v is None else dict(v) if column == "attributes" else list(v)
                    for v in frame[column]] == [
                    None if v is None else dict(v) if column == "attributes" else list(v)
                    for v in other[column]], (name, column)  # fmt: skip


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, wire_type: int, body: bytes) -> bytes:
    return _varint(number << 3 | wire_type) + body


def test_fields_in_any_order_are_read_directly() -> None:
    # Legal protobuf that no SDK writes: event_type and event_time before event_id, the
    # attributes first. The compiled reader takes it as it is; the frame equals the message's.
    events = []
    for i in range(1, 6):
        event = HistoryEvent(event_id=i, event_type=10)
        event.event_time.FromSeconds(1_700_000_000 + i)
        event.activity_task_scheduled_event_attributes.activity_id = f"a{i}"
        event.activity_task_scheduled_event_attributes.activity_type.name = "lookup"
        events.append(event)
    number = HistoryEvent.DESCRIPTOR.fields_by_name[
        "activity_task_scheduled_event_attributes"
    ].number
    records = []
    for event in events:
        attributes = event.activity_task_scheduled_event_attributes.SerializeToString()
        time = event.event_time.SerializeToString()
        body = (_field(number, 2, _varint(len(attributes)) + attributes)
                + _field(3, 0, _varint(event.event_type))
                + _field(2, 2, _varint(len(time)) + time)
                + _field(1, 0, _varint(event.event_id)))  # fmt: skip
        records.append(_field(1, 2, _varint(len(body)) + body))
    data = b"".join(records)
    parsed = History.FromString(data)
    assert list(parsed.events) == events
    if COMPILED is not None:
        found = _with(COMPILED, data)
        assert not isinstance(found, WireError)
        assert found.ids.tolist() == [1, 2, 3, 4, 5]
        # Texts come column by column: the activity ids, then the type names.
        assert found.texts.tolist() == [f"a{i}" for i in range(1, 6)] + ["lookup"] * 5
    frame = tk.read_history(data)
    pd.testing.assert_frame_equal(_plain(frame), _plain(tk.read_history(parsed)))
    assert frame["activity_type"].tolist() == ["lookup"] * 5


def _mutations(data: bytes, rng: random.Random, count: int) -> list[bytes]:
    """Seeded damage of every kind: flipped, dropped, inserted bytes, cuts, swapped spans."""
    out = []
    for _ in range(count):
        damaged = bytearray(data)
        kind = rng.randrange(5)
        at = rng.randrange(len(damaged))
        if kind == 0:
            damaged[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del damaged[at : at + rng.randint(1, 4)]
        elif kind == 2:
            damaged[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif kind == 3:
            damaged = damaged[:at]
        else:
            other = rng.randrange(len(damaged))
            damaged[at], damaged[other] = damaged[other], damaged[at]
        out.append(bytes(damaged))
    return out


@pytest.mark.skipif(COMPILED is None, reason="the compiled reader is not built")
def test_damaged_bytes_are_refused_only_where_protobuf_refuses_them(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(11)
    sources = [p.read_bytes() for p in sorted((corpus / "histories").rglob("*.bin"))]
    sources.append(
        json_format.Parse(
            (ROOT / "data" / "adk" / "adk-2.13.0" / "two_turns.json").read_text(), History()
        ).SerializeToString()
    )
    outcomes = {"same frame": 0, "refused by both": 0, "refused by one": 0}
    for source in sources:
        for damaged in _mutations(source, rng, 60):
            results = []
            for reader in (COMPILED, None):
                monkeypatch.setattr(from_wire, "_compiled", reader)
                try:
                    results.append(_plain(tk.read_history(damaged)))
                except tk.HistoryFormatError as exc:
                    results.append(exc)  # anything else escapes and fails the test
            refused = [isinstance(r, tk.HistoryFormatError) for r in results]
            if not any(refused):
                pd.testing.assert_frame_equal(results[0], results[1])
                outcomes["same frame"] += 1
                continue
            if all(refused) and str(results[0]) == str(results[1]):
                outcomes["refused by both"] += 1  # the same located error (a bad id, ...)
                continue
            # Otherwise a reader refuses only what the protobuf library refuses as well.
            with pytest.raises(DecodeError):
                History.FromString(damaged)
            outcomes["refused by one"] += 1
    assert outcomes["same frame"] > 0 and outcomes["refused by both"] > 0, outcomes
