"""The plugin's MCP toolset, before and with the fix: where it lists, filters and declares.

The Go plugin's toolset is called by ADK at two points of every model step (see :mod:`.flow`):
``Tools()`` from the ``toolProcessor`` (before the instruction processor) and ``ProcessRequest()``
from ``toolsetPreprocess`` (after every request processor). Each listing is one ``ListMcpTools``
activity.

Before the fix both calls list (and run the ``ToolFilter``) every time, and the proxy tools
``Tools()`` returned pack themselves into the request, so a run on ADK v2.5.0 keeps declaring the
first step's tools. With the fix the toolset keeps per-agent-run state, keyed by the invocation
object (weakly, so finished runs are dropped by the garbage collector):

* ``Tools()`` lists (and filters) until ``ProcessRequest()`` has run in this agent run; later
  calls return the first list without an activity;
* the first ``ProcessRequest()`` reuses that list; later ones list; every one runs the filter;
* once ``ProcessRequest()`` has run, the proxies stop packing themselves: the request declares
  only the current list.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Protocol

from toolkit.lab.go_twin.spec import ToolsetSpec

__all__ = [
    "Effects",
    "Invocation",
    "McpToolsetBeforeFix",
    "McpToolsetWithFix",
    "Proxy",
    "Request",
    "SessionFacts",
    "make_toolset",
]


class Effects(Protocol):
    """What the rules may do to the outside world (in the workflow: commands and random draws)."""

    async def list_tools(self, toolset: ToolsetSpec, caller: str, run: Invocation) -> list[str]:
        """List the toolset's tools (``ListMcpTools``)."""
        ...

    async def start_timer(self, label: str) -> None:
        """Start a timer and wait for it (``TimerStarted``)."""
        ...

    def new_uuid(self, purpose: str) -> str:
        """Draw one UUID from the workflow's random stream."""
        ...


@dataclass(eq=False)
class Invocation:
    """One agent run (ADK's invocation object). Compared and hashed by identity, on purpose:
    concurrent branches share ``invocation_id`` and agent name but are different runs."""

    invocation_id: str
    agent: str
    label: str
    step: int = 0


@dataclass
class SessionFacts:
    """Session state a ``ToolFilter`` may read: tools called so far and tools excluded by signal."""

    called: set[str] = field(default_factory=set)
    excluded: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Proxy:
    """A proxy tool returned by ``Tools()``: the toolset that made it and the tool name."""

    toolset: McpToolsetBeforeFix
    name: str


class Request:
    """The model request being built: declared tool names, each with the toolset that serves it."""

    def __init__(self) -> None:
        self.declared: dict[str, McpToolsetBeforeFix] = {}

    def pack(self, toolset: McpToolsetBeforeFix, names: list[str]) -> None:
        """Declare ``names`` for ``toolset`` (a name already declared keeps its first toolset)."""
        for name in names:
            self.declared.setdefault(name, toolset)

    def replace(self, toolset: McpToolsetBeforeFix, names: list[str]) -> None:
        """Make ``names`` the toolset's only declarations (the fixed ``ProcessRequest``)."""
        for name in [n for n, owner in self.declared.items() if owner is toolset]:
            del self.declared[name]
        self.pack(toolset, names)


class McpToolsetBeforeFix:
    """The toolset before the fix: every ``Tools()`` and every ``ProcessRequest()`` lists."""

    def __init__(self, spec: ToolsetSpec, effects: Effects, facts: SessionFacts) -> None:
        self.spec = spec
        self.effects = effects
        self.facts = facts

    async def _list(self, caller: str, run: Invocation) -> list[str]:
        return await self.effects.list_tools(self.spec, caller, run)

    async def _filter(self, names: list[str]) -> list[str]:
        """Run the ``ToolFilter``: maybe a timer, then the static and session-driven exclusions."""
        if self.spec.filter_timer:
            await self.effects.start_timer(f"tool_filter:{self.spec.name}")
        allow = None if self.spec.allow is None else set(self.spec.allow)
        dropped = self.facts.called & set(self.spec.filter_drops_called)
        return [
            n for n in names
            if (allow is None or n in allow) and n not in dropped and n not in self.facts.excluded
        ]

    async def tools(self, run: Invocation) -> list[Proxy]:
        """``Tools()``: list, filter, return proxies."""
        names = await self._filter(await self._list("Tools", run))
        return [Proxy(self, n) for n in names]

    def proxies_pack(self, run: Invocation) -> bool:
        """Whether the proxies from ``Tools()`` still pack themselves into the request."""
        return True

    async def process_request(self, run: Invocation, request: Request) -> None:
        """``ProcessRequest()``: list, filter, declare what is not declared yet."""
        request.pack(self, await self._filter(await self._list("ProcessRequest", run)))


@dataclass
class _RunListing:
    """Per-agent-run state of the fixed toolset."""

    listed: list[str] | None = None  # what the listing in Tools() returned (before filtering)
    kept: list[str] | None = None  # what the first Tools() returned (after filtering)
    process_request_ran: bool = False


class McpToolsetWithFix(McpToolsetBeforeFix):
    """The toolset with the fix: one listing per model step, at the same point on every release."""

    def __init__(self, spec: ToolsetSpec, effects: Effects, facts: SessionFacts) -> None:
        super().__init__(spec, effects, facts)
        # Weak keys: the state of a finished run goes when its invocation is collected.
        self._runs: weakref.WeakKeyDictionary[Invocation, _RunListing] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def store_size(self) -> int:
        """Number of agent runs whose state the toolset still holds."""
        return len(self._runs)

    def _state(self, run: Invocation) -> _RunListing:
        state = self._runs.get(run)
        if state is None:
            state = self._runs[run] = _RunListing()
        return state

    async def tools(self, run: Invocation) -> list[Proxy]:
        state = self._state(run)
        if not state.process_request_ran:
            state.listed = await self._list("Tools", run)
            if state.kept is None:  # the filter runs in the first Tools() call of the run
                state.kept = await self._filter(state.listed)
        # Later Tools() calls (v2.6.0 only) return the list v2.5.0 keeps, without an activity.
        return [Proxy(self, n) for n in state.kept or []]

    def proxies_pack(self, run: Invocation) -> bool:
        return not self._state(run).process_request_ran

    async def process_request(self, run: Invocation, request: Request) -> None:
        state = self._state(run)
        if not state.process_request_ran and state.listed is not None:
            names = state.listed  # the first ProcessRequest() reuses the Tools() listing
        else:
            names = await self._list("ProcessRequest", run)
        state.process_request_ran = True
        request.replace(self, await self._filter(names))


def make_toolset(
    spec: ToolsetSpec, effects: Effects, facts: SessionFacts, *, fixed: bool
) -> McpToolsetBeforeFix:
    """The toolset twin for the plugin state (``fixed``)."""
    cls = McpToolsetWithFix if fixed else McpToolsetBeforeFix
    return cls(spec, effects, facts)
