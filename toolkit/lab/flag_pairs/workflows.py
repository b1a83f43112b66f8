"""The flag pairs' workflow code: the same module runs under every temporalio release recorded.

Only APIs temporalio 1.1.0 already had are used at import time (Nexus is looked up when the Nexus
workflow runs, in releases that have it). Workers and Replayers run these workflows unsandboxed:
the code is deterministic, and old sandboxes differ in what they let through.

Each workflow makes one flag show in its history:

- :class:`Patched`: ``workflow.patched()``; sdk-core's ``UpsertSearchAttributeOnPatch`` (core
  flag 2) adds an upsert of ``TemporalChangeVersion`` after the marker.
- :class:`LateCommand`: an activity scheduled by a second task after ``run()`` returned, in the
  same activation; sdk-core's ``MoveTerminalCommands`` (core flag 3) moves it before the
  completion, without the flag sdk-core drops it.
- :class:`CancelCompleted`: a cancellation request and the activity's completion in one
  activation; with Python's ``RAISE_ON_CANCELLING_COMPLETED_ACTIVITY`` (lang flag 1) the
  cancellation wins and the workflow schedules ``cleanup``, without it the result wins and it
  schedules ``echo``.
- :class:`SignalAndActivity`: a signal and the activity's completion in one activation; with
  Python's ``PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH`` (lang flag 2) the signalled
  coroutine sees the completion (schedules ``echo``), without it the signal runs first
  (``pending``).
- :class:`NexusCaller`: one Nexus operation; sdk-core's ``NexusOperationDeterminismChecks``
  (core flag 4) compares its service and operation on replay, so the code change
  ``nexus-operation-renamed`` (:class:`NexusCallerRenamed`) is recorded and replayed too.
- :class:`DerivedIds`: an activity id and a child workflow id built from the workflow id, and the
  code change ``child-id-changed`` (:class:`DerivedIdsChildRenamed`).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

__all__ = [
    "ACTIVITIES", "CODE_CHANGES", "CODE_ENV", "NEXUS_OPERATION", "NEXUS_OPERATION_RENAMED",
    "NEXUS_SERVICE", "PATCH_ID", "WORKFLOWS", "workflows",
]  # fmt: skip

PATCH_ID = "flag-pairs-patch"
NEXUS_SERVICE = "FlagPairsService"
NEXUS_OPERATION, NEXUS_OPERATION_RENAMED = "echo", "echo-renamed"
_TIMEOUT = timedelta(seconds=30)


def _echo_activity(name: str) -> Any:
    @activity.defn(name=name)
    async def run(text: str) -> str:
        return f"{name}:{text}"

    return run


ACTIVITIES = [_echo_activity(name) for name in ("echo", "cleanup", "pending")]
"""Activity types the workflows schedule (each returns ``<type>:<input>``)."""


async def _echo(kind: str, text: str, queue: str | None = None) -> str:
    return await workflow.execute_activity(
        kind, text, task_queue=queue, start_to_close_timeout=_TIMEOUT
    )


@workflow.defn(name="FlagPairsPatched")
class Patched:
    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        branch = "patched" if workflow.patched(PATCH_ID) else "unpatched"
        return await _echo("echo", branch)


@workflow.defn(name="FlagPairsLateCommand")
class LateCommand:
    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        # The task's first step runs after run() has returned, in the same activation: the SDK
        # hands sdk-core its activity command after the completion command.
        self._late = asyncio.get_running_loop().create_task(_echo("echo", "late"))
        return "done"


@workflow.defn(name="FlagPairsCancelCompleted")
class CancelCompleted:
    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        try:
            result = await _echo("echo", "work", spec["activity_queue"])
        except asyncio.CancelledError:
            # The cancellation was delivered although the activity had completed.
            return await _echo("cleanup", "cancelled")
        return await _echo("echo", result)


@workflow.defn(name="FlagPairsSignalAndActivity")
class SignalAndActivity:
    def __init__(self) -> None:
        self._signalled = False

    @workflow.signal(name="go")
    def go(self) -> None:
        self._signalled = True

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        work = workflow.start_activity(
            "echo", "work", task_queue=spec["activity_queue"], start_to_close_timeout=_TIMEOUT
        )
        await workflow.wait_condition(lambda: self._signalled)
        # Whether the completion that came with the signal is visible here depends on the order
        # in which the SDK applies one activation's jobs.
        follow = "echo" if work.done() else "pending"
        await _echo(follow, "after")
        return await work


@workflow.defn(name="FlagPairsNexus")
class NexusCaller:
    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        client = workflow.create_nexus_client(service=NEXUS_SERVICE, endpoint=spec["endpoint"])
        return await client.execute_operation(
            NEXUS_OPERATION, "hello", schedule_to_close_timeout=_TIMEOUT
        )


@workflow.defn(name="FlagPairsNexus")
class NexusCallerRenamed:
    """:class:`NexusCaller` after a code change: it calls another operation of the service."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        client = workflow.create_nexus_client(service=NEXUS_SERVICE, endpoint=spec["endpoint"])
        return await client.execute_operation(
            NEXUS_OPERATION_RENAMED, "hello", schedule_to_close_timeout=_TIMEOUT
        )


@workflow.defn(name="FlagPairsChild")
class Child:
    @workflow.run
    async def run(self) -> str:
        return "child"


@workflow.defn(name="FlagPairsDerivedIds")
class DerivedIds:
    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        own = workflow.info().workflow_id
        await workflow.execute_activity(
            "echo", "a", activity_id=f"{own}-act", start_to_close_timeout=_TIMEOUT
        )
        return await workflow.execute_child_workflow("FlagPairsChild", id=f"{own}-child")


@workflow.defn(name="FlagPairsDerivedIds")
class DerivedIdsChildRenamed:
    """:class:`DerivedIds` after a code change: the child's id ends in ``-kid``."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        own = workflow.info().workflow_id
        await workflow.execute_activity(
            "echo", "a", activity_id=f"{own}-act", start_to_close_timeout=_TIMEOUT
        )
        return await workflow.execute_child_workflow("FlagPairsChild", id=f"{own}-kid")


WORKFLOWS = [
    Patched, LateCommand, CancelCompleted, SignalAndActivity, NexusCaller, Child, DerivedIds,
]  # fmt: skip
"""Every workflow, registered by every worker and Replayer running the code as recorded."""

CODE_CHANGES: dict[str, list[Any]] = {
    "same": WORKFLOWS,
    # Checked by sdk-core flag 4 (NexusOperationDeterminismChecks) only.
    "nexus-operation-renamed": [NexusCallerRenamed if w is NexusCaller else w for w in WORKFLOWS],
    # The Replayer builds the child id from the recorded run's workflow id, then compares it.
    "child-id-changed": [DerivedIdsChildRenamed if w is DerivedIds else w for w in WORKFLOWS],
}
"""Code versions a worker or Replayer runs (``FLAG_PAIRS_CODE``): name -> workflows."""

CODE_ENV = "FLAG_PAIRS_CODE"


def workflows() -> list[Any]:
    """The workflows of the code version named by ``$FLAG_PAIRS_CODE`` (default ``same``)."""
    import os

    return CODE_CHANGES[os.environ.get(CODE_ENV) or "same"]
