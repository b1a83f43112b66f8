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

__all__ = ["AgentSpec", "LabPydanticAIAgentWorkflow"]


@dataclass
class AgentSpec:
    """Workflow input: the agent (scenario) name."""

    agent: str = "two_turns"


@workflow.defn(name=WORKFLOW_TYPE)
class LabPydanticAIAgentWorkflow:
    """A pydantic-ai agent that answers one signalled user turn at a time."""

    def __init__(self) -> None:
        self._inbox: list[str] = []
        self._replies: list[str] = []
        self._finished = False

    @workflow.signal
    def user_turn(self, text: str) -> None:
        self._inbox.append(text)

    @workflow.signal
    def finish(self) -> None:
        self._finished = True

    @workflow.query
    def replies(self) -> list[str]:
        return list(self._replies)

    @workflow.run
    async def run(self, spec: AgentSpec) -> list[str]:
        agent = lab_agent(spec.agent)
        history: list[Any] = []
        while True:
            await workflow.wait_condition(lambda: bool(self._inbox) or self._finished)
            if not self._inbox:
                return list(self._replies)
            result = await agent.run(self._inbox.pop(0), message_history=history)
            history = result.all_messages()
            self._replies.append(str(result.output))
