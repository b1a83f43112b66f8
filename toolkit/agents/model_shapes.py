"""Per-framework readers of model-call payloads, behind ``model_io.read_model_call``.

Each reader takes the request (the first mapping among the activity's input values), the
response (the result's value) and a :class:`Context`, and returns the :class:`ModelCall` fields
it could read. They are written from each framework's source (named in
:mod:`toolkit.agents.model_io`); a field a reader cannot find stays unset.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson

from toolkit.agents.model_records import ToolRequest, ToolResult, Usage, usage_of_counts

__all__ = ["FRAMEWORKS", "LEDGER_READERS", "READERS", "Context", "LedgerFields", "get_field",
           "input_shape", "response_shape"]

_NORM = re.compile(r"[_\-]")


#: Spellings seen, normalised (keys repeat across payloads: each is normalised once).
_NORMAL: dict[str, str] = {}
_WANTED: dict[tuple[str, ...], frozenset[str]] = {}


def _normal(key: str) -> str:
    found = _NORMAL.get(key)
    if found is None:
        found = _NORM.sub("", key).lower()
        if len(_NORMAL) < 65536:  # payload keys are field names; a bound all the same
            _NORMAL[key] = found
    return found


def get_field(mapping: Any, *names: str) -> Any:
    """``mapping[name]`` for the first name present, spelt snake_case, camelCase or PascalCase
    (pydantic by alias, Go's field names); None when absent or not a mapping."""
    if type(mapping) is not dict and not isinstance(mapping, Mapping):
        return None
    for name in names:
        if name in mapping:
            return mapping[name]
    wanted = _WANTED.get(names)
    if wanted is None:
        wanted = _WANTED[names] = frozenset(_normal(n) for n in names)
    known = _NORMAL
    for key, value in mapping.items():  # _normal inlined: most lookups end here, every key read
        if type(key) is str or isinstance(key, str):
            normal = known.get(key)
            if (normal if normal is not None else _normal(key)) in wanted:
                return value
    return None


#: Exact types of decoded JSON that are no mappings: :func:`_mapping` answers for them (and for
#: dict) without the ABC's ``__instancecheck__``, a Python call.
_NOT_MAPPINGS = frozenset({list, str, int, float, bool, type(None)})


try:  # the ledger's partial decode (setup.py builds it where a C compiler is present)
    from toolkit.agents._ledgerjson import UnreadObject as _UnreadObject
except ImportError:  # pragma: no cover - depends on the install
    _UnreadObject = None


def _mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``; True for the stand-in of a JSON object the ledger's
    partial decode left unread (:mod:`toolkit.agents.model_cells`: the dict it stands for is
    one), which the ledger's readers check so without decoding it (pydantic-ai's
    ``model_request_parameters``); any other use of a stand-in asks for the whole decode."""
    kind = type(value)
    return kind is dict or (kind not in _NOT_MAPPINGS
                            and (kind is _UnreadObject or isinstance(value, Mapping)))


def _list(value: Any) -> list[Any]:
    """``value`` as a list when it is a sequence of items (not a string), else empty."""
    if type(value) is list:  # decoded JSON: no ABC check
        return list(value)
    if value is None:  # a field get_field did not find: no ABC check either
        return []
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    return []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# -- OpenAI Agents ----------------------------------------------------------------------------


def _openai_tool_name(tool: Mapping[str, Any]) -> str:
    """Name of one ``ToolInput``: function/shell/apply-patch tools carry one; hosted tools are
    dataclasses of the Agents SDK without it, named by their ``tool_config`` or fields."""
    name = _str(tool.get("name"))
    if name:
        return name
    config = tool.get("tool_config")
    if isinstance(config, Mapping):
        return _str(config.get("name")) or _str(config.get("server_label")) or str(
            config.get("type") or "hosted_tool"
        )
    if "vector_store_ids" in tool:
        return "file_search"
    if "search_context_size" in tool or "user_location" in tool:
        return "web_search"
    return "hosted_tool"


def _last_message_text(items: Any) -> Any:
    """What temporalio < 1.16 put in a model activity's summary: the last message's content (a
    text part's text), cut to 100 characters."""
    if isinstance(items, str):
        return items[:100]
    messages = [i for i in _list(items) if _mapping(i)
                and i.get("type", "message") == "message"]  # fmt: skip
    if not messages:
        return None
    content = messages[-1].get("content", "")
    if isinstance(content, list) and content:
        last = content[-1]
        content = last.get("text") if _mapping(last) and "text" in last else content
    return content[:100] if isinstance(content, str) else content


def _handoff_answer(item: Mapping[str, Any]) -> str | None:
    """The agent named by a handoff's output (the SDK writes ``{"assistant": <name>}``)."""
    output = item.get("output")
    if isinstance(output, str) and output.startswith("{"):
        try:
            output = orjson.loads(output)
        except orjson.JSONDecodeError:
            return None
    if _mapping(output) and set(output) == {"assistant"}:
        return _str(output["assistant"])
    return None


def _openai_output(items: list[Any], handoffs: Mapping[str, str | None]) -> tuple:
    requested, texts = [], 0
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call"):
            name = str(item.get("name"))
            is_handoff = name in handoffs
            requested.append(ToolRequest(name, _str(item.get("call_id")),
                                         "handoff" if is_handoff else "function",
                                         handoffs.get(name) if is_handoff else None))  # fmt: skip
        elif kind == "mcp_call":
            requested.append(ToolRequest(str(item.get("name")), _str(item.get("id")), "hosted"))
        elif isinstance(kind, str) and kind.endswith("_call"):
            requested.append(ToolRequest(kind.removesuffix("_call"), _str(item.get("id")),
                                         "hosted"))  # fmt: skip
        elif kind == "message":
            texts += sum(isinstance(c, Mapping) and c.get("type") == "output_text"
                         for c in _list(item.get("content")))  # fmt: skip
    return requested, texts


#: The fields of the usages read below, as their SDKs spell them (no two alike normalised, which
#: a test holds): of a dict whose keys are all among them, ``get_field(usage, name)`` of one is
#: ``usage.get(name)`` (:func:`_getter`).
_OPENAI_USAGE_FIELDS = frozenset({
    "requests", "input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details",
    "total_tokens", "request_usage_entries", "cached_tokens", "reasoning_tokens",
})  # fmt: skip
_GENAI_USAGE_FIELDS = frozenset({
    "prompt_token_count", "candidates_token_count", "cached_content_token_count",
    "thoughts_token_count", "total_token_count", "tool_use_prompt_token_count",
    "prompt_tokens_details", "candidates_tokens_details", "cache_tokens_details",
    "tool_use_prompt_tokens_details", "traffic_type",
})  # fmt: skip


def _getter(mapping: Any, fields: frozenset[str]) -> Callable[[str], Any]:
    """``get_field(mapping, name)`` for names among ``fields``: ``mapping.get`` where the
    mapping is a dict of those keys alone (no key of another spelling can match: no lookup by
    spellings), else get_field itself."""
    if type(mapping) is dict and mapping.keys() <= fields:
        return mapping.get
    return partial(get_field, mapping)


def _detail(value: Any, name: str) -> Any:
    """``get_field`` of ``name`` in a usage's details object (older serializations wrote a
    one-element list of it), as :func:`_getter` reads it."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if type(value) is dict and value.keys() <= _OPENAI_USAGE_FIELDS:
        return value.get(name)
    return get_field(value, name)


def _openai_usage(usage: Any) -> Usage:
    if not _mapping(usage):
        return Usage(note="the result carries no usage")
    get = _getter(usage, _OPENAI_USAGE_FIELDS)
    counts = (get("input_tokens"), get("output_tokens"),
              _detail(get("input_tokens_details"), "cached_tokens"),
              _detail(get("output_tokens_details"), "reasoning_tokens"), get("total_tokens"))
    if usage.get("requests") == 0:
        present = [v for v in counts if v is not None]
        if present and not any(present):
            # Usage() as the Agents SDK builds it when the model reported nothing (requests 0).
            return Usage(note="usage is the Agents SDK's empty default (requests 0): "
                              "the model reported none")  # fmt: skip
    return usage_of_counts(*counts)


def _read_openai_agents(inp: Any, result: Any, context: Context) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(inp, Mapping):
        tools = [_openai_tool_name(t) for t in _list(inp.get("tools")) if isinstance(t, Mapping)]
        handoffs = {str(h.get("tool_name")): _str(h.get("agent_name"))
                    for h in _list(inp.get("handoffs")) if isinstance(h, Mapping)}  # fmt: skip
        out["declared_tools"] = (*tools, *handoffs)
        out["handoff_tools"] = handoffs
        out["model"] = _str(inp.get("model_name"))
        items = inp.get("input")
        out["input_items"] = 1 if isinstance(items, str) else len(_list(items))
        answered, results, names = [], [], {}
        for item in _list(items):
            kind = str(item.get("type", "")) if isinstance(item, Mapping) else ""
            if kind == "function_call":
                # Call ids repeat in some histories: an output answers the latest call of its id.
                names[item.get("call_id")] = _str(item.get("name"))
            elif kind.endswith("_call_output"):
                answered.append(item)
                results.append(ToolResult(names.get(item.get("call_id")),
                                          _str(item.get("call_id"))))  # fmt: skip
        out["tool_results"] = tuple(results)
        summary = context.summary
        if isinstance(summary, str) and summary and summary != _last_message_text(items):
            out["agent"], out["agent_source"] = summary, "summary"
        else:
            last = [a for a in map(_handoff_answer, answered) if a]
            if last:
                out["agent"], out["agent_source"] = last[-1], "handoff_output"
    response = result
    if isinstance(result, list):  # streaming: the events; the completed response is the answer
        done = [e.get("response") for e in result if isinstance(e, Mapping)
                and isinstance(e.get("response"), Mapping)]  # fmt: skip
        response = done[-1] if done else None
    if isinstance(response, Mapping):
        items = _list(response.get("output"))
        requested, texts = _openai_output(items, out.get("handoff_tools", {}))
        out.update(requested=tuple(requested), output_items=len(items), output_texts=texts,
                   usage=_openai_usage(response.get("usage")))  # fmt: skip
        out.setdefault("model", None)
        out["model"] = out["model"] or _str(response.get("model"))
    return out


# -- Google ADK (and genai-shaped requests, Go's included) ------------------------------------

#: The genai ``Tool`` fields other than function declarations: tools the provider runs.
_GENAI_HOSTED = ("google_search", "google_search_retrieval", "code_execution", "retrieval",
                 "url_context", "google_maps", "enterprise_web_search", "computer_use",
                 "file_search")  # fmt: skip

_ADK_IDENTITY = re.compile(r'You are an agent\. Your internal name is "([^"]+)"\.')


def _genai_declared(tools: Any) -> list[str]:
    names: list[str] = []
    for tool in _list(tools):
        for declaration in _list(get_field(tool, "function_declarations")):
            names.append(str(get_field(declaration, "name")))
        if isinstance(tool, Mapping):
            names.extend(_hosted(tool))
    return names


def _hosted(tool: Mapping[str, Any]) -> list[str]:
    """The hosted tools a genai ``Tool`` enables: ``get_field(tool, name) is not None`` for each
    of :data:`_GENAI_HOSTED`, the tool's keys normalised once rather than once per name."""
    spelt: dict[str, Any] = {}
    for key, value in tool.items():
        if isinstance(key, str):
            spelt.setdefault(_normal(key), value)  # the first key of a spelling, as get_field
    return [name for name in _GENAI_HOSTED
            if (tool[name] if name in tool else spelt.get(_normal(name))) is not None]


def _genai_parts(contents: Any) -> list[Any]:
    parts = (p for c in _list(contents) for p in _list(get_field(c, "parts")))
    return [p for p in parts if isinstance(p, Mapping)]


def _genai_requests(parts: list[Any]) -> tuple[list[ToolRequest], int]:
    requested, texts = [], 0
    for part in parts:
        call = get_field(part, "function_call")
        if isinstance(call, Mapping):
            name = str(get_field(call, "name"))
            target = _str(get_field(get_field(call, "args"), "agent_name"))
            kind = "handoff" if name == "transfer_to_agent" else "function"
            requested.append(ToolRequest(name, _str(get_field(call, "id")), kind,
                                         target if kind == "handoff" else None))  # fmt: skip
        elif get_field(part, "text") is not None and not get_field(part, "thought"):
            texts += 1
    return requested, texts


def _genai_usage(metadata: Any) -> Usage:
    if not _mapping(metadata):
        return Usage(note="the response carries no usage_metadata")
    get = _getter(metadata, _GENAI_USAGE_FIELDS)
    return usage_of_counts(get("prompt_token_count"), get("candidates_token_count"),
                           get("cached_content_token_count"), get("thoughts_token_count"),
                           get("total_token_count"))  # fmt: skip


def _genai_request(inp: Any, context: Context) -> dict[str, Any]:
    request = get_field(inp, "llm_request") or inp  # the streaming activity wraps the request
    if not isinstance(request, Mapping):
        return {}
    config = get_field(request, "config")
    contents = get_field(request, "contents")
    # ADK puts the tools in the config; a bare Gemini request body has them at its top level.
    declared = _genai_declared(get_field(config, "tools") or get_field(request, "tools"))
    out: dict[str, Any] = {
        "model": _str(get_field(request, "model")),
        "input_items": len(_list(contents)),
        "declared_tools": tuple(declared),
        "handoff_tools": {"transfer_to_agent": None} if "transfer_to_agent" in declared else {},
        "tool_results": tuple(
            ToolResult(_str(get_field(r, "name")), _str(get_field(r, "id")))
            for r in (get_field(p, "function_response") for p in _genai_parts(contents))
            if isinstance(r, Mapping)
        ),
    }
    instruction = get_field(config, "system_instruction")
    identity = _ADK_IDENTITY.search(instruction) if isinstance(instruction, str) else None
    label = _str(get_field(get_field(config, "labels"), "adk_agent_name"))
    if label:
        out["agent"], out["agent_source"] = label, "labels"
    elif identity:
        out["agent"], out["agent_source"] = identity.group(1), "instructions"
    elif isinstance(context.summary, str) and context.summary:
        out["agent"], out["agent_source"] = context.summary, "summary"
    return out


def _read_python_adk(inp: Any, result: Any, context: Context) -> dict[str, Any]:
    out = _genai_request(inp, context)
    responses = [r for r in _list(result) if isinstance(r, Mapping)]
    if isinstance(result, Mapping):
        responses = [result]
    if result is not None and (responses or isinstance(result, list)):
        final = [r for r in responses if not get_field(r, "partial")] or responses
        parts = [p for r in final for p in _list(get_field(get_field(r, "content"), "parts"))
                 if isinstance(p, Mapping)]  # fmt: skip
        requested, texts = _genai_requests(parts)
        usage = [u for u in (get_field(r, "usage_metadata") for r in responses) if u is not None]
        out.update(requested=tuple(requested), output_items=len(parts), output_texts=texts,
                   usage=_genai_usage(usage[-1] if usage else None))  # fmt: skip
        if out.get("model") is None:
            out["model"] = next(filter(None, (_str(get_field(r, "model_version")) for r in final)),
                                None)  # fmt: skip
    return out


# -- pydantic-ai ------------------------------------------------------------------------------

_PYDANTIC_AGENT = re.compile(r"agent__(?P<agent>.+)__model_request(_stream)?")


def _read_pydantic_ai(inp: Any, result: Any, context: Context) -> dict[str, Any]:
    out: dict[str, Any] = {}
    match = _PYDANTIC_AGENT.fullmatch(context.activity_type or "")
    if match:
        out["agent"], out["agent_source"] = match["agent"], "activity_type"
    if isinstance(inp, Mapping):
        params = inp.get("model_request_parameters")
        declared = [str(t.get("name")) for key in ("function_tools", "output_tools")
                    for t in _list(get_field(params, key)) if isinstance(t, Mapping)]  # fmt: skip
        declared += [str(t.get("kind") or "native_tool")
                     for key in ("native_tools", "builtin_tools")  # builtin_: the older name
                     for t in _list(get_field(params, key)) if isinstance(t, Mapping)]  # fmt: skip
        out["declared_tools"] = tuple(declared) if isinstance(params, Mapping) else None
        messages = _list(inp.get("messages"))
        out["input_items"] = len(messages)
        out["tool_results"] = tuple(
            ToolResult(_str(p.get("tool_name")), _str(p.get("tool_call_id")))
            for m in messages if isinstance(m, Mapping) and m.get("kind") == "request"
            for p in _list(m.get("parts")) if isinstance(p, Mapping)
            and p.get("part_kind") in ("tool-return", "retry-prompt") and p.get("tool_name")
        )  # fmt: skip
        summary = context.summary
        if isinstance(summary, str) and summary.startswith("request model: "):
            out["model"] = summary.removeprefix("request model: ").removesuffix(" (stream)")
    if isinstance(result, Mapping):
        parts = [p for p in _list(result.get("parts")) if isinstance(p, Mapping)]
        requested = [
            ToolRequest(str(p.get("tool_name")), _str(p.get("tool_call_id")),
                        "function" if p.get("part_kind") == "tool-call" else "hosted")
            for p in parts if p.get("part_kind") in ("tool-call", "builtin-tool-call",
                                                      "native-tool-call")
        ]  # fmt: skip
        out.update(requested=tuple(requested), output_items=len(parts),
                   usage=_pydantic_usage(result.get("usage")),
                   output_texts=sum(p.get("part_kind") == "text" for p in parts))  # fmt: skip
        out["model"] = _str(result.get("model_name")) or out.get("model")
    return out


def _pydantic_usage(usage: Any) -> Usage:
    """The :class:`Usage` of a pydantic-ai ``RequestUsage`` (its ``usage`` field)."""
    if not _mapping(usage):
        return Usage(note="the result carries no usage")
    details = usage.get("details") if _mapping(usage.get("details")) else {}
    input_tokens = get_field(usage, "input_tokens", "request_tokens")
    output_tokens = get_field(usage, "output_tokens", "response_tokens")
    cached = usage.get("cache_read_tokens")
    reasoning = usage.get("output_reasoning_tokens", details.get("reasoning_tokens"))
    total = None
    if (isinstance(input_tokens, int) and not isinstance(input_tokens, bool)
            and isinstance(output_tokens, int) and not isinstance(output_tokens, bool)):
        # pydantic-ai defines total_tokens as input + output and does not store it.
        total = input_tokens + output_tokens
    return usage_of_counts(input_tokens, output_tokens, cached, reasoning, total)


# -- the lab's Go plugin twin -----------------------------------------------------------------


def _read_go_twin(inp: Any, result: Any, context: Context) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(inp, Mapping):
        out["declared_tools"] = tuple(str(t) for t in _list(inp.get("tools")))
        out["input_items"] = len(_list(inp.get("contents")))
        out["tool_results"] = tuple(
            ToolResult(_str(get_field(r, "name")), _str(get_field(r, "id")))
            for r in (get_field(p, "function_response") for p in _genai_parts(inp.get("contents")))
            if isinstance(r, Mapping)
        )
        if _str(inp.get("agent")):
            out["agent"], out["agent_source"] = inp["agent"], "input"
    if isinstance(result, Mapping):
        requested, texts = _genai_requests([result])
        out.update(requested=tuple(requested), output_items=1, output_texts=texts,
                   usage=Usage(note="the twin's model records no usage"))  # fmt: skip
    return out


# -- providers' own responses -----------------------------------------------------------------


def _read_gemini(inp: Any, result: Any, context: Context) -> dict[str, Any]:
    out = _genai_request(inp, context) if isinstance(inp, Mapping) else {}
    if isinstance(result, Mapping):
        candidates = [c for c in _list(get_field(result, "candidates")) if isinstance(c, Mapping)]
        parts = _genai_parts([get_field(candidates[0], "content")]) if candidates else []
        requested, texts = _genai_requests(parts)
        out.update(requested=tuple(requested), output_items=len(parts), output_texts=texts,
                   usage=_genai_usage(get_field(result, "usage_metadata")))  # fmt: skip
        out["model"] = out.get("model") or _str(get_field(result, "model_version"))
    return out


# -- the ledger's subset ----------------------------------------------------------------------
#
# The token ledger needs of a call only its agent, model, usage and requested tool names, and
# whether the reader found a request (``declared_tools`` set) and a response (``requested``
# set). The readers below compute these as the ones above do, on the same values, and leave out
# what only the full record holds (declared tools, tool results, item and text counts, request
# kinds): nothing left out can raise on decoded JSON (``str()`` of values, ``get``/``in`` on
# mappings, ``==`` against strings), and what can raise is kept (an unhashable ``call_id`` in
# an OpenAI item, a non-string activity type), so that a reader raises where the full one does.
# They take the request, the response, the activity type and the summary (a Context's fields)
# and return ``(agent, model, usage, requested, declares)``: ``usage`` and ``requested`` None
# where the full reader leaves the field unset.
#
# They also read the partial values of ``model_cells.ledger_values_of_data``: long members they
# do not read are stand-ins, any use of which raises (the call is then read off its whole
# values). Only ``is None`` and ``type(x) is ...`` see a stand-in without a use: a reader that
# takes a branch on them must use the value in the branch it takes for a stand-in (as
# ``_list``, ``_getter`` and ``get_field`` do), and ``_mapping`` is the one check that answers
# for a stand-in (of an object: True). tests/test_ledger_partial.py reads every call so.

LedgerFields = tuple[Any, Any, Usage | None, list[str] | None, bool]


def _ledger_openai_agents(inp: Any, result: Any, activity_type: Any, summary: Any) -> LedgerFields:
    agent = model = None
    declares = _mapping(inp)
    if declares:
        model = _str(inp.get("model_name"))
        items = inp.get("input")
        answered, names = [], {}
        for item in _list(items):
            kind = str(item.get("type", "")) if _mapping(item) else ""
            if kind == "function_call":
                names[item.get("call_id")] = None  # as the full reader: raises where it does
            elif kind.endswith("_call_output"):
                answered.append(item)
                names.get(item.get("call_id"))  # likewise (its ToolResult is not needed)
        if isinstance(summary, str) and summary and summary != _last_message_text(items):
            agent = summary
        else:
            last = [a for a in map(_handoff_answer, answered) if a]
            if last:
                agent = last[-1]
    response = result
    if isinstance(result, list):  # streaming: the events; the completed response is the answer
        done = [e.get("response") for e in result if _mapping(e)
                and _mapping(e.get("response"))]  # fmt: skip
        response = done[-1] if done else None
    usage = requested = None
    if _mapping(response):
        requested = []
        for item in _list(response.get("output")):  # _openai_output's names
            if not _mapping(item):
                continue
            kind = item.get("type")
            if kind in ("function_call", "custom_tool_call") or kind == "mcp_call":
                requested.append(str(item.get("name")))
            elif isinstance(kind, str) and kind.endswith("_call"):
                requested.append(kind.removesuffix("_call"))
        usage = _openai_usage(response.get("usage"))
        model = model or _str(response.get("model"))
    return agent, model, usage, requested, declares


def _ledger_python_adk(inp: Any, result: Any, activity_type: Any, summary: Any) -> LedgerFields:
    agent = model = None
    request = get_field(inp, "llm_request") or inp  # as _genai_request
    declares = _mapping(request)
    if declares:
        config = get_field(request, "config")
        model = _str(get_field(request, "model"))
        instruction = get_field(config, "system_instruction")
        label = _str(get_field(get_field(config, "labels"), "adk_agent_name"))
        # The instruction searched only where no label names the agent (it comes second).
        identity = (None if label or not isinstance(instruction, str)
                    else _ADK_IDENTITY.search(instruction))  # fmt: skip
        if label:
            agent = label
        elif identity:
            agent = identity.group(1)
        elif isinstance(summary, str) and summary:
            agent = summary
    usage = requested = None
    responses = [r for r in _list(result) if _mapping(r)]
    if _mapping(result):
        responses = [result]
    if result is not None and (responses or isinstance(result, list)):
        final = [r for r in responses if not get_field(r, "partial")] or responses
        requested = []
        for response in final:  # _genai_requests' names
            for part in _list(get_field(get_field(response, "content"), "parts")):
                if _mapping(part):
                    call = get_field(part, "function_call")
                    if _mapping(call):
                        requested.append(str(get_field(call, "name")))
        found = [u for u in (get_field(r, "usage_metadata") for r in responses) if u is not None]
        usage = _genai_usage(found[-1] if found else None)
        if model is None:
            model = next(filter(None, (_str(get_field(r, "model_version")) for r in final)), None)
    return agent, model, usage, requested, declares


def _ledger_pydantic_ai(inp: Any, result: Any, activity_type: Any, summary: Any) -> LedgerFields:
    agent = model = None
    match = _PYDANTIC_AGENT.fullmatch(activity_type or "")
    if match:
        agent = match["agent"]
    declares = False
    if _mapping(inp):
        declares = _mapping(inp.get("model_request_parameters"))
        if isinstance(summary, str) and summary.startswith("request model: "):
            model = summary.removeprefix("request model: ").removesuffix(" (stream)")
    usage = requested = None
    if _mapping(result):
        requested = [str(p.get("tool_name")) for p in _list(result.get("parts"))
                     if _mapping(p) and p.get("part_kind") in (
                         "tool-call", "builtin-tool-call", "native-tool-call")]  # fmt: skip
        usage = _pydantic_usage(result.get("usage"))
        model = _str(result.get("model_name")) or model
    return agent, model, usage, requested, declares


#: The ledger's readers (:func:`toolkit.agents.model_io.ledger_fields`); a shape not named here
#: is read by its full reader.
LEDGER_READERS: dict[str, Callable[[Any, Any, Any, Any], LedgerFields]] = {
    "openai_agents": _ledger_openai_agents,
    "python_adk": _ledger_python_adk,
    "pydantic_ai": _ledger_pydantic_ai,
}


# -- dispatch ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    activity_type: str | None
    summary: Any


READERS: dict[str, Callable[[Any, Any, Context], dict[str, Any]]] = {
    "openai_agents": _read_openai_agents,
    "python_adk": _read_python_adk,
    "pydantic_ai": _read_pydantic_ai,
    "go_twin": _read_go_twin,
    "gemini": _read_gemini,
}

#: Every shape :func:`read_model_call` reads.
FRAMEWORKS = tuple(READERS)


def input_shape(inp: Any) -> str | None:
    if not _mapping(inp):
        return None
    if "model_settings" in inp and "input" in inp:
        return "openai_agents"
    if "model_request_parameters" in inp and "messages" in inp:
        return "pydantic_ai"
    if get_field(inp, "contents") is not None and isinstance(inp.get("tools"), list) and (
        all(isinstance(t, str) for t in inp["tools"])
    ):
        return "go_twin"
    if type(inp) is dict and inp.get("contents") is not None and inp.get("config") is not None:
        return "python_adk"  # the second condition below holds: no llm_request looked for
    if get_field(inp, "llm_request") is not None or (
        get_field(inp, "contents") is not None and get_field(inp, "config") is not None
    ):
        return "python_adk"
    return None


def response_shape(result: Any) -> str | None:
    """The framework or provider whose model response ``result`` (an activity's decoded result:
    a list of payload values or one value) is shaped like, or None.

    Used to recognise model calls of frameworks no preset names: a ``ModelResponse`` of the
    OpenAI Agents SDK (``output`` + ``usage``) or of pydantic-ai (``parts``, ``kind:
    "response"``), ADK ``LlmResponse`` lists (``content.parts``), Responses stream events, and
    Gemini's ``GenerateContentResponse`` (``candidates``).
    """
    values = result if isinstance(result, list) else [result]
    for value in values:
        if isinstance(value, list) and value and all(_mapping(v) for v in value):
            if any(str(v.get("type", "")).startswith("response.") for v in value):
                return "openai_agents"
            if all(get_field(get_field(v, "content"), "parts") is not None
                   or get_field(v, "usage_metadata") is not None for v in value):  # fmt: skip
                return "python_adk"
        if not _mapping(value):
            continue
        if isinstance(value.get("output"), list) and "usage" in value:
            return "openai_agents"
        if value.get("kind") == "response" and isinstance(value.get("parts"), list):
            return "pydantic_ai"
        if isinstance(get_field(value, "candidates"), list):
            return "gemini"
    return None
