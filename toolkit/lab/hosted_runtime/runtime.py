"""The hosted-agent runtime: registry, toolsets per agent run, the command bus, slog logs.

Each command (a user turn) is one agent run: the runtime builds the agent's toolsets from the
registry (one per entry; deduplicated by endpoint when the fix is on), runs the turn, and logs the
outcome. Failures go back to the bus, which retries and dead-letters.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Literal, TextIO

from toolkit.lab.hosted_runtime.agent import TurnResult, run_agent
from toolkit.lab.hosted_runtime.bus import Command, CommandBus, CommandOutcome
from toolkit.lab.hosted_runtime.registry import agent_servers
from toolkit.lab.hosted_runtime.slog import SlogLogger
from toolkit.lab.hosted_runtime.toolsets import Keep, hosted_toolsets

__all__ = ["HostedRuntime", "RuntimeOptions", "run_session"]


@dataclass(frozen=True)
class RuntimeOptions:
    """Configuration of one runtime.

    Attributes
    ----------
    session_memory
        Creates the session-scoped binding (the incident's trigger).
    endpoint_fix
        Deduplicate toolsets by endpoint.
    keep
        With the fix: ``scoped`` (the note's fix) or ``first`` (the naive one).
    token
        The session's context token.
    max_deliveries, backoff
        Bus settings.
    """

    session_memory: bool = True
    endpoint_fix: bool = False
    keep: Keep = "scoped"
    token: str = "s3ss10n"
    max_deliveries: int = 5
    backoff: float = 0.1


class HostedRuntime:
    """The runtime for one session on the bundled MCP server at ``mcp_url``."""

    def __init__(self, mcp_url: str, log: SlogLogger, options: RuntimeOptions) -> None:
        self.options = options
        self.session_id = f"session-{options.token}"
        self.log = log.with_attrs(session_id=self.session_id)
        self.registry, self.server_ids = agent_servers(
            mcp_url, session_memory=options.session_memory, token=options.token)
        for ident in self.server_ids:
            self.log.info("mcp server registered", server_id=ident,
                          url=self.registry.get(ident).url)
        self.bus = CommandBus(self.handle, self.log, max_deliveries=options.max_deliveries,
                              backoff=options.backoff)

    async def handle(self, command: Command, delivery: int) -> TurnResult:
        """One agent run for ``command`` (the bus calls this once per delivery)."""
        log = self.log.with_attrs(command_id=command.id)
        failure: Exception | None = None
        async with AsyncExitStack() as stack:
            toolsets = await hosted_toolsets(
                self.registry, self.server_ids, stack, log,
                endpoint_fix=self.options.endpoint_fix, keep=self.options.keep)
            try:
                result = await run_agent(command.text, toolsets)
            except Exception as error:
                # Raised after the MCP sessions close: inside them the client's task group would
                # wrap it in an ExceptionGroup and the bus would log the wrapper, not the cause.
                failure = error
        if failure is not None:
            log.error("agent run failed", error=str(failure))
            raise failure
        log.info("turn complete", function_response_part_count=result.function_response_part_count,
                 turn_complete=True, final_response=bool(result.text), tool=result.tool or "",
                 served_by=result.served_by or "", reply=result.text)
        return result

    async def run(self, turns: list[str]) -> list[CommandOutcome]:
        """Publish one command per turn, in order; return their outcomes."""
        outcomes = []
        for number, text in enumerate(turns, start=1):
            command = Command(f"cmd-{number}", self.session_id, text)
            outcomes.append(await self.bus.dispatch(command))
        return outcomes


def run_session(mcp_url: str, turns: list[str], stream: TextIO, *,
                fmt: Literal["text", "json"] = "text", **options: object) -> list[CommandOutcome]:
    """Run ``turns`` through a fresh runtime, logging to ``stream``; blocking.

    Parameters
    ----------
    mcp_url
        The bundled MCP server (:class:`toolkit.lab.mcp_server.McpServer`'s ``url``).
    turns
        User messages, one command each.
    stream
        Receives the slog records.
    fmt
        ``text`` or ``json`` slog output.
    **options
        Fields of :class:`RuntimeOptions` (``endpoint_fix=True`` ...).

    Returns
    -------
    list of CommandOutcome
        One per turn.
    """
    runtime = HostedRuntime(mcp_url, SlogLogger(stream, fmt=fmt),
                            RuntimeOptions(**options))  # type: ignore[arg-type]
    return asyncio.run(runtime.run(turns))
