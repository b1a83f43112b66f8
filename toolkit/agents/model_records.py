"""The records :mod:`toolkit.agents.model_io` returns (its docstring has the schema)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ModelCall", "ToolRequest", "ToolResult", "Usage", "checked_usage",
           "usage_of_counts"]


@dataclass(frozen=True)
class ToolRequest:
    """One tool the model asked for in its output."""

    name: str
    call_id: str | None = None
    kind: str = "function"
    target: str | None = None


@dataclass(frozen=True)
class ToolResult:
    """One tool output handed back to the model in a request."""

    name: str | None
    call_id: str | None


@dataclass(frozen=True)
class Usage:
    """Token counts of one model call as its result records them (None: not recorded)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    total_tokens: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class ModelCall:
    """What one model call was offered and answered (see the module docstring)."""

    framework: str | None = None
    agent: str | None = None
    agent_source: str | None = None
    model: str | None = None
    declared_tools: tuple[str, ...] | None = None
    handoff_tools: Mapping[str, str | None] = field(default_factory=dict)
    requested: tuple[ToolRequest, ...] | None = None
    tool_results: tuple[ToolResult, ...] | None = None
    usage: Usage = field(default_factory=Usage)
    input_items: int | None = None
    output_items: int | None = None
    output_texts: int | None = None
    input_bytes: int | None = None
    output_bytes: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def requested_tools(self) -> list[str] | None:
        """Names the output asks for, in order (None: no readable result)."""
        return None if self.requested is None else [r.name for r in self.requested]

    @property
    def handoff(self) -> str | None:
        """The agent the first requested handoff goes to, if any."""
        for request in self.requested or ():
            if request.kind == "handoff":
                return request.target
        return None


_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens",
                 "total_tokens")  # fmt: skip


_new = object.__new__


def _made_usage(input_tokens: Any, output_tokens: Any, cached_input_tokens: Any,
                reasoning_tokens: Any, total_tokens: Any, note: Any) -> Usage:
    """``Usage(input_tokens, ..., note)``, its fields set as one dict update rather than by the
    frozen dataclass's ``object.__setattr__`` per field (twice as fast; the same fields, in the
    same order: equal, equally hashed, pickled and printed)."""
    usage = _new(Usage)
    usage.__dict__.update(input_tokens=input_tokens, output_tokens=output_tokens,
                          cached_input_tokens=cached_input_tokens,
                          reasoning_tokens=reasoning_tokens, total_tokens=total_tokens,
                          note=note)  # fmt: skip
    return usage


def usage_of_counts(input_tokens: Any, output_tokens: Any, cached_input_tokens: Any,
                    reasoning_tokens: Any, total_tokens: Any, note: str | None = None) -> Usage:
    """:func:`checked_usage` of the counts given in :data:`_TOKEN_FIELDS`' order (no mapping
    of them made where every count is None or a non-negative int)."""
    counts = (input_tokens, output_tokens, cached_input_tokens, reasoning_tokens, total_tokens)
    for value in counts:  # the common case first: every count None or an int (not a bool) >= 0
        if value is not None and (type(value) is not int or value < 0):
            return checked_usage(dict(zip(_TOKEN_FIELDS, counts, strict=True)), note)
    return _made_usage(*counts, note)


def checked_usage(values: Mapping[str, Any], note: str | None = None) -> Usage:
    """A :class:`Usage` of the given counts; a count that is no non-negative int is None, named
    in the note."""
    get = values.get
    counts = (get("input_tokens"), get("output_tokens"), get("cached_input_tokens"),
              get("reasoning_tokens"), get("total_tokens"))  # fmt: skip
    for value in counts:  # the common case first: every count None or an int (not a bool) >= 0
        if value is not None and (type(value) is not int or value < 0):
            break
    else:
        return _made_usage(*counts, note)
    out: dict[str, int | None] = {}
    bad = []
    for name in _TOKEN_FIELDS:
        value = values.get(name)
        if value is None:
            out[name] = None
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            out[name] = None
            bad.append(f"{name}={value!r}")
        else:
            out[name] = value
    if bad:
        note = "; ".join(filter(None, [note, "malformed usage: " + ", ".join(bad)]))
    return Usage(**out, note=note)
