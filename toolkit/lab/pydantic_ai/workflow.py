"""The durable pydantic-ai agent workflow of the recorder.

The input names one of the ``TemporalAgent`` s of :mod:`.agents`; turns arrive as ``user_turn``
signals and run one at a time with ``agent.run(text, message_history=...)`` on the conversation
so far; replies are read with the ``replies`` query; ``finish`` ends the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from toolkit.lab.pydantic_ai.agents import lab_agent
    from toolkit.lab.pydantic_ai.scenarios import WORKFLOW_TYPE
    from toolkit.lab.turn_workflow import TurnWorkflow

__all__ = ["AgentSpec", "LabPydanticAIAgentWorkflow"]


@dataclass
class AgentSpec:
    """Workflow input: the agent (scenario) name."""

    agent: str = "two_turns"


@workflow.defn(name=WORKFLOW_TYPE)
class LabPydanticAIAgentWorkflow(TurnWorkflow):
    """A pydantic-ai agent that answers one signalled user turn at a time."""

    @workflow.run
    async def run(self, spec: AgentSpec) -> list[str]:
        agent = lab_agent(spec.agent)
        history: list[Any] = []

        async def answer(text: str) -> str:
            nonlocal history
            result = await agent.run(text, message_history=history)
            history = result.all_messages()
            return str(result.output)

        return await self.answer_turns(answer)
