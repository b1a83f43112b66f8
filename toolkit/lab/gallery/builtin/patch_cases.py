"""Gallery cases about ``workflow.patched`` and ``workflow.deprecate_patch``.

The usual life of a patch: introduce it (old runs take the old branch), then deprecate it once no
run without the marker is left, then remove it once no run with the marker is left.
"""

from __future__ import annotations

from temporalio import workflow

from toolkit.lab.gallery.activities import charge, charge_card, notify, reserve
from toolkit.lab.gallery.builtin.common import WaitsForSignals, act
from toolkit.lab.gallery.case import Case, Expect, Signal, register

DEPLOY_SAFE = Expect(v1_on_v2="ok", v2_on_v1="nondeterminism")
SAFE = Expect(v1_on_v2="ok", v2_on_v1="ok")


@workflow.defn(name="PatchIntroduced")
class PatchIntroducedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(charge, item)


@workflow.defn(name="PatchIntroduced")
class PatchIntroducedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        if workflow.patched("use-card"):
            return await act(charge_card, item)
        return await act(charge, item)


@workflow.defn(name="PatchIntroducedAfterSignal")
class PatchIntroducedAfterSignalV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        return await act(charge, item)


@workflow.defn(name="PatchIntroducedAfterSignal")
class PatchIntroducedAfterSignalV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        if workflow.patched("notify-first"):
            await act(notify, item)
        return await act(charge, item)


@workflow.defn(name="PatchRemoved")
class PatchRemovedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        if workflow.patched("use-card"):
            return await act(charge_card, item)
        return await act(charge, item)


@workflow.defn(name="PatchRemoved")
class PatchRemovedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        # The patch call is dropped without the deprecate_patch step.
        await act(reserve, item)
        return await act(charge_card, item)


@workflow.defn(name="DeprecatePatchIntroduced")
class DeprecatePatchIntroducedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        if workflow.patched("use-card"):
            return await act(charge_card, item)
        return await act(charge, item)


@workflow.defn(name="DeprecatePatchIntroduced")
class DeprecatePatchIntroducedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        workflow.deprecate_patch("use-card")
        return await act(charge_card, item)


@workflow.defn(name="DeprecatePatchRemoved")
class DeprecatePatchRemovedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        workflow.deprecate_patch("use-card")
        return await act(charge_card, item)


@workflow.defn(name="DeprecatePatchRemoved")
class DeprecatePatchRemovedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(charge_card, item)


register(
    Case("patch-introduced", "charge becomes charge_card behind workflow.patched('use-card'). "
         "Old runs replay the old branch; a rollback cannot read the new runs.",
         "patch_introduced", "middle", PatchIntroducedV1, PatchIntroducedV2, DEPLOY_SAFE),
    Case("patch-introduced-after-signal", "A new activity after a signal wait, guarded by "
         "workflow.patched('notify-first').", "patch_introduced", "after_signal",
         PatchIntroducedAfterSignalV1, PatchIntroducedAfterSignalV2, DEPLOY_SAFE,
         drive=(Signal("go"),)),
    Case("patch-removed", "The patched() call and the old branch are removed in one step, "
         "skipping deprecate_patch. Even runs that took the patched branch break: core refuses "
         "a non-deprecated patch marker that no code asks for. deprecate_patch is the step "
         "that makes the marker optional.",
         "patch_removed", "middle", PatchRemovedV1, PatchRemovedV2,
         Expect(v1_on_v2="nondeterminism", v2_on_v1="nondeterminism")),
    Case("deprecate-patch-introduced", "patched('use-card') with both branches becomes "
         "deprecate_patch('use-card') with the new branch only.",
         "deprecate_patch_introduced", "middle", DeprecatePatchIntroducedV1,
         DeprecatePatchIntroducedV2, SAFE),
    Case("deprecate-patch-removed", "The deprecate_patch('use-card') call is finally removed.",
         "deprecate_patch_removed", "middle", DeprecatePatchRemovedV1, DeprecatePatchRemovedV2,
         SAFE),
)
