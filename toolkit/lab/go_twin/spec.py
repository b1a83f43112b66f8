"""Plain data the twin's workflow and activities exchange (Temporal's default JSON converter).

Workflow inputs describe the agent the way a Go program would configure it: toolsets
(``NewMCPToolset`` with an endpoint and options), an ``InstructionProvider`` that may start a timer,
tools that require confirmation, and a root that is either the LLM agent itself or a custom agent
running one helper on several branches of one invocation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ROOT_BRANCHES_PARALLEL",
    "ROOT_BRANCHES_SEQUENTIAL",
    "ROOT_LLM",
    "AgentSpec",
    "CallToolInput",
    "InvokeModelInput",
    "ListToolsInput",
    "SessionInput",
    "ToolsetSpec",
]

ROOT_LLM = "llm"
"""The root is the LLM agent: every turn is one agent run."""
ROOT_BRANCHES_PARALLEL = "branches_parallel"
"""A custom root runs the LLM agent as a helper on several branches of one invocation, at once."""
ROOT_BRANCHES_SEQUENTIAL = "branches_sequential"
"""The same custom root, running the branches one after the other."""


@dataclass
class ToolsetSpec:
    """One ``NewMCPToolset``: an MCP endpoint and the options its ``ToolFilter`` models.

    Attributes
    ----------
    name : str
        Toolset name (activity inputs carry it; histories never compare it).
    url : str
        Streamable HTTP endpoint of the MCP server (``?toolset=<name>`` tells toolsets apart in
        the server's request log).
    allow : list of str or None
        Static part of the ``ToolFilter``: only these tool names are kept (None: all).
    filter_timer : bool
        The ``ToolFilter`` starts a workflow timer each time it runs.
    filter_drops_called : list of str
        The ``ToolFilter`` excludes these tools once they have been called in the session
        (the "ToolFilter drops it" case of the fix's generated-ID test).
    """

    name: str
    url: str
    allow: list[str] | None = None
    filter_timer: bool = False
    filter_drops_called: list[str] = field(default_factory=list)


@dataclass
class AgentSpec:
    """The LLM agent: its toolsets, instruction provider and confirmation policy."""

    name: str
    toolsets: list[ToolsetSpec]
    instruction_timer: bool = False
    require_confirmation: list[str] = field(default_factory=list)


@dataclass
class SessionInput:
    """Workflow input: the agent, how the root runs it, and the timer length in seconds."""

    agent: AgentSpec
    root: str = ROOT_LLM
    timer_seconds: float = 0.01


@dataclass
class ListToolsInput:
    """``ListMcpTools`` input. ``caller`` (``Tools`` / ``ProcessRequest``), ``run`` and ``step``
    say which rule listed; replay never compares activity inputs, so they only help analysis."""

    url: str
    toolset: str
    caller: str
    run: str
    step: int


@dataclass
class CallToolInput:
    """``CallMcpTool`` input: one tool call on the toolset's endpoint."""

    url: str
    toolset: str
    name: str
    args: dict[str, Any]
    run: str
    step: int


@dataclass
class InvokeModelInput:
    """``InvokeModel`` input: the request's contents and the tool names it declares."""

    agent: str
    contents: list[dict[str, Any]]
    tools: list[str]
    run: str
    step: int
