"""The three activities the Go plugin schedules, named exactly as it names them.

``ListMcpTools`` and ``CallMcpTool`` talk to a real MCP server over streamable HTTP (the ``mcp``
package's client, one session per activity, as an activity worker without a pooled connection
would). ``InvokeModel`` answers with the lab's scripted model.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from toolkit.lab.go_twin.spec import CallToolInput, InvokeModelInput, ListToolsInput
from toolkit.lab.model import script_reply

__all__ = ["ACTIVITIES", "call_mcp_tool", "invoke_model", "list_mcp_tools"]


def _client(url: str) -> Any:
    from mcp.client.client import Client

    return Client(url, mode="legacy", cache=None)


@activity.defn(name="ListMcpTools")
async def list_mcp_tools(request: ListToolsInput) -> list[str]:
    """Names of the tools the MCP server advertises right now, in its order."""
    async with _client(request.url) as client:
        return [tool.name for tool in (await client.list_tools()).tools]


@activity.defn(name="CallMcpTool")
async def call_mcp_tool(request: CallToolInput) -> dict[str, Any]:
    """Call one tool; the MCP result as a function response (text content and error flag)."""
    from mcp import types

    # Sent as a bare tools/call: the client's call_tool() lists the tools first whenever this
    # session has not listed them (to validate structured output), a tools/list the Go plugin's
    # CallMcpTool does not make and that would blur the server's request log.
    call = types.CallToolRequest(
        params=types.CallToolRequestParams(name=request.name, arguments=request.args))
    async with _client(request.url) as client:
        result = await client.session.send_request(call, types.CallToolResult)
    texts = [part.text for part in result.content if getattr(part, "text", None) is not None]
    return {"content": [{"type": "text", "text": t} for t in texts],
            "isError": bool(result.is_error)}


@activity.defn(name="InvokeModel")
async def invoke_model(request: InvokeModelInput) -> dict[str, Any]:
    """The scripted model's reply to the request's contents and declared tools."""
    return script_reply(request.contents, request.tools)


ACTIVITIES = (list_mcp_tools, call_mcp_tool, invoke_model)
