"""Worker process of the pydantic-ai recorder.

``python -m toolkit.lab.pydantic_ai.worker --address HOST:PORT --task-queue QUEUE``

Runs inside one environment of :mod:`.envs`: builds every scenario's ``TemporalAgent`` on the MCP
servers named in its environment (:mod:`.agents`), connects with ``PydanticAIPlugin`` and polls
with one ``AgentPlugin`` per agent. When it polls it prints one JSON line with ``"ready": true``
and its versions; SIGTERM or SIGINT shut it down gracefully.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkit.lab import lab_worker
from toolkit.lab.pydantic_ai.agents import build_agents, versions

__all__ = ["plugins", "sandbox_runner"]


def plugins() -> tuple[Any, list[Any]]:
    """The client plugin and one worker plugin per lab agent."""
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

    return PydanticAIPlugin(), [AgentPlugin(agent) for agent in build_agents().values()]


PASSTHROUGH_MODULES = ("toolkit",)
"""The lab's modules, passed through the sandbox (the plugin adds its own)."""


def sandbox_runner() -> Any:
    """The default sandbox with the lab's modules passed through (the plugin adds its own)."""
    return lab_worker.sandbox_runner(PASSTHROUGH_MODULES)


async def run_worker(address: str, task_queue: str, identity: str) -> None:
    """Poll ``task_queue`` until SIGTERM/SIGINT."""
    from toolkit.lab.pydantic_ai.workflow import LabPydanticAIAgentWorkflow

    client_plugin, agent_plugins = plugins()
    await lab_worker.serve(address, task_queue, identity, LabPydanticAIAgentWorkflow,
                           client_plugins=[client_plugin], passthrough=PASSTHROUGH_MODULES,
                           versions=versions, worker_plugins=agent_plugins)


def main(argv: Sequence[str] | None = None) -> None:
    lab_worker.main(argv, "pydantic-ai lab worker (one environment).",
                    lambda: f"lab-pydantic-ai-worker@{versions()['pydantic_ai']}", run_worker)


if __name__ == "__main__":
    main()
