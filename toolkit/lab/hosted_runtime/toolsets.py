"""One MCP toolset per registry entry, over the real MCP server; the endpoint fix.

``hosted_toolsets`` builds the agent's toolsets from the registry (the Go ``hostedToolsets``).
Before the fix every entry becomes a toolset, so two entries on one endpoint expose the same tool
names twice. With the fix, entries are grouped by endpoint (URL without query and fragment;
stdio never collapses) and one per group is kept: the session-scoped entry, as
:func:`toolkit.mcp_endpoints` decides. ``keep="first"`` is the naive variant the note warns
about (keeps the first entry, loses the session token); it exists so tests can show that they
notice it.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal

from toolkit.agents.mcp import mcp_endpoints
from toolkit.lab.hosted_runtime.registry import Registry
from toolkit.lab.hosted_runtime.slog import SlogLogger

__all__ = ["McpTool", "McpToolset", "hosted_toolsets", "select_servers"]

Keep = Literal["scoped", "first"]


@dataclass(frozen=True)
class McpTool:
    """A tool listed by a toolset; calls go through that toolset's MCP session."""

    name: str
    description: str
    toolset: McpToolset

    async def call(self, args: dict[str, Any]) -> dict[str, Any]:
        """Call the tool on the MCP server; the MCP result as ``{"content": [...], ...}``."""
        return await self.toolset.call(self.name, args)


class McpToolset:
    """A streamable-HTTP MCP client session for one registry entry (open for one agent run).

    Parameters
    ----------
    server_id
        The registry id (the toolset's name).
    url
        The entry's URL, query included: the server sees exactly this URL.
    """

    def __init__(self, server_id: str, url: str) -> None:
        self.server_id = server_id
        self.url = url
        self._client: Any = None

    async def open(self, stack: AsyncExitStack) -> McpToolset:
        """Connect (the session closes with ``stack``)."""
        from mcp.client.client import Client

        self._client = await stack.enter_async_context(Client(self.url))
        return self

    def _session(self) -> Any:
        if self._client is None:
            from toolkit.errors import LabError

            raise LabError(f"toolset {self.server_id!r}: not connected; call open() first")
        return self._client

    async def tools(self) -> list[McpTool]:
        """``Tools()``: the server's tools (one ``tools/list`` request)."""
        listed = await self._session().list_tools()
        return [McpTool(t.name, t.description or "", self) for t in listed.tools]

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """One ``tools/call`` request; the result as a plain dict."""
        result = await self._session().call_tool(name, args)
        return result.model_dump(mode="json", exclude_none=True)


def select_servers(registry: Registry, server_ids: list[str], *, keep: Keep = "scoped"
                   ) -> tuple[list[str], list[tuple[str, str]]]:
    """Which of the agent's servers get a toolset under the endpoint fix.

    Returns
    -------
    (list of str, list of (str, str))
        Kept ids in the agent's order, and ``(skipped id, keeper id)`` pairs.
    """
    table = mcp_endpoints(registry.as_configs(server_ids))
    if keep == "first":  # the naive fix: first entry of each endpoint group
        keepers = table.groupby("group", sort=False)["id"].first()
        table["keep"] = table["id"].isin(keepers)
    keeper_of = {row.group: row.id for row in table.itertuples() if row.keep}
    kept = [row.id for row in table.itertuples() if row.keep]
    skipped = [(row.id, keeper_of[row.group]) for row in table.itertuples() if not row.keep]
    return kept, skipped


async def hosted_toolsets(registry: Registry, server_ids: list[str], stack: AsyncExitStack,
                          log: SlogLogger, *, endpoint_fix: bool, keep: Keep = "scoped"
                          ) -> list[McpToolset]:
    """The agent's toolsets, connected, one per registry entry (deduplicated with the fix)."""
    chosen = list(server_ids)
    if endpoint_fix:
        chosen, skipped = select_servers(registry, server_ids, keep=keep)
        for skipped_id, keeper in skipped:
            # The fix's own line, worded as in the note (and the naive grep's false positive).
            log.info(f'[mcp] skipping duplicate toolset "{skipped_id}": endpoint already served '
                     f'by "{keeper}"')
    return [await McpToolset(ident, registry.get(ident).url).open(stack) for ident in chosen]
