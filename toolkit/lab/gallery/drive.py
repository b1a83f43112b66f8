"""Running one version of a case on a server: start, drive, wait until idle, export.

A run is *idle* when its last workflow-task event is ``WorkflowTaskCompleted`` (or when its history
ends with ``WorkflowTaskFailed`` and the retried task started: the run is stuck on a failing task)
and nothing it waits for can arrive by itself soon: no open activity, no open child workflow, no
open timer shorter than :data:`SHORT_TIMER`. Every drive step waits for idleness first, so signals
and updates land at the same point of the flow in both versions and in every recording, which
keeps event ids (and therefore replay messages) stable.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType, IndexedValueType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHistory,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.worker import Worker

from toolkit.errors import LabError
from toolkit.lab.gallery.activities import ACTIVITIES
from toolkit.lab.gallery.case import Case, Query, Settle, Signal, Step, Update
from toolkit.lab.sandbox import toolkit_sandbox_runner as workflow_runner

__all__ = [
    "SEARCH_ATTRIBUTES",
    "SHORT_TIMER",
    "VersionRun",
    "ensure_search_attributes",
    "run_version",
    "workflow_runner",
]

#: Custom search attributes the built-in cases upsert; registered on the namespace if missing.
SEARCH_ATTRIBUTES = {"GalleryStage": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD}

#: Timers at most this long are waited for before the run counts as idle; longer ones never fire
#: during a recording (they exist to be cancelled or to keep a run open).
SHORT_TIMER = timedelta(seconds=60)

_POLL_SECONDS = 0.1
_IDLE_TIMEOUT_SECONDS = 60.0

_CLOSED = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: "completed",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: "failed",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: "timed_out",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: "canceled",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: "terminated",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: "continued_as_new",
}
_STUCK_TAIL = [
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
]
_TASK_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
}
_ACTIVITY_CLOSED = (
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
)
_CHILD_CLOSED = (
    EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED,
)


@dataclass
class VersionRun:
    """What one recorded run of one version produced.

    Attributes
    ----------
    history
        The first run's history (the run started by the recording; later runs of a
        continue-as-new chain are not exported).
    status
        ``completed``, ``continued_as_new``, ``failed``, ... or ``running`` (open at export) or
        ``stuck`` (open, its last workflow task failed).
    steps
        One entry per drive step: what was sent and what came back (update results, rejections,
        query answers).
    """

    history: WorkflowHistory
    status: str
    steps: list[dict[str, Any]] = field(default_factory=list)


def _is_idle(events: list[HistoryEvent]) -> tuple[bool, str]:
    """Whether the run described by ``events`` is idle or closed, and its status."""
    if not events:
        return False, "running"
    last = events[-1].event_type
    if last in _CLOSED:
        return True, _CLOSED[last]
    if [event.event_type for event in events[-3:]] == _STUCK_TAIL:
        # The first failure is recorded, the retry is scheduled and started, and further failed
        # attempts leave no trace: the history stays like this until a fixed worker shows up.
        return True, "stuck"
    # Commands of a completed workflow task are written after its WorkflowTaskCompleted event,
    # so look at the last workflow-task event rather than at the last event.
    task_events = [event.event_type for event in events if event.event_type in _TASK_EVENTS]
    if not task_events or task_events[-1] != EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        return False, "running"
    open_activities: set[int] = set()
    open_children: set[int] = set()
    short_timers: dict[str, bool] = {}
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            open_activities.add(event.event_id)
        elif kind in _ACTIVITY_CLOSED:
            attributes = getattr(event, event.WhichOneof("attributes") or "")
            open_activities.discard(attributes.scheduled_event_id)
        elif kind == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            open_children.add(event.event_id)
        elif kind in _CHILD_CLOSED:
            attributes = getattr(event, event.WhichOneof("attributes") or "")
            open_children.discard(attributes.initiated_event_id)
        elif kind == EventType.EVENT_TYPE_TIMER_STARTED:
            attributes = event.timer_started_event_attributes
            timeout = attributes.start_to_fire_timeout.ToTimedelta()
            short_timers[attributes.timer_id] = timeout <= SHORT_TIMER
        elif kind in (EventType.EVENT_TYPE_TIMER_FIRED, EventType.EVENT_TYPE_TIMER_CANCELED):
            attributes = getattr(event, event.WhichOneof("attributes") or "")
            short_timers.pop(attributes.timer_id, None)
    idle = not open_activities and not open_children and not any(short_timers.values())
    return idle, "running"


async def _wait_idle(client: Client, case: Case, label: str) -> str:
    """Poll the latest run of the case's workflow until it is idle; return its status."""
    handle = client.get_workflow_handle(case_workflow_id(case))
    deadline = time.monotonic() + _IDLE_TIMEOUT_SECONDS
    events: list[HistoryEvent] = []
    while time.monotonic() < deadline:
        events = [event async for event in handle.fetch_history_events()]
        idle, status = _is_idle(events)
        if idle:
            return status
        await asyncio.sleep(_POLL_SECONDS)
    last = EventType.Name(events[-1].event_type) if events else "no events"
    raise LabError(
        f"gallery case {case.name!r} {label}: run of {case.workflow_type} not idle after "
        f"{_IDLE_TIMEOUT_SECONDS:.0f} s (last event {last}); expected it to complete or to wait"
    )


