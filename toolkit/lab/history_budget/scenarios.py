"""What the history-budget recorder records: long tool loops under lowered server limits.

Every run is one agent (ADK, OpenAI Agents or pydantic-ai on Temporal) with one MCP server whose
``read_page(page, size)`` tool returns exactly ``size`` bytes, and the lab's scripted model,
which answers "Read pages A to B of the report, S bytes each." by reading one page per model call
(:mod:`toolkit.lab.model`). Each model call's input is the whole conversation so far, so the
history grows as ``N*B + G*N(N-1)/2``; a loop of 200 pages never ends before the server stops it.

The server's limits are dynamic config values of the dev server (names and defaults from
``common/dynamicconfig/constants.go`` in temporalio/temporal):

========================================  ==========  ==========================================
key                                       default     what it does
========================================  ==========  ==========================================
``limit.historySize.error``               50 MiB      the run is terminated past it
``limit.historySize.warn``                10 MiB      the server logs a warning
``limit.historySize.suggestContinueAsNew`` 4 MiB      ``suggestContinueAsNew`` on task start
``limit.historyCount.error``              51,200      the run is terminated past it (events)
``limit.historyCount.warn``               10,240
``limit.historyCount.suggestContinueAsNew`` 4,096
``limit.blobSize.error``                  2 MiB       a payload over it is refused
``limit.blobSize.warn``                   512 KiB
========================================  ==========  ==========================================

:data:`LIMITS` lowers them so that a run meets them in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkit.lab.lookup import by_name
from toolkit.lab.mcp_server import filler_text

__all__ = ["BUDGETS", "GRID", "LIMITS", "LIVE", "Budget", "budget", "pages_turn"]

KiB = 1024

LIMITS: dict[str, dict[str, int]] = {
    "history_size": {"limit.historySize.error": 512 * KiB,
                     "limit.historySize.warn": 256 * KiB},
    "history_count": {"limit.historyCount.error": 300, "limit.historyCount.warn": 150},
    "blob_size": {"limit.blobSize.error": 64 * KiB, "limit.blobSize.warn": 32 * KiB},
    "continue_as_new": {"limit.historySize.error": 512 * KiB,
                        "limit.historySize.warn": 256 * KiB,
                        "limit.historySize.suggestContinueAsNew": 192 * KiB},
    "live": {"limit.historySize.error": 96 * KiB},
}
"""The dev server's dynamic config of each group of runs (one server per group)."""

STEP_BUDGET = 200
"""Pages a loop asks for: more model calls than any lowered limit lets a run make."""


def _size(n: int) -> str:
    return f"{n // KiB}k" if n % KiB == 0 else str(n)


def pages_turn(first: int, last: int, page_bytes: int, message_bytes: int) -> str:
    """The user message asking for pages ``first`` to ``last``, padded to ``message_bytes``
    (the conversation the agent starts from; never shorter than the request itself)."""
    request = f"Read pages {first} to {last} of the report, {page_bytes} bytes each. Context: "
    return filler_text(max(message_bytes, len(request)), request)


@dataclass(frozen=True)
class Budget:
    """One recording.

    Attributes
    ----------
    name
        File stem under ``data/history_budget/<env>/``.
    description
        One line for the metadata.
    limits
        Key of :data:`LIMITS`: the server the run is recorded on.
    conversation_bytes
        Bytes of each user message (the request padded with words): the conversation the
        first model call carries, besides the framework's own instructions and tool list.
    tool_output_bytes
        Bytes of each ``read_page`` result.
    pages_per_turn, turns
        Each turn asks for the next ``pages_per_turn`` pages; a turn is ``pages_per_turn + 1``
        model calls (one per page, then the closing text).
    continue_as_new
        The workflow continues as new at a turn boundary when the server suggests it.
    seconds
        How long the recorder waits for a turn's reply before it stops the run itself.
    """

    name: str
    description: str
    limits: str
    conversation_bytes: int
    tool_output_bytes: int
    pages_per_turn: int = STEP_BUDGET
    turns: int = 1
    continue_as_new: bool = False
    seconds: float = 180.0

    @property
    def max_model_calls(self) -> int:
        """Model calls the turns would make if no limit stopped them."""
        return (self.pages_per_turn + 1) * self.turns

    @property
    def dynamic_config(self) -> dict[str, int]:
        return dict(LIMITS[self.limits])

    def messages(self) -> list[str]:
        """The user messages, one per turn."""
        n = self.pages_per_turn
        return [pages_turn(i * n + 1, (i + 1) * n, self.tool_output_bytes,
                           self.conversation_bytes) for i in range(self.turns)]

    def parameters(self) -> dict[str, Any]:
        """The scenario parameters of the metadata's ``budget`` object."""
        return {"limits": self.limits, "conversation_bytes": self.conversation_bytes,
                "tool_output_bytes": self.tool_output_bytes,
                "pages_per_turn": self.pages_per_turn, "turns": self.turns,
                "max_model_calls": self.max_model_calls,
                "continue_as_new": self.continue_as_new}


def _loop(conversation: int, tool_output: int) -> Budget:
    return Budget(f"loop_c{_size(conversation)}_t{_size(tool_output)}",
                  f"one turn of {STEP_BUDGET} pages, a {_size(conversation)} B conversation, "
                  f"{_size(tool_output)} B per tool result, until the server stops it",
                  "history_size", conversation, tool_output)


GRID: tuple[Budget, ...] = tuple(_loop(c, t) for c in (1 * KiB, 8 * KiB, 32 * KiB)
                                 for t in (256, 2 * KiB))
"""Long tool loops terminated for history size: (conversation, tool output) in a 3 x 2 grid."""

BUDGETS: tuple[Budget, ...] = (
    *GRID,
    Budget("event_count", "the loop with small payloads, under a lowered event-count limit",
           "history_count", 1 * KiB, 256),
    Budget("tool_result_over_payload_limit", "one tool result (96 KiB) over the payload limit "
           "(64 KiB): what the framework does with it", "blob_size", 1 * KiB, 96 * KiB,
           seconds=60.0),
    Budget("model_input_over_payload_limit", "tool results (12 KiB) under the payload limit "
           "(64 KiB) until the conversation a model call carries is over it", "blob_size",
           1 * KiB, 12 * KiB, seconds=60.0),
    Budget("continue_as_new", "12 turns of 4 pages (1 KiB a page): continues as new at the "
           "turn boundary the server suggests, carrying a summary, and completes",
           "continue_as_new", 1 * KiB, 1 * KiB, pages_per_turn=4, turns=12,
           continue_as_new=True),
    Budget("continue_as_new_control", "the continue_as_new turns in a workflow that never "
           "continues as new", "continue_as_new", 1 * KiB, 1 * KiB, pages_per_turn=4,
           turns=12),
)
"""Every recording, in each framework."""

LIVE = Budget("live_loop", "the live test's loop: a 4 KiB conversation, 2 KiB per tool result, "
              "a 96 KiB history limit", "live", 4 * KiB, 2 * KiB, seconds=60.0)
"""The scaled-down grid point :func:`toolkit.lab.history_budget.record_live` records."""


def budget(name: str) -> Budget:
    """The recording called ``name``; a :class:`~toolkit.errors.LabError` naming the known
    ones for any other name."""
    return by_name((*BUDGETS, LIVE), name, "history-budget recording")
