"""Workflow code for tests/test_replay_check.py that worker processes import by name."""

from __future__ import annotations

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


def debug_options() -> dict[str, Any]:
    """Unsandboxed, in debug mode (no deadlock detection)."""
    return {"workflow_runner": UnsandboxedWorkflowRunner(), "debug_mode": True}


def not_options() -> list[int]:
    """Not a dict of Replayer options."""
    return [1]
