"""Small workflows and activities whose histories exercise every kind of event the tables read.

Only ``temporalio`` and the standard library are imported here: the module is loaded inside the
workflow sandbox. Every timeout and retry interval is short so that a whole recording takes seconds.

Each workflow covers one theme (see :data:`toolkit.lab.samples.record.SCENARIOS`):

=====================  ==================================================================
workflow               what its history holds
=====================  ==================================================================
ActivitiesWorkflow     an activity failing twice then succeeding (attempt 3), one failing
                       until its maximum attempts, one timing out, one canceled
LocalActivities...     local activities (one retried) -> ``core_local_activity`` markers
TimersWorkflow         a timer fired, a timer canceled, a condition timing out
MessagesWorkflow       signals, an update accepted and completed, one rejected
ParentWorkflow         a child workflow completed and one failed
ContinueAsNew...       two continue-as-new hops
SideEffectsWorkflow    ``patched``/``deprecate_patch`` markers, ``random()``, ``uuid4()``
WaitForeverWorkflow    waits until canceled or terminated by the client
DriftingWorkflowV1/V2  same workflow type, different commands: the nondeterminism scenario
=====================  ==================================================================
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

# Short, fixed retry intervals keep the retried scenarios well under a second each.
FAST_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=1.0)
SHORT = timedelta(seconds=5)


@activity.defn
async def flaky(fail_times: int) -> str:
    """Fail on the first ``fail_times`` attempts, then succeed."""
    attempt = activity.info().attempt
    if attempt <= fail_times:
        raise ApplicationError(f"flaky failure on attempt {attempt}", type="FlakyError")
    return f"ok on attempt {attempt}"


@activity.defn
async def always_fails() -> str:
    """Fail on every attempt (the retry policy's maximum ends it)."""
    raise ApplicationError(
        f"always fails (attempt {activity.info().attempt})", type="PermanentError"
    )


@activity.defn
async def slow(seconds: float) -> str:
    """Sleep longer than the caller's start-to-close timeout allows."""
    await asyncio.sleep(seconds)
    return "too late"


@activity.defn
async def heartbeat_until_canceled() -> str:
    """Heartbeat until the server delivers a cancellation, then report it."""
    while True:
        activity.heartbeat()
        # CancelledError raised here propagates: the worker reports ActivityTaskCanceled.
        await asyncio.sleep(0.1)


@activity.defn
async def greet(name: str) -> str:
    """Return a greeting (the deterministic, successful activity)."""
    return f"Hello, {name}!"


@activity.defn
async def extra_step() -> str:
    """The activity only the drifted workflow version schedules."""
    return "extra"


ALL_ACTIVITIES = [flaky, always_fails, slow, heartbeat_until_canceled, greet, extra_step]


@workflow.defn
class ActivitiesWorkflow:
    """Retried, exhausted, timed-out and canceled activities."""

    @workflow.run
    async def run(self) -> list[str]:
        outcomes: list[str] = []

        async def attempt(coro: object) -> None:
            try:
                outcomes.append(str(await coro))  # type: ignore[misc]
            except ActivityError as err:
                outcomes.append(f"{err.message}: {err.cause}")

        # Three in parallel: their events interleave as they do in real agents.
        await asyncio.gather(
            attempt(workflow.execute_activity(
                flaky, 2, start_to_close_timeout=SHORT, retry_policy=FAST_RETRY,
            )),
            attempt(workflow.execute_activity(
                always_fails, start_to_close_timeout=SHORT,
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(milliseconds=100), backoff_coefficient=1.0,
                    maximum_attempts=2,
                ),
            )),
            attempt(workflow.execute_activity(
                slow, 10.0, start_to_close_timeout=timedelta(milliseconds=500),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )),
        )
        handle = workflow.start_activity(
            heartbeat_until_canceled,
            start_to_close_timeout=timedelta(seconds=10),
            heartbeat_timeout=timedelta(seconds=1),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        # Let the activity start and heartbeat once so that the cancel reaches a running attempt.
        await workflow.sleep(0.3)
        handle.cancel()
        await attempt(handle)
        return outcomes


@workflow.defn
class LocalActivitiesWorkflow:
    """Local activities, one of them retried inside the worker."""

    @workflow.run
    async def run(self) -> list[str]:
        first = await workflow.execute_local_activity(
            greet, "local", start_to_close_timeout=SHORT,
        )
        second = await workflow.execute_local_activity(
            flaky, 1, start_to_close_timeout=SHORT, retry_policy=FAST_RETRY,
        )
        return [first, second]


@workflow.defn
class TimersWorkflow:
    """A timer fired, one canceled and a condition that times out."""

    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(0.2)
        never = asyncio.create_task(asyncio.sleep(60))
        # A separate task first, so the long timer's start is recorded before its cancellation.
        await workflow.sleep(0.1)
        never.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await never
        try:
            await workflow.wait_condition(lambda: False, timeout=0.1)
        except TimeoutError:
            return "condition timed out"
        return "unreachable"


@dataclass
class MessagesState:
    """What :class:`MessagesWorkflow` returns."""

    items: list[str]
    value: int


@workflow.defn
class MessagesWorkflow:
    """Signals and updates (one accepted and completed, one rejected by the validator)."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.value = 0
        self.finished = False

    @workflow.signal
    def add(self, item: str) -> None:
        self.items.append(item)

    @workflow.signal
    def finish(self) -> None:
        self.finished = True

    @workflow.update
    def set_value(self, value: int) -> int:
        previous, self.value = self.value, value
        return previous

    @set_value.validator
    def reject_negative(self, value: int) -> None:
        if value < 0:
            raise ValueError(f"value must not be negative, got {value}")

    @workflow.run
    async def run(self) -> MessagesState:
        await workflow.wait_condition(lambda: self.finished)
        return MessagesState(items=self.items, value=self.value)


@workflow.defn
class ChildWorkflow:
    """Completes, or fails when asked to."""

    @workflow.run
    async def run(self, should_fail: bool) -> str:
        if should_fail:
            raise ApplicationError("child asked to fail", type="ChildFailure", non_retryable=True)
        return "child done"


@workflow.defn
class ParentWorkflow:
    """Starts one child that completes and one that fails."""

    @workflow.run
    async def run(self, child_id_prefix: str) -> list[str]:
        # The ids come from the input, not workflow.info(): a replayer knows the history's input
        # but not necessarily the workflow id it was recorded under.
        base = child_id_prefix
        done = await workflow.execute_child_workflow(
            ChildWorkflow.run, False, id=f"{base}-child-ok",
        )
        try:
            await workflow.execute_child_workflow(
                ChildWorkflow.run, True, id=f"{base}-child-fail",
            )
        except ChildWorkflowError as err:
            return [done, f"{err.message}: {err.cause}"]
        return [done, "unreachable"]


@workflow.defn
class ContinueAsNewWorkflow:
    """Continues as new until ``iteration`` reaches ``last``."""

    @workflow.run
    async def run(self, iteration: int, last: int) -> int:
        if iteration < last:
            workflow.continue_as_new(args=[iteration + 1, last])
        return iteration


@dataclass
class SideEffectsResult:
    """What :class:`SideEffectsWorkflow` returns."""

    patched: bool
    number: int
    uuid: str


@workflow.defn
class SideEffectsWorkflow:
    """Patch markers plus deterministic random values (which leave no event of their own)."""

    @workflow.run
    async def run(self) -> SideEffectsResult:
        patched = workflow.patched("sample-patch")
        workflow.deprecate_patch("retired-patch")
        number = workflow.random().randint(1, 1_000_000)
        token = str(workflow.uuid4())
        # A timer after the markers, so that the side effects precede a second workflow task.
        await workflow.sleep(0.05)
        return SideEffectsResult(patched=patched, number=number, uuid=token)


@workflow.defn
class WaitForeverWorkflow:
    """Waits until the client cancels or terminates it."""

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


@workflow.defn(name="DriftingWorkflow")
class DriftingWorkflowV1:
    """The code a history was recorded with: one activity, then a wait for a signal."""

    def __init__(self) -> None:
        self.released = False

    @workflow.signal
    def release(self) -> None:
        self.released = True

    @workflow.run
    async def run(self) -> str:
        await workflow.execute_activity(greet, "v1", start_to_close_timeout=SHORT)
        await workflow.wait_condition(lambda: self.released)
        return "released"


@workflow.defn(name="DriftingWorkflow")
class DriftingWorkflowV2:
    """The changed code: an extra activity before the original one breaks replay."""

    def __init__(self) -> None:
        self.released = False

    @workflow.signal
    def release(self) -> None:
        self.released = True

    @workflow.run
    async def run(self) -> str:
        await workflow.execute_activity(extra_step, start_to_close_timeout=SHORT)
        await workflow.execute_activity(greet, "v2", start_to_close_timeout=SHORT)
        await workflow.wait_condition(lambda: self.released)
        return "released"


MAIN_WORKFLOWS = [
    ActivitiesWorkflow,
    LocalActivitiesWorkflow,
    TimersWorkflow,
    MessagesWorkflow,
    ChildWorkflow,
    ParentWorkflow,
    ContinueAsNewWorkflow,
    SideEffectsWorkflow,
    WaitForeverWorkflow,
]
