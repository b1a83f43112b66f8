"""Run the sample workflows on a live server and write their histories as proto-JSON files.

Every scenario is a coroutine that drives one workflow (and its children or later runs) to the state
worth recording and returns ``{name: WorkflowHistory}``. All scenarios but the nondeterminism one
share one worker and run concurrently; the nondeterminism scenario needs two workers with different
code on its own task queue, one after the other.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowHistory,
    WorkflowUpdateFailedError,
)
from temporalio.worker import Worker

from toolkit.errors import LabError
from toolkit.lab.samples import workflows as wf
from toolkit.lab.sandbox import toolkit_sandbox_runner as sandbox_runner

__all__ = [
    "QUICK_SCENARIOS", "SCENARIOS", "record_samples", "record_samples_async", "sandbox_runner",
]

WORKER_IDENTITY = "samples-worker"
CLIENT_IDENTITY = "samples-client"
# How long a scenario may wait for an expected event before the recording is declared failed.
EVENT_WAIT = 20.0


@dataclass(frozen=True)
class Context:
    """What every scenario needs: a client, the shared task queue and a unique id prefix."""

    client: Client
    task_queue: str
    tag: str

    def workflow_id(self, name: str) -> str:
        return f"sample-{name}-{self.tag}"


Histories = dict[str, WorkflowHistory]
Scenario = Callable[[Context], Awaitable[Histories]]


async def wait_for_event(
    handle: WorkflowHandle, predicate: Callable[[WorkflowHistory], bool], what: str,
) -> WorkflowHistory:
    """Poll a workflow's history until ``predicate`` holds (raises LabError after EVENT_WAIT s)."""
    deadline = asyncio.get_running_loop().time() + EVENT_WAIT
    while True:
        history = await handle.fetch_history()
        if predicate(history):
            return history
        if asyncio.get_running_loop().time() > deadline:
            raise LabError(
                f"workflow {handle.id}: no {what} after {EVENT_WAIT:.0f} s "
                f"({len(history.events)} events so far)"
            )
        await asyncio.sleep(0.1)


def count_events(history: WorkflowHistory, type_name: str) -> int:
    """How many events of ``EVENT_TYPE_<type_name>`` the history holds."""
    wanted = EventType.Value(f"EVENT_TYPE_{type_name}")
    return sum(1 for event in history.events if event.event_type == wanted)


async def run_to_end(ctx: Context, name: str, run: object, *args: object) -> Histories:
    handle = await ctx.client.start_workflow(
        run, args=list(args), id=ctx.workflow_id(name), task_queue=ctx.task_queue,  # type: ignore[call-overload]
    )
    await handle.result()
    return {name: await handle.fetch_history()}


async def activities(ctx: Context) -> Histories:
    return await run_to_end(ctx, "activities", wf.ActivitiesWorkflow.run)


async def local_activities(ctx: Context) -> Histories:
    return await run_to_end(ctx, "local_activities", wf.LocalActivitiesWorkflow.run)


async def timers(ctx: Context) -> Histories:
    return await run_to_end(ctx, "timers", wf.TimersWorkflow.run)


async def side_effects(ctx: Context) -> Histories:
    return await run_to_end(ctx, "side_effects", wf.SideEffectsWorkflow.run)


async def signals_updates(ctx: Context) -> Histories:
    handle = await ctx.client.start_workflow(
        wf.MessagesWorkflow.run, id=ctx.workflow_id("signals_updates"), task_queue=ctx.task_queue,
    )
    await handle.signal(wf.MessagesWorkflow.add, "first")
    await handle.signal(wf.MessagesWorkflow.add, "second")
    await handle.execute_update(wf.MessagesWorkflow.set_value, 5, id="update-accepted")
    try:
        await handle.execute_update(wf.MessagesWorkflow.set_value, -1, id="update-rejected")
    except WorkflowUpdateFailedError:
        pass
    else:
        raise LabError(f"workflow {handle.id}: the validator accepted a negative value")
    await handle.signal(wf.MessagesWorkflow.finish)
    await handle.result()
    return {"signals_updates": await handle.fetch_history()}


