"""The twin's workflow: one class per variant, all registered as :data:`WORKFLOW_NAME`.

A long-running agent session: turns and approvals arrive as signals and are handled one at a
time, in arrival order; a query reports progress (replies, the pending confirmation id, UUIDs
drawn); the ``finish`` signal ends the run with a summary. Registering all variants under one name
is what lets a history recorded with one variant be replayed against another.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from toolkit.lab.go_twin.session import AgentSession, TurnOutcome
    from toolkit.lab.go_twin.spec import (
        CallToolInput,
        InvokeModelInput,
        ListToolsInput,
        SessionInput,
        ToolsetSpec,
    )
    from toolkit.lab.go_twin.toolsets import Invocation
    from toolkit.lab.go_twin.variants import VARIANTS, WORKFLOW_NAME, Variant
    from toolkit.lab.sandbox import toolkit_sandbox_runner as workflow_runner

__all__ = ["WORKFLOW_CLASSES", "TwinProgress", "workflow_class", "workflow_runner"]

_ACTIVITY_TIMEOUT = timedelta(seconds=30)
_RETRY = RetryPolicy(maximum_attempts=3)


class _WorkflowEffects:
    """Effects as Temporal commands; UUIDs from the workflow's deterministic random stream."""

    def __init__(self, timer_seconds: float) -> None:
        self.timer_seconds = timer_seconds
        self.uuids: Counter[str] = Counter()

    async def list_tools(self, toolset: ToolsetSpec, caller: str, run: Invocation) -> list[str]:
        return list(await workflow.execute_activity(
            "ListMcpTools", ListToolsInput(toolset.url, toolset.name, caller, run.label, run.step),
            start_to_close_timeout=_ACTIVITY_TIMEOUT, retry_policy=_RETRY,
            summary=f"{caller} {toolset.name} {run.label} step {run.step}"))

    async def start_timer(self, label: str) -> None:
        await workflow.sleep(self.timer_seconds, summary=label)

    def new_uuid(self, purpose: str) -> str:
        self.uuids[purpose] += 1
        return str(workflow.uuid4())

    async def invoke_model(
        self, run: Invocation, contents: list[dict[str, Any]], tools: list[str]
    ) -> dict[str, Any]:
        return dict(await workflow.execute_activity(
            "InvokeModel", InvokeModelInput(run.agent, contents, tools, run.label, run.step),
            start_to_close_timeout=_ACTIVITY_TIMEOUT, retry_policy=_RETRY,
            summary=f"{run.label} step {run.step}"))

    async def call_tool(
        self, toolset: ToolsetSpec, name: str, args: dict[str, Any], run: Invocation
    ) -> dict[str, Any]:
        return dict(await workflow.execute_activity(
            "CallMcpTool", CallToolInput(toolset.url, toolset.name, name, args, run.label,
                                         run.step),
            start_to_close_timeout=_ACTIVITY_TIMEOUT, retry_policy=_RETRY,
            summary=f"{name} {run.label} step {run.step}"))


@dataclass
class TwinProgress:
    """What the ``progress`` query and the workflow result report."""

    variant: str
    handled: int = 0
    replies: list[list[str]] = field(default_factory=list)
    pending_confirmation: str | None = None
    confirmation_ids: list[str] = field(default_factory=list)
    uuids: dict[str, int] = field(default_factory=dict)
    uuid_draws: list[int] = field(default_factory=list)
    store_sizes: list[int] = field(default_factory=list)


class _TwinSessionWorkflow:
    """Shared body of every variant's workflow class (handlers are inherited)."""

    variant: Variant

    def __init__(self) -> None:
        self._inbox: list[tuple[str, str]] = []
        self._finish = False
        self._progress = TwinProgress(variant=self.variant.name)

    async def _serve(self, spec: SessionInput) -> TwinProgress:
        effects = _WorkflowEffects(spec.timer_seconds)
        session = AgentSession(spec, self.variant, effects)
        while True:
            await workflow.wait_condition(lambda: bool(self._inbox) or self._finish)
            if not self._inbox:
                break
            kind, value = self._inbox.pop(0)
            drawn_before = sum(effects.uuids.values())
            if kind == "exclude_tool":
                session.exclude(value)
                self._progress.handled += 1
                continue
            outcome: TurnOutcome = await (
                session.turn(value) if kind == "turn" else session.approve(value))
            progress = self._progress
            progress.replies.append(outcome.replies)
            progress.pending_confirmation = outcome.pending_confirmation
            if outcome.pending_confirmation:
                progress.confirmation_ids.append(outcome.pending_confirmation)
            progress.uuids = dict(effects.uuids)
            progress.uuid_draws.append(sum(effects.uuids.values()) - drawn_before)
            progress.store_sizes = session.store_sizes()
            progress.handled += 1
        return self._progress

    @workflow.signal
    def turn(self, message: str) -> None:
        """A user message: one turn."""
        self._inbox.append(("turn", message))

    @workflow.signal
    def approve(self, confirmation_id: str) -> None:
        """Approve the pending tool call whose confirmation id is ``confirmation_id``."""
        self._inbox.append(("approve", confirmation_id))

    @workflow.signal
    def exclude_tool(self, name: str) -> None:
        """Make the ToolFilter exclude ``name`` from now on."""
        self._inbox.append(("exclude_tool", name))

    @workflow.signal
    def finish(self) -> None:
        """End the session once every signal received so far has been handled."""
        self._finish = True

    @workflow.query
    def progress(self) -> TwinProgress:
        """Replies so far, the pending confirmation id and the UUIDs drawn."""
        return self._progress


@workflow.defn(name=WORKFLOW_NAME)
class BeforeFixAdk250(_TwinSessionWorkflow):
    """The plugin before the fix, ADK v2.5.0."""

    variant = VARIANTS[0]

    @workflow.run
    async def run(self, spec: SessionInput) -> TwinProgress:
        return await self._serve(spec)


@workflow.defn(name=WORKFLOW_NAME)
class BeforeFixAdk260(_TwinSessionWorkflow):
    """The plugin before the fix, ADK v2.6.0."""

    variant = VARIANTS[1]

    @workflow.run
    async def run(self, spec: SessionInput) -> TwinProgress:
        return await self._serve(spec)


@workflow.defn(name=WORKFLOW_NAME)
class WithFixAdk250(_TwinSessionWorkflow):
    """The plugin with the fix, ADK v2.5.0."""

    variant = VARIANTS[2]

    @workflow.run
    async def run(self, spec: SessionInput) -> TwinProgress:
        return await self._serve(spec)


@workflow.defn(name=WORKFLOW_NAME)
class WithFixAdk260(_TwinSessionWorkflow):
    """The plugin with the fix, ADK v2.6.0."""

    variant = VARIANTS[3]

    @workflow.run
    async def run(self, spec: SessionInput) -> TwinProgress:
        return await self._serve(spec)


WORKFLOW_CLASSES: dict[str, type] = {
    cls.variant.name: cls
    for cls in (BeforeFixAdk250, BeforeFixAdk260, WithFixAdk250, WithFixAdk260)
}


def workflow_class(variant: Variant | str) -> type:
    """The workflow class of ``variant`` (a :class:`Variant` or its name)."""
    name = variant if isinstance(variant, str) else variant.name
    try:
        return WORKFLOW_CLASSES[name]
    except KeyError:
        raise KeyError(f"no twin workflow for variant {name!r}; "
                       f"known: {sorted(WORKFLOW_CLASSES)}") from None


