"""The protobuf export request written field by field (:mod:`toolkit.traces.otlp_wire`) is the
one the ``opentelemetry-proto`` messages serialize, byte for byte: on the spans of every lab
recording, the public agent histories and the corpus, and on attribute values of every kind
(the ones the messages refuse still raise as they did)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import toolkit as tk
from toolkit.traces.otlp import _encoded, _from_messages, otlp_protobuf

trace_service = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
    reason="opentelemetry-proto is the extra 'otel'")  # fmt: skip

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "histories"
FOLDERS = [*sorted(p for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "venvs"),
           ROOT / "tests" / "fixtures" / "agent_histories", CORPUS]  # fmt: skip
RESOURCE = {"service.name": "temporal-agent-toolkit", "openinference.project.name": "lab"}


def _messages(spans: pd.DataFrame, resource: dict) -> bytes:
    return _from_messages(spans, resource, trace_service.ExportTraceServiceRequest())


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
