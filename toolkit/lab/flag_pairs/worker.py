"""Worker process of the flag-pair recorder, run inside one temporalio release's environment.

``python -m toolkit.lab.flag_pairs.worker --address HOST:PORT --task-queue QUEUE``

Polls the queue with every workflow and activity of :mod:`.workflows`, prints one JSON line with
``"ready": true`` and the release it runs, and shuts down gracefully on SIGTERM or SIGINT. With
``FLAG_PAIRS_SINGLE_BATCH=1`` it turns on Python's lang flag 2
(``PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH``) with the switch the SDK keeps for rolling
it out (off by default in temporalio 1.31-1.35), so the history records what a release that
enables it will record. Only APIs temporalio 1.1.0 has are used otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Sequence
from importlib import metadata
from typing import Any

from toolkit.lab import lab_worker

__all__ = ["SINGLE_BATCH_ENV", "main", "versions"]

SINGLE_BATCH_ENV = "FLAG_PAIRS_SINGLE_BATCH"


def versions() -> dict[str, Any]:
    """The temporalio release of this environment, the lang flags the worker turns on and the
    code version it runs (``$FLAG_PAIRS_CODE``)."""
    from toolkit.lab.flag_pairs.workflows import CODE_ENV

    single = os.environ.get(SINGLE_BATCH_ENV) == "1"
    code = os.environ.get(CODE_ENV) or "same"
    return {"temporalio": metadata.version("temporalio"), "single_batch": single, "code": code}


def _switch_single_batch(worker: Any) -> None:
    from temporalio.worker._workflow_instance import _WorkflowLogicFlag

    worker._set_default_workflow_logic_flag(
        _WorkflowLogicFlag.PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH, enabled=True
    )


async def run_worker(address: str, task_queue: str, identity: str) -> None:
    """Poll ``task_queue`` until SIGTERM/SIGINT."""
    from temporalio.client import Client
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    from toolkit.lab.flag_pairs.workflows import ACTIVITIES, workflows

    client = await Client.connect(address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=workflows(),
        activities=ACTIVITIES,
        workflow_runner=UnsandboxedWorkflowRunner(),
        identity=identity,
    )
    if versions()["single_batch"]:
        _switch_single_batch(worker)
    async with worker:
        print(json.dumps({"ready": True, "identity": identity, **versions()}), flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> None:
    lab_worker.main(
        argv,
        "Flag-pair worker (one temporalio release).",
        lambda: f"flag-pairs@{versions()['temporalio']}",
        run_worker,
    )


if __name__ == "__main__":
    main()
