"""The scenarios Recorder A records: what the MCP server does, which toolsets, which turns."""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.lab.lookup import by_name

__all__ = ["SCENARIOS", "UPGRADES", "WORKFLOW_TYPE", "Scenario", "Upgrade", "scenario"]

WORKFLOW_TYPE = "LabAdkAgent"
"""Workflow type name of the agent workflow (the driver starts it by name)."""

TOOL_TURN = "What is the weather in Paris?"
PLAIN_TURN = "Thanks, that is all."
TOKEN_QUERY = "token=lab-token-1"


@dataclass(frozen=True)
class Scenario:
    """One recording recipe.

    Attributes
    ----------
    name
        File stem under ``data/adk/<env>/``.
    description
        One line for the metadata file.
    turns
        User messages, one ``user_turn`` signal each.
    toolsets
        ``(toolset name, query string)`` pairs; every toolset points at the scenario's MCP
        server, the query (may be empty) appended to its URL.
    list_twice, hide_after_first_call
        :class:`~toolkit.lab.mcp_server.McpServer` options.
    tool_max_attempts
        Retry bound of the toolset activities (0: the plugin default, unbounded).
    """

    name: str
    description: str
    turns: tuple[str, ...] = (TOOL_TURN, PLAIN_TURN)
    toolsets: tuple[tuple[str, str], ...] = (("weather", ""),)
    list_twice: bool = False
    hide_after_first_call: tuple[str, ...] = ()
    tool_max_attempts: int = 0

    def toolset_specs(self, url: str) -> list[dict[str, str]]:
        """Workflow-input toolsets for an MCP server at ``url``."""
        return [{"name": name, "url": f"{url}?{query}" if query else url}
                for name, query in self.toolsets]


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("two_turns", "turn 1 asks for a tool (get_weather), turn 2 is plain"),
    Scenario(
        "two_toolsets",
        "two TemporalMcpToolSets on one endpoint: the plain URL and the same URL with ?token=",
        toolsets=(("weather", ""), ("weather-token", TOKEN_QUERY)),
    ),
    Scenario(
        "list_twice",
        "one MCP server listing every tool twice; the call-tool activity finds two matches "
        "(bounded to 3 attempts so the run ends)",
        turns=(TOOL_TURN,),
        list_twice=True,
        tool_max_attempts=3,
    ),
)
"""Scenarios recorded in every version environment."""


@dataclass(frozen=True)
class Upgrade:
    """Rolling upgrade: turn 1 on a worker of ``before``, turn 2 on a fresh one of ``after``."""

    before: str
    after: str
    scenario: Scenario = SCENARIOS[0]

    @property
    def name(self) -> str:
        return f"rolling_upgrade_to_{self.after}"


UPGRADES: tuple[Upgrade, ...] = (
    # Across the listing-policy boundary: the new worker cannot replay turn 1.
    Upgrade("adk-1.28.1", "adk-1.29.0"),
    # A control on one side of the boundary (and across temporalio 1.30 -> 1.35).
    Upgrade("adk-1.29.0", "adk-2.13.0"),
)


def scenario(name: str) -> Scenario:
    """The scenario called ``name``; a :class:`~toolkit.errors.LabError` naming the
    known ones for any other name."""
    return by_name(SCENARIOS, name, "scenario")
