"""An open run's history cut to what its workers have finished: the last completed workflow task.

A history exported from a running workflow ends wherever the server was when it was read: with
a workflow task scheduled or held by a worker (``WorkflowTaskStarted`` without its completion),
with activity results and signals the code has not seen yet, or with failed attempts of a task.
None of that was answered by workflow code, so none of it can tell whether new code would answer
it the same way; replaying it as it is asks the SDK to run a task that has no recorded outcome,
which some SDKs report as a failure (temporalio/sdk-go#1670: an "extra replay command" for a
history captured mid-task). Cutting after the last ``WorkflowTaskCompleted`` and the events its
commands wrote replays exactly the work production has done, which is what a deploy must not
break.

A closed run's history is kept whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType

__all__ = ["CLOSE_EVENTS", "Trim", "completed_prefix"]

#: Event types that close a run.
CLOSE_EVENTS = frozenset(
    EventType.Value(f"EVENT_TYPE_WORKFLOW_EXECUTION_{name}")
    for name in ("COMPLETED", "FAILED", "TIMED_OUT", "CANCELED", "TERMINATED",
                 "CONTINUED_AS_NEW")
)  # fmt: skip
_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
#: Events a workflow task completion writes through protocol messages (updates), which carry no
#: ``workflow_task_completed_event_id`` of their own.
_PROTOCOL_EVENTS = frozenset(
    EventType.Value(f"EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_{name}")
    for name in ("ACCEPTED", "COMPLETED")
)


@dataclass(frozen=True)
class Trim:
    """Where an open history is cut.

    Attributes
    ----------
    keep : int
        How many events, from the first, are replayed.
    cut : int
        How many events after them are left out.
    tasks : int
        Completed workflow tasks in the kept part.
    closed : bool
        The run is closed (nothing is cut).
    """

    keep: int
    cut: int
    tasks: int
    closed: bool


def _task_completed_id(event: Any) -> int | None:
    kind = event.WhichOneof("attributes")
    attributes = getattr(event, kind) if kind else None
    value = getattr(attributes, "workflow_task_completed_event_id", None)
    return int(value) if value else None


def completed_prefix(events: Sequence[Any]) -> Trim:
    """Where to cut ``events`` (``temporalio.api.history.v1.HistoryEvent`` messages, in order).

    A closed history is kept whole. An open one is kept up to its last ``WorkflowTaskCompleted``
    and the command and update events that completion wrote right after it; a run whose first
    workflow task has not completed keeps only its started event (``tasks`` is 0: there is
    nothing recorded to check).
    """
    total = len(events)
    tasks = sum(1 for event in events if event.event_type == _COMPLETED)
    if total and events[-1].event_type in CLOSE_EVENTS:
        return Trim(total, 0, tasks, True)
    last = max((i for i, e in enumerate(events) if e.event_type == _COMPLETED), default=None)
    if last is None:
        keep = min(total, 1)
        return Trim(keep, total - keep, 0, False)
    completed_id = events[last].event_id
    keep = last + 1
    while keep < total and (
        _task_completed_id(events[keep]) == completed_id
        or events[keep].event_type in _PROTOCOL_EVENTS
    ):
        keep += 1
    return Trim(keep, total - keep, tasks, False)
