"""Workflow code for tests/test_replay_check.py that worker processes import by name."""

from __future__ import annotations

import time
from typing import Any

from temporalio import workflow
from temporalio.worker import UnsandboxedWorkflowRunner


@workflow.defn(name="FlagPairsPatched")
class Spinning:
    """The flag pairs' ``FlagPairsPatched`` type, whose code never yields: with the deadlock
    detector off (debug mode) its replay never ends."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        while True:
            pass


@workflow.defn(name="FlagPairsPatched")
class Blocking:
    """The same type, whose code blocks its thread: in debug mode temporalio runs it on the
    replaying event loop's own thread, so no timer on that loop fires again."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        time.sleep(3600)
        return "never"


@workflow.defn(name="FlagPairsPatched")
class SwallowsEviction:
    """The same type, whose code catches everything, its eviction too, and blocks: temporalio
    retries the eviction forever and swallows the cancellation of the replay with it."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> str:
        try:
            await workflow.wait_condition(lambda: False)
        except BaseException:
            time.sleep(3600)
        return "never"


def debug_options() -> dict[str, Any]:
    """Unsandboxed, in debug mode (no deadlock detection)."""
    return {"workflow_runner": UnsandboxedWorkflowRunner(), "debug_mode": True}


def unsandboxed_options() -> dict[str, Any]:
    """Unsandboxed, with the deadlock detector."""
    return {"workflow_runner": UnsandboxedWorkflowRunner()}


def not_options() -> list[int]:
    """Not a dict of Replayer options."""
    return [1]


# -- an order workflow in three versions, recorded live by tests/test_replay_check_live.py ------
from collections.abc import Sequence  # noqa: E402
from datetime import timedelta  # noqa: E402

from temporalio import activity  # noqa: E402
from temporalio.common import RawValue  # noqa: E402

ORDER = "ReplayCheckOrder"
_TIMEOUT = timedelta(seconds=10)


@activity.defn(dynamic=True)
async def any_activity(args: Sequence[RawValue]) -> str:
    """Every activity type: returns its own type name."""
    return activity.info().activity_type


class _Order:
    def __init__(self) -> None:
        self.paid = False

    @workflow.signal
    def pay(self) -> None:
        self.paid = True

    async def _run(self, first: str, then: str, rounds: int) -> str:
        info = workflow.info()
        # Ids built from the run's own ids: replayed under other ids, these would not match.
        await workflow.execute_activity(first, activity_id=f"{info.workflow_id}-{first}",
                                        start_to_close_timeout=_TIMEOUT)
        await workflow.execute_activity("note", activity_id=f"{info.run_id}-note",
                                        start_to_close_timeout=_TIMEOUT)
        if rounds > 1:
            workflow.continue_as_new(rounds - 1)
        await workflow.wait_condition(lambda: self.paid)
        await workflow.execute_activity(then, start_to_close_timeout=_TIMEOUT)
        return "done"


@workflow.defn(name=ORDER)
class OrderV1(_Order):
    """reserve, note, (continue as new while rounds > 1), wait for pay, charge."""

    @workflow.run
    async def run(self, rounds: int) -> str:
        return await self._run("reserve", "charge", rounds)


@workflow.defn(name=ORDER)
class OrderChargeRenamed(_Order):
    """The step after payment renamed: runs still waiting for payment replay fine."""

    @workflow.run
    async def run(self, rounds: int) -> str:
        return await self._run("reserve", "charge_card", rounds)


@workflow.defn(name=ORDER)
class OrderReserveRenamed(_Order):
    """The first step renamed: every run breaks, the open ones too."""

    @workflow.run
    async def run(self, rounds: int) -> str:
        return await self._run("reserve_stock", "charge", rounds)


# -- an activity replaced by a child workflow: sdk-core quotes the whole recorded event ---------
CHARGE = "DebugTextCharge"


@workflow.defn(name="DebugTextChild")
class Shipment:
    @workflow.run
    async def run(self, text: str) -> str:
        return text


@workflow.defn(name=CHARGE)
class ChargeActivity:
    """One activity whose input is the given text (long inputs are cut in sdk-core's text)."""

    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity("charge", text, start_to_close_timeout=_TIMEOUT)


@workflow.defn(name=CHARGE)
class ChargeChild:
    """The same step as a child workflow."""

    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_child_workflow(
            Shipment.run, text, id=f"{workflow.info().workflow_id}-child")
