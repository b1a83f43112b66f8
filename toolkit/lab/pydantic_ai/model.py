"""The lab's scripted model as a pydantic-ai ``FunctionModel``: no key, no network.

pydantic-ai's ``FunctionModel`` calls a function with the conversation (``ModelRequest`` /
``ModelResponse`` messages) and the tools the request declares; :func:`reply` translates the
messages to :func:`toolkit.lab.model.script_reply`'s contents and its answer back to a
``ModelResponse`` (a ``ToolCallPart`` or a ``TextPart``). The Temporal integration runs each model
request as the agent's ``model_request`` activity in the worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkit.lab.model import script_reply

__all__ = ["as_contents", "reply", "scripted_model"]


def _part(part: Any) -> dict[str, Any] | None:
    kind = getattr(part, "part_kind", None)
    if kind in ("user-prompt", "text"):
        content = part.content
        return {"text": content if isinstance(content, str) else " ".join(map(str, content))}
    if kind == "tool-call":
        return {"function_call": {"name": part.tool_name, "args": part.args_as_dict()}}
    if kind == "tool-return":
        return {"function_response": {"name": part.tool_name,
                                      "response": {"result": part.model_response_str()}}}
    return None  # system prompts, retry prompts, thinking: not part of the script


def as_contents(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """pydantic-ai messages as the scripted model's contents (see ``script_reply``)."""
    contents = []
    for message in messages:
        parts = [p for p in (_part(part) for part in message.parts) if p is not None]
        if parts:
            role = "user" if getattr(message, "kind", None) == "request" else "model"
            contents.append({"role": role, "parts": parts})
    return contents


def reply(messages: list[Any], info: Any) -> Any:
    """The ``FunctionModel`` function: the script's answer to ``messages``."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

    contents = as_contents(messages)
    answer = script_reply(contents, [tool.name for tool in info.function_tools])
    if "function_call" in answer:
        call = answer["function_call"]
        return ModelResponse(parts=[ToolCallPart(tool_name=call["name"], args=call["args"],
                                                 tool_call_id=f"call_{len(contents)}")])
    return ModelResponse(parts=[TextPart(content=answer["text"])])


def scripted_model() -> Any:
    """A ``FunctionModel`` answering with :func:`reply`."""
    from pydantic_ai.models.function import FunctionModel

    return FunctionModel(reply, model_name="lab-scripted-model")