async def ensure_search_attributes(client: Client) -> None:
    """Register :data:`SEARCH_ATTRIBUTES` on the client's namespace unless already there."""
    namespace = client.namespace
    listing = ListSearchAttributesRequest(namespace=namespace)
    known = await client.operator_service.list_search_attributes(listing)
    missing = {name: kind for name, kind in SEARCH_ATTRIBUTES.items()
               if name not in known.custom_attributes}
    if not missing:
        return
    await client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
    )
    deadline = time.monotonic() + _IDLE_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        known = await client.operator_service.list_search_attributes(listing)
        if all(name in known.custom_attributes for name in missing):
            return
        await asyncio.sleep(_POLL_SECONDS)
    raise LabError(f"search attributes {sorted(missing)} not visible on namespace {namespace!r} "
                   f"after {_IDLE_TIMEOUT_SECONDS:.0f} s; expected the server to register them")


def case_workflow_id(case: Case) -> str:
    """Workflow id of both runs of a case (the runs are sequential, so they can share it)."""
    return f"gallery-{case.name}"


def case_task_queue(case: Case) -> str:
    """Task queue of both versions of a case."""
    return f"gallery-{case.name}"


async def _apply(client: Client, case: Case, step: Step) -> dict[str, Any]:
    handle = client.get_workflow_handle(case_workflow_id(case))
    if isinstance(step, Signal):
        await handle.signal(step.name, args=list(step.args))
        return {"step": "signal", "name": step.name, "args": list(step.args)}
    if isinstance(step, Update):
        record: dict[str, Any] = {"step": "update", "name": step.name, "args": list(step.args)}
        try:
            record["result"] = await handle.execute_update(step.name, args=list(step.args))
            record["accepted"] = True
        except WorkflowUpdateFailedError as err:
            record["accepted"] = False
            record["rejection"] = str(err.cause)
        return record
    if isinstance(step, Query):
        record = {"step": "query", "name": step.name}
        try:
            record["result"] = await handle.query(step.name)
        except WorkflowQueryFailedError as err:
            record["error"] = str(err)
        return record
    if isinstance(step, Settle):
        return {"step": "settle"}
    raise LabError(f"gallery case {case.name!r}: unknown drive step {step!r}; expected "
                   "Signal, Update, Query or Settle")


async def run_version(client: Client, case: Case, label: str, workflow_class: type) -> VersionRun:
    """Record one version of ``case``: start it on its own worker, drive it, export it.

    An open run is terminated after export so that the other version can reuse the workflow id;
    the termination is not part of the exported history.
    """
    task_queue = case_task_queue(case)
    runner = workflow_runner()
    # No workflow cache means no sticky task queue: every workflow task goes through the case's
    # task queue, so a history's shape does not depend on sticky-queue timing (a stuck run's
    # failed tasks, for one, are otherwise recorded once or twice depending on load).
    workers = [Worker(client, task_queue=task_queue, workflows=[workflow_class, *case.support],
                      activities=ACTIVITIES, workflow_runner=runner, max_cached_workflows=0)]
    if case.side_task_queue:
        workers.append(Worker(client, task_queue=f"{task_queue}-side", activities=ACTIVITIES))
    for worker in workers:
        await worker.__aenter__()
    try:
        handle = await client.start_workflow(
            case.workflow_type, args=list(case.inputs), id=case_workflow_id(case),
            task_queue=task_queue,
            # A run left open by an interrupted earlier recording must not block this one.
            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING,
            # On a loaded machine a first task (the sandbox importing the workflow's modules)
            # took longer than the default 10 s, and its timeout changed the history's shape.
            task_timeout=timedelta(minutes=1),
        )
        steps = []
        for step in case.drive:
            await _wait_idle(client, case, label)
            steps.append(await _apply(client, case, step))
        await _wait_idle(client, case, label)
        first = client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
        history = await first.fetch_history()
        _, status = _is_idle(list(history.events))
        # Whatever run is still open (the first or a continued one) must end before the other
        # version starts under the same workflow id.
        latest = client.get_workflow_handle(handle.id)
        description = await latest.describe()
        if description.status == WorkflowExecutionStatus.RUNNING:
            await latest.terminate(reason="gallery: exported")
        return VersionRun(history=history, status=status, steps=steps)
    finally:
        for worker in reversed(workers):
            await worker.__aexit__(None, None, None)
