"""One agent run (a turn): the scripted model, tool declarations packed by ADK's rule, dispatch.

ADK (Go) flattens every toolset's tools into one list and packs each into the model request with
``toolutils.PackTool``, which refuses a name already present: ``duplicate tool: "<name>"``. Packing
is not idempotent, so two toolsets exposing one name fail the run.

The note's signature is that plain text replies work and only turns where the model asks for a tool
fail. This runtime reproduces that where the note places the failure: the model (the lab's
scripted model) first sees the catalogue of tool names; when it answers with text the turn ends;
when it asks for a tool, the runtime packs the declarations to dispatch the call, and that is
where a duplicate name fails the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolkit.lab.hosted_runtime.toolsets import McpTool, McpToolset
from toolkit.lab.model import script_reply

__all__ = ["AgentRunError", "DuplicateToolError", "LlmRequest", "TurnResult", "pack_tool",
           "run_agent"]


class DuplicateToolError(Exception):
    """``PackTool``'s error: the request already declares a tool of this name."""

    def __init__(self, name: str) -> None:
        self.tool = name
        super().__init__(f"duplicate tool: {json.dumps(name)}")  # Go's %q


class AgentRunError(Exception):
    """A failed agent run; the message wraps the cause as Go does (``agent run: <cause>``)."""


@dataclass
class LlmRequest:
    """The model request being built: declared tools by name."""

    tools: dict[str, McpTool] = field(default_factory=dict)


def pack_tool(request: LlmRequest, tool: McpTool) -> None:
    """Declare ``tool`` in ``request`` (ADK's ``PackTool``: a name already present is an error).

    Raises
    ------
    DuplicateToolError
        ``tool.name`` is already declared.
    """
    if tool.name in request.tools:
        raise DuplicateToolError(tool.name)
    request.tools[tool.name] = tool


@dataclass
class TurnResult:
    """What one agent run produced."""

    text: str
    function_response_part_count: int = 0
    tool: str | None = None
    served_by: str | None = None
    tool_result: dict[str, Any] | None = None


async def run_agent(text: str, toolsets: list[McpToolset]) -> TurnResult:
    """Run one turn for the user message ``text`` with ``toolsets`` (already connected).

    Raises
    ------
    AgentRunError
        Packing or the tool call failed (the cause is chained and quoted in the message).
    """
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": text}]}]
    tools = [tool for toolset in toolsets for tool in await toolset.tools()]
    reply = script_reply(contents, tools=[t.name for t in tools])
    if "function_call" not in reply:
        return TurnResult(reply["text"])
    call = reply["function_call"]
    request = LlmRequest()
    try:
        for tool in tools:
            pack_tool(request, tool)
    except DuplicateToolError as error:
        raise AgentRunError(f"agent run: {error}") from error
    tool = request.tools[call["name"]]
    result = await tool.call(call["args"])
    contents += [
        {"role": "model", "parts": [{"function_call": call}]},
        {"role": "user", "parts": [{"function_response": {"name": tool.name, "response": result}}]},
    ]
    final = script_reply(contents, tools=list(request.tools))
    return TurnResult(final["text"], 1, tool.name, tool.toolset.server_id, result)
