"""Gallery cases about activities: renamed, added, removed, swapped, ids, inputs and options."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from toolkit.lab.gallery.activities import (
    charge,
    charge_card,
    notify,
    reserve,
    reserve_stock,
    ship,
)
from toolkit.lab.gallery.builtin.common import WaitsForSignals, act
from toolkit.lab.gallery.case import Case, Expect, Signal, register

BREAKS = Expect(v1_on_v2="nondeterminism", v2_on_v1="nondeterminism")
SAFE = Expect(v1_on_v2="ok", v2_on_v1="ok")


@workflow.defn(name="ActivityRenamed")
class ActivityRenamedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(charge, item)


@workflow.defn(name="ActivityRenamed")
class ActivityRenamedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve_stock, item)
        return await act(charge, item)


@workflow.defn(name="ActivityRenamedAfterSignal")
class ActivityRenamedAfterSignalV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        return await act(charge, item)


@workflow.defn(name="ActivityRenamedAfterSignal")
class ActivityRenamedAfterSignalV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        return await act(charge_card, item)


@workflow.defn(name="ActivityRenamedOpenRun")
class ActivityRenamedOpenRunV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await act(charge, item)
        await self.wait_finish()
        return "done"


@workflow.defn(name="ActivityRenamedOpenRun")
class ActivityRenamedOpenRunV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await act(charge_card, item)
        await self.wait_finish()
        return "done"


@workflow.defn(name="ActivityAddedMiddle")
class ActivityAddedMiddleV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(ship, item)


@workflow.defn(name="ActivityAddedMiddle")
class ActivityAddedMiddleV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await act(charge, item)
        return await act(ship, item)


@workflow.defn(name="ActivityAddedEnd")
class ActivityAddedEndV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(charge, item)


@workflow.defn(name="ActivityAddedEnd")
class ActivityAddedEndV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await act(charge, item)
        return await act(notify, item)


@workflow.defn(name="ActivityAddedOpenRun")
class ActivityAddedOpenRunV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_finish()
        return "done"


@workflow.defn(name="ActivityAddedOpenRun")
class ActivityAddedOpenRunV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_finish()
        return await act(notify, item)


@workflow.defn(name="ActivityRemovedMiddle")
class ActivityRemovedMiddleV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await act(charge, item)
        return await act(ship, item)


@workflow.defn(name="ActivityRemovedMiddle")
class ActivityRemovedMiddleV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(ship, item)


@workflow.defn(name="ActivityRemovedEnd")
class ActivityRemovedEndV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await act(charge, item)
        return await act(notify, item)


@workflow.defn(name="ActivityRemovedEnd")
class ActivityRemovedEndV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(charge, item)


@workflow.defn(name="ActivitySwapped")
class ActivitySwappedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(charge, item)


@workflow.defn(name="ActivitySwapped")
class ActivitySwappedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(charge, item)
        return await act(reserve, item)


@workflow.defn(name="ActivityIdChanged")
class ActivityIdChangedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(charge, item, activity_id="charge-1")


@workflow.defn(name="ActivityIdChanged")
class ActivityIdChangedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(charge, item, activity_id="payment-1")


@workflow.defn(name="ActivityInputChanged")
class ActivityInputChangedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(charge, item)


@workflow.defn(name="ActivityInputChanged")
class ActivityInputChangedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(charge, item.upper())


@workflow.defn(name="ActivityOptionsChanged")
class ActivityOptionsChangedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(charge, item)


@workflow.defn(name="ActivityOptionsChanged")
class ActivityOptionsChangedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(
            charge, item,
            start_to_close_timeout=timedelta(seconds=30),
            heartbeat_timeout=timedelta(seconds=5),
            retry_policy=RetryPolicy(maximum_attempts=3, backoff_coefficient=3.0),
        )


@workflow.defn(name="ActivityTaskQueueChanged")
class ActivityTaskQueueChangedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(charge, item)


@workflow.defn(name="ActivityTaskQueueChanged")
class ActivityTaskQueueChangedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(charge, item, task_queue=workflow.info().task_queue + "-side")


@workflow.defn(name="ActivityResultTypeChanged")
class ActivityResultTypeChangedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        receipt = await act(charge, item)
        return f"receipt {receipt}"


@workflow.defn(name="ActivityResultTypeChanged")
class ActivityResultTypeChangedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        # The activity still returns a string; this version believes it returns an amount.
        amount = await act(charge, item, result_type=int)
        return f"charged {amount + 0}"


register(
    Case("activity-renamed", "The first activity is renamed (reserve -> reserve_stock). Replay "
         "compares activity types, so old runs fail at the first command.",
         "activity_renamed", "first_task", ActivityRenamedV1, ActivityRenamedV2, BREAKS),
    Case("activity-renamed-after-signal", "The activity after a signal wait is renamed "
         "(charge -> charge_card). Runs that got past the signal fail there.",
         "activity_renamed", "after_signal", ActivityRenamedAfterSignalV1,
         ActivityRenamedAfterSignalV2, BREAKS, drive=(Signal("go"),)),
    Case("activity-renamed-open-run", "The last activity before a wait that is still pending is "
         "renamed. The open run already scheduled the old name, so it breaks.",
         "activity_renamed", "end_of_open_run", ActivityRenamedOpenRunV1,
         ActivityRenamedOpenRunV2, BREAKS),
    Case("activity-added-middle", "An activity is inserted between two others. The inserted "
         "command takes the position of the old second one.",
         "activity_added", "middle", ActivityAddedMiddleV1, ActivityAddedMiddleV2, BREAKS),
    Case("activity-added-end", "An activity is appended after the last one of a completed run. "
         "The old history completes where the new code schedules.",
         "activity_added", "end_of_completed_run", ActivityAddedEndV1, ActivityAddedEndV2,
         BREAKS),
    Case("activity-added-open-run", "An activity is appended after a wait the open run has not "
         "passed yet. Nothing recorded changes, so replay is fine both ways.",
         "activity_added", "end_of_open_run", ActivityAddedOpenRunV1, ActivityAddedOpenRunV2,
         SAFE),
    Case("activity-removed-middle", "The middle activity of three is removed.",
         "activity_removed", "middle", ActivityRemovedMiddleV1, ActivityRemovedMiddleV2, BREAKS),
    Case("activity-removed-end", "The last activity of a completed run is removed; the new code "
         "completes where the history scheduled.",
         "activity_removed", "end_of_completed_run", ActivityRemovedEndV1, ActivityRemovedEndV2,
         BREAKS),
    Case("activity-swapped", "Two activities swap places (reserve, charge -> charge, reserve).",
         "activity_swapped", "first_task", ActivitySwappedV1, ActivitySwappedV2, BREAKS),
    Case("activity-id-changed", "An explicit activity_id changes (charge-1 -> payment-1). Core "
         "compares activity ids as well as types.",
         "activity_id_changed", "first_task", ActivityIdChangedV1, ActivityIdChangedV2, BREAKS),
    Case("activity-input-changed", "The activity's argument changes. Inputs are not compared on "
         "replay: safe for replay, though results recorded with the old input are reused.",
         "activity_input_changed", "first_task", ActivityInputChangedV1,
         ActivityInputChangedV2, SAFE),
    Case("activity-options-changed", "Timeouts and retry policy change. Options are not compared "
         "on replay.",
         "activity_options_changed", "first_task", ActivityOptionsChangedV1,
         ActivityOptionsChangedV2, SAFE),
    Case("activity-task-queue-changed", "The activity moves to another task queue. The task queue "
         "is not compared on replay.",
         "activity_task_queue_changed", "first_task", ActivityTaskQueueChangedV1,
         ActivityTaskQueueChangedV2, SAFE, side_task_queue=True),
    Case("activity-result-type-changed", "The code now treats the activity result as an int. No "
         "command changes, but the recorded string makes the code raise TypeError: a workflow "
         "task failure that is not a nondeterminism error (the new run itself gets stuck too).",
         "activity_result_type_changed", "first_task", ActivityResultTypeChangedV1,
         ActivityResultTypeChangedV2, Expect(v1_on_v2="error", v2_on_v1="ok")),
)
