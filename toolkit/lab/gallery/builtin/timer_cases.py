"""Gallery cases about timers: added, removed, re-timed, swapped with an activity, cancelled."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from toolkit.lab.gallery.activities import charge, reserve
from toolkit.lab.gallery.builtin.common import WaitsForSignals, act
from toolkit.lab.gallery.case import Case, Expect, Signal, register

BREAKS = Expect(v1_on_v2="nondeterminism", v2_on_v1="nondeterminism")
SAFE = Expect(v1_on_v2="ok", v2_on_v1="ok")
SHORT = timedelta(seconds=1)


@workflow.defn(name="TimerAdded")
class TimerAddedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(reserve, item)


@workflow.defn(name="TimerAdded")
class TimerAddedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await workflow.sleep(SHORT)
        return await act(reserve, item)


@workflow.defn(name="TimerRemoved")
class TimerRemovedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.sleep(SHORT)
        return await act(charge, item)


@workflow.defn(name="TimerRemoved")
class TimerRemovedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(charge, item)


@workflow.defn(name="TimerRetimed")
class TimerRetimedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await workflow.sleep(SHORT)
        return await act(reserve, item)


@workflow.defn(name="TimerRetimed")
class TimerRetimedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await workflow.sleep(2 * SHORT)
        return await act(reserve, item)


@workflow.defn(name="TimerSwapped")
class TimerSwappedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await workflow.sleep(SHORT)
        return await act(reserve, item)


@workflow.defn(name="TimerSwapped")
class TimerSwappedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        result = await act(reserve, item)
        await workflow.sleep(SHORT)
        return result


@workflow.defn(name="TimerAddedAfterSignal")
class TimerAddedAfterSignalV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        return await act(charge, item)


@workflow.defn(name="TimerAddedAfterSignal")
class TimerAddedAfterSignalV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        await workflow.sleep(SHORT)
        return await act(charge, item)


@workflow.defn(name="TimerCancellation")
class TimerCancellationV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        # The wait has a deadline: a one-hour timer, cancelled when `go` arrives.
        await workflow.wait_condition(lambda: self._go, timeout=timedelta(hours=1))
        return await act(reserve, item)


@workflow.defn(name="TimerCancellation")
class TimerCancellationV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await self.wait_go()
        return await act(reserve, item)


@workflow.defn(name="TimerDeadlineRetimed")
class TimerDeadlineRetimedV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await workflow.wait_condition(lambda: self._go, timeout=timedelta(hours=1))
        return await act(reserve, item)


@workflow.defn(name="TimerDeadlineRetimed")
class TimerDeadlineRetimedV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await workflow.wait_condition(lambda: self._go, timeout=timedelta(hours=2))
        return await act(reserve, item)


register(
    Case("timer-added", "A one-second sleep is added before the first activity.",
         "timer_added", "first_task", TimerAddedV1, TimerAddedV2, BREAKS),
    Case("timer-added-after-signal", "A sleep is added right after a signal wait.",
         "timer_added", "after_signal", TimerAddedAfterSignalV1, TimerAddedAfterSignalV2,
         BREAKS, drive=(Signal("go"),)),
    Case("timer-removed", "The sleep between two activities is removed.",
         "timer_removed", "middle", TimerRemovedV1, TimerRemovedV2, BREAKS),
    Case("timer-retimed", "A sleep goes from 1 s to 2 s. Timer durations are not compared on "
         "replay.", "timer_retimed", "first_task", TimerRetimedV1, TimerRetimedV2, SAFE),
    Case("timer-swapped-with-activity", "sleep-then-activity becomes activity-then-sleep.",
         "timer_swapped_with_activity", "first_task", TimerSwappedV1, TimerSwappedV2, BREAKS),
    Case("timer-cancellation-removed", "A signal wait loses its one-hour deadline. The old "
         "history holds a started and a cancelled timer that the new code never creates. The "
         "other way round replays: the old code's timer is cancelled before its command is "
         "matched, and a cancelled unsent command is dropped.",
         "timer_cancellation", "after_signal", TimerCancellationV1, TimerCancellationV2,
         Expect(v1_on_v2="nondeterminism", v2_on_v1="ok"), drive=(Signal("go"),)),
    Case("timer-deadline-retimed", "A signal wait's deadline goes from 1 h to 2 h; the timer is "
         "cancelled either way. Safe: only the duration changed.",
         "timer_retimed", "after_signal", TimerDeadlineRetimedV1, TimerDeadlineRetimedV2, SAFE,
         drive=(Signal("go"),)),
)
