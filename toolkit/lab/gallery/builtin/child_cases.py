"""Gallery cases about child workflows and local activities."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from toolkit.lab.gallery.activities import audit, charge, notify, reserve, ship
from toolkit.lab.gallery.builtin.common import ACTIVITY_TIMEOUT, act
from toolkit.lab.gallery.case import Case, Expect, register

BREAKS = Expect(v1_on_v2="nondeterminism", v2_on_v1="nondeterminism")
SAFE = Expect(v1_on_v2="ok", v2_on_v1="ok")


@workflow.defn(name="GalleryShipment")
class ShipmentChild:
    """Child workflow: ships the item."""

    @workflow.run
    async def run(self, item: str) -> str:
        return await act(ship, item)


@workflow.defn(name="GalleryCourierShipment")
class CourierShipmentChild:
    """Another child workflow type doing the same work."""

    @workflow.run
    async def run(self, item: str) -> str:
        return await act(ship, item)


CHILDREN = (ShipmentChild, CourierShipmentChild)


def _child_id(suffix: str) -> str:
    # Both versions of a case run under the same workflow id, so a derived child id is stable.
    return f"{workflow.info().workflow_id}-{suffix}"


@workflow.defn(name="ChildTypeChanged")
class ChildTypeChangedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await workflow.execute_child_workflow(ShipmentChild.run, item,
                                                     id=_child_id("shipment"))


@workflow.defn(name="ChildTypeChanged")
class ChildTypeChangedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        return await workflow.execute_child_workflow(CourierShipmentChild.run, item,
                                                     id=_child_id("shipment"))


@workflow.defn(name="ChildIdChanged")
class ChildIdChangedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await workflow.execute_child_workflow(ShipmentChild.run, item,
                                                     id=_child_id("shipment"))


@workflow.defn(name="ChildIdChanged")
class ChildIdChangedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        return await workflow.execute_child_workflow(ShipmentChild.run, item,
                                                     id=_child_id("delivery"))


@workflow.defn(name="ChildOptionsChanged")
class ChildOptionsChangedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        return await workflow.execute_child_workflow(ShipmentChild.run, item,
                                                     id=_child_id("shipment"))


@workflow.defn(name="ChildOptionsChanged")
class ChildOptionsChangedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        return await workflow.execute_child_workflow(
            ShipmentChild.run, item, id=_child_id("shipment"),
            execution_timeout=timedelta(minutes=10),
            retry_policy=RetryPolicy(maximum_attempts=2),
            parent_close_policy=workflow.ParentClosePolicy.ABANDON,
        )


@workflow.defn(name="ChildAdded")
class ChildAddedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(charge, item)


@workflow.defn(name="ChildAdded")
class ChildAddedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.execute_child_workflow(ShipmentChild.run, item, id=_child_id("shipment"))
        return await act(charge, item)


async def _local(activity: object, item: str) -> str:
    return await workflow.execute_local_activity(
        activity, item, start_to_close_timeout=ACTIVITY_TIMEOUT  # type: ignore[call-overload]
    )


@workflow.defn(name="LocalActivityAdded")
class LocalActivityAddedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        return await act(charge, item)


@workflow.defn(name="LocalActivityAdded")
class LocalActivityAddedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await _local(audit, item)
        return await act(charge, item)


@workflow.defn(name="LocalActivityRenamed")
class LocalActivityRenamedV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await _local(audit, item)
        return await act(charge, item)


@workflow.defn(name="LocalActivityRenamed")
class LocalActivityRenamedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await _local(notify, item)
        return await act(charge, item)


@workflow.defn(name="LocalActivityToActivity")
class LocalActivityToActivityV1:
    @workflow.run
    async def run(self, item: str) -> str:
        await _local(audit, item)
        return await act(charge, item)


@workflow.defn(name="LocalActivityToActivity")
class LocalActivityToActivityV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(audit, item)
        return await act(charge, item)


register(
    Case("child-type-changed", "The child workflow's type changes (same id, same work).",
         "child_type_changed", "first_task", ChildTypeChangedV1, ChildTypeChangedV2, BREAKS,
         support=CHILDREN),
    Case("child-id-changed", "The child workflow's id changes (-shipment -> -delivery). Core "
         "compares child ids.", "child_id_changed", "first_task", ChildIdChangedV1,
         ChildIdChangedV2, BREAKS, support=CHILDREN),
    Case("child-options-changed", "Execution timeout, retry policy and parent close policy of "
         "the child change. Options are not compared.", "child_options_changed", "first_task",
         ChildOptionsChangedV1, ChildOptionsChangedV2, SAFE, support=CHILDREN),
    Case("child-added", "A child workflow is inserted between two activities. (Core quotes the "
         "whole recorded event, times and task ids included, in one direction's message.)",
         "child_added", "middle", ChildAddedV1, ChildAddedV2, BREAKS, support=CHILDREN,
         message_stable=False),
    Case("local-activity-added", "A local activity is inserted between two activities; it "
         "leaves a marker where the history has the next activity.", "local_activity_added",
         "middle", LocalActivityAddedV1, LocalActivityAddedV2, BREAKS),
    Case("local-activity-renamed", "The first local activity is replaced by another one.",
         "local_activity_renamed", "first_task", LocalActivityRenamedV1, LocalActivityRenamedV2,
         BREAKS),
    Case("local-activity-to-activity", "A local activity becomes a regular activity: a marker "
         "in the old history, an activity command in the new code.",
         "local_activity_to_activity", "first_task", LocalActivityToActivityV1,
         LocalActivityToActivityV2, BREAKS),
)
