"""The scenarios the pydantic-ai recorder records: one named agent each.

pydantic-ai fixes an agent's toolsets when it is wrapped in a ``TemporalAgent`` (each toolset
becomes activities ``agent__<agent>__mcp_server__<toolset id>__get_tools`` / ``__call_tool``),
so every scenario is its own agent, built by the worker from the MCP URLs it is given
(:mod:`toolkit.lab.framework_recorder`, ``fixed_mcp``); the workflow input names the agent.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.lab.adk_python.scenarios import PLAIN_TURN, TOKEN_QUERY, TOOL_TURN
from toolkit.lab.lookup import by_name

__all__ = ["BUDGET_AGENT", "MCP_PAGES_URL_ENV", "MCP_TWICE_URL_ENV", "MCP_URL_ENV", "SCENARIOS",
           "UPGRADES", "WORKFLOW_TYPE", "Scenario", "Upgrade", "scenario"]

WORKFLOW_TYPE = "LabPydanticAIAgent"
"""Workflow type name of the agent workflow (the driver starts it by name)."""

MCP_URL_ENV = "TOOLKIT_LAB_MCP_URL"
"""Environment variable with the plain MCP server's URL (read by the worker)."""
MCP_TWICE_URL_ENV = "TOOLKIT_LAB_MCP_TWICE_URL"
"""Environment variable with the URL of the MCP server that lists every tool twice."""
MCP_PAGES_URL_ENV = "TOOLKIT_LAB_MCP_PAGES_URL"
"""Environment variable with the URL of an MCP server with ``read_page`` (for the
:data:`BUDGET_AGENT` of :mod:`toolkit.lab.history_budget`)."""
BUDGET_AGENT = "history_budget"
"""The agent of the history-budget recordings: one MCP toolset ``pages``, the integration's
default activity options (no retry bound)."""


@dataclass(frozen=True)
class Scenario:
    """One recording recipe (the agent's name is the scenario's).

    Attributes
    ----------
    toolsets
        ``(toolset id, query string, same object as the previous)`` triples: MCP toolsets on
        the plain (or list-twice) server, the query appended to its URL.
    cache_tools
        ``MCPToolset(cache_tools=...)`` (pydantic-ai's default is True).
    """

    name: str
    description: str
    turns: tuple[str, ...] = (TOOL_TURN, PLAIN_TURN)
    toolsets: tuple[tuple[str, str, bool], ...] = (("weather", "", False),)
    cache_tools: bool = True
    list_twice: bool = False


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("two_turns", "turn 1 asks for a tool (get_weather), turn 2 is plain; "
             "cache_tools on (the default)"),
    Scenario("two_turns_uncached", "two_turns with cache_tools=False", cache_tools=False),
    Scenario("two_servers", "two MCP toolsets on one endpoint: the plain URL and the same URL "
             "with ?token=", toolsets=(("weather", "", False),
                                       ("weather_token", TOKEN_QUERY, False))),
    Scenario("list_twice", "one MCP server listing every tool twice", turns=(TOOL_TURN,),
             list_twice=True),
)
"""Scenarios recorded in every environment.

The same ``MCPToolset`` twice in one agent cannot be recorded: in every release here the
``TemporalAgent`` defines its ``get_tools`` / ``get_instructions`` / ``call_tool`` activities twice
and the worker refuses to start (2.68.0 with temporalio 1.35: ``ValueError: More than one activity
named agent__<agent>__mcp_server__weather__get_instructions``)."""


LATER_TURN = "And what about tomorrow?"

UPGRADE_SCENARIO = Scenario(
    "two_turns", "the two_turns agent with a third, plain turn",
    turns=(TOOL_TURN, PLAIN_TURN, LATER_TURN))
"""The upgrades' conversation. pydantic-ai 2.2.0 keeps the cached tool list (``cache_tools``, the
default) on the agent's Temporal toolset object, which every workflow of the worker process
shares: the first run lists, later runs and turns do not (by the source, that cache is gone from
2.3.0 on). 2.40.0 and 2.68.0 list once per run. A new worker can replay the first turn of an old
history but not the second."""


@dataclass(frozen=True)
class Upgrade:
    """Rolling upgrade: the first ``split`` turns on a worker of ``before``, the others on a
    fresh worker of ``after``."""

    before: str
    after: str
    scenario: Scenario = UPGRADE_SCENARIO
    split: int = 2

    @property
    def name(self) -> str:
        return f"rolling_upgrade_to_{self.after}"


UPGRADES: tuple[Upgrade, ...] = (
    Upgrade("pa-2.2.0", "pa-2.40.0"),   # across the listing change: replaying turn 2 fails
    Upgrade("pa-2.40.0", "pa-2.68.0"),  # the same listings: the control
)


def scenario(name: str) -> Scenario:
    """The scenario called ``name``; a :class:`~toolkit.errors.LabError` naming the
    known ones for any other name."""
    return by_name(SCENARIOS, name, "scenario")
