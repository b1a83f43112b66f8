"""Which activities of an agent framework are model calls, tool listings and tool calls.

Each durable-agent integration turns I/O into activities with fixed names; a :class:`Roles` says
which names play which part (regular expressions, matched in full against the activity type) and
which workflow messages are user messages (turn boundaries).

Presets
-------
``go_googleadk``
    Temporal's Go plugin for Google ADK: ``InvokeModel``, ``ListMcpTools``, ``CallMcpTool``.
``python_adk``
    temporalio's Python ADK plugin: ``invoke_model`` / ``invoke_model_streaming``,
    ``<toolset>-list-tools``, ``<toolset>-call-tool``.
``openai_agents``
    temporalio's OpenAI Agents plugin (``temporalio.contrib.openai_agents``, and the package
    ``temporalio-openai-agents``): ``invoke_model_activity[_streaming]``; MCP servers
    ``<server>-stateless-list-tools`` / ``<server>-stateless-call-tool-v2`` (stateful: the same
    with ``-stateful``; ``-call-tool`` is the older spelling the worker still registers), and the
    MCP v2 servers of ``temporalio-mcp`` ``temporalio.mcp.<server>.list-tools`` / ``.call-tool``;
    session and prompt activities are "other". Verified on ``data/openai_agents``.
``pydantic_ai``
    pydantic-ai's Temporal integration: ``agent__<name>__model_request[_stream]``,
    ``agent__<name>__mcp_server__<toolset id>__get_tools`` / ``__call_tool`` (function toolsets:
    ``__toolset__<id>__call_tool``; ``__get_instructions`` and ``__event_stream_handler`` are
    "other"). Verified on ``data/pydantic_ai`` (pydantic-ai 2.2.0 ... 2.68.0).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from toolkit.errors import ToolkitError

__all__ = ["PRESETS", "Roles", "detect_roles", "infer_roles", "resolve_roles"]


@dataclass(frozen=True)
class Roles:
    """Activity-name patterns for one agent framework, and what counts as a user message.

    Parameters
    ----------
    name
        A label for reports.
    model, listing, tool_call
        Regular expressions matched in full against activity type names.
    user_signals, user_updates
        Regular expressions for signal / update names that carry a user message (``None``: none
        do).
    start_is_user
        Whether the workflow start carries the first user message.
    """

    name: str
    model: str
    listing: str
    tool_call: str
    user_signals: str | None = ".*"
    user_updates: str | None = ".*"
    start_is_user: bool = True

    @cached_property
    def _compiled(self) -> dict[str, re.Pattern[str]]:
        return {
            "model": re.compile(self.model),
            "listing": re.compile(self.listing),
            "tool_call": re.compile(self.tool_call),
        }

    def role_of(self, activity_type: str | None) -> str:
        """``model``, ``listing``, ``tool_call`` or ``other`` for an activity type name."""
        if not isinstance(activity_type, str):
            return "other"
        known = self._known.get(activity_type)
        if known is None:
            known = next((role for role, pattern in self._compiled.items()
                          if pattern.fullmatch(activity_type)), "other")  # fmt: skip
            self._known[activity_type] = known
        return known

    @cached_property
    def _known(self) -> dict[str, str]:
        """Roles of the activity types seen so far (a fleet has few names, many events)."""
        return {}

    def is_user_signal(self, name: str | None) -> bool:
        """Whether a signal of this name is a user message."""
        return self.user_signals is not None and bool(re.fullmatch(self.user_signals, name or ""))

    def is_user_update(self, name: str | None) -> bool:
        """Whether an update of this name is a user message."""
        return self.user_updates is not None and bool(re.fullmatch(self.user_updates, name or ""))


PRESETS: dict[str, Roles] = {
    "go_googleadk": Roles("go_googleadk", "InvokeModel", "ListMcpTools", "CallMcpTool"),
    "python_adk": Roles(
        "python_adk", r"invoke_model(_streaming)?", r".+-list-tools", r".+-call-tool"
    ),
    "openai_agents": Roles(
        "openai_agents",
        r"invoke_model_activity(_streaming)?",
        r".+-(stateless|stateful)-list-tools|temporalio\.mcp\..+\.list-tools",
        r".+-(stateless|stateful)-call-tool(-v2)?|temporalio\.mcp\..+\.call-tool",
    ),
    "pydantic_ai": Roles(
        "pydantic_ai",
        r"agent__.+__model_request(_stream)?",
        r"agent__.+__(get_tools|list_tools)",
        r"agent__.+__call_tool",
    ),
}


# Where two presets recognise the same names, the narrower wins: every OpenAI Agents MCP activity
# (``<server>-stateless-list-tools``) also ends like a Python ADK one (``<toolset>-list-tools``).
_NARROWER_FIRST = ("openai_agents", "pydantic_ai", "go_googleadk", "python_adk")


def detect_roles(activity_types: Iterable[str]) -> Roles | None:
    """The preset whose model pattern matches the most of ``activity_types``; without any model
    activity (a run that failed before its first model call), the one whose listing and tool-call
    patterns match the most. Ties go to the narrower preset. None if nothing matches."""
    names = [name for name in activity_types if isinstance(name, str)]
    best, best_score = None, (0, 0)
    for key in _NARROWER_FIRST:
        roles = PRESETS[key]
        found = [roles.role_of(name) for name in names]
        score = (found.count("model"), found.count("listing") + found.count("tool_call"))
        if score > best_score:
            best, best_score = roles, score
    return best


_NEVER = r"(?!)"  # a pattern that matches no name


def infer_roles(events: Any) -> Roles | None:
    """Roles read from what one history's activities return, for frameworks no preset names.

    A model call is an activity type whose completed results are model responses
    (:func:`toolkit.agents.model_io.response_shape`: a ``ModelResponse`` of the OpenAI Agents SDK
    or pydantic-ai, ADK ``LlmResponse`` lists, Gemini responses, ...); a tool call is an activity
    type equal to the name of a tool those responses requested. None when no result is a model
    response. How sure: a custom activity returning such a shape for another purpose would be
    taken for a model call.
    """
    from toolkit.agents.model_io import read_model_call, response_shape

    done = events[events["event_type"] == "ActivityTaskCompleted"]
    scheduled = events[events["event_type"] == "ActivityTaskScheduled"]
    types = dict(zip(scheduled["event_id"], scheduled["activity_type"], strict=True))
    inputs = dict(zip(scheduled["event_id"], scheduled["input"], strict=True))
    models: set[str] = set()
    requested: set[str] = set()
    for link, result in zip(done["scheduled_event_id"], done["result"], strict=True):
        name = types.get(link)
        value = getattr(result, "value", result)
        if not isinstance(name, str) or response_shape(value) is None:
            continue
        models.add(name)
        requested.update(read_model_call(inputs.get(link), value).requested_tools or ())
    if not models:
        return None
    tools = sorted(requested & {t for t in types.values() if isinstance(t, str)} - models)
    return Roles(
        "inferred",
        "|".join(re.escape(m) for m in sorted(models)),
        _NEVER,
        "|".join(re.escape(t) for t in tools) or _NEVER,
    )


def _looked_for() -> str:
    from toolkit.agents.model_io import FRAMEWORKS

    presets = ", ".join(f"{key} {roles.model!r}" for key, roles in PRESETS.items())
    return (f"looked for model activities named as a preset names them ({presets}) and for "
            f"activity results shaped like a model response ({', '.join(FRAMEWORKS)})")


def resolve_roles(
    roles: str | Roles, activity_types: Iterable[str], source: str, events: Any = None
) -> Roles:
    """Turn ``"auto"``, a preset name or a :class:`Roles` into a :class:`Roles`.

    ``events`` (the history's events frame) lets ``"auto"`` infer the roles of a framework no
    preset names (:func:`infer_roles`).

    Raises
    ------
    toolkit.errors.ToolkitError
        For an unknown preset name, ``"auto"`` when neither a preset nor the results recognise
        any model activity (the message says what was looked for), or a named preset that
        recognises none of ``activity_types`` (another framework's history).
    """
    if isinstance(roles, Roles):
        return roles
    if roles == "auto":
        types = sorted({t for t in activity_types if isinstance(t, str)})
        found = detect_roles(types)
        if found is None and events is not None and types:
            found = infer_roles(events)
        if found is None:
            raise ToolkitError(
                f"{source}: no agent framework recognised (activity types {types[:10]}); "
                f"{_looked_for()}; pass roles= one of {sorted(PRESETS)} or a Roles(...)"
            )
        return found
    if roles in PRESETS:
        chosen = PRESETS[roles]
        types = sorted({t for t in activity_types if isinstance(t, str)})
        if types and all(chosen.role_of(name) == "other" for name in types):
            # Every step would read "o o o": the preset belongs to another framework.
            found = detect_roles(types)
            hint = f"; the activities look like {found.name!r}" if found else ""
            raise ToolkitError(
                f"{source}: roles {roles!r} recognise none of the activity types "
                f"{types[:10]}{hint}; pass roles='auto' or the matching preset"
            )
        return chosen
    raise ToolkitError(f"unknown roles preset {roles!r}; expected 'auto', {sorted(PRESETS)}")
