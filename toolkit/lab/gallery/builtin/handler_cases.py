"""Gallery cases about signal, update and query handlers, waits, and logging."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from toolkit.lab.gallery.activities import audit, charge, notify, reserve, ship
from toolkit.lab.gallery.builtin.common import WaitsForSignals, act
from toolkit.lab.gallery.case import Case, Expect, Signal, Update, register

BREAKS = Expect(v1_on_v2="nondeterminism", v2_on_v1="nondeterminism")
SAFE = Expect(v1_on_v2="ok", v2_on_v1="ok")


@workflow.defn(name="SignalHandlerWork")
class SignalHandlerWorkV1:
    def __init__(self) -> None:
        self.items: list[str] = []

    @workflow.signal
    async def add(self, item: str) -> None:
        self.items.append(item)

    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.wait_condition(lambda: bool(self.items))
        return await act(charge, ",".join(self.items))


@workflow.defn(name="SignalHandlerWork")
class SignalHandlerWorkV2:
    def __init__(self) -> None:
        self.items: list[str] = []

    @workflow.signal
    async def add(self, item: str) -> None:
        # The handler now does work of its own before recording the item.
        await act(audit, item)
        self.items.append(item)

    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.wait_condition(lambda: bool(self.items))
        return await act(charge, ",".join(self.items))


@workflow.defn(name="UpdateHandlerWork")
class UpdateHandlerWorkV1:
    def __init__(self) -> None:
        self.address: str | None = None

    @workflow.update
    async def set_address(self, address: str) -> str:
        self.address = address
        return f"address set to {address}"

    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.wait_condition(lambda: self.address is not None)
        return await act(ship, f"{item}@{self.address}")


@workflow.defn(name="UpdateHandlerWork")
class UpdateHandlerWorkV2:
    def __init__(self) -> None:
        self.address: str | None = None

    @workflow.update
    async def set_address(self, address: str) -> str:
        await act(notify, address)
        self.address = address
        return f"address set to {address}"

    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.wait_condition(lambda: self.address is not None)
        return await act(ship, f"{item}@{self.address}")


@workflow.defn(name="UpdateValidatorAdded")
class UpdateValidatorAddedV1:
    def __init__(self) -> None:
        self.quantity: int | None = None

    @workflow.update
    def set_quantity(self, quantity: int) -> int:
        self.quantity = quantity
        return quantity

    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.wait_condition(lambda: self.quantity is not None)
        return await act(charge, f"{item}x{self.quantity}")


@workflow.defn(name="UpdateValidatorAdded")
class UpdateValidatorAddedV2:
    def __init__(self) -> None:
        self.quantity: int | None = None

    @workflow.update
    def set_quantity(self, quantity: int) -> int:
        self.quantity = quantity
        return quantity

    @set_quantity.validator
    def check_quantity(self, quantity: int) -> None:
        if quantity > 10:
            raise ValueError(f"at most 10 per order, got {quantity}")

    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.wait_condition(lambda: self.quantity is not None)
        return await act(charge, f"{item}x{self.quantity}")


@workflow.defn(name="SignalRenamed")
class SignalRenamedV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        return await act(charge, item)


@workflow.defn(name="SignalRenamed")
class SignalRenamedV2:
    _proceed = False

    @workflow.signal
    def proceed(self) -> None:
        self._proceed = True

    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.wait_condition(lambda: self._proceed)
        return await act(charge, item)


@workflow.defn(name="UpdateHandlerRemoved")
class UpdateHandlerRemovedV1:
    def __init__(self) -> None:
        self.note: str | None = None

    @workflow.update
    def add_note(self, note: str) -> str:
        self.note = note
        return "noted"

    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.wait_condition(lambda: self.note is not None, timeout=timedelta(hours=1))
        return await act(charge, item)


@workflow.defn(name="UpdateHandlerRemoved")
class UpdateHandlerRemovedV2:
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await workflow.sleep(timedelta(hours=1))
        return await act(charge, item)


@workflow.defn(name="WaitMoved")
class WaitMovedV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        return await act(charge, item)


@workflow.defn(name="WaitMoved")
class WaitMovedV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await self.wait_go()
        await act(reserve, item)
        return await act(charge, item)


@workflow.defn(name="QueryAdded")
class QueryAddedV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        return await act(charge, item)


@workflow.defn(name="QueryAdded")
class QueryAddedV2(WaitsForSignals):
    stage = "started"

    @workflow.query
    def status(self) -> str:
        return self.stage

    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        self.stage = "reserved"
        await self.wait_go()
        self.stage = "charging"
        return await act(charge, item)


@workflow.defn(name="LoggingAdded")
class LoggingAddedV1(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        await act(reserve, item)
        await self.wait_go()
        return await act(charge, item)


@workflow.defn(name="LoggingAdded")
class LoggingAddedV2(WaitsForSignals):
    @workflow.run
    async def run(self, item: str) -> str:
        workflow.logger.info("reserving %s", item)
        await act(reserve, item)
        await self.wait_go()
        result = await act(charge, item)
        workflow.logger.info("charged %s", item)
        return result


register(
    Case("signal-handler-work", "The signal handler now runs an activity before recording the "
         "item.", "signal_handler_work", "in_handler", SignalHandlerWorkV1, SignalHandlerWorkV2,
         BREAKS, drive=(Signal("add", "gift-wrap"),)),
    Case("update-handler-work", "The update handler now runs an activity before storing the "
         "address.", "update_handler_work", "in_handler", UpdateHandlerWorkV1,
         UpdateHandlerWorkV2, BREAKS, drive=(Update("set_address", "1 Main St"),)),
    Case("update-validator-added", "A validator now rejects quantities above 10, and the run is "
         "sent 50. The new run rejects the update and keeps waiting (no update events); the old "
         "history still replays because validators do not run during replay.",
         "update_validator", "in_handler", UpdateValidatorAddedV1, UpdateValidatorAddedV2, SAFE,
         drive=(Update("set_quantity", 50),)),
    Case("signal-renamed", "The signal the run waits for is renamed (go -> proceed) while "
         "senders still send go. New runs buffer go and wait forever; old runs that already "
         "got go cannot replay, since nothing lets the new code past its wait.",
         "signal_renamed", "after_signal", SignalRenamedV1, SignalRenamedV2,
         Expect(v1_on_v2="nondeterminism", v2_on_v1="ok"), drive=(Signal("go"),)),
    Case("update-handler-removed", "The update handler is removed. The new run rejects the "
         "update; replaying an old run that accepted it meets an update the code cannot "
         "handle.", "update_handler_removed", "in_handler", UpdateHandlerRemovedV1,
         UpdateHandlerRemovedV2, Expect(v1_on_v2="nondeterminism", v2_on_v1="ok"),
         drive=(Update("add_note", "leave at door"),)),
    Case("wait-moved", "The signal wait moves from after the first activity to before it. Old "
         "runs break; the old code still replays new runs, because core matches commands to "
         "command events in order without regard to which workflow task recorded them.",
         "wait_moved", "first_task", WaitMovedV1, WaitMovedV2,
         Expect(v1_on_v2="nondeterminism", v2_on_v1="ok"), drive=(Signal("go"),)),
    Case("query-added", "A query handler is added (and state for it). Queries add no events.",
         "query_added", "after_signal", QueryAddedV1, QueryAddedV2, SAFE,
         drive=(Signal("go"),)),
    Case("logging-added", "workflow.logger calls are added at the start and at the very end. "
         "Logging adds no commands.", "logging_added", "end_of_completed_run", LoggingAddedV1,
         LoggingAddedV2, SAFE, drive=(Signal("go"),)),
)
