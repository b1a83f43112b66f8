"""Shared pieces of the built-in gallery workflows: timeouts and the two signals they wait on.

``go`` is what a driven run waits for mid-flow (the drive sends it); ``finish`` is never sent, so a
run waiting for it stays open and is exported while still running.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow

__all__ = ["ACTIVITY_TIMEOUT", "WaitsForSignals", "act"]

#: start_to_close timeout of every gallery activity (they return at once).
ACTIVITY_TIMEOUT = timedelta(seconds=10)


class WaitsForSignals:
    """Mixin: the ``go`` and ``finish`` signals and coroutines that wait for them."""

    _go = False
    _finish = False

    @workflow.signal
    def go(self) -> None:
        """Let the run past its mid-flow wait."""
        self._go = True

    @workflow.signal
    def finish(self) -> None:
        """Let the run past its final wait (the gallery never sends it)."""
        self._finish = True

    async def wait_go(self) -> None:
        """Block until ``go`` arrives."""
        await workflow.wait_condition(lambda: self._go)

    async def wait_finish(self) -> None:
        """Block until ``finish`` arrives."""
        await workflow.wait_condition(lambda: self._finish)


async def act(activity: Callable[..., Any], arg: str, **options: Any) -> Any:
    """Run ``activity(arg)`` with the gallery's default timeout (``options`` override it)."""
    options.setdefault("start_to_close_timeout", ACTIVITY_TIMEOUT)
    return await workflow.execute_activity(activity, arg, **options)
