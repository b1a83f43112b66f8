"""The durable ADK agent workflow of Recorder A.

One ``LlmAgent`` whose model is a ``TemporalModel`` (the scripted model, resolved by name in the
worker's ``invoke_model`` activity) and whose tools are ``TemporalMcpToolSet`` s, each pointing at
an MCP endpoint passed as the toolset's ``factory_argument`` (so the history shows which endpoint
each activity used). Turns arrive as ``user_turn`` signals and run one at a time through an ADK
``InMemoryRunner`` whose session lives in workflow memory; replies are read with the ``replies``
query; the ``finish`` signal ends the run with all replies. With ``continue_as_new`` the run
continues as new at a turn boundary when the server suggests it, the next run's agent starting
from a summary in its instruction (:mod:`toolkit.lab.turn_workflow`).

The same code runs under every google-adk / temporalio pair of :mod:`.envs`: plugin names come
from :mod:`.compat`, and only ADK APIs that exist from google-adk 1.27 to 2.13 are used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from toolkit.lab.adk_python.compat import plugin_name
    from toolkit.lab.adk_python.scenarios import WORKFLOW_TYPE
    from toolkit.lab.turn_workflow import ChainSpec, TurnWorkflow

__all__ = ["WORKFLOW_TYPE", "AgentSpec", "LabAdkAgentWorkflow", "ToolsetSpec"]

APP_NAME = "lab"
USER_ID = "lab-user"


@dataclass
class ToolsetSpec:
    """One ``TemporalMcpToolSet``: activity name prefix and the MCP endpoint URL."""

    name: str
    url: str


INSTRUCTION = "Answer the user; call a tool when the user asks for one."


@dataclass
class AgentSpec(ChainSpec):
    """Workflow input (and the continue-as-new fields of :class:`ChainSpec`).

    Attributes
    ----------
    toolsets
        The agent's toolsets, in order (with two on one server, the last one wins a call).
    model
        Model name resolved by the worker's LLM registry.
    tool_max_attempts
        Retry bound of the toolset activities; 0 keeps the plugin default (retry forever).
    """

    toolsets: list[ToolsetSpec] = field(default_factory=list)
    model: str = "lab-scripted-model"
    tool_max_attempts: int = 0


def _toolset_config(max_attempts: int) -> dict[str, Any]:
    # A plain dict: ActivityConfig is a TypedDict, and old temporalio releases may lack its name.
    config: dict[str, Any] = {"start_to_close_timeout": timedelta(seconds=30)}
    if max_attempts:
        config["retry_policy"] = RetryPolicy(
            maximum_attempts=max_attempts, initial_interval=timedelta(milliseconds=500)
        )
    return config


def _reply_text(event: Any) -> str | None:
    """Text of a final model event, if it is one."""
    content = getattr(event, "content", None)
    if content is None or getattr(content, "role", None) != "model":
        return None
    texts = [part.text for part in (content.parts or []) if getattr(part, "text", None)]
    return "".join(texts) or None


@workflow.defn(name=WORKFLOW_TYPE)
class LabAdkAgentWorkflow(TurnWorkflow):
    """An ADK agent that answers one signalled user turn at a time."""

    @workflow.run
    async def run(self, spec: AgentSpec) -> list[str]:
        temporal_model = plugin_name("TemporalModel")
        mcp_toolset = plugin_name("TemporalMcpToolSet")
        tools = [
            mcp_toolset(t.name, config=_toolset_config(spec.tool_max_attempts),
                        factory_argument=t.url)
            for t in spec.toolsets
        ]
        agent = LlmAgent(
            name="lab_agent",
            model=temporal_model(spec.model),
            # Braces would be ADK state placeholders; summaries hold none.
            instruction=f"{INSTRUCTION} {spec.summary}" if spec.summary else INSTRUCTION,
            tools=tools,
        )
        runner = InMemoryRunner(agent=agent, app_name=APP_NAME)
        session = await runner.session_service.create_session(app_name=APP_NAME, user_id=USER_ID)

        async def answer(text: str) -> str:
            message = types.Content(role="user", parts=[types.Part(text=text)])
            reply = ""
            async for event in runner.run_async(
                user_id=USER_ID, session_id=session.id, new_message=message
            ):
                reply = _reply_text(event) or reply
            return reply

        return await self.answer_turns(answer, spec)
