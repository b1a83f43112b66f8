"""The protobuf export request written field by field (:mod:`toolkit.traces.otlp_wire`, and its
compiled twin ``toolkit/traces/_otlpwire.c``) is the one the ``opentelemetry-proto`` messages
serialize, byte for byte: on the spans of every lab recording, the public agent histories and
the corpus, and on attribute values of every kind (the ones the messages refuse still raise as
they did)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import toolkit as tk
from toolkit.traces import otlp_wire
from toolkit.traces.otlp import (
    _KIND,
    _STATUS,
    SCOPE,
    _encoded,
    _from_messages,
    _wire_columns,
    otlp_protobuf,
)

trace_service = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
    reason="opentelemetry-proto is the extra 'otel'")  # fmt: skip

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "histories"
FOLDERS = [*sorted(p for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "venvs"),
           ROOT / "tests" / "fixtures" / "agent_histories", CORPUS]  # fmt: skip
RESOURCE = {"service.name": "temporal-agent-toolkit", "openinference.project.name": "lab"}


compiled = pytest.mark.skipif(otlp_wire._otlpwire is None,
                              reason="built without a C compiler: only the Python encoder exists")


def _messages(spans: pd.DataFrame, resource: dict) -> bytes:
    return _from_messages(spans, resource, trace_service.ExportTraceServiceRequest())


def _reference(spans: pd.DataFrame, resource: dict) -> bytes:
    """encode_request's bytes (the Python encoder, the compiled one's reference)."""
    return otlp_wire.encode_request(zip(*_wire_columns(spans), strict=True), resource,
                                    (SCOPE["name"], SCOPE["version"]), _KIND, _STATUS)


def _compiled(spans: pd.DataFrame, resource: dict, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """_encoded's bytes, checked to come from the compiled writer (the reference not called)."""
    def refused(*args: Any) -> bytes:
        raise AssertionError("the compiled writer left these spans to the Python encoder")

    with monkeypatch.context() as patch:
        patch.setattr(otlp_wire, "encode_request", refused)
        return _encoded(spans, resource)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_request_is_the_messages_own_on_recorded_spans(folder: Path) -> None:
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (the shared corpus is not laid out here)")
    events = tk.read_histories(folder, progress=False).events
    for content in (False, True):
        spans = tk.to_otel(events, content=content).spans
        assert len(spans)
        assert _encoded(spans, RESOURCE) == _messages(spans, RESOURCE)
        assert otlp_protobuf(spans, {}) == _messages(spans, {})


def _one_span(attributes: dict, **changes: object) -> pd.DataFrame:
    path = ROOT / "data" / "openai_agents" / "oa-0.22.3" / "two_turns.json"
    spans = tk.to_otel(path).spans.iloc[:3].copy()
    spans.at[spans.index[1], "attributes"] = attributes
    for column, value in changes.items():
        spans.at[spans.index[1], column] = value
    return spans


@pytest.mark.parametrize("attributes", [
    {"s": "", "e": [], "t": (), "n": [[], [1, "a"], (True, 2.5)], "": "no key"},
    {"b": True, "f": False, "i": 0, "neg": -1, "min": -(1 << 63), "max": (1 << 63) - 1},
    {"x": 0.0, "nan": float("nan"), "inf": float("-inf"), "np": np.float64(1.5)},
    {"np_int": np.int64(3), "np_bool": np.bool_(True), "dict": {"a": 1}, "none": None},
    {"text": "ünïcödé \N{SNOWMAN}", "same": 1, "again": True},
])  # fmt: skip
def test_every_kind_of_value_is_written_as_the_messages_write_it(attributes: dict) -> None:
    spans = _one_span(attributes)
    assert _encoded(spans, RESOURCE) == _messages(spans, RESOURCE)
    # a span with no name, an empty status message and an event without attributes
    spans = _one_span(attributes, name="", status_message="", events=[
        {"time": pd.Timestamp(0, tz="UTC"), "name": "", "attributes": {}}])  # fmt: skip
    assert _encoded(spans, RESOURCE) == _messages(spans, RESOURCE)


@pytest.mark.parametrize("attributes", [{"big": 1 << 63}, {"bad": "\ud800"}])
def test_a_value_the_messages_refuse_is_refused_as_before(attributes: dict) -> None:
    spans = _one_span(attributes)
    with pytest.raises(Exception) as expected:
        _messages(spans, RESOURCE)
    with pytest.raises(type(expected.value)):
        otlp_protobuf(spans, RESOURCE)
    before = _one_span({}, start=pd.Timestamp("1969-12-31", tz="UTC"))
    with pytest.raises(ValueError):
        _messages(before, RESOURCE)
    with pytest.raises(ValueError):
        otlp_protobuf(before, RESOURCE)


