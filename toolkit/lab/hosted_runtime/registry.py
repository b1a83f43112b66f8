"""The MCP server registry of the hosted runtime, and the session-memory broker that binds to it.

Modelled on the note: at start-up the bundled MCP server is registered under its own id at
``http://host/route``; the session-memory broker takes the same URL as its base. When session
memory is enabled, each session gets a binding whose id is ``<server id>-session-memory-<token>``
and whose URL is the same endpoint plus ``?<param>=<token>`` (the server reads the token to inject
the session's trusted context). The runtime adds the binding to the registry and to the agent's
list of servers, so the agent ends up with two entries on one endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

__all__ = ["BUNDLED_SERVER_ID", "Binding", "McpServerConfig", "Registry", "SessionBroker",
           "agent_servers"]

BUNDLED_SERVER_ID = "bundled"
"""Id of the bundled MCP server in the registry."""


@dataclass(frozen=True)
class McpServerConfig:
    """One registry entry: transport and URL (as the Go ``MCPServerConfig``)."""

    url: str
    type: str = "http"

    def as_dict(self) -> dict[str, str]:
        return {"type": self.type, "url": self.url}


@dataclass
class Registry:
    """Server id -> config, in registration order (``registry.Set`` replaces in place)."""

    servers: dict[str, McpServerConfig] = field(default_factory=dict)

    def set(self, server_id: str, config: McpServerConfig) -> None:
        self.servers[server_id] = config

    def get(self, server_id: str) -> McpServerConfig:
        try:
            return self.servers[server_id]
        except KeyError:
            from toolkit.errors import LabError

            raise LabError(f"registry: no MCP server {server_id!r}; registered: "
                           f"{sorted(self.servers)}") from None

    def as_configs(self, ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """``{id: {"type", "url"}}`` (the shape :func:`toolkit.mcp_endpoints` reads)."""
        chosen = list(self.servers) if ids is None else ids
        return {ident: self.get(ident).as_dict() for ident in chosen}


@dataclass(frozen=True)
class Binding:
    """A session-scoped binding: its registry id and config."""

    id: str
    config: McpServerConfig


@dataclass
class SessionBroker:
    """Creates session-scoped bindings on the bundled server's endpoint."""

    base_url: str
    server_id: str = BUNDLED_SERVER_ID
    param: str = "token"

    def bind(self, token: str) -> Binding:
        """The binding of a session (same endpoint, the token in the query)."""
        url = f"{self.base_url}?{urlencode({self.param: token})}"
        return Binding(f"{self.server_id}-session-memory-{token}", McpServerConfig(url))


def agent_servers(endpoint_url: str, *, session_memory: bool, token: str,
                  param: str = "token") -> tuple[Registry, list[str]]:
    """Register the bundled server (and, with session memory, the session's binding).

    Parameters
    ----------
    endpoint_url
        The bundled MCP server's URL (``http://127.0.0.1:PORT/mcp``).
    session_memory
        The configuration flag that creates the scoped binding (the incident's trigger).
    token
        The session's context token.
    param
        Query parameter carrying the token.

    Returns
    -------
    (Registry, list of str)
        The registry and the ids of the servers the agent uses, in order.
    """
    registry = Registry()
    registry.set(BUNDLED_SERVER_ID, McpServerConfig(endpoint_url))
    servers = [BUNDLED_SERVER_ID]
    if session_memory:
        binding = SessionBroker(endpoint_url, param=param).bind(token)
        registry.set(binding.id, binding.config)
        servers.append(binding.id)
    return registry, servers
