"""Running one flag-pair scenario on the dev server with a worker of one temporalio release.

Two scenarios need two events in one workflow activation: the activity's completion and a signal
(or a cancellation request). Timing cannot promise that, so the run is paused instead: the
release's worker schedules the activity on a queue nobody polls and is stopped; then the signal
or cancellation is sent, the activity is run by a worker of this process on its own queue, and
only then is a fresh worker of the release started, whose first activation holds both.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import nexusrpc.handler
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.worker import Worker

from toolkit.errors import LabError
from toolkit.lab.adk_python.driver import export_history
from toolkit.lab.adk_python.envs import VersionEnvironment
from toolkit.lab.adk_python.processes import WorkerProcess
from toolkit.lab.flag_pairs.worker import SINGLE_BATCH_ENV
from toolkit.lab.flag_pairs.workflows import (
    ACTIVITIES,
    CODE_ENV,
    NEXUS_OPERATION,
    NEXUS_OPERATION_RENAMED,
    NEXUS_SERVICE,
)

__all__ = ["DELIVERIES", "EchoService", "Run", "run_scenario"]

WORKER_MODULE = "toolkit.lab.flag_pairs.worker"
#: What the driver sends a paused run: a cancellation request or the signal ``go``.
DELIVERIES: dict[str, Callable[[WorkflowHandle[Any, Any]], Awaitable[Any]]] = {
    "cancel": lambda handle: handle.cancel(),
    "signal": lambda handle: handle.signal("go"),
}


@nexusrpc.handler.service_handler(name=NEXUS_SERVICE)
class EchoService:
    """The Nexus service the Nexus scenario calls, served by this process (temporalio 1.35)."""

    @nexusrpc.handler.sync_operation(name=NEXUS_OPERATION)
    async def echo(self, ctx: nexusrpc.handler.StartOperationContext, text: str) -> str:
        return f"nexus:{text}"

    @nexusrpc.handler.sync_operation(name=NEXUS_OPERATION_RENAMED)
    async def echo_renamed(self, ctx: nexusrpc.handler.StartOperationContext, text: str) -> str:
        return f"nexus-renamed:{text}"


class Run:
    """One scenario's run: the release and code version its workers run, where they poll
    (``venvs_dir``: where release environments are built; None for ``data/venvs``)."""

    def __init__(
        self,
        env: VersionEnvironment,
        address: str,
        task_queue: str,
        log_dir: Path,
        single_batch: bool,
        code: str = "same",
        venvs_dir: Path | None = None,
    ) -> None:
        self.env, self.address, self.task_queue = env, address, task_queue
        self.log_dir, self.single_batch, self.code = log_dir, single_batch, code
        self.venvs_dir = venvs_dir
        self.worker_info: dict[str, Any] = {}
        self.worker_starts = 0

    @contextlib.contextmanager
    def worker(self) -> Iterator[WorkerProcess]:
        """A worker process of the release polling the run's queue, stopped by PID on exit."""
        self.worker_starts += 1
        extra = {CODE_ENV: self.code, **({SINGLE_BATCH_ENV: "1"} if self.single_batch else {})}
        log = self.log_dir / f"{self.task_queue}.{self.worker_starts}.worker.log"
        with WorkerProcess(
            self.env, self.address, self.task_queue, log, venvs_dir=self.venvs_dir,
            module=WORKER_MODULE, extra_env=extra,
        ) as process:  # fmt: skip
            self.worker_info = process.info
            yield process


async def _wait(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 60.0) -> None:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if await check():
            return
        await asyncio.sleep(0.2)
    raise LabError(f"no {what} within {timeout:.0f} s")


def _has_event(handle: WorkflowHandle[Any, Any], kind: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        history = await handle.fetch_history()
        return any(event.event_type == kind for event in history.events)

    return check


async def _closed(handle: WorkflowHandle[Any, Any]) -> str:
    status: list[str] = []

    async def check() -> bool:
        described = await handle.describe()
        if described.status == WorkflowExecutionStatus.RUNNING:
            return False
        status.append(described.status.name if described.status else "UNKNOWN")
        return True

    await _wait(check, f"close of workflow {handle.id}")
    return status[0]


async def _paused(
    client: Client,
    run: Run,
    handle_of: Callable[[], Awaitable[Any]],
    deliver: Callable[[WorkflowHandle[Any, Any]], Awaitable[Any]],
    activity_queue: str,
) -> tuple[WorkflowHandle[Any, Any], str]:
    with run.worker():
        handle = await handle_of()
        await _wait(
            _has_event(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
            f"ActivityTaskScheduled in {handle.id}",
        )
    # No worker of the release runs now: the task the delivery schedules waits for the next one.
    await deliver(handle)
    async with Worker(client, task_queue=activity_queue, activities=ACTIVITIES):
        await _wait(
            _has_event(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED),
            f"ActivityTaskCompleted in {handle.id}",
        )
    with run.worker():
        return handle, await _closed(handle)


async def run_scenario(
    client: Client,
    run: Run,
    workflow_type: str,
    workflow_id: str,
    delivery: str | None,
    endpoint: str | None = None,
) -> tuple[dict[str, Any], str, str]:
    """Run ``workflow_type`` once; return its exported history, final status and run id.

    Parameters
    ----------
    delivery
        A key of :data:`DELIVERIES` for the paused run described above; None for a plain run.
    endpoint
        The Nexus endpoint the workflow calls (its input), for the Nexus scenario.
    """
    activity_queue = f"{run.task_queue}-activities"
    spec = {"activity_queue": activity_queue, "endpoint": endpoint}

    async def start() -> WorkflowHandle[Any, Any]:
        return await client.start_workflow(
            workflow_type, spec, id=workflow_id, task_queue=run.task_queue
        )

    if delivery is None:
        with run.worker():
            handle = await start()
            status = await _closed(handle)
    elif delivery in DELIVERIES:
        handle, status = await _paused(client, run, start, DELIVERIES[delivery], activity_queue)
    else:
        raise LabError(f"unknown delivery {delivery!r}; expected one of {sorted(DELIVERIES)}")
    run_id = handle.result_run_id or ""
    return export_history(run.address, workflow_id, run_id), status, run_id
