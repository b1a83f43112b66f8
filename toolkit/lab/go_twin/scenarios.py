"""The twin's scenarios: an agent, an MCP server configuration and what the client sends.

Tools come from the lab's MCP server (``get_weather``, ``add``, ``lookup_order``); the scripted
model calls the tool a user message asks for, if the request declares it. Each scenario's
``actions`` are what the recorder sends, in order: ``("turn", message)``,
``("exclude_tool", name)`` and ``("approve", "")`` (the recorder approves with the confirmation id
the workflow exposes through its ``progress`` query, as the PR's dev-server check did).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from toolkit.lab.go_twin.spec import (
    ROOT_BRANCHES_PARALLEL,
    ROOT_BRANCHES_SEQUENTIAL,
    ROOT_LLM,
    AgentSpec,
    SessionInput,
    ToolsetSpec,
)

__all__ = ["LIVE_SUBSET", "SCENARIOS", "Scenario", "scenario_named"]

WEATHER = "What is the weather in Paris?"
WEATHER_AGAIN = "What is the weather in London?"
ADD = "Please add 2 and 3"
ORDER = "Where is order A-17?"
PLAIN = "Thanks, that is all."
HELLO = "Hello there."


@dataclass(frozen=True)
class Scenario:
    """One recorded situation.

    Attributes
    ----------
    name : str
        File-safe name (``data/go_twin/<variant>/<name>.json``).
    description : str
        One sentence for the metadata and notebooks.
    actions : tuple of (str, str)
        What the client sends, in order.
    session : callable
        Builds the workflow input from the MCP server's URL.
    hide_after_first_call : tuple of str
        MCP server option: tools that stop being advertised after their first call.
    """

    name: str
    description: str
    actions: tuple[tuple[str, str], ...]
    session: Callable[[str], SessionInput]
    hide_after_first_call: tuple[str, ...] = field(default=())


def _one_toolset(
    url: str, *, instruction_timer: bool = False, filter_timer: bool = False,
    filter_drops_called: tuple[str, ...] = (), require_confirmation: tuple[str, ...] = (),
) -> SessionInput:
    toolset = ToolsetSpec("lab", f"{url}?toolset=lab", filter_timer=filter_timer,
                          filter_drops_called=list(filter_drops_called))
    return SessionInput(AgentSpec("assistant", [toolset], instruction_timer=instruction_timer,
                                  require_confirmation=list(require_confirmation)), ROOT_LLM)


def _helper(root: str) -> Callable[[str], SessionInput]:
    def build(url: str) -> SessionInput:
        toolsets = [
            ToolsetSpec("weather", f"{url}?toolset=weather", allow=["get_weather"]),
            ToolsetSpec("orders", f"{url}?toolset=orders", allow=["add", "lookup_order"]),
        ]
        return SessionInput(AgentSpec("helper", toolsets), root)
    return build


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("one_call_then_plain", "A turn with one tool call, then a plain turn.",
             (("turn", WEATHER), ("turn", PLAIN)), _one_toolset),
    Scenario("plain_turns", "Two turns without a tool call.",
             (("turn", HELLO), ("turn", PLAIN)), _one_toolset),
    Scenario("instruction_timer",
             "Two one-call turns; the InstructionProvider starts a timer in every step.",
             (("turn", WEATHER), ("turn", ADD)),
             lambda url: _one_toolset(url, instruction_timer=True)),
    Scenario("filter_timer",
             "Two one-call turns; the InstructionProvider and the ToolFilter start timers.",
             (("turn", WEATHER), ("turn", ADD)),
             lambda url: _one_toolset(url, instruction_timer=True, filter_timer=True)),
    Scenario("catalog_unchanged",
             "Weather twice, nothing dropped (baseline of the generated-ID comparison).",
             (("turn", WEATHER), ("turn", WEATHER_AGAIN)), _one_toolset),
    Scenario("server_drops_tool",
             "The MCP server stops advertising get_weather after its first call.",
             (("turn", WEATHER), ("turn", WEATHER_AGAIN)), _one_toolset,
             hide_after_first_call=("get_weather",)),
    Scenario("filter_drops_tool",
             "The ToolFilter drops get_weather once it has been called.",
             (("turn", WEATHER), ("turn", WEATHER_AGAIN)),
             lambda url: _one_toolset(url, filter_drops_called=("get_weather",))),
    Scenario("confirmation_signal",
             "Weather (then dropped by the server), a sum, then lookup_order approved by a "
             "signal carrying the confirmation id.",
             (("turn", WEATHER), ("turn", ADD), ("turn", ORDER), ("approve", "")),
             lambda url: _one_toolset(url, require_confirmation=("lookup_order",)),
             hide_after_first_call=("get_weather",)),
    Scenario("confirmation_excluded",
             "lookup_order awaits approval; the ToolFilter excludes it before the approval "
             "arrives, so it does not run.",
             (("turn", ORDER), ("exclude_tool", "lookup_order"), ("approve", "")),
             lambda url: _one_toolset(url, require_confirmation=("lookup_order",))),
    Scenario("helpers_parallel",
             "A custom root runs one helper (two MCP toolsets) on two branches of one "
             "invocation at once.",
             (("turn", f"{WEATHER}; {ADD}"),), _helper(ROOT_BRANCHES_PARALLEL)),
    Scenario("helpers_sequential",
             "The same helper on two branches of one invocation, one after the other.",
             (("turn", f"{WEATHER}; {ADD}"),), _helper(ROOT_BRANCHES_SEQUENTIAL)),
)

LIVE_SUBSET: tuple[str, ...] = ("one_call_then_plain",)
"""What ``make demo`` records live (every variant)."""


def scenario_named(name: str) -> Scenario:
    """The scenario called ``name`` (KeyError lists the known names)."""
    for scenario in SCENARIOS:
        if scenario.name == name:
            return scenario
    raise KeyError(f"no twin scenario named {name!r}; known: {[s.name for s in SCENARIOS]}")
