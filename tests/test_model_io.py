"""``toolkit.agents.model_io``: what each model call was offered and answered, read from the
payloads of real histories: the public test histories of temporalio's OpenAI Agents and ADK
integrations (``tests/fixtures/agent_histories``, sources in its SOURCES.md) and every lab
recording in ``data/``; cross-checked against the raw JSON of the files and against the tool
activities that follow each call."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import History
from temporalio.converter import PayloadCodec

from toolkit.agents.model_io import (
    FRAMEWORKS,
    ModelCall,
    model_call_of_events,
    payload_bytes,
    read_model_call,
    response_shape,
)
from toolkit.agents.roles import detect_roles
from toolkit.histories.reading.read import read_history

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ROOT / "tests" / "fixtures" / "agent_histories"
DATA = ROOT / "data"
#: Lab recordings of agents, by the framework whose payloads they hold.
LAB = {
    "python_adk": [*sorted(DATA.glob("adk/*/*.json")),
                   *sorted(DATA.glob("duplicate_tool/python/*.json"))],
    "openai_agents": sorted(DATA.glob("openai_agents/*/*.json")),
    "pydantic_ai": sorted(DATA.glob("pydantic_ai/*/*.json")),
    "go_twin": sorted(DATA.glob("go_twin/*/*.json")),
}
_CLOSED = ("ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut",
           "ActivityTaskCanceled")  # fmt: skip


def _histories(paths: list[Path]) -> list[Path]:
    return [p for p in paths if not p.name.endswith(".meta.json")]


def model_calls(path: Path | bytes, **read: Any) -> list[tuple[dict[str, Any], ModelCall]]:
    """(scheduled event, record) of every model activity of a history, in order."""
    events = read_history(path, **read)
    records = events.to_dict("records")
    closes = {r["scheduled_event_id"]: r for r in records if r["event_type"] in _CLOSED}
    roles = detect_roles(events["activity_type"].dropna().unique())
    assert roles is not None
    return [
        (r, model_call_of_events(r, closes.get(r["event_id"])))
        for r in records
        if r["event_type"] == "ActivityTaskScheduled"
        and roles.role_of(r["activity_type"]) == "model"
    ]


def _raw_results(path: Path) -> dict[int, Any]:
    """Each completed activity's first result value, decoded from the file with json + base64
    only (scheduled event id -> value)."""
    out = {}
    for event in json.loads(path.read_text())["events"]:
        done = event.get("activityTaskCompletedEventAttributes")
        if done and done.get("result"):
            data = done["result"]["payloads"][0]["data"]
            out[int(done["scheduledEventId"])] = json.loads(base64.b64decode(data))
    return out


# -- the public histories ---------------------------------------------------------------------


def test_openai_agents_function_tool_run_as_an_activity() -> None:
    calls = model_calls(PUBLIC / "tools-workflow-history.json")
    assert [c.framework for _, c in calls] == ["openai_agents", "openai_agents"]
    first, second = (c for _, c in calls)
    assert first.declared_tools == ("get_weather",)
    assert [(r.name, r.call_id, r.kind) for r in first.requested] == [
        ("get_weather", "call", "function")]
    assert second.requested == () and second.output_texts == 1
    assert [(t.name, t.call_id) for t in second.tool_results] == [("get_weather", "call")]
    # The test model reports no usage: the SDK's empty Usage(), not a count of 0 tokens.
    assert first.usage.input_tokens is None and "requests 0" in first.usage.note
    assert first.notes == () and first.input_items == 1


def test_openai_agents_handoff_names_the_next_agent() -> None:
    calls = [c for _, c in model_calls(PUBLIC / "customer-service-workflow-history.json")]
    triage, handing, seat, _, asking, answered = calls
    assert triage.declared_tools == ("transfer_to_faq_agent", "transfer_to_seat_booking_agent")
    assert triage.handoff_tools["transfer_to_seat_booking_agent"] == "Seat Booking Agent"
    assert handing.requested_tools == ["transfer_to_seat_booking_agent"]
    assert handing.handoff == "Seat Booking Agent" and handing.requested[0].kind == "handoff"
    # The seat booking agent: named by the handoff's output in its input ({"assistant": ...}).
    assert (seat.agent, seat.agent_source) == ("Seat Booking Agent", "handoff_output")
    assert seat.declared_tools == ("update_seat", "transfer_to_triage_agent")
    assert asking.requested_tools == ["update_seat"] and asking.handoff is None
    # Every call id is "call" here: each output answers the latest call of its id.
    assert [t.name for t in answered.tool_results] == [
        "transfer_to_seat_booking_agent", "update_seat"]
    # temporalio 1.13 put the last user message in the summary: not taken for an agent name.
    assert triage.agent is None


def test_openai_agents_usage_matches_the_raw_results() -> None:
    path = PUBLIC / "input-guardrail-workflow-history.json"
    raw = _raw_results(path)
    calls = model_calls(path)
    completed = [(e, c) for e, c in calls if e["event_id"] in raw]
    assert len(completed) == 3 and len(calls) == 4
    for event, call in completed:
        usage = raw[event["event_id"]]["usage"]
        assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.total_tokens) == (
            usage["input_tokens"], usage["output_tokens"], usage["total_tokens"])
        assert call.usage.cached_input_tokens == usage["input_tokens_details"]["cached_tokens"]
        assert call.usage.note is None and call.output_bytes > 0
    open_call = next(c for e, c in calls if e["event_id"] not in raw)
    assert open_call.requested is None and open_call.usage.note.startswith("no result")
    assert open_call.output_bytes is None and open_call.input_bytes > 0


def test_openai_agents_agent_as_tool() -> None:
    calls = [c for _, c in model_calls(PUBLIC / "agents-as-tools-workflow-history.json")]
    orchestrator, spanish, after, _ = calls
    assert orchestrator.requested_tools == ["translate_to_spanish"]
    assert spanish.declared_tools == () and spanish.output_texts == 1
    assert [t.name for t in after.tool_results] == ["translate_to_spanish"]


def test_adk_public_histories() -> None:
    single = [c for _, c in model_calls(PUBLIC / "single_agent.json")]
    assert [c.framework for c in single] == ["python_adk"] * 2
    assert single[0].declared_tools == ("get_weather",)
    assert single[0].requested_tools == ["get_weather"]
    assert (single[0].agent, single[0].model) == ("test_agent", "weather_model")
    assert [t.name for t in single[1].tool_results] == ["get_weather"]
    assert single[0].usage.input_tokens is None and "usage_metadata" in single[0].usage.note
    multi = [c for _, c in model_calls(PUBLIC / "multi_agent.json")]
    assert [c.agent for c in multi] == ["coordinator", "researcher", "writer"]
    assert [c.handoff for c in multi] == ["researcher", "writer", None]
    assert all(c.declared_tools == ("transfer_to_agent",) for c in multi)


# -- every lab recording ----------------------------------------------------------------------

_TOOL_NAME_KEYS = ("name", "tool_name")


def _tool_call_names(records: list[dict[str, Any]], roles: Any) -> list[str]:
    """Names the MCP tool-call activities of a history say they call."""
    names = []
    for r in records:
        scheduled = r["event_type"] == "ActivityTaskScheduled"
        if scheduled and roles.role_of(r["activity_type"]) == "tool_call":
            arguments = r["input"][0]
            names.append(next(arguments[k] for k in _TOOL_NAME_KEYS if k in arguments))
    return names


@pytest.mark.parametrize("framework", sorted(LAB))
def test_every_lab_model_call_is_read(framework: str) -> None:
    paths = _histories(LAB[framework])
    assert paths, f"no {framework} recordings"
    seen = requested = 0
    not_run: dict[str, Counter[str]] = {}
    for path in paths:
        events = read_history(path)
        roles = detect_roles(events["activity_type"].dropna().unique())
        asked: Counter[str] = Counter()
        for event, call in model_calls(path):
            seen += 1
            where = f"{path} event {event['event_id']}"
            assert call.framework == framework and call.notes == (), where
            assert call.declared_tools, where
            assert call.agent is not None and call.input_bytes > 0, where
            if call.requested is not None:
                # The model asks only for what it was offered.
                assert set(call.requested_tools) <= set(call.declared_tools), where
                asked.update(call.requested_tools)
                requested += bool(call.requested)
        # What the models asked for is what the MCP call activities call (parallel branches
        # interleave their steps, so the whole history is compared).
        ran = Counter(_tool_call_names(events.to_dict("records"), roles))
        if ran != asked:
            assert ran < asked, path
            not_run[path.stem] = asked - ran
    assert seen > 0 and requested > 0
    # Only a tool the ToolFilter excluded while it awaited approval was asked for and never run.
    excluded = {"confirmation_excluded": Counter(["lookup_order"])}
    assert not_run == (excluded if framework == "go_twin" else {})


def test_pydantic_ai_usage_matches_the_raw_results() -> None:
    checked = 0
    for path in _histories(LAB["pydantic_ai"]):
        raw = _raw_results(path)
        for event, call in model_calls(path):
            if event["event_id"] not in raw:
                continue
            usage = raw[event["event_id"]]["usage"]
            assert call.usage.input_tokens == usage["input_tokens"]
            assert call.usage.output_tokens == usage["output_tokens"]
            assert call.usage.total_tokens == usage["input_tokens"] + usage["output_tokens"]
            assert call.usage.cached_input_tokens == usage["cache_read_tokens"]
            assert call.usage.reasoning_tokens == usage.get("output_reasoning_tokens")
            assert call.model == raw[event["event_id"]]["model_name"]
            checked += 1
    assert checked > 20


def test_two_toolsets_on_one_endpoint_declare_each_tool_twice() -> None:
    """ADK sends both toolsets' declarations in one request, in every release recorded (2.7 and
    later log that one shadows the other, yet both are declared)."""
    paths = [*sorted(DATA.glob("adk/*/two_toolsets.json")),
             DATA / "duplicate_tool/python/two_toolsets.json"]
    for path in paths:
        for _, call in model_calls(path):
            counts = Counter(call.declared_tools)
            assert counts == {"get_weather": 2, "add": 2, "lookup_order": 2}, path
    # One toolset of a server advertising every tool twice, in OpenAI Agents 0.17.8 (later
    # releases reject the listing before any model call).
    calls = model_calls(DATA / "openai_agents/oa-0.17.8/list_twice.json")
    assert calls and all(Counter(c.declared_tools)["get_weather"] == 2 for _, c in calls)


# -- other encodings of the same payloads -----------------------------------------------------


def test_binary_history_reads_the_same(tmp_path: Path) -> None:
    source = PUBLIC / "customer-service-workflow-history.json"
    history = json_format.Parse(source.read_text(), History(), ignore_unknown_fields=True)
    binary = tmp_path / "customer-service.binpb"
    binary.write_bytes(history.SerializeToString())
    from_json = [c for _, c in model_calls(source)]
    assert [c for _, c in model_calls(binary)] == from_json


class ReversingCodec(PayloadCodec):
    """Reverses the serialized payload (a stand-in for encryption)."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [Payload(metadata={"encoding": b"binary/encrypted"},
                        data=p.SerializeToString()[::-1]) for p in payloads]  # fmt: skip

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [Payload.FromString(p.data[::-1]) for p in payloads]


