"""The lab's scripted model: deterministic replies, no API key, no network.

:func:`script_reply` is a pure function on plain data (the ``contents`` of a model request as
JSON-like dicts, in google-genai's field names) and imports nothing from google-adk, so recorders
that do not run ADK (the Go-plugin twin) reuse it. :func:`scripted_llm_class` builds an ADK
``BaseLlm`` on top of it and :func:`register_scripted_model` puts that class in ADK's LLM registry,
which is where temporalio's ``invoke_model`` activity resolves the model name of a
``TemporalModel``.

The script looks only at the last content of the request:

* a function response  -> a text answer quoting it;
* a user message asking for a tool (weather, a sum, an order, pages of a report) -> a function
  call of that tool (when the request declares it; otherwise a text saying it is not available);
* anything else -> a fixed text reply.

Reading pages is the one loop: "Read pages 1 to 200 of the report, 4096 bytes each." calls
``read_page(page=1, size=4096)``, and each ``read_page`` response gets the call of the next page
(the page after the last one called in the request), until the last page, then a short text.
That is the long tool loop of an agent whose every model call carries the whole conversation.

Each reply reports token usage the way the framework's real providers do (an ADK
``usage_metadata``, an OpenAI Agents ``Usage``), counted by :func:`scripted_usage` from the request
and the reply, so that token ledgers have something true to read.

Examples
--------
>>> script_reply([{"role": "user", "parts": [{"text": "What is the weather in Paris?"}]}])
{'function_call': {'name': 'get_weather', 'args': {'city': 'Paris'}}}
>>> script_reply([{"role": "user", "parts": [{"function_response":
...     {"name": "add", "response": {"result": "5"}}}]}])
{'text': 'add says: 5'}
>>> script_reply([{"role": "user", "parts": [{"text": "Thanks!"}]}])
{'text': 'Noted: Thanks!'}
>>> ask = "Read pages 1 to 2 of the report, 9 bytes each."
>>> call = {"name": "read_page", "args": {"page": 1, "size": 9}}
>>> result = {"name": "read_page", "response": {"result": "Page 1..."}}
>>> script_reply([{"role": "user", "parts": [{"text": ask}]},
...               {"role": "model", "parts": [{"function_call": call}]},
...               {"role": "user", "parts": [{"function_response": result}]}])
{'function_call': {'name': 'read_page', 'args': {'page': 2, 'size': 9}}}
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "SCRIPTED_MODEL_NAME",
    "register_scripted_model",
    "script_reply",
    "scripted_llm_class",
    "scripted_usage",
    "tool_request",
]

SCRIPTED_MODEL_NAME = "lab-scripted-model"
"""The model name agents use; the registry pattern matches exactly this name."""

# (tool, pattern, argument builder). Order matters: the first pattern that matches wins.
_ArgumentBuilder = Callable[[re.Match[str]], dict[str, Any]]
_TOOL_PATTERNS: tuple[tuple[str, re.Pattern[str], _ArgumentBuilder], ...] = (
    ("get_weather", re.compile(r"\bweather\b.*?\bin\s+([A-Za-z][\w\- ]*?)\s*[?.!]*$", re.I),
     lambda m: {"city": m.group(1).strip()}),
    ("add", re.compile(r"\badd\s+(-?\d+)\s+(?:and|\+|to)\s+(-?\d+)", re.I),
     lambda m: {"a": int(m.group(1)), "b": int(m.group(2))}),
    ("lookup_order", re.compile(r"\border\s+#?([A-Za-z0-9\-]+)", re.I),
     lambda m: {"order_id": m.group(1)}),
)

PAGE_TOOL = "read_page"
# Before the other patterns: a long request may pad itself with any words.
_PAGES = re.compile(r"\bread pages (\d+) to (\d+) of the report, (\d+) bytes each\b", re.I)


def _pages_request(text: str) -> dict[str, Any] | None:
    match = _PAGES.search(text)
    if match is None:
        return None
    first, last, size = (int(group) for group in match.groups())
    return {"name": PAGE_TOOL, "args": {"page": first, "size": size}, "last": last}


def tool_request(text: str) -> dict[str, Any] | None:
    """The tool call a user text asks for, as ``{"name": ..., "args": {...}}``, or None."""
    pages = _pages_request(text)
    if pages is not None:
        return {"name": pages["name"], "args": pages["args"]}
    for name, pattern, arguments in _TOOL_PATTERNS:
        match = pattern.search(text)
        if match:
            return {"name": name, "args": arguments(match)}
    return None


def _part(part: Any) -> Mapping[str, Any]:
    return part if isinstance(part, Mapping) else {}


def _response_text(response: Any) -> str:
    """Readable text of a function response (MCP results arrive as content lists)."""
    if isinstance(response, Mapping):
        content = response.get("content")
        if isinstance(content, list):
            texts = [c.get("text") for c in content if isinstance(c, Mapping) and c.get("text")]
            if texts:
                return " ".join(str(t) for t in texts)
        if "result" in response and len(response) == 1:
            return str(response["result"])
    return json.dumps(response, sort_keys=True, default=str)


def _texts(content: Mapping[str, Any]) -> str:
    parts = [_part(p) for p in (content.get("parts") or [])]
    return " ".join(str(p["text"]) for p in parts if p.get("text")).strip()


def _next_page(contents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """After a ``read_page`` response: the call of the next page, or the loop's closing text."""
    request = next((r for r in (_pages_request(_texts(c)) for c in reversed(contents)
                                if c.get("role", "user") == "user") if r), None)
    called = [call.get("args") or {} for content in contents
              for call in (_part(p).get("function_call") or _part(p).get("functionCall")
                           for p in (content.get("parts") or []))
              if isinstance(call, Mapping) and call.get("name") == PAGE_TOOL]
    if request is None or not called:
        return {"text": "Read the pages."}
    page = int(called[-1].get("page", 0)) + 1
    if page > request["last"]:
        return {"text": f"Read pages {request['args']['page']} to {request['last']}."}
    return {"function_call": {"name": PAGE_TOOL,
                              "args": {"page": page, "size": request["args"]["size"]}}}


