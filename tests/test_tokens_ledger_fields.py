"""The ledger's readers (model_io.ledger_fields, model_shapes.LEDGER_READERS) against the full
record (read_model_call / model_call_of_cells): the same framework, agent, model, usage, notes,
requested tools and sizes, on every model call of data/ and the public corpus and on payloads
made odd on purpose (where a full reader raises, or reads half a shape); the fast paths under
them (checked counts, mapping checks, summaries by typed decoders) against their general steps."""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import orjson
import pytest

import toolkit as tk
from toolkit.agents import model_cells, model_records, model_shapes
from toolkit.agents.activity_turns import activity_turns
from toolkit.agents.model_io import (
    ledger_fields,
    ledger_fields_of_cells,
    model_call_of_cells,
    read_model_call,
    summary_of,
)
from toolkit.agents.tokens import _at
from toolkit.histories.columns.lazy import LazyExtra

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agent_histories"


def _full(call: Any) -> tuple[Any, ...]:
    return (call.framework, call.agent, call.model, call.usage, call.notes,
            call.requested_tools, call.input_bytes, call.output_bytes)  # fmt: skip


def _cells(folder: Path) -> list[tuple[Any, ...]]:
    """The cells model_calls_of hands each model call of the histories under ``folder``."""
    frame = tk.read_histories(folder, progress=False).events
    if frame.empty:
        return []
    found = activity_turns(frame, "auto")
    picks = np.flatnonzero((found.spans["role"] == "model").to_numpy())
    scheduled, closing = found.positions["scheduled"][picks], found.positions["closed"][picks]
    return list(zip(
        _at(frame, "input", scheduled), _at(frame, "extra", scheduled),
        _at(frame, "attributes", scheduled), _at(frame, "activity_type", scheduled),
        _at(frame, "event_type", closing), _at(frame, "result", closing),
        _at(frame, "attributes", closing), strict=True,
    ))  # fmt: skip


def _folders(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


@pytest.mark.parametrize("folder", [*_folders(DATA), FIXTURES], ids=lambda p: p.name)
def test_ledger_fields_equal_the_full_record_on_data(folder: Path) -> None:
    calls = _cells(folder)
    # The lazy cells themselves (a copy would be their plain values): the ledger's route reads
    # raw JSON cells off their raw text, and neither route changes a cell's value.
    for cells in calls:
        assert ledger_fields_of_cells(*cells) == _full(model_call_of_cells(*cells))


def test_ledger_fields_equal_the_full_record_on_the_corpus(corpus: Path) -> None:
    count = 0
    for folder in _folders(corpus / "histories"):
        for cells in _cells(folder):
            count += 1
            assert ledger_fields_of_cells(*cells) == _full(model_call_of_cells(*cells))
    assert count  # the public agent histories have model calls


# -- payloads made odd on purpose -------------------------------------------------------------

_OPENAI_IN = {
    "model_name": "gpt-x", "model_settings": {}, "tools": [{"name": "t"}],
    "handoffs": [{"tool_name": "transfer_to_b", "agent_name": "b"}],
    "input": [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "t"},
        {"type": "function_call_output", "call_id": "c1", "output": '{"assistant": "b"}'},
        {"type": "message", "content": [{"type": "output_text", "text": "last words"}]},
    ],
}  # fmt: skip
_OPENAI_OUT = {
    "output": [
        {"type": "function_call", "name": "t", "call_id": "c2"},
        {"type": "function_call", "name": "transfer_to_b", "call_id": "c3"},
        {"type": "mcp_call", "name": "m", "id": "x"}, {"type": "web_search_call", "id": "w"},
        {"type": "message", "content": [{"type": "output_text", "text": "ok"}]}, "junk",
    ],
    "usage": {"requests": 1, "input_tokens": 5, "output_tokens": 2, "total_tokens": 7,
              "input_tokens_details": [{"cached_tokens": 1}],
              "output_tokens_details": {"reasoning_tokens": 0}},
    "model": "answered-model",
}  # fmt: skip
_ADK_IN = {
    "model": "gemini-x",
    "contents": [{"parts": [{"text": "hi"}, {"function_response": {"name": "t", "id": "1"}}]}],
    "config": {"system_instruction": 'You are an agent. Your internal name is "root".',
               "tools": [{"function_declarations": [{"name": "transfer_to_agent"}]},
                         {"google_search": {}}],
               "labels": {"adk_agent_name": "labelled"}},
}  # fmt: skip
_ADK_OUT = [
    {"content": {"parts": [{"text": "x"}]}, "partial": True},
    {"content": {"parts": [{"function_call": {"name": "transfer_to_agent",
                                              "args": {"agent_name": "b"}}},
                           {"text": "y", "thought": True}, {"functionCall": {"name": "t"}}]},
     "usage_metadata": {"prompt_token_count": 3, "candidates_token_count": 1,
                        "total_token_count": 4},
     "model_version": "v1"},
]  # fmt: skip
_PYDANTIC_IN = {
    "messages": [{"kind": "request", "parts": [
        {"part_kind": "tool-return", "tool_name": "t", "tool_call_id": "1"}]}],
    "model_request_parameters": {"function_tools": [{"name": "t"}], "native_tools": [{}]},
}  # fmt: skip
_PYDANTIC_OUT = {
    "kind": "response", "model_name": "pm",
    "parts": [{"part_kind": "tool-call", "tool_name": "t", "tool_call_id": "9"},
              {"part_kind": "builtin-tool-call", "tool_name": "web"}, {"part_kind": "text"}],
    "usage": {"input_tokens": 4, "output_tokens": 6, "cache_read_tokens": 1,
              "details": {"reasoning_tokens": 2}},
}  # fmt: skip


