"""The turn loop every lab agent workflow shares, whatever framework answers the turns.

Turns arrive as ``user_turn`` signals and are answered one at a time, in order; replies are read
with the ``replies`` query; the ``finish`` signal ends the run with all replies. A framework's
workflow subclasses :class:`TurnWorkflow`, builds its agent in its ``@workflow.run`` method and
hands :meth:`TurnWorkflow.answer_turns` a coroutine that answers one turn.

A workflow whose input is a :class:`ChainSpec` with ``continue_as_new`` set continues as new at
the first turn boundary where the server suggests it (``is_continue_as_new_suggested()``: the
history passed ``limit.historySize.suggestContinueAsNew`` or the event-count one). The next run
gets the replies so far (so the ``replies`` query keeps counting), the turns not yet answered and
a one-line summary of the conversation instead of the conversation itself; the framework's
workflow puts that summary where its agent reads it (the instructions).

This module runs inside every version environment of the recorders (ADK, OpenAI Agents,
pydantic-ai), so it imports nothing but ``temporalio.workflow``, whose signal, query and
``wait_condition`` APIs every recorded temporalio release has. Handlers defined on a base class
are found by ``@workflow.defn`` on the subclass (it inspects inherited members too), so the
histories are the same as with the handlers written out in each workflow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow

__all__ = ["ChainSpec", "TurnWorkflow"]


@dataclass
class ChainSpec:
    """The workflow-input fields of a run that may continue as new (a base of the lab's specs).

    Attributes
    ----------
    continue_as_new
        Continue as new at a turn boundary once the server suggests it.
    summary
        What the previous run of the chain handed over instead of its conversation.
    replies, inbox
        The replies given and the turns received but not answered by the previous runs.
    """

    continue_as_new: bool = False
    summary: str = ""
    replies: list[str] = field(default_factory=list)
    inbox: list[str] = field(default_factory=list)


def _summary(replies: list[str]) -> str:
    return "Summary of the conversation so far: " + " ".join(replies)


class TurnWorkflow:
    """Signals, query and loop of a workflow that answers one signalled user turn at a time."""

    def __init__(self) -> None:
        self._inbox: list[str] = []
        self._replies: list[str] = []
        self._finished = False

    @workflow.signal
    def user_turn(self, text: str) -> None:
        self._inbox.append(text)

    @workflow.signal
    def finish(self) -> None:
        self._finished = True

    @workflow.query
    def replies(self) -> list[str]:
        return list(self._replies)

    async def answer_turns(self, answer: Callable[[str], Awaitable[str]],
                           chain: ChainSpec | None = None) -> list[str]:
        """Answer each turn with ``answer(text)`` until ``finish`` arrives with no turn waiting.

        Parameters
        ----------
        chain
            The run's input when it is a :class:`ChainSpec`: the replies and turns an earlier
            run handed over are taken up, and with ``continue_as_new`` the run continues as new
            (the same input, carried fields replaced) when the server suggests it.

        Returns
        -------
        list of str
            Every reply, in turn order (the workflow's result).
        """
        if chain is not None:
            self._replies = [*chain.replies, *self._replies]
            self._inbox = [*chain.inbox, *self._inbox]
        while True:
            await workflow.wait_condition(lambda: bool(self._inbox) or self._finished)
            if not self._inbox:
                return list(self._replies)
            self._replies.append(await answer(self._inbox.pop(0)))
            if (chain is not None and chain.continue_as_new and not self._finished
                    and workflow.info().is_continue_as_new_suggested()):
                workflow.continue_as_new(self._carried(chain))

    def _carried(self, chain: ChainSpec) -> Any:
        return dataclasses.replace(chain, summary=_summary(self._replies),
                                   replies=list(self._replies), inbox=list(self._inbox))
