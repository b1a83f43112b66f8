"""The durable pydantic-ai agent workflow of the recorder.

The input names one of the ``TemporalAgent`` s of :mod:`.agents`; turns arrive as ``user_turn``
signals and run one at a time with ``agent.run(text, message_history=...)`` on the conversation
so far; replies are read with the ``replies`` query; ``finish`` ends the run. With
``continue_as_new`` the run continues as new at a turn boundary when the server suggests it, the
next run's agent starting from a summary in its instructions (:mod:`toolkit.lab.turn_workflow`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai.usage import UsageLimits

    from toolkit.lab.pydantic_ai.agents import lab_agent
    from toolkit.lab.pydantic_ai.scenarios import WORKFLOW_TYPE
    from toolkit.lab.turn_workflow import ChainSpec, TurnWorkflow

__all__ = ["AgentSpec", "LabPydanticAIAgentWorkflow"]


@dataclass
class AgentSpec(ChainSpec):
    """Workflow input: the agent (scenario) name, the run's model-request limit (0 keeps
    pydantic-ai's default ``UsageLimits``, 50 requests) and the continue-as-new fields of
    :class:`ChainSpec`."""

    agent: str = "two_turns"
    request_limit: int = 0


@workflow.defn(name=WORKFLOW_TYPE)
class LabPydanticAIAgentWorkflow(TurnWorkflow):
    """A pydantic-ai agent that answers one signalled user turn at a time."""

    @workflow.run
    async def run(self, spec: AgentSpec) -> list[str]:
        agent = lab_agent(spec.agent)
        history: list[Any] = []
        options: dict[str, Any] = {}
        if spec.request_limit:
            options["usage_limits"] = UsageLimits(request_limit=spec.request_limit)
        if spec.summary:  # added to the agent's own instructions
            options["instructions"] = spec.summary

        async def answer(text: str) -> str:
            nonlocal history
            result = await agent.run(text, message_history=history, **options)
            history = result.all_messages()
            return str(result.output)

        return await self.answer_turns(answer, spec)
