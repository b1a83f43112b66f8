"""OpenAI Agents on a real Temporal server, across openai-agents releases.

Modules: :mod:`.envs` (version environments), :mod:`.compat` (where the integration lives),
:mod:`.model` (the scripted model provider), :mod:`.workflow`, :mod:`.worker`, :mod:`.scenarios`,
:mod:`.replay`; recording itself is :mod:`toolkit.lab.framework_recorder`. The entry point
imports lazily because worker and replay processes import this package inside old environments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["record_all", "spec"]


def spec(scenario: Any, url: str) -> dict[str, Any]:
    """The workflow input (``AgentSpec`` as a dict) of ``scenario`` with its MCP server at
    ``url``."""
    from toolkit.lab.model import SCRIPTED_MODEL_NAME

    return {"servers": scenario.server_specs(url), "cache_tools_list": scenario.cache_tools_list,
            "mcp_v2": scenario.mcp_v2, "model": SCRIPTED_MODEL_NAME,
            "tool_max_attempts": scenario.tool_max_attempts}


def _framework() -> Any:
    from toolkit.lab.framework_recorder import Framework
    from toolkit.lab.openai_agents.envs import ENVIRONMENTS, environment
    from toolkit.lab.openai_agents.scenarios import SCENARIOS, UPGRADES, WORKFLOW_TYPE

    return Framework(
        name="openai_agents", workflow_type=WORKFLOW_TYPE,
        worker_module="toolkit.lab.openai_agents.worker",
        replay_module="toolkit.lab.openai_agents.replay",
        listing=r".+-list-tools|temporalio\.mcp\..+\.list-tools", spec=spec,
        environment=environment, environments=ENVIRONMENTS, scenarios=SCENARIOS,
        upgrades=UPGRADES,
        version_keys=("openai_agents", "temporalio", "integration_module", "integration",
                      "openai", "mcp", "temporalio_mcp", "python"),
        applies=lambda env, scenario: env.mcp_v2 or not scenario.mcp_v2,
    )


def record_all(data_dir: Path, server_address: str, envs: list[str] | None = None) -> list[Path]:
    """Record every scenario in every environment (or those named in ``envs``), the rolling
    upgrades, and the replay matrix, under ``data_dir/openai_agents``.

    Returns
    -------
    list of Path
        History files, then the replay matrix CSV.
    """
    from toolkit.lab import framework_recorder

    return framework_recorder.record_all(_framework(), data_dir, server_address, envs)
