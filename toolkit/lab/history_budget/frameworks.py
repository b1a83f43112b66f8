"""The three frameworks as the history-budget recorder drives them: the lab's own workflows and
workers of :mod:`toolkit.lab.adk_python`, :mod:`toolkit.lab.openai_agents` and
:mod:`toolkit.lab.pydantic_ai`, each in its newest lab environment, on an MCP server with
``read_page``.

What each needs to run a long loop with the integration's defaults otherwise:

* ADK (google-adk 2.13.0, temporalio-google-adk): a ``TemporalMcpToolSet`` called ``pages``
  (ADK's own ``RunConfig.max_llm_calls``, 500, is above every step budget);
* OpenAI Agents (0.22.3, temporalio-openai-agents 1.1.0): the MCP v2 server ``pages``
  (``temporal_mcp_server``, tool list cached) and ``Runner.run(max_turns=...)``: the SDK's
  default of 10 model calls a turn would end every loop first;
* pydantic-ai (2.68.0): the worker's ``history_budget`` agent, whose ``MCPToolset`` the worker
  builds on the URL it is given, and ``UsageLimits(request_limit=...)``: the default of 50
  requests a run would end the longest loops first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolkit.lab.adk_python.envs import VersionEnvironment
from toolkit.lab.adk_python.scenarios import WORKFLOW_TYPE as ADK_WORKFLOW
from toolkit.lab.history_budget.scenarios import Budget
from toolkit.lab.lookup import by_name
from toolkit.lab.model import SCRIPTED_MODEL_NAME
from toolkit.lab.openai_agents.scenarios import WORKFLOW_TYPE as OA_WORKFLOW
from toolkit.lab.pydantic_ai.scenarios import BUDGET_AGENT, MCP_PAGES_URL_ENV
from toolkit.lab.pydantic_ai.scenarios import WORKFLOW_TYPE as PA_WORKFLOW

__all__ = ["FRAMEWORKS", "BudgetFramework", "framework"]

TOOLSET = "pages"
"""Name of the MCP toolset / server (the prefix of its activity types) in every framework."""


@dataclass(frozen=True)
class BudgetFramework:
    """One framework's parts.

    Attributes
    ----------
    name
        ``adk``, ``openai_agents`` or ``pydantic_ai``.
    environment
        Returns the version environment the runs are recorded in.
    worker_module, workflow_type
        The lab worker's entry point and the agent workflow's type name.
    model_activity
        Activity type of a model call.
    version_keys
        Keys of the worker's ready line copied into the metadata.
    spec
        The workflow input of a budget with the MCP server at a URL.
    worker_env
        Environment variables the worker needs for an MCP server at a URL (None: none).
    """

    name: str
    environment: Callable[[], VersionEnvironment]
    worker_module: str
    workflow_type: str
    model_activity: str
    version_keys: tuple[str, ...]
    spec: Callable[[Budget, str], dict[str, Any]]
    worker_env: Callable[[str], dict[str, str] | None] = lambda url: None


def _chain(budget: Budget) -> dict[str, Any]:
    return {"continue_as_new": budget.continue_as_new}


def _adk_env() -> VersionEnvironment:
    from toolkit.lab.adk_python.envs import MAIN_ENV

    return MAIN_ENV


def _adk_spec(budget: Budget, url: str) -> dict[str, Any]:
    return {"toolsets": [{"name": TOOLSET, "url": url}], "model": SCRIPTED_MODEL_NAME,
            "tool_max_attempts": 0, **_chain(budget)}


def _oa_env() -> VersionEnvironment:
    from toolkit.lab.openai_agents.envs import environment

    return environment("oa-0.22.3")


def _oa_spec(budget: Budget, url: str) -> dict[str, Any]:
    return {"servers": [{"name": TOOLSET, "url": url}], "cache_tools_list": True,
            "mcp_v2": True, "model": SCRIPTED_MODEL_NAME, "tool_max_attempts": 0,
            "max_turns": budget.max_model_calls + 10, **_chain(budget)}


def _pa_env() -> VersionEnvironment:
    from toolkit.lab.pydantic_ai.envs import environment

    return environment("pa-2.68.0")


def _pa_spec(budget: Budget, url: str) -> dict[str, Any]:
    return {"agent": BUDGET_AGENT, "request_limit": budget.max_model_calls + 10,
            **_chain(budget)}


def _pa_worker_env(url: str) -> dict[str, str]:
    return {MCP_PAGES_URL_ENV: url}


FRAMEWORKS: tuple[BudgetFramework, ...] = (
    BudgetFramework(
        "adk", _adk_env, "toolkit.lab.adk_python.worker", ADK_WORKFLOW, "invoke_model",
        ("google_adk", "temporalio", "plugin_module", "plugin", "mcp", "python"), _adk_spec),
    BudgetFramework(
        "openai_agents", _oa_env, "toolkit.lab.openai_agents.worker", OA_WORKFLOW,
        "invoke_model_activity",
        ("openai_agents", "temporalio", "integration_module", "integration", "openai", "mcp",
         "temporalio_mcp", "python"), _oa_spec),
    BudgetFramework(
        "pydantic_ai", _pa_env, "toolkit.lab.pydantic_ai.worker", PA_WORKFLOW,
        f"agent__{BUDGET_AGENT}__model_request",
        ("pydantic_ai", "temporalio", "fastmcp", "mcp", "python"), _pa_spec, _pa_worker_env),
)


def framework(name: str) -> BudgetFramework:
    """The framework called ``name``; a :class:`~toolkit.errors.LabError` naming the known
    ones for any other name."""
    return by_name(FRAMEWORKS, name, "history-budget framework")