def _variants() -> list[tuple[str, Any, Any, Any, Any]]:
    """(name, input, result, activity_type, summary): the shapes above and odd versions."""
    out: list[tuple[str, Any, Any, Any, Any]] = []

    def add(name: str, inp: Any, res: Any, activity: Any = "model", summary: Any = None) -> None:
        out.append((name, inp, res, activity, summary))

    for summary in (None, "", "agent_a", "last words", 5):
        add(f"openai summary={summary!r}", [_OPENAI_IN], [_OPENAI_OUT], summary=summary)
    add("openai no result", [_OPENAI_IN], None, summary="a")
    add("openai streaming", [_OPENAI_IN], [[{"type": "response.created"},
        {"type": "response.completed", "response": _OPENAI_OUT}]])  # fmt: skip
    add("openai streaming without completion", [_OPENAI_IN], [[{"type": "response.created"}]])
    unhashable = copy.deepcopy(_OPENAI_IN)
    unhashable["input"][1]["call_id"] = ["a", "list"]
    add("openai unhashable call id", [unhashable], [_OPENAI_OUT])
    output_unhashable = copy.deepcopy(_OPENAI_IN)
    output_unhashable["input"][2]["call_id"] = {"a": 1}
    add("openai unhashable output call id", [output_unhashable], [_OPENAI_OUT], summary="")
    add("openai result no response", [_OPENAI_IN], ["text"])
    add("openai sdk default usage", [_OPENAI_IN], [{**_OPENAI_OUT, "usage": {
        "requests": 0, "input_tokens": 0, "output_tokens": 0, "total_tokens": 0}}])  # fmt: skip
    add("openai malformed usage", [_OPENAI_IN], [{**_OPENAI_OUT, "usage": {
        "input_tokens": -1, "output_tokens": True, "total_tokens": "3"}}])  # fmt: skip
    add("openai input items a string", [{**_OPENAI_IN, "input": "just text"}], [_OPENAI_OUT],
        summary="just text")  # fmt: skip
    add("openai model from the response", [{**_OPENAI_IN, "model_name": ""}], [_OPENAI_OUT])
    add("openai input not a mapping, response one", ["text"], [_OPENAI_OUT])
    for summary in (None, "s"):
        add(f"adk summary={summary!r}", [_ADK_IN], [_ADK_OUT], summary=summary)
    no_label = copy.deepcopy(_ADK_IN)
    del no_label["config"]["labels"]
    add("adk identity", [no_label], [_ADK_OUT])
    del no_label["config"]["system_instruction"]
    add("adk summary agent", [no_label], [_ADK_OUT], summary="from summary")
    add("adk camelCase", [{"Model": "m", "Contents": [], "Config": {"Labels": {
        "adkAgentName": "camel"}}}], [{"Content": {"Parts": []}, "UsageMetadata": {
        "PromptTokenCount": 1}}])  # fmt: skip
    add("adk llm_request", [{"llm_request": _ADK_IN}], [_ADK_OUT])
    add("adk empty llm_request", [{"llm_request": {}, **_ADK_IN}], [_ADK_OUT])
    add("adk one response", [_ADK_IN], [_ADK_OUT[1]])
    add("adk no usage", [_ADK_IN], [[{"content": {"parts": []}}]])
    add("adk empty result list", [_ADK_IN], [[]])
    add("adk result a string", [_ADK_IN], ["no"])
    add("adk no result", [_ADK_IN], None)
    add("adk all partial", [_ADK_IN], [[{**_ADK_OUT[1], "partial": True}]])
    add("adk config not a mapping", [{**_ADK_IN, "config": [1]}], [_ADK_OUT])
    for activity in ("agent__helper__model_request", "agent__x__model_request_stream", "other",
                     None, 5):  # fmt: skip
        add(f"pydantic activity={activity!r}", [_PYDANTIC_IN, None], [_PYDANTIC_OUT], activity,
            "request model: gpt-z (stream)")  # fmt: skip
    add("pydantic no params", [{**_PYDANTIC_IN, "model_request_parameters": None}],
        [_PYDANTIC_OUT])  # fmt: skip
    add("pydantic no usage", [_PYDANTIC_IN], [{**_PYDANTIC_OUT, "usage": None}])
    add("pydantic legacy usage", [_PYDANTIC_IN], [{**_PYDANTIC_OUT, "usage": {
        "request_tokens": 1, "response_tokens": 2, "output_reasoning_tokens": 1}}])  # fmt: skip
    add("pydantic no result", [_PYDANTIC_IN], None)
    add("pydantic result only", None, [_PYDANTIC_OUT])
    add("go twin", [{"agent": "g", "contents": [], "tools": ["a"]}], [{"text": "x"}])
    add("gemini", None, [{"candidates": [{"content": {"parts": [{"text": "x"}]}}]}])
    add("unknown", [{"x": 1}], [{"y": 2}])
    add("nothing", None, None)
    return out


