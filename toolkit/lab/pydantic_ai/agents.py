"""The pydantic-ai agents of the recorder, one per scenario, wrapped for Temporal.

:func:`build_agents` runs once per worker (and replay) process, outside workflow code: each
scenario's ``Agent`` gets the scripted model and ``MCPToolset`` s on the MCP servers whose URLs
the worker was given, and is wrapped in a ``TemporalAgent`` named after the scenario; the
history-budget agent gets the ``pages`` MCP server and the integration's default activity
options. The workflow looks its agent up with :func:`lab_agent` (this module is passed through
the sandbox, so worker and workflow see the same registry).
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from toolkit.lab.pydantic_ai.model import scripted_model
from toolkit.lab.pydantic_ai.scenarios import (
    BUDGET_AGENT,
    MCP_PAGES_URL_ENV,
    MCP_TWICE_URL_ENV,
    MCP_URL_ENV,
    SCENARIOS,
    Scenario,
)

__all__ = ["build_agents", "lab_agent", "versions"]

INSTRUCTIONS = "Answer the user; call a tool when the user asks for one."
_AGENTS: dict[str, Any] = {}
# Replay never runs an activity: any URL will do when none is given.
_NOWHERE = "http://127.0.0.1:9/mcp"


def _toolsets(scenario: Scenario, url: str) -> list[Any]:
    from pydantic_ai.mcp import MCPToolset

    toolsets: list[Any] = []
    for toolset_id, query, same_as_previous in scenario.toolsets:
        if same_as_previous:
            toolsets.append(toolsets[-1])
            continue
        toolsets.append(MCPToolset(f"{url}?{query}" if query else url, id=toolset_id,
                                   cache_tools=scenario.cache_tools))
    return toolsets


def build_agents() -> dict[str, Any]:
    """Every scenario's ``TemporalAgent`` on the MCP servers named by the environment variables
    of :mod:`toolkit.lab.framework_recorder`; registered for :func:`lab_agent`."""
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import TemporalAgent
    from temporalio.common import RetryPolicy

    urls = {False: os.environ.get(MCP_URL_ENV, _NOWHERE),
            True: os.environ.get(MCP_TWICE_URL_ENV, _NOWHERE)}
    # Bounded retries so that a failing scenario ends its run.
    config = {"start_to_close_timeout": timedelta(seconds=30),
              "retry_policy": RetryPolicy(maximum_attempts=3,
                                          initial_interval=timedelta(milliseconds=500))}
    for scenario in SCENARIOS:
        agent = Agent(scripted_model(), name=scenario.name, instructions=INSTRUCTIONS,
                      toolsets=_toolsets(scenario, urls[scenario.list_twice]))
        _AGENTS[scenario.name] = TemporalAgent(agent, activity_config=config)
    from pydantic_ai.mcp import MCPToolset

    pages = MCPToolset(os.environ.get(MCP_PAGES_URL_ENV, _NOWHERE), id="pages")
    _AGENTS[BUDGET_AGENT] = TemporalAgent(Agent(scripted_model(), name=BUDGET_AGENT,
                                                instructions=INSTRUCTIONS, toolsets=[pages]))
    return dict(_AGENTS)


def lab_agent(name: str) -> Any:
    """The ``TemporalAgent`` built for scenario ``name``."""
    return _AGENTS[name]


def versions() -> dict[str, str | None]:
    """Versions that matter for a recording, as seen by this interpreter."""
    from toolkit.lab.installed import python_version
    from toolkit.lab.installed import version_of as version  # short: five lookups below

    return {"pydantic_ai": version("pydantic-ai-slim"), "temporalio": version("temporalio"),
            "fastmcp": version("fastmcp-slim") or version("fastmcp"), "mcp": version("mcp"),
            "python": python_version()}
