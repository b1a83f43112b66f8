"""An agent session: turns, the root agent (the LLM agent or a custom root with branches),
tool confirmations and the exclusions a ``ToolFilter`` reads. No Temporal imports: the workflow
(:mod:`.workflows`) drives it with Temporal effects, the rule tests with recorded ones.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from toolkit.lab.go_twin.flow import AdkFlow, FlowEffects, PendingConfirmation, RunOutcome
from toolkit.lab.go_twin.spec import (
    ROOT_BRANCHES_PARALLEL,
    ROOT_BRANCHES_SEQUENTIAL,
    ROOT_LLM,
    SessionInput,
)
from toolkit.lab.go_twin.toolsets import Invocation, McpToolsetWithFix, SessionFacts
from toolkit.lab.go_twin.variants import Variant

__all__ = ["AgentSession", "TurnOutcome"]

BRANCH_SEPARATOR = ";"
"""A turn for a branching root holds one message per branch, separated by this character."""


@dataclass
class TurnOutcome:
    """What a turn (or an approval) produced: replies, and a confirmation id if one is pending."""

    replies: list[str] = field(default_factory=list)
    pending_confirmation: str | None = None


class AgentSession:
    """The session one workflow run hosts.

    Parameters
    ----------
    spec
        The agent and its root.
    variant
        Plugin state and ADK release.
    effects
        Where listings, timers, model and tool calls and random draws go.
    """

    def __init__(self, spec: SessionInput, variant: Variant, effects: FlowEffects) -> None:
        if spec.root not in (ROOT_LLM, ROOT_BRANCHES_PARALLEL, ROOT_BRANCHES_SEQUENTIAL):
            raise ValueError(f"SessionInput.root: unknown root {spec.root!r}")
        self.spec = spec
        self.effects = effects
        self.facts = SessionFacts()
        self.flow = AdkFlow(variant, spec.agent, effects, self.facts)
        self.contents: list[dict[str, Any]] = []
        self.pending: PendingConfirmation | None = None
        self.turns = 0

    def _new_run(self, label: str, invocation_id: str | None = None) -> Invocation:
        # ADK's invocation ids are "e-" + a UUID; a resumed run keeps the paused run's id.
        if invocation_id is None:
            invocation_id = f"e-{self.effects.new_uuid('invocation')}"
        return Invocation(invocation_id, self.spec.agent.name, label)

    def _outcome(self, outcomes: list[RunOutcome]) -> TurnOutcome:
        pending = [o.pending for o in outcomes if o.pending is not None]
        self.pending = pending[0] if pending else None
        return TurnOutcome(
            replies=[o.text for o in outcomes if o.text is not None],
            pending_confirmation=self.pending.confirmation_id if self.pending else None,
        )

    async def turn(self, message: str) -> TurnOutcome:
        """One user message: one agent run, or one run per branch under a custom root."""
        self.turns += 1
        label = f"turn{self.turns}"
        if self.spec.root == ROOT_LLM:
            self.contents.append({"role": "user", "parts": [{"text": message}]})
            return self._outcome([await self.flow.run(self._new_run(label), self.contents)])
        # A custom root: one invocation id shared by every branch, one invocation object each.
        root_id = f"e-{self.effects.new_uuid('invocation')}"
        texts = [t.strip() for t in message.split(BRANCH_SEPARATOR) if t.strip()]

        async def branch(index: int, text: str) -> RunOutcome:
            run = self._new_run(f"{label}.branch{index}", root_id)
            return await self.flow.run(run, [{"role": "user", "parts": [{"text": text}]}])

        if self.spec.root == ROOT_BRANCHES_PARALLEL:
            outcomes = list(await asyncio.gather(*(branch(i, t) for i, t in enumerate(texts, 1))))
        else:
            outcomes = [await branch(i, t) for i, t in enumerate(texts, 1)]
        return self._outcome(outcomes)

    async def approve(self, confirmation_id: str) -> TurnOutcome:
        """Resume the paused run with an approval carrying ``confirmation_id``."""
        pending = self.pending
        if pending is None:
            return TurnOutcome(replies=[f"no confirmation pending for {confirmation_id!r}"])
        self.contents.append({"role": "user", "parts": [{"function_response": {
            "name": "adk_request_confirmation", "id": confirmation_id,
            "response": {"confirmed": True}}}]})
        run = self._new_run(f"turn{self.turns}.resume", pending.invocation_id)
        outcome = await self.flow.run(
            run, self.contents, resume=pending, approval_id=confirmation_id)
        return self._outcome([outcome])

    def exclude(self, tool: str) -> None:
        """Make every ``ToolFilter`` exclude ``tool`` from now on."""
        self.facts.excluded.add(tool)

    def store_sizes(self) -> list[int]:
        """Per fixed toolset, how many agent runs' state it still holds (empty before the fix)."""
        return [t.store_size for t in self.flow.toolsets if isinstance(t, McpToolsetWithFix)]