@pytest.mark.parametrize("case", _variants(), ids=lambda case: case[0])
def test_ledger_fields_equal_the_full_record_on_odd_payloads(case: tuple[Any, ...]) -> None:
    _, inp, res, activity, summary = case
    full = read_model_call(copy.deepcopy(inp), copy.deepcopy(res), activity_type=activity,
                           summary=summary, input_bytes=3, output_bytes=4)  # fmt: skip
    assert ledger_fields(copy.deepcopy(inp), copy.deepcopy(res), activity, summary, 3, 4) == (
        _full(full))  # fmt: skip


# -- the fast paths under the ledger's readers ------------------------------------------------


class _IntSubclass(int):
    pass


@pytest.mark.parametrize("value", [None, 0, 7, 2**70, -1, True, False, 1.0, "3", [1],
                                   _IntSubclass(4), _IntSubclass(-4)])  # fmt: skip
def test_checked_usage_of_common_counts_equals_its_general_steps(value: Any) -> None:
    values = {"input_tokens": value, "output_tokens": 2, "total_tokens": None}
    general = dict.fromkeys(model_records._TOKEN_FIELDS)
    bad = []
    for name in model_records._TOKEN_FIELDS:
        count = values.get(name)
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                  or count < 0):  # fmt: skip
            bad.append(f"{name}={count!r}")
        else:
            general[name] = count
    note = "malformed usage: " + ", ".join(bad) if bad else None
    found = model_records.checked_usage(values)
    assert found == model_records.Usage(**general, note=note)
    assert type(found.input_tokens) is type(general["input_tokens"])


_KINDS = [{}, {"a": 1}, OrderedDict(a=1), MappingProxyType({}), [], (), "s", b"b", 1, 1.5, True,
          None, _IntSubclass(1), {1}]  # fmt: skip


@pytest.mark.parametrize("value", _KINDS, ids=repr)
def test_mapping_is_isinstance_mapping(value: Any) -> None:
    assert model_shapes._mapping(value) is isinstance(value, Mapping)


def test_mapping_of_lazy_cells_is_isinstance_mapping() -> None:
    frame = tk.read_histories(FIXTURES, progress=False).events
    cells = [c for c in frame["attributes"].head(5)] + [c for c in frame["input"].head(5)]
    assert [model_shapes._mapping(c) for c in cells] == [isinstance(c, Mapping) for c in cells]


class _Events:
    """A raw JSON history of the given events (what a LazyExtra reads its event off)."""

    def __init__(self, events: list[bytes]) -> None:
        self.json_events = events


def _summary_payload(data: Any) -> dict[str, Any]:
    return {"metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": data}


_SUMMARIES: list[Any] = [
    {"summary": _summary_payload("ImFnZW50Ig==")},
    {"summary": _summary_payload("ImFnZW50Ig=="), "details": _summary_payload("e30=")},
    {"details": _summary_payload("e30=")}, {}, None, {"summary": None},
    {"Summary": _summary_payload("ImFnZW50Ig==")},
    {"summary": {"metadata": {"encoding": "YmluYXJ5L251bGw="}}},
    {"summary": {"metadata": {"encoding": "YmluYXJ5L3BsYWlu"}, "data": "AAE="}},
    {"summary": _summary_payload("bm90IGpzb24=")},  # "not json": its text
    {"summary": _summary_payload("ImF gZW50Ig==")},  # base64 the strict decoder refuses
    {"summary": _summary_payload(5)},
    {"summary": {**_summary_payload("ImFnZW50Ig=="), "externalPayloads": []}},
    {"summary": {"metadata": {"encoding": "anNvbi9wbGFpbg==", "x": "y"}, "data": "MQ=="}},
    {"summary": "a string"}, [1],
]  # fmt: skip