def script_reply(
    contents: Sequence[Mapping[str, Any]], tools: Iterable[str] | None = None
) -> dict[str, Any]:
    """The scripted model's reply to a request's ``contents``.

    Parameters
    ----------
    contents
        The conversation as google-genai ``Content`` dicts (``role``, ``parts``; a part has
        ``text``, ``function_call`` or ``function_response``; camelCase keys are accepted too).
    tools
        Names of the tools the request declares; None means "any tool may be called".

    Returns
    -------
    dict
        ``{"function_call": {"name": ..., "args": {...}}}`` or ``{"text": ...}``.
    """
    if not contents:
        return {"text": "Hello."}
    parts = [_part(p) for p in (contents[-1].get("parts") or [])]
    for part in parts:
        response = part.get("function_response") or part.get("functionResponse")
        if isinstance(response, Mapping) and response.get("name") == PAGE_TOOL:
            return _next_page(contents)
        if isinstance(response, Mapping):
            return {"text": f"{response.get('name')} says: "
                            f"{_response_text(response.get('response'))}"}
    text = _texts(contents[-1])
    if contents[-1].get("role", "user") == "user" and text:
        call = tool_request(text)
        if call is not None:
            available = None if tools is None else set(tools)
            if available is None or call["name"] in available:
                return {"function_call": call}
            return {"text": f"I cannot call {call['name']}: it is not available."}
    return {"text": f"Noted: {text}" if text else "Noted."}


def _tokens(value: Any) -> int:
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, sort_keys=True, default=_json_default)
    return max(1, -(-len(text.encode()) // 4))


def _json_default(value: Any) -> Any:
    """Framework objects (pydantic models, dataclasses) as the JSON the provider is sent."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(value)
    return str(value)


def scripted_usage(request: Any, reply: Any) -> tuple[int, int]:
    """(input, output) tokens of one model call: one token per 4 bytes of the request's and the
    reply's JSON, rounded up (the rule of thumb OpenAI gives for English text).

    The request is what a provider bills as input: instructions, the conversation and the
    declared tools, so counts grow with the conversation and with every tool declared, as a real
    provider's do.

    Examples
    --------
    >>> scripted_usage({"contents": ["What is the weather in Paris?"]}, {"text": "Sunny."})
    (12, 5)
    """
    return _tokens(request), _tokens(reply)


@functools.cache
def scripted_llm_class() -> type:
    """The ADK ``BaseLlm`` subclass answering with :func:`script_reply` (imports google-adk)."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class ScriptedLlm(BaseLlm):
        """A deterministic ADK model for the lab (see :mod:`toolkit.lab.model`)."""

        @classmethod
        def supported_models(cls) -> list[str]:
            return [re.escape(SCRIPTED_MODEL_NAME)]

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            contents = [c.model_dump(mode="json", exclude_none=True)
                        for c in llm_request.contents]
            reply = script_reply(contents, _declared_tools(llm_request))
            if "function_call" in reply:
                call = reply["function_call"]
                part = types.Part(function_call=types.FunctionCall(
                    name=call["name"], args=call["args"]))
            else:
                part = types.Part(text=reply["text"])
            config = getattr(llm_request, "config", None)
            request = {"system_instruction": _plain(getattr(config, "system_instruction", None)),
                       "contents": contents,
                       "tools": [_plain(d) for d in _declarations(llm_request)]}
            prompt, candidates = scripted_usage(request, reply)
            # Gemini's own usage fields, as google-genai returns them from a real call.
            usage = types.GenerateContentResponseUsageMetadata(
                prompt_token_count=prompt, candidates_token_count=candidates,
                total_token_count=prompt + candidates)
            yield LlmResponse(content=types.Content(role="model", parts=[part]),
                              usage_metadata=usage)

    return ScriptedLlm


def _plain(value: Any) -> Any:
    """A pydantic value (google-genai types) as JSON-like data; anything else as it is."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else value


def _declarations(llm_request: Any) -> list[Any]:
    """Function declarations of an ADK ``LlmRequest`` (duplicates kept)."""
    config = getattr(llm_request, "config", None)
    return [declaration for tool in (getattr(config, "tools", None) or [])
            for declaration in (getattr(tool, "function_declarations", None) or [])]


def _declared_tools(llm_request: Any) -> list[str]:
    """Function names declared in an ADK ``LlmRequest`` (duplicates kept)."""
    return [declaration.name for declaration in _declarations(llm_request)]


def register_scripted_model() -> str:
    """Register the scripted model in ADK's LLM registry; return the model name to use."""
    from google.adk.models.registry import LLMRegistry

    LLMRegistry.register(scripted_llm_class())
    return SCRIPTED_MODEL_NAME
