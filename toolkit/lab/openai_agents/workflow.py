"""The durable OpenAI Agents workflow of the recorder.

One ``Agent`` whose model is named by the input (the integration runs every model call as its
``invoke_model_activity``; the worker's model provider resolves the name to the scripted model)
and whose ``mcp_servers`` are the integration's stateless MCP servers, each pointing at an MCP
endpoint passed as ``factory_argument`` (so the history shows which endpoint each activity used).
Turns arrive as ``user_turn`` signals and run one at a time with ``Runner.run`` on the
conversation so far; replies are read with the ``replies`` query; ``finish`` ends the run. With
``continue_as_new`` the run continues as new at a turn boundary when the server suggests it, the
next run's agent starting from a summary in its instructions (:mod:`toolkit.lab.turn_workflow`).

The same code runs with every release of :mod:`.envs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner

    from toolkit.lab.openai_agents.compat import integration_name
    from toolkit.lab.openai_agents.scenarios import WORKFLOW_TYPE
    from toolkit.lab.turn_workflow import ChainSpec, TurnWorkflow

__all__ = ["AgentSpec", "LabOpenAIAgentWorkflow", "ServerSpec"]


@dataclass
class ServerSpec:
    """One stateless MCP server: its name (activity prefix) and the MCP endpoint URL."""

    name: str
    url: str


INSTRUCTIONS = "Answer the user; call a tool when the user asks for one."


@dataclass
class AgentSpec(ChainSpec):
    """Workflow input: the MCP servers in order, the tool-list cache, whether they are MCP v2
    servers (``temporal_mcp_server``) rather than stateless ones, the model name, the retry
    bound of the MCP activities (0 keeps the integration's default), ``Runner.run``'s
    ``max_turns`` (0 keeps the SDK's default, 10 model calls a turn), and the continue-as-new
    fields of :class:`ChainSpec`."""

    servers: list[ServerSpec] = field(default_factory=list)
    cache_tools_list: bool = False
    mcp_v2: bool = False
    model: str = "lab-scripted-model"
    tool_max_attempts: int = 0
    max_turns: int = 0


def _activity_config(max_attempts: int) -> dict[str, Any]:
    # A plain dict: ActivityConfig is a TypedDict whose name old releases may lack.
    config: dict[str, Any] = {"start_to_close_timeout": timedelta(seconds=30)}
    if max_attempts:
        config["retry_policy"] = RetryPolicy(
            maximum_attempts=max_attempts, initial_interval=timedelta(milliseconds=500))
    return config


@workflow.defn(name=WORKFLOW_TYPE)
class LabOpenAIAgentWorkflow(TurnWorkflow):
    """An OpenAI agent that answers one signalled user turn at a time."""

    @workflow.run
    async def run(self, spec: AgentSpec) -> list[str]:
        config = _activity_config(spec.tool_max_attempts)
        if spec.mcp_v2:
            v2 = integration_name("workflow.temporal_mcp_server")
            servers = [v2(s.name, activity_config=config, cache_tools_list=spec.cache_tools_list,
                          factory_argument=s.url) for s in spec.servers]
        else:
            stateless = integration_name("workflow.stateless_mcp_server")
            servers = [stateless(s.name, config=config, cache_tools_list=spec.cache_tools_list,
                                 factory_argument=s.url) for s in spec.servers]
        agent: Any = Agent(
            name="lab_agent",
            instructions=f"{INSTRUCTIONS} {spec.summary}" if spec.summary else INSTRUCTIONS,
            model=spec.model,
            mcp_servers=servers,
        )
        conversation: list[Any] = []
        limits = {"max_turns": spec.max_turns} if spec.max_turns else {}

        async def answer(text: str) -> str:
            nonlocal conversation
            conversation.append({"role": "user", "content": text})
            result = await Runner.run(agent, conversation, **limits)
            conversation = result.to_input_list()
            return str(result.final_output)

        return await self.answer_turns(answer, spec)
