"""The turn loop every lab agent workflow shares, whatever framework answers the turns.

Turns arrive as ``user_turn`` signals and are answered one at a time, in order; replies are read
with the ``replies`` query; the ``finish`` signal ends the run with all replies. A framework's
workflow subclasses :class:`TurnWorkflow`, builds its agent in its ``@workflow.run`` method and
hands :meth:`TurnWorkflow.answer_turns` a coroutine that answers one turn.

This module runs inside every version environment of the recorders (ADK, OpenAI Agents,
pydantic-ai), so it imports nothing but ``temporalio.workflow``, whose signal, query and
``wait_condition`` APIs every recorded temporalio release has. Handlers defined on a base class
are found by ``@workflow.defn`` on the subclass (it inspects inherited members too), so the
histories are the same as with the handlers written out in each workflow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio import workflow

__all__ = ["TurnWorkflow"]


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

    async def answer_turns(self, answer: Callable[[str], Awaitable[str]]) -> list[str]:
        """Answer each turn with ``answer(text)`` until ``finish`` arrives with no turn waiting.

        Returns
        -------
        list of str
            Every reply, in turn order (the workflow's result).
        """
        while True:
            await workflow.wait_condition(lambda: bool(self._inbox) or self._finished)
            if not self._inbox:
                return list(self._replies)
            self._replies.append(await answer(self._inbox.pop(0)))