async def child_workflows(ctx: Context) -> Histories:
    parent_id = ctx.workflow_id("child_workflows")
    handle = await ctx.client.start_workflow(
        wf.ParentWorkflow.run, parent_id, id=parent_id, task_queue=ctx.task_queue,
    )
    await handle.result()
    failed_child = ctx.client.get_workflow_handle(f"{parent_id}-child-fail")
    return {
        "child_workflows": await handle.fetch_history(),
        "child_failed": await failed_child.fetch_history(),
    }


async def continue_as_new(ctx: Context) -> Histories:
    handle = await ctx.client.start_workflow(
        wf.ContinueAsNewWorkflow.run, args=[0, 2], id=ctx.workflow_id("continue_as_new"),
        task_queue=ctx.task_queue,
    )
    await handle.result()  # follows the runs to the last one
    # The handle from start_workflow has no run id (it follows the chain); name each run explicitly.
    first = ctx.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    latest = await ctx.client.get_workflow_handle(handle.id).describe()
    last = ctx.client.get_workflow_handle(handle.id, run_id=latest.run_id)
    return {
        "continue_as_new": await first.fetch_history(),  # ends with ContinuedAsNew
        "continue_as_new_last": await last.fetch_history(),
    }


async def _started_and_waiting(ctx: Context, name: str) -> WorkflowHandle:
    handle = await ctx.client.start_workflow(
        wf.WaitForeverWorkflow.run, id=ctx.workflow_id(name), task_queue=ctx.task_queue,
    )
    await wait_for_event(
        handle, lambda h: count_events(h, "WORKFLOW_TASK_COMPLETED") >= 1, "a completed task",
    )
    return handle


async def cancellation(ctx: Context) -> Histories:
    handle = await _started_and_waiting(ctx, "cancellation")
    await handle.cancel()
    await wait_for_event(
        handle, lambda h: count_events(h, "WORKFLOW_EXECUTION_CANCELED") == 1, "canceled event",
    )
    return {"cancellation": await handle.fetch_history()}


async def termination(ctx: Context) -> Histories:
    handle = await _started_and_waiting(ctx, "termination")
    await handle.terminate("terminated by the sample recorder")
    return {"termination": await handle.fetch_history()}


def _worker(client: Client, task_queue: str, workflows: list[type], **options: object) -> Worker:
    return Worker(
        client, task_queue=task_queue, workflows=workflows, activities=wf.ALL_ACTIVITIES,
        workflow_runner=sandbox_runner(), identity=WORKER_IDENTITY,
        graceful_shutdown_timeout=timedelta(milliseconds=100), **options,  # type: ignore[arg-type]
    )


async def nondeterminism(ctx: Context) -> Histories:
    """Record with V1, change the code to V2, signal: V2's replay fails the workflow task."""
    task_queue = f"{ctx.task_queue}-drift"
    # No cache: without a sticky queue the next task goes straight to the normal queue, where the
    # second worker polls, instead of waiting out the sticky timeout of a stopped worker.
    async with _worker(ctx.client, task_queue, [wf.DriftingWorkflowV1], max_cached_workflows=0):
        handle = await ctx.client.start_workflow(
            wf.DriftingWorkflowV1.run, id=ctx.workflow_id("nondeterminism"), task_queue=task_queue,
        )
        await wait_for_event(
            handle,
            lambda h: count_events(h, "ACTIVITY_TASK_COMPLETED") == 1
            and count_events(h, "WORKFLOW_TASK_COMPLETED") == 2,
            "second completed workflow task",
        )
    async with _worker(ctx.client, task_queue, [wf.DriftingWorkflowV2], max_cached_workflows=0):
        await handle.signal(wf.DriftingWorkflowV2.release)
        history = await wait_for_event(handle, _failed_then_retried, "failed workflow task")
    await handle.terminate("nondeterminism sample recorded")
    return {"nondeterminism": history}


