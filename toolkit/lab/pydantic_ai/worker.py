"""Worker process of the pydantic-ai recorder.

``python -m toolkit.lab.pydantic_ai.worker --address HOST:PORT --task-queue QUEUE``

Runs inside one environment of :mod:`.envs`: builds every scenario's ``TemporalAgent`` on the MCP
servers named in its environment (:mod:`.agents`), connects with ``PydanticAIPlugin`` and polls
with one ``AgentPlugin`` per agent. When it polls it prints one JSON line with ``"ready": true``
and its versions; SIGTERM or SIGINT shut it down gracefully.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any

from toolkit.lab.pydantic_ai.agents import build_agents, versions

__all__ = ["plugins", "sandbox_runner"]


def plugins() -> tuple[Any, list[Any]]:
    """The client plugin and one worker plugin per lab agent."""
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

    return PydanticAIPlugin(), [AgentPlugin(agent) for agent in build_agents().values()]


def sandbox_runner() -> Any:
    """The default sandbox with the lab's modules passed through (the plugin adds its own)."""
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

    runner = SandboxedWorkflowRunner()
    return dataclasses.replace(
        runner, restrictions=runner.restrictions.with_passthrough_modules("toolkit"))


async def run_worker(address: str, task_queue: str, identity: str) -> None:
    """Poll ``task_queue`` until SIGTERM/SIGINT."""
    from temporalio.client import Client
    from temporalio.worker import Worker

    from toolkit.lab.pydantic_ai.workflow import LabPydanticAIAgentWorkflow

    client_plugin, agent_plugins = plugins()
    client = await Client.connect(address, plugins=[client_plugin])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    worker = Worker(client, task_queue=task_queue, workflows=[LabPydanticAIAgentWorkflow],
                    workflow_runner=sandbox_runner(), identity=identity, plugins=agent_plugins)
    async with worker:
        print(json.dumps({"ready": True, "identity": identity, **versions()}), flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="pydantic-ai lab worker (one environment).")
    parser.add_argument("--address", required=True, help="Temporal frontend, host:port")
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--identity", default=None)
    args = parser.parse_args(argv)
    identity = args.identity or f"lab-pydantic-ai-worker@{versions()['pydantic_ai']}"
    asyncio.run(run_worker(args.address, args.task_queue, identity))
    sys.exit(0)


if __name__ == "__main__":
    main()
