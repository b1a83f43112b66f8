"""ADK's LLM flow as the Go plugin sees it: one agent run, model step by model step.

Each model step runs, in this order (the order of ADK's request processors):

1. ``toolProcessor``: ``Tools()`` of every toolset. ADK v2.5.0 and earlier call it in the first
   step of an agent run only and keep the list; v2.6.0 calls it in every step (adk-go PR #785).
   ADK then draws one UUID from the workflow's random stream per tool it keeps.
2. When the run resumes a tool confirmation: the confirmed call is dispatched from that first
   ``Tools()`` list, before any ``ProcessRequest()``.
3. The instruction processor (an ``InstructionProvider`` may start a timer), then identity and
   contents (no commands).
4. ``toolsetPreprocess``: ``ProcessRequest()`` of every toolset, after all request processors.
5. ``InvokeModel``; a function call is dispatched to the toolset that declared the name
   (``CallMcpTool``) and the loop continues; a text ends the run; a tool that requires
   confirmation pauses the run with a confirmation request.

Every ``Tools()`` / ``ProcessRequest()`` that lists is one ``ListMcpTools`` activity (see
:mod:`.toolsets`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from toolkit.lab.go_twin.spec import AgentSpec, ToolsetSpec
from toolkit.lab.go_twin.toolsets import (
    Effects,
    Invocation,
    McpToolsetBeforeFix,
    Proxy,
    Request,
    SessionFacts,
    make_toolset,
)
from toolkit.lab.go_twin.variants import Variant

__all__ = ["CONFIRMATION_TOOL", "AdkFlow", "FlowEffects", "PendingConfirmation", "RunOutcome"]

CONFIRMATION_TOOL = "adk_request_confirmation"
"""Name of the function call ADK emits to ask for a confirmation (its id is the confirmation id)."""


class FlowEffects(Effects, Protocol):
    """Effects of a whole model step: the toolsets' ones plus the model and tool calls."""

    async def invoke_model(
        self, run: Invocation, contents: list[dict[str, Any]], tools: list[str]
    ) -> dict[str, Any]:
        """One model call (``InvokeModel``): ``{"function_call": ...}`` or ``{"text": ...}``."""
        ...

    async def call_tool(
        self, toolset: ToolsetSpec, name: str, args: dict[str, Any], run: Invocation
    ) -> dict[str, Any]:
        """One tool call (``CallMcpTool``): the function response."""
        ...


@dataclass
class PendingConfirmation:
    """A tool call waiting for approval: the confirmation id an approval must carry."""

    confirmation_id: str
    call_id: str
    name: str
    args: dict[str, Any]
    invocation_id: str


@dataclass
class RunOutcome:
    """How an agent run ended: a text reply, or a pending confirmation."""

    text: str | None = None
    pending: PendingConfirmation | None = None


def _user(part: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": [part]}


def _model(part: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": [part]}


class AdkFlow:
    """The LLM agent's flow for one variant; its toolsets live as long as the session."""

    def __init__(
        self, variant: Variant, agent: AgentSpec, effects: FlowEffects, facts: SessionFacts
    ) -> None:
        self.variant = variant
        self.agent = agent
        self.effects = effects
        self.facts = facts
        self.toolsets = [
            make_toolset(spec, effects, facts, fixed=variant.plugin_fixed)
            for spec in agent.toolsets
        ]

    async def _tools(self, run: Invocation) -> list[Proxy]:
        return [proxy for toolset in self.toolsets for proxy in await toolset.tools(run)]

    async def run(
        self,
        run: Invocation,
        contents: list[dict[str, Any]],
        *,
        resume: PendingConfirmation | None = None,
        approval_id: str | None = None,
    ) -> RunOutcome:
        """One agent run on ``contents`` (appended to in place, like ADK's session events).

        Parameters
        ----------
        run
            The run's invocation object (a new one per run, even when its id is reused).
        contents
            The conversation; its last entry is the message that started the run.
        resume, approval_id
            The confirmation the run resumes and the id the approval carried.
        """
        kept: list[Proxy] | None = None
        while True:
            run.step += 1
            if kept is None or self.variant.tools_every_step:
                kept = await self._tools(run)
            request = Request()
            for proxy in kept:
                if proxy.toolset.proxies_pack(run):
                    request.pack(proxy.toolset, [proxy.name])
            for _ in kept:
                self.effects.new_uuid("kept_tool")
            if resume is not None:
                await self._resume(run, resume, approval_id, kept, contents)
                resume = None
            if self.agent.instruction_timer:
                await self.effects.start_timer("instruction")
            for toolset in self.toolsets:
                await toolset.process_request(run, request)
            reply = await self.effects.invoke_model(run, contents, list(request.declared))
            call = reply.get("function_call")
            if not isinstance(call, dict):
                text = str(reply.get("text", ""))
                contents.append(_model({"text": text}))
                return RunOutcome(text=text)
            call_id = f"adk-{self.effects.new_uuid('function_call')}"
            contents.append(_model({"function_call": {**call, "id": call_id}}))
            if call["name"] in self.agent.require_confirmation:
                return self._ask_confirmation(run, call, call_id, contents)
            response = await self._dispatch(run, request.declared, call)
            contents.append(_user({"function_response": {
                "name": call["name"], "id": call_id, "response": response}}))

    def _ask_confirmation(
        self, run: Invocation, call: dict[str, Any], call_id: str, contents: list[dict[str, Any]]
    ) -> RunOutcome:
        confirmation_id = f"adk-{self.effects.new_uuid('confirmation')}"
        contents.append(_model({"function_call": {
            "name": CONFIRMATION_TOOL, "id": confirmation_id,
            "args": {"originalFunctionCall": {**call, "id": call_id}}}}))
        return RunOutcome(pending=PendingConfirmation(
            confirmation_id=confirmation_id, call_id=call_id, name=call["name"],
            args=dict(call.get("args") or {}), invocation_id=run.invocation_id))

    async def _dispatch(
        self, run: Invocation, declared: dict[str, McpToolsetBeforeFix], call: dict[str, Any]
    ) -> dict[str, Any]:
        toolset = declared.get(call["name"])
        if toolset is None:
            return {"error": f"tool {call['name']!r} is not declared in this request"}
        self.facts.called.add(call["name"])
        return await self.effects.call_tool(
            toolset.spec, call["name"], dict(call.get("args") or {}), run)

    async def _resume(
        self,
        run: Invocation,
        pending: PendingConfirmation,
        approval_id: str | None,
        kept: list[Proxy],
        contents: list[dict[str, Any]],
    ) -> None:
        """Dispatch the confirmed call from the first ``Tools()`` list (before ProcessRequest)."""
        if approval_id != pending.confirmation_id:
            # The approval names a confirmation this run never asked for: nothing runs.
            response: dict[str, Any] = {
                "error": f"no pending confirmation {approval_id!r} (pending: "
                         f"{pending.confirmation_id!r})"}
        else:
            available = {proxy.name: proxy.toolset for proxy in kept}
            if pending.name in available:
                response = await self._dispatch(run, available, {
                    "name": pending.name, "args": pending.args})
            else:
                response = {"error": f"tool {pending.name!r} is no longer available"}
        contents.append(_user({"function_response": {
            "name": pending.name, "id": pending.call_id, "response": response}}))
