"""What the new code has issued while a recorded history is replayed against it.

The new code is known only through a history it produced (its *own* run under the same inputs).
Its commands become available task by task, once the recorded history has delivered what that
task of its own run had been delivered (see :mod:`toolkit.replay.tasks`). They then sit in
sdk-core's single command queue (:class:`CommandQueue`) until history events consume them.

One looser rule: parallel branches (helpers each waiting on their own result) may get their
results in one task in one run and in several tasks in the other, and a signal may land in the
same task as a result in one run only. A task of the new code whose new deliveries are only
results and signals, of which the recorded history has delivered some, issues the same share of
its commands (in order, rounded up): each branch issues its next command when its own delivery
arrives. Except for a join: results of commands issued together (one task) followed by
fewer commands than results are taken as awaited together (``asyncio.gather`` then one step), so
nothing is issued until all arrived. The share is an assumption, reported as such.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolkit.replay.divergence_messages import core_machine_kind
from toolkit.replay.tasks import Task

__all__ = ["CommandQueue", "Issuer"]

#: The server writes no event for a rejected update (the event type exists but is never
#: recorded), so there is nothing to match. An accepted update is matched like any command: the
#: handler's acceptance is a protocol-message command in the same queue, and a code that rejects
#: the update (no handler) leaves the ``WorkflowExecutionUpdateAccepted`` event without one.
UNMATCHED_EVENTS = frozenset({"WorkflowExecutionUpdateRejected"})


def is_version_upsert(row: Mapping[str, Any], previous: Mapping[str, Any] | None) -> bool:
    """The search-attribute upsert sdk-core writes right after a patch marker (one unit with it)."""
    return (
        row.get("kind") == "UpsertWorkflowSearchAttributes"
        and previous is not None
        and previous.get("marker_name") == "core_patch"
    )


@dataclass
class CommandQueue:
    """What the new code has issued so far, as sdk-core holds it."""

    recorded_la_seqs: set[Any]
    queue: deque[dict[str, Any]] = field(default_factory=deque)
    local_activities: dict[Any, dict[str, Any]] = field(default_factory=dict)  # seq -> LA row
    blocked: bool = False  # waiting on a local activity history never resolves
    _previous: dict[str, Any] | None = None

    def issue(self, row: dict[str, Any]) -> None:
        """Add one command the code issued (in order)."""
        previous, self._previous = self._previous, row
        if self.blocked or row.get("event_type") in UNMATCHED_EVENTS:
            return
        if is_version_upsert(row, previous):
            return
        if core_machine_kind(row) == "LocalActivity":
            seq = row.get("local_activity_seq")
            self.local_activities[seq] = row
            if seq not in self.recorded_la_seqs:
                # No marker in history: the activity stays "executing" and the code waits.
                self.blocked = True
            return
        if row.get("kind") in {"CancelTimer", "RequestCancelActivityTask"}:
            started = self._unsent_start(row)
            if started is not None:
                # Cancelled before it was ever matched: sdk-core drops both commands.
                self.queue.remove(started)
                return
        self.queue.append(row)

    def _unsent_start(self, cancel: Mapping[str, Any]) -> dict[str, Any] | None:
        for queued in self.queue:
            if cancel.get("kind") == "CancelTimer" and queued.get("kind") == "StartTimer":
                if queued.get("timer_id") == cancel.get("timer_id"):
                    return queued
            elif cancel.get("kind") == "RequestCancelActivityTask" and queued.get(
                "event_id"
            ) == cancel.get("scheduled_event_id"):
                return queued
        return None


@dataclass
class Issuer:
    """Releases the new code's tasks as the recorded history delivers what they needed."""

    tasks: list[Task]
    loose_parallel: bool = True
    next_task: int = 0
    issued_in_next: int = 0  # commands of tasks[next_task] already released (partial release)
    assumptions: list[str] = field(default_factory=list)
    _issuers: dict[Any, int] | None = None

    def release(self, delivered: frozenset[tuple[Any, ...]], queue: CommandQueue) -> None:
        """Issue into ``queue`` every command the code has issued once ``delivered`` arrived."""
        while self.next_task < len(self.tasks):
            task = self.tasks[self.next_task]
            if task.delivered <= delivered:
                for row in task.commands[self.issued_in_next :]:
                    queue.issue(row)
                self.next_task += 1
                self.issued_in_next = 0
                continue
            if self.loose_parallel:
                self._release_share(task, delivered, queue)
            return

    def _release_share(
        self, task: Task, delivered: frozenset[tuple[Any, ...]], queue: CommandQueue
    ) -> None:
        before = self.tasks[self.next_task - 1].delivered if self.next_task else frozenset()
        new = task.delivered - before
        arrived = new & delivered
        if (
            len(new) < 2
            or not arrived
            or not before <= delivered
            or any(key[0] not in {"result", "signal"} for key in new)
        ):
            return
        issuers = {self._issuing_task().get(key[2]) if key[0] == "result" else key for key in new}
        if len(issuers) == 1 and len(task.commands) < len(new):
            return  # a join: awaited together, nothing is issued before all arrived
        share = -(-len(task.commands) * len(arrived) // len(new))  # rounded up
        if share <= self.issued_in_next:
            return
        for row in task.commands[self.issued_in_next : share]:
            queue.issue(row)
        self.assumptions.append(
            f"parallel deliveries: the new code's workflow task {task.index} was delivered "
            f"{len(new)} results/signals at once; the recorded history has delivered "
            f"{len(arrived)} of them, so {share} of its {len(task.commands)} commands are taken "
            "as issued (one branch per delivery)"
        )
        self.issued_in_next = share

    def _issuing_task(self) -> dict[Any, int]:
        """(kind, per-kind ordinal) of each command -> the index of the task that issued it."""
        if self._issuers is None:
            counts: dict[str, int] = {}
            self._issuers = {}
            for task in self.tasks:
                for row in task.commands:
                    kind = str(row.get("kind"))
                    counts[kind] = counts.get(kind, 0) + 1
                    self._issuers[(kind, counts[kind])] = task.index
        return self._issuers

    def done_before(self, event_id: int) -> bool:
        """Whether every task the new code completed before ``event_id`` has been released."""
        return (
            self.next_task >= len(self.tasks)
            or self.tasks[self.next_task].completed_event_id > event_id
        )