@compiled
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_compiled_request_is_the_reference_on_recorded_spans(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (the shared corpus is not laid out here)")
    events = tk.read_histories(folder, progress=False).events
    for content in (False, True):
        spans = tk.to_otel(events, content=content).spans
        assert _compiled(spans, RESOURCE, monkeypatch) == _reference(spans, RESOURCE)
        assert _compiled(spans, {}, monkeypatch) == _reference(spans, {})


@compiled
@pytest.mark.parametrize("attributes", [
    {"s": "", "e": [], "t": (), "n": [[], [1, "a"], (True, 2.5)], "": "no key"},
    {"b": True, "f": False, "i": 0, "neg": -1, "min": -(1 << 63), "max": (1 << 63) - 1},
    {"x": 0.0, "-0": -0.0, "nan": float("nan"), "inf": float("-inf"), "tiny": 5e-324},
    {"text": "ünïcödé \N{SNOWMAN} \x00 \U0001F600", "same": 1, "again": True},
])  # fmt: skip
def test_the_compiled_request_writes_every_kind_it_takes(
    attributes: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    for spans in (_one_span(attributes), _one_span(attributes, name="", status_message="",
                                                   parent_span_id="", events=[
            {"time": pd.Timestamp(0, tz="UTC"), "name": "", "attributes": {}}])):  # fmt: skip
        assert _compiled(spans, RESOURCE, monkeypatch) == _reference(spans, RESOURCE)
        assert _compiled(spans, RESOURCE, monkeypatch) == _messages(spans, RESOURCE)


@compiled
@pytest.mark.parametrize("changes", [
    {"attributes": {"np": np.float64(1.5)}}, {"attributes": {"none": None}},
    {"attributes": {"dict": {"a": 1}}}, {"attributes": {"big": 1 << 63}},
    {"attributes": {"bad": "\ud800"}}, {"attributes": {1: "a key no str"}},
    {"trace_id": "AB CD"}, {"span_id": "xyz"}, {"parent_span_id": float("nan")},
    {"name": None}, {"status_message": pd.NA}, {"kind": "NO SUCH KIND"},
    {"start": pd.Timestamp("1969-12-31", tz="UTC")},
])  # fmt: skip
def test_values_the_compiled_request_leaves_are_the_references(changes: dict) -> None:
    spans = _one_span(changes.pop("attributes", {}), **changes)
    columns = _wire_columns(spans)
    attributes, scope = otlp_wire._around(RESOURCE, ("a", "b"), otlp_wire._KeyValues())
    assert otlp_wire._otlpwire.request(attributes, scope, *columns[:-1],
                                       [None] * len(spans), _KIND, _STATUS) is None
    try:
        expected: Any = _reference(spans, RESOURCE)
    except Exception as error:  # the reference refuses it: so does the request, as before
        with pytest.raises(type(error)):
            _encoded(spans, RESOURCE)
    else:
        assert _encoded(spans, RESOURCE) == expected


@compiled
def test_objects_repeated_across_spans_are_written_as_the_reference_writes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The compiled writer copies an attribute's field from where it wrote the same key and value
    # objects before: the same objects over many spans, enough of them that its slots clash.
    rng = random.Random(11)
    pool: list[Any] = [f"text {i} é" * rng.randint(0, 3) for i in range(3000)]
    pool += [rng.randint(-(1 << 63), (1 << 63) - 1) for _ in range(3000)] + [True, False]
    rows = []
    for _ in range(1500):
        picked = rng.sample(pool, 10)
        rows.append({str(picked[i]): picked[(i + 1) % 10] for i in range(6)})
    spans = pd.concat([_one_span(attributes) for attributes in rows[:1]] * 1500,
                      ignore_index=True)  # fmt: skip
    for index, attributes in enumerate(rows):
        spans.at[index, "attributes"] = attributes
    assert _compiled(spans, RESOURCE, monkeypatch) == _reference(spans, RESOURCE)


def test_without_the_compiled_request_the_bytes_are_the_references(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spans = tk.to_otel(ROOT / "data" / "pydantic_ai").spans
    expected = _reference(spans, RESOURCE)
    monkeypatch.setattr(otlp_wire, "_otlpwire", None)
    assert _encoded(spans, RESOURCE) == expected
