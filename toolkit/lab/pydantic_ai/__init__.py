"""pydantic-ai agents on a real Temporal server, across pydantic-ai releases.

Modules: :mod:`.envs` (version environments), :mod:`.model` (the scripted ``FunctionModel``),
:mod:`.agents` (one ``TemporalAgent`` per scenario), :mod:`.workflow`, :mod:`.worker`,
:mod:`.scenarios`, :mod:`.replay`; recording itself is :mod:`toolkit.lab.framework_recorder`.
The entry point imports lazily because worker and replay processes import this package inside
the release environments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["record_all", "spec"]


def spec(scenario: Any, url: str) -> dict[str, Any]:
    """The workflow input of ``scenario``: its agent's name (the worker built the agent on the
    environment's MCP servers, so ``url`` is not part of it)."""
    return {"agent": scenario.name}


def _framework() -> Any:
    from toolkit.lab.framework_recorder import Framework
    from toolkit.lab.pydantic_ai.envs import ENVIRONMENTS, environment
    from toolkit.lab.pydantic_ai.scenarios import (
        MCP_TWICE_URL_ENV,
        MCP_URL_ENV,
        SCENARIOS,
        UPGRADES,
        WORKFLOW_TYPE,
    )

    return Framework(
        name="pydantic_ai", workflow_type=WORKFLOW_TYPE,
        worker_module="toolkit.lab.pydantic_ai.worker",
        replay_module="toolkit.lab.pydantic_ai.replay",
        listing=r"agent__.+__get_tools", spec=spec, environment=environment,
        environments=ENVIRONMENTS, scenarios=SCENARIOS, upgrades=UPGRADES,
        version_keys=("pydantic_ai", "temporalio", "fastmcp", "mcp", "python"),
        mcp_env=(MCP_URL_ENV, MCP_TWICE_URL_ENV),
    )


def record_all(data_dir: Path, server_address: str, envs: list[str] | None = None) -> list[Path]:
    """Record every scenario in every environment (or those named in ``envs``), the rolling
    upgrade, and the replay matrix, under ``data_dir/pydantic_ai``.

    Returns
    -------
    list of Path
        History files, then the replay matrix CSV.
    """
    from toolkit.lab import framework_recorder

    return framework_recorder.record_all(_framework(), data_dir, server_address, envs)