def _failed_then_retried(history: WorkflowHistory) -> bool:
    """A WorkflowTaskFailed event followed by the retried task (the history's open tail)."""
    types = [event.event_type for event in history.events]
    failed = EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    if failed not in types:
        return False
    tail = types[len(types) - 1 - types[::-1].index(failed) + 1:]
    return bool(tail) and tail[0] == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED


SCENARIOS: dict[str, Scenario] = {
    "activities": activities,
    "local_activities": local_activities,
    "timers": timers,
    "signals_updates": signals_updates,
    "child_workflows": child_workflows,
    "continue_as_new": continue_as_new,
    "side_effects": side_effects,
    "cancellation": cancellation,
    "termination": termination,
    "nondeterminism": nondeterminism,
}
"""Scenario name -> coroutine. Some scenarios write more than one history (see their docs)."""

QUICK_SCENARIOS: tuple[str, ...] = ("activities", "signals_updates")
"""The subset ``make demo`` records for the first-look notebook."""


async def record_samples_async(
    server_address: str,
    out_dir: Path,
    *,
    quick: bool = False,
    scenarios: Iterable[str] | None = None,
    namespace: str = "default",
) -> dict[str, Path]:
    """Async form of :func:`record_samples` (for callers already inside an event loop)."""
    chosen = list(scenarios) if scenarios is not None else (
        list(QUICK_SCENARIOS) if quick else list(SCENARIOS)
    )
    unknown = [name for name in chosen if name not in SCENARIOS]
    if unknown:
        raise LabError(f"unknown sample scenarios {unknown}; expected some of {list(SCENARIOS)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        client = await Client.connect(server_address, namespace=namespace, identity=CLIENT_IDENTITY)
    except Exception as err:  # connection errors come in several RPC flavours
        raise LabError(f"cannot connect to Temporal at {server_address}: {err}") from err
    ctx = Context(client=client, task_queue=f"samples-{uuid.uuid4().hex[:8]}",
                  tag=uuid.uuid4().hex[:8])
    shared = [name for name in chosen if name != "nondeterminism"]
    results: list[Histories] = []
    async with _worker(client, ctx.task_queue, list(wf.MAIN_WORKFLOWS)):
        jobs = [SCENARIOS[name](ctx) for name in shared]
        if "nondeterminism" in chosen:
            jobs.append(nondeterminism(ctx))
        outcomes = await asyncio.wait_for(
            asyncio.gather(*jobs, return_exceptions=True), timeout=120
        )
    for name, outcome in zip([*shared, *(["nondeterminism"] if "nondeterminism" in chosen else [])],
                             outcomes, strict=True):
        if isinstance(outcome, BaseException):
            raise LabError(f"sample scenario {name!r} failed: {outcome!r}") from outcome
        results.append(outcome)
    written: dict[str, Path] = {}
    for histories in results:
        for name, history in histories.items():
            path = out_dir / f"{name}.json"
            path.write_text(history.to_json(), encoding="utf-8")
            written[name] = path
    return written


def record_samples(
    server_address: str,
    out_dir: Path,
    *,
    quick: bool = False,
    scenarios: Iterable[str] | None = None,
    namespace: str = "default",
) -> dict[str, Path]:
    """Record the sample workflows on a live server and write one proto-JSON file per history.

    Parameters
    ----------
    server_address
        ``host:port`` of a Temporal frontend (e.g. ``DevServer().address``).
    out_dir
        Directory for the ``<name>.json`` files (created when missing).
    quick
        Record only :data:`QUICK_SCENARIOS` (two small workflows, a couple of seconds).
    scenarios
        Explicit scenario names from :data:`SCENARIOS` (overrides ``quick``).
    namespace
        Namespace to run in.

    Returns
    -------
    dict of str to Path
        History name -> written file. Names are the scenario names plus ``child_failed`` (the
        failed child's own history) and ``continue_as_new_last`` (the last run of the chain).

    Raises
    ------
    LabError
        When the server cannot be reached or a scenario does not reach its expected state.
    """
    return asyncio.run(record_samples_async(
        server_address, out_dir, quick=quick, scenarios=scenarios, namespace=namespace,
    ))
