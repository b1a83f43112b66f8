"""The lab's scripted model as an OpenAI Agents ``Model``: no key, no network.

The integration's ``invoke_model_activity`` asks the worker's ``ModelProvider`` for the model
named on the agent; :class:`ScriptedModelProvider` answers every name with a model whose replies
come from :func:`toolkit.lab.model.script_reply` (the same script as the ADK recorder). The
Responses-API input items are translated to the script's google-genai-shaped contents: user
messages, function calls and their outputs (named through their ``call_id``). Each response
reports its ``Usage`` as the real OpenAI models do (one request, input and output tokens, their
details), counted by :func:`toolkit.lab.model.scripted_usage`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolkit.lab.model import script_reply, scripted_usage

__all__ = ["as_contents", "plain_items", "scripted_provider"]


def _text(content: Any) -> str:
    """Text of a message's ``content`` (a string or a list of ``input_text`` parts)."""
    if isinstance(content, str):
        return content
    texts = [part.get("text") for part in content or [] if isinstance(part, Mapping)]
    return " ".join(str(t) for t in texts if t)


def as_contents(items: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Responses-API input items as the scripted model's contents (see ``script_reply``).

    Examples
    --------
    >>> as_contents("hi")
    [{'role': 'user', 'parts': [{'text': 'hi'}]}]
    >>> as_contents([{"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"},
    ...              {"type": "function_call_output", "call_id": "c1", "output": "5"}])[-1]
    {'role': 'user', 'parts': [{'function_response': {'name': 'add', 'response': {'result': '5'}}}]}
    """
    if isinstance(items, str):
        return [{"role": "user", "parts": [{"text": items}]}]
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        if kind == "function_call":
            names[str(item.get("call_id"))] = str(item.get("name"))
            call = {"name": item.get("name"), "args": json.loads(item.get("arguments") or "{}")}
            contents.append({"role": "model", "parts": [{"function_call": call}]})
        elif kind == "function_call_output":
            response = {"name": names.get(str(item.get("call_id"))),
                        "response": {"result": _text(item.get("output"))}}
            contents.append({"role": "user", "parts": [{"function_response": response}]})
        elif "role" in item:
            role = "user" if item["role"] == "user" else "model"
            contents.append({"role": role, "parts": [{"text": _text(item.get("content"))}]})
    return contents


def plain_items(value: Any) -> Any:
    """Input items as the JSON the model activity carried: mappings as dicts, sequences and
    other iterables as lists, scalars and framework objects as they are.

    The worker's converter validates the SDK's ``TypedDict`` items with pydantic, which turns an
    ``Iterable[...]`` field (an assistant message's ``content``) into a ``ValidatorIterator``: an
    iterator that runs once, and that JSON cannot encode (its text is the whole validator). Made
    a list, it is read by the script and counted by the usage as the bytes it came from.

    Examples
    --------
    >>> plain_items([{"role": "assistant", "content": iter([{"type": "output_text"}])}])
    [{'role': 'assistant', 'content': [{'type': 'output_text'}]}]
    """
    if isinstance(value, Mapping):
        return {key: plain_items(item) for key, item in value.items()}
    if value is None or isinstance(value, (str, bytes, int, float)):
        return value
    if isinstance(value, Iterable) and not callable(getattr(value, "model_dump", None)):
        return [plain_items(item) for item in value]  # a pydantic model iterates its fields
    return value


def _declaration(tool: Any) -> dict[str, Any]:
    """What the Responses API is sent for a tool: name, description, parameter schema."""
    return {"name": getattr(tool, "name", None),
            "description": getattr(tool, "description", None),
            "parameters": getattr(tool, "params_json_schema", None)}


@functools.cache
def _classes() -> tuple[type, type]:
    """The ``Model`` and ``ModelProvider`` subclasses (import openai-agents on first use)."""
    from agents import Model, ModelProvider, ModelResponse, Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class ScriptedModel(Model):  # type: ignore[misc]
        """Answers with :func:`toolkit.lab.model.script_reply`."""

        async def get_response(self, system_instructions: Any, input: Any, model_settings: Any,
                               tools: Any, *args: Any, **kwargs: Any) -> Any:
            # The request as the activity carried it: the script reads it, the usage counts it.
            items = input if isinstance(input, str) else plain_items(list(input))
            contents = as_contents([i if isinstance(i, Mapping) else dict(i) for i in items]
                                   if not isinstance(items, str) else items)
            reply = script_reply(contents, [tool.name for tool in tools])
            step = len(contents)  # deterministic ids: the same request gives the same reply
            if "function_call" in reply:
                call = reply["function_call"]
                output: Any = ResponseFunctionToolCall(
                    type="function_call", call_id=f"call_{step}", id=f"fc_{step}",
                    name=call["name"], arguments=json.dumps(call["args"]))
            else:
                output = ResponseOutputMessage(
                    id=f"msg_{step}", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text=reply["text"],
                                                annotations=[])])
            request = {"system_instructions": system_instructions, "input": items,
                       "tools": [_declaration(tool) for tool in tools]}
            prompt, completion = scripted_usage(request, reply)
            usage = Usage(requests=1, input_tokens=prompt, output_tokens=completion,
                          total_tokens=prompt + completion)
            return ModelResponse(output=[output], usage=usage, response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the lab's scripted model does not stream")

    class ScriptedModelProvider(ModelProvider):  # type: ignore[misc]
        """Every model name resolves to the scripted model."""

        def get_model(self, model_name: str | None) -> Any:
            return ScriptedModel()

    return ScriptedModel, ScriptedModelProvider


def scripted_provider() -> Any:
    """A ``ModelProvider`` for the integration's plugin (``model_provider=``)."""
    return _classes()[1]()
