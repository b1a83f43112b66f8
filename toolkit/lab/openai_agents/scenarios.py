"""The scenarios the OpenAI Agents recorder records.

Every scenario is one agent whose MCP servers are the integration's stateless MCP servers
(``stateless_mcp_server(name, cache_tools_list=..., factory_argument=url)`` in the workflow,
``StatelessMCPServerProvider(name, factory)`` on the worker), so each MCP operation is an
activity ``<name>-stateless-list-tools`` / ``<name>-stateless-call-tool-v2``.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.lab.adk_python.scenarios import PLAIN_TURN, TOKEN_QUERY, TOOL_TURN
from toolkit.lab.lookup import by_name

__all__ = ["SCENARIOS", "SERVER_NAMES", "UPGRADES", "WORKFLOW_TYPE", "Scenario", "Upgrade",
           "scenario"]

WORKFLOW_TYPE = "LabOpenAIAgent"
"""Workflow type name of the agent workflow (the driver starts it by name)."""

SERVER_NAMES: tuple[str, ...] = ("weather", "weather-token", "pages")
"""MCP server names (activity prefixes) every worker serves."""


@dataclass(frozen=True)
class Scenario:
    """One recording recipe.

    Attributes
    ----------
    name, description
        File stem under ``data/openai_agents/<env>/`` and one line for the metadata.
    turns
        User messages, one ``user_turn`` signal each.
    servers
        ``(server name, query string)`` pairs, in the agent's ``mcp_servers`` order; all on the
        scenario's MCP server, the query (may be empty) appended to its URL.
    cache_tools_list
        The stateless servers' ``cache_tools_list``.
    list_twice
        The MCP server lists every tool twice.
    tool_max_attempts
        Retry bound of the MCP activities (0: the integration's default, unbounded).
    mcp_v2
        MCP v2 servers (``temporal_mcp_server``: activities ``temporalio.mcp.<server>.*``),
        recorded only where the integration has them (``temporalio-openai-agents``).
    """

    name: str
    description: str
    turns: tuple[str, ...] = (TOOL_TURN, PLAIN_TURN)
    servers: tuple[tuple[str, str], ...] = (("weather", ""),)
    cache_tools_list: bool = False
    list_twice: bool = False
    tool_max_attempts: int = 0
    mcp_v2: bool = False

    def server_specs(self, url: str) -> list[dict[str, str]]:
        """Workflow-input servers for an MCP server at ``url``."""
        return [{"name": name, "url": f"{url}?{query}" if query else url}
                for name, query in self.servers]


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("two_turns", "turn 1 asks for a tool (get_weather), turn 2 is plain; "
             "cache_tools_list off (the stateless server's default)"),
    Scenario("two_turns_cached", "two_turns with cache_tools_list=True", cache_tools_list=True),
    Scenario("two_servers", "two stateless MCP servers on one endpoint: the plain URL and the "
             "same URL with ?token=", servers=(("weather", ""), ("weather-token", TOKEN_QUERY))),
    Scenario("same_server_twice", "the same stateless MCP server twice in mcp_servers",
             servers=(("weather", ""), ("weather", ""))),
    Scenario("list_twice", "one MCP server listing every tool twice (MCP activities bounded to "
             "3 attempts)", turns=(TOOL_TURN,), list_twice=True, tool_max_attempts=3),
    Scenario("mcp_v2", "two_turns with the MCP v2 server that replaces the stateless one "
             "(temporal_mcp_server, its default cache_tools_list=True)", cache_tools_list=True,
             mcp_v2=True),
)
"""Scenarios recorded in every environment."""

FAILING = frozenset({"two_servers", "same_server_twice"})
"""Scenarios whose first turn may fail a workflow task instead of answering (duplicate names
across MCP servers are refused inside workflow code): the recorder waits for either."""


@dataclass(frozen=True)
class Upgrade:
    """Rolling upgrade: the first ``split`` turns on a worker of ``before``, the others on a
    fresh worker of ``after``."""

    before: str
    after: str
    scenario: Scenario = SCENARIOS[0]
    split: int = 1

    @property
    def name(self) -> str:
        return f"rolling_upgrade_to_{self.after}"


UPGRADES: tuple[Upgrade, ...] = (
    # Every release lists alike (2 + 1 without the cache): the oldest to the newest, across the
    # move from temporalio's contrib module to temporalio-openai-agents, as the control.
    Upgrade("oa-0.17.8", "oa-0.22.3"),
)


def scenario(name: str) -> Scenario:
    """The scenario called ``name``; a :class:`~toolkit.errors.LabError` naming the
    known ones for any other name."""
    return by_name(SCENARIOS, name, "scenario")