def _encrypted(path: Path) -> bytes:
    """The history with every payload of its activities encoded by :class:`ReversingCodec`."""
    history = json.loads(path.read_text())
    for event in history["events"]:
        for key in ("activityTaskScheduledEventAttributes", "activityTaskCompletedEventAttributes"):
            holder = event.get(key, {})
            field_name = "input" if "Scheduled" in key else "result"
            if field_name in holder:
                for item in holder[field_name]["payloads"]:
                    plain = json_format.ParseDict(item, Payload())
                    item.clear()
                    item.update(json_format.MessageToDict(Payload(
                        metadata={"encoding": b"binary/encrypted"},
                        data=plain.SerializeToString()[::-1])))
    return json.dumps(history).encode()


def test_encrypted_payloads_stay_opaque_unless_a_codec_is_given() -> None:
    source = PUBLIC / "tools-workflow-history.json"
    encrypted = _encrypted(source)
    opaque = [c for _, c in model_calls(encrypted)]
    assert all(c.framework is None and c.declared_tools is None for c in opaque)
    assert "binary/encrypted" in opaque[0].notes[0] and "codec=" in opaque[0].notes[0]
    decoded = [c for _, c in model_calls(encrypted, codec=ReversingCodec())]
    plain = [c for _, c in model_calls(source)]
    assert [c.requested for c in decoded] == [c.requested for c in plain]
    assert [c.declared_tools for c in decoded] == [c.declared_tools for c in plain]


