"""The main loop every lab worker process shares, whatever framework its workflow runs.

A framework's worker module builds its plugins and workflow, then calls :func:`serve`, which
connects, polls one task queue, prints one JSON line with ``"ready": true`` and the versions the
worker runs with (the recorder waits for it) and shuts down gracefully on SIGTERM or SIGINT;
:func:`main` parses the command line all workers take.

Runs inside every version environment, so only APIs every recorded temporalio release has are
used: ``plugins=`` reaches ``Worker`` only when a framework gives worker plugins.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["main", "sandbox_runner", "serve"]


def sandbox_runner(passthrough: Sequence[str]) -> Any:
    """The default workflow sandbox with ``passthrough`` modules added (plugins add their own)."""
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

    runner = SandboxedWorkflowRunner()
    return dataclasses.replace(
        runner, restrictions=runner.restrictions.with_passthrough_modules(*passthrough))


async def serve(address: str, task_queue: str, identity: str, workflow: type, *,
                client_plugins: Sequence[Any], passthrough: Sequence[str],
                versions: Callable[[], dict[str, Any]],
                worker_plugins: Sequence[Any] | None = None) -> None:
    """Poll ``task_queue`` with ``workflow`` until SIGTERM/SIGINT.

    Parameters
    ----------
    client_plugins
        Plugins of the client connection.
    passthrough
        Modules the sandbox passes through besides the plugins' own.
    versions
        The versions printed in the ready line.
    worker_plugins
        Plugins of the worker itself; None passes none (old releases lack the argument).
    """
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address, plugins=list(client_plugins))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    extra: dict[str, Any] = {} if worker_plugins is None else {"plugins": list(worker_plugins)}
    worker = Worker(client, task_queue=task_queue, workflows=[workflow],
                    workflow_runner=sandbox_runner(passthrough), identity=identity, **extra)
    async with worker:
        print(json.dumps({"ready": True, "identity": identity, **versions()}), flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None, description: str, default_identity: Callable[[], str],
         run: Callable[[str, str, str], Awaitable[None]]) -> None:
    """Parse ``--address``, ``--task-queue`` and ``--identity``, then run ``run(address,
    task_queue, identity)`` (identity defaults to ``default_identity()``) and exit 0."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--address", required=True, help="Temporal frontend, host:port")
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--identity", default=None)
    args = parser.parse_args(argv)
    identity = args.identity or default_identity()
    asyncio.run(run(args.address, args.task_queue, identity))
    sys.exit(0)
