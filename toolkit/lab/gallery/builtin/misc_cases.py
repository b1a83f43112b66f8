"""Gallery cases about concurrency, seeded randomness, UUIDs, continue-as-new, search attributes."""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.common import SearchAttributeKey

from toolkit.lab.gallery.activities import charge, notify, reserve
from toolkit.lab.gallery.builtin.common import WaitsForSignals, act
from toolkit.lab.gallery.case import Case, Expect, register

BREAKS = Expect(v1_on_v2="nondeterminism", v2_on_v1="nondeterminism")
SAFE = Expect(v1_on_v2="ok", v2_on_v1="ok")

#: A keyword search attribute the recorder registers (see drive.SEARCH_ATTRIBUTES).
STAGE = SearchAttributeKey.for_keyword("GalleryStage")


@workflow.defn(name="SequentialToParallel")
class SequentialToParallelV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await act(charge, item)
        return await act(notify, item)


@workflow.defn(name="SequentialToParallel")
class SequentialToParallelV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        # charge and notify are now scheduled in the same workflow task.
        _, notified = await asyncio.gather(act(charge, item), act(notify, item))
        return str(notified)


@workflow.defn(name="RandomSeeded")
class RandomSeededV1:
    @workflow.run
    async def run(self, item: str) -> str:
        ticket = workflow.random().randint(1, 1000)
        return await act(charge, f"{item}#{ticket}")


@workflow.defn(name="RandomSeeded")
class RandomSeededV2:
    @workflow.run
    async def run(self, item: str) -> str:
        ticket = workflow.random().randint(1, 1_000_000)
        return await act(charge, f"{item}#{ticket}")


@workflow.defn(name="UuidDrawAdded")
class UuidDrawAddedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(charge, item, activity_id=str(workflow.uuid4()))


@workflow.defn(name="UuidDrawAdded")
class UuidDrawAddedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        trace_id = workflow.uuid4()  # a new draw before the one that names the activity
        workflow.logger.info("trace %s", trace_id)
        return await act(charge, item, activity_id=str(workflow.uuid4()))


@workflow.defn(name="UuidDrawAppended")
class UuidDrawAppendedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await act(charge, item, activity_id=str(workflow.uuid4()))


@workflow.defn(name="UuidDrawAppended")
class UuidDrawAppendedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        result = await act(charge, item, activity_id=str(workflow.uuid4()))
        workflow.logger.info("receipt %s", workflow.uuid4())  # drawn after, so ids stay put
        return result


@workflow.defn(name="ContinueAsNewAdded")
class ContinueAsNewAddedV1:
    @workflow.run
    async def run(self, item: str, done: int = 0) -> str:
        for step in range(done, 3):
            await act(reserve, f"{item}-{step}")
        return "reserved 3"


@workflow.defn(name="ContinueAsNewAdded")
class ContinueAsNewAddedV2:
    @workflow.run
    async def run(self, item: str, done: int = 0) -> str:
        # One reservation per run, then a fresh run (keeps each history short).
        if done >= 3:
            return "reserved 3"
        await act(reserve, f"{item}-{done}")
        workflow.continue_as_new(args=[item, done + 1])


@workflow.defn(name="ContinueAsNewArgsChanged")
class ContinueAsNewArgsChangedV1:
    @workflow.run
    async def run(self, item: str, done: int = 0) -> str:
        if done >= 2:
            return "reserved 2"
        await act(reserve, f"{item}-{done}")
        workflow.continue_as_new(args=[item, done + 1])


@workflow.defn(name="ContinueAsNewArgsChanged")
class ContinueAsNewArgsChangedV2:
    @workflow.run
    async def run(self, item: str, done: int = 0) -> str:
        if done >= 2:
            return "reserved 2"
        await act(reserve, f"{item}-{done}")
        workflow.continue_as_new(args=[item.upper(), done + 1])


@workflow.defn(name="SearchAttributeAdded")
class SearchAttributeAddedV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await act(charge, item)
        await self.wait_finish()
        return "done"


@workflow.defn(name="SearchAttributeAdded")
class SearchAttributeAddedV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        workflow.upsert_search_attributes([STAGE.value_set("reserved")])
        await act(charge, item)
        await self.wait_finish()
        return "done"


@workflow.defn(name="SearchAttributeValueChanged")
class SearchAttributeValueChangedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        workflow.upsert_search_attributes([STAGE.value_set("reserved")])
        return await act(charge, item)


@workflow.defn(name="SearchAttributeValueChanged")
class SearchAttributeValueChangedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        workflow.upsert_search_attributes([STAGE.value_set("stock-held")])
        return await act(charge, item)


register(
    Case("sequential-to-parallel", "Two sequential activities become concurrent "
         "(asyncio.gather). Old runs still replay: the commands come in the same order and core "
         "does not care that the history recorded them in two workflow tasks. The old code "
         "cannot replay new runs: it waits for the first result before the second command.",
         "sequential_to_parallel", "middle", SequentialToParallelV1, SequentialToParallelV2,
         Expect(v1_on_v2="ok", v2_on_v1="nondeterminism")),
    Case("random-seeded", "A ticket number drawn from workflow.random() gets a wider range. The "
         "seed is in the history and the number only feeds an activity input: safe.",
         "random_seeded", "first_task", RandomSeededV1, RandomSeededV2, SAFE),
    Case("uuid-draw-added", "An extra workflow.uuid4() is drawn before the one used as the "
         "activity id, so the id changes.", "uuid", "first_task", UuidDrawAddedV1,
         UuidDrawAddedV2, BREAKS, message_stable=False),
    Case("uuid-draw-appended", "An extra workflow.uuid4() is drawn after the activity id was "
         "drawn: earlier ids are unchanged.", "uuid", "end_of_completed_run", UuidDrawAppendedV1,
         UuidDrawAppendedV2, SAFE),
    Case("continue-as-new-added", "A loop of three activities becomes one activity per run "
         "with continue-as-new (the first run is exported).", "continue_as_new", "middle",
         ContinueAsNewAddedV1, ContinueAsNewAddedV2, BREAKS),
    Case("continue-as-new-args-changed", "The arguments passed to continue-as-new change. They "
         "are not compared on replay.", "continue_as_new", "end_of_completed_run",
         ContinueAsNewArgsChangedV1, ContinueAsNewArgsChangedV2, SAFE),
    Case("search-attribute-added", "A search-attribute upsert is added between two activities "
         "of a run that then waits.", "search_attributes", "end_of_open_run",
         SearchAttributeAddedV1, SearchAttributeAddedV2, BREAKS),
    Case("search-attribute-value-changed", "The value of an existing search-attribute upsert "
         "changes.", "search_attributes", "middle", SearchAttributeValueChangedV1,
         SearchAttributeValueChangedV2, SAFE),
)