# -- bad input --------------------------------------------------------------------------------


def test_malformed_usage_is_none_with_the_reason() -> None:
    path = PUBLIC / "input-guardrail-workflow-history.json"
    event, _ = model_calls(path)[0]
    result = _raw_results(path)[event["event_id"]]
    result["usage"]["input_tokens"] = "many"
    result["usage"]["output_tokens"] = -3
    call = read_model_call(event["input"], [result])
    assert call.usage.input_tokens is None and call.usage.output_tokens is None
    assert "input_tokens='many'" in call.usage.note and "output_tokens=-3" in call.usage.note
    assert call.usage.total_tokens == result["usage"]["total_tokens"]
    # No usage at all: None and why.
    del result["usage"]
    assert read_model_call(event["input"], [result]).usage.note == "the result carries no usage"


def test_unknown_payloads_give_a_note_not_an_error() -> None:
    events = read_history(DATA / "gallery/activity-renamed/v1.json")
    scheduled = events[events["event_type"] == "ActivityTaskScheduled"].to_dict("records")[0]
    call = model_call_of_events(scheduled)
    assert call.framework is None and call.declared_tools is None and call.requested is None
    assert all(name in call.notes[0] for name in FRAMEWORKS)
    assert read_model_call(None, None).notes and read_model_call("text", 3).framework is None