@pytest.mark.parametrize("metadata", _SUMMARIES, ids=repr)
@pytest.mark.parametrize("key", ["userMetadata", "user_metadata", None])
def test_summaries_read_by_typed_decoders_equal_the_general_steps(
    metadata: Any, key: str | None
) -> None:
    event: dict[str, Any] = {"eventId": "1", "eventType": "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"}
    if key is not None:
        event[key] = metadata
    event["activityTaskScheduledEventAttributes"] = {"input": {"payloads": []}}
    extra = LazyExtra(_Events([orjson.dumps(event)]), 0, "activityTaskScheduledEventAttributes")
    general = model_shapes.get_field(extra.value, "userMetadata", "user_metadata")
    summary = model_shapes.get_field(general, "summary")
    if isinstance(summary, Mapping):
        summary = model_cells.payload_value(summary)
    assert summary_of(extra) == summary
    read, found = model_cells.raw_summary(extra)
    if read:
        assert found == summary and type(found) is type(summary)
    # Where the compiled decoder is built, the usual summaries take the typed route.
    usual = key == "userMetadata" and any(metadata is _SUMMARIES[i] for i in (0, 1, 2, 3, 7, 9))
    assert read is (usual and model_cells._cellscan is not None)


def _usage_by_spellings(kind: str, usage: Any) -> Any:
    """_openai_usage / _genai_usage as written before: every count looked up by get_field."""
    get = model_shapes.get_field
    if kind == "genai":
        return model_records.checked_usage({
            "input_tokens": get(usage, "prompt_token_count"),
            "output_tokens": get(usage, "candidates_token_count"),
            "cached_input_tokens": get(usage, "cached_content_token_count"),
            "reasoning_tokens": get(usage, "thoughts_token_count"),
            "total_tokens": get(usage, "total_token_count"),
        })  # fmt: skip

    def count(name: str) -> Any:
        value = get(usage, name)
        return value[0] if isinstance(value, list) and len(value) == 1 else value

    values = {"input_tokens": get(usage, "input_tokens"),
              "output_tokens": get(usage, "output_tokens"),
              "cached_input_tokens": get(count("input_tokens_details"), "cached_tokens"),
              "reasoning_tokens": get(count("output_tokens_details"), "reasoning_tokens"),
              "total_tokens": get(usage, "total_tokens")}  # fmt: skip
    counts = [v for v in values.values() if v is not None]
    if usage.get("requests") == 0 and counts and not any(counts):
        return "sdk default"
    return model_records.checked_usage(values)


_OPENAI_USAGES = [
    {"requests": 1, "input_tokens": 5, "output_tokens": 2, "total_tokens": 7,
     "input_tokens_details": {"cached_tokens": 1}, "output_tokens_details": {"reasoning_tokens": 3},
     "request_usage_entries": []},
    {"input_tokens": 5, "input_tokens_details": [{"cached_tokens": 2}]},
    {"inputTokens": 5, "outputTokens": 1, "input_tokens_details": {"cachedTokens": 4}},
    {"input_tokens": 5, "InputTokens": 6, "output_tokens_details": [{"reasoning_tokens": 1}, {}]},
    {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 1, "CachedTokens": 9}},
    {"input_tokens": 1, "input_tokens_details": None, "output_tokens_details": "x"},
    {"requests": 0, "input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
    {"input-tokens": 3, "total_tokens": True}, {}, {1: 2, "input_tokens": 4},
]  # fmt: skip
_GENAI_USAGES = [
    {"prompt_token_count": 3, "candidates_token_count": 1, "total_token_count": 4,
     "traffic_type": "ON_DEMAND", "prompt_tokens_details": [{"modality": "TEXT"}]},
    {"promptTokenCount": 3, "thoughtsTokenCount": 2},
    {"prompt_token_count": 3, "PromptTokenCount": 4, "cached_content_token_count": -1},
    {"PromptTokenCount": 5, "CandidatesTokenCount": 6}, {}, {"prompt_token_count": 1.5},
]  # fmt: skip


def test_usage_fields_are_no_two_alike_normalised() -> None:
    for fields in (model_shapes._OPENAI_USAGE_FIELDS, model_shapes._GENAI_USAGE_FIELDS):
        assert len({model_shapes._normal(f) for f in fields}) == len(fields)


@pytest.mark.parametrize("usage", _OPENAI_USAGES, ids=repr)
def test_openai_usage_read_by_get_equals_the_lookup_by_spellings(usage: Any) -> None:
    found = model_shapes._openai_usage(usage)
    expected = _usage_by_spellings("openai", usage)
    assert found == expected or (expected == "sdk default" and "empty default" in found.note)


@pytest.mark.parametrize("usage", _GENAI_USAGES, ids=repr)
def test_genai_usage_read_by_get_equals_the_lookup_by_spellings(usage: Any) -> None:
    assert model_shapes._genai_usage(usage) == _usage_by_spellings("genai", usage)
