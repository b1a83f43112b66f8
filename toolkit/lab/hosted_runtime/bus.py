"""The command bus: each command is delivered until it succeeds or runs out of attempts.

An error the handler does not classify is treated as retryable, so a deterministic failure (the
duplicate tool) is delivered ``max_deliveries`` times, then dead-lettered with the reason
``terminal:unclassified``, as in the note's log:

* ``WARN command failed with retryable error`` with ``delivery_attempt`` 1..5,
* ``WARN command deadlettered (terminal:unclassified)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from toolkit.lab.hosted_runtime.slog import SlogLogger

__all__ = ["Command", "CommandBus", "CommandOutcome"]


@dataclass(frozen=True)
class Command:
    """One agent turn to run: a user message in a session."""

    id: str
    session_id: str
    text: str
    type: str = "agent.turn"


@dataclass
class CommandOutcome:
    """How a command ended: ``completed`` (with the handler's result) or ``deadlettered``."""

    command: Command
    status: str
    deliveries: int
    result: Any = None
    error: str | None = None


class CommandBus:
    """Delivers commands to one handler with retries and a dead-letter queue.

    Parameters
    ----------
    handler
        Coroutine function run once per delivery.
    log
        The service logger.
    max_deliveries
        Deliveries before a command is dead-lettered.
    backoff
        Seconds before the second delivery; doubled before each later one.
    """

    def __init__(self, handler: Callable[[Command, int], Awaitable[Any]], log: SlogLogger, *,
                 max_deliveries: int = 5, backoff: float = 0.1) -> None:
        self.handler = handler
        self.log = log
        self.max_deliveries = max_deliveries
        self.backoff = backoff
        self.dead_letters: list[CommandOutcome] = []

    async def dispatch(self, command: Command) -> CommandOutcome:
        """Deliver ``command`` until it succeeds or is dead-lettered."""
        log = self.log.with_attrs(command_id=command.id, command_type=command.type)
        delay = self.backoff
        error = ""
        for attempt in range(1, self.max_deliveries + 1):
            try:
                result = await self.handler(command, attempt)
            except Exception as exc:  # the bus sees every handler failure, classified or not
                error = str(exc)
                log.warn("command failed with retryable error", delivery_attempt=attempt,
                         max_delivery_attempts=self.max_deliveries, error=error)
                if attempt < self.max_deliveries:
                    await asyncio.sleep(delay)
                    delay *= 2
                continue
            return CommandOutcome(command, "completed", attempt, result=result)
        log.warn("command deadlettered (terminal:unclassified)",
                 deliveries=self.max_deliveries, error=error)
        outcome = CommandOutcome(command, "deadlettered", self.max_deliveries, error=error)
        self.dead_letters.append(outcome)
        return outcome