# -- shapes built by the frameworks' own types ------------------------------------------------


def _through_converter(value: Any) -> list[Any]:
    """``value`` as temporalio's pydantic data converter writes it into a history, decoded back
    as the events frame decodes payloads."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    from toolkit.histories.payloads import decode_payloads

    payloads = pydantic_data_converter.payload_converter.to_payloads([value])
    return decode_payloads({"payloads": [json_format.MessageToDict(p) for p in payloads]})


def test_adk_usage_and_streaming_input_from_adk_types() -> None:
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
    from temporalio.google_adk._model import StreamingInvokeInput

    declaration = types.FunctionDeclaration(name="get_weather", description="weather")
    request = LlmRequest(
        model="gemini-x",
        contents=[types.Content(role="user", parts=[types.Part(text="Paris?")])],
        config=types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration]),
                                                  types.Tool(google_search=types.GoogleSearch())],
                                           labels={"adk_agent_name": "weather_agent"}),
    )  # fmt: skip
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=120, candidates_token_count=7, cached_content_token_count=100,
        thoughts_token_count=30, total_token_count=157)  # fmt: skip
    call = types.FunctionCall(name="get_weather", args={"city": "Paris"}, id="fc-1")
    responses = [
        LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Let")]),
                    partial=True),
        LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]),
                    usage_metadata=usage),
    ]  # fmt: skip
    streaming = StreamingInvokeInput(llm_request=request, streaming_topic="t",
                                     streaming_batch_interval=timedelta(milliseconds=100))
    for given in (request, streaming):
        read = read_model_call(_through_converter(given), _through_converter(responses),
                               activity_type="invoke_model_streaming")
        assert read.framework == "python_adk" and read.notes == ()
        assert read.declared_tools == ("get_weather", "google_search")
        assert (read.agent, read.agent_source) == ("weather_agent", "labels")
        assert read.model == "gemini-x"
        assert [(r.name, r.call_id) for r in read.requested] == [("get_weather", "fc-1")]
        assert read.usage.input_tokens == 120 and read.usage.cached_input_tokens == 100
        assert read.usage.reasoning_tokens == 30 and read.usage.total_tokens == 157
        assert read.output_texts == 0  # the partial chunk's text is not the answer


def test_gemini_response_recognised_by_its_shape() -> None:
    from google.genai import types

    response = types.GenerateContentResponse(
        candidates=[types.Candidate(content=types.Content(role="model", parts=[
            types.Part(function_call=types.FunctionCall(name="lookup_order", args={}))]))],
        usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=9,
                                                                  candidates_token_count=2),
        model_version="gemini-2.5-flash",
    )  # fmt: skip
    result = _through_converter(response)
    assert response_shape(result) == "gemini"
    read = read_model_call(None, result)
    assert read.requested_tools == ["lookup_order"] and read.model == "gemini-2.5-flash"
    usage = read.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (9, 2, None)


def test_payload_bytes_counts_the_data() -> None:
    data = base64.b64encode(b'{"a": 1}').decode()
    assert payload_bytes({"payloads": [{"metadata": {}, "data": data}] * 2}) == 16
    assert payload_bytes(None) is None and payload_bytes({}) is None
    decoded = {"payloads": [{"metadata": {"encoding": "json/plain"}, "data": "abc"}]}
    assert payload_bytes(decoded) == 3
