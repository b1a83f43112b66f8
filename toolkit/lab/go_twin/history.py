"""Read a twin history: the commands of each turn, in order, and the listings per turn.

A turn is one agent run started from outside (one ``Runner.Run``, as ``incidents.md`` counts turns):
it starts at each ``turn`` signal (a user message) and at each ``approve`` signal (the approval
resumes the paused run as a new run); every command event after it, until the next such signal,
belongs to it. ``exclude_tool`` signals start no run and split nothing. Parsing uses temporalio's
own protobuf types (``WorkflowHistory.from_json``), enough for the histories this lab writes.
"""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory

from toolkit.errors import HistoryFormatError

__all__ = [
    "ABBREVIATIONS",
    "abbreviate",
    "commands_per_turn",
    "listings_per_turn",
    "load_history",
]

TURN_SIGNALS = frozenset({"turn", "approve"})

ABBREVIATIONS = {"ListMcpTools": "L", "InvokeModel": "M", "CallMcpTool": "C"}
"""One letter per activity type; timers become ``T(<summary>)``."""


def load_history(path: Path, workflow_id: str | None = None) -> WorkflowHistory:
    """Load a proto-JSON history file written by the recorder.

    Raises
    ------
    HistoryFormatError
        When the file is not a proto-JSON ``History`` with at least one event.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        history = WorkflowHistory.from_json(workflow_id or Path(path).stem, text)
    except Exception as error:  # protobuf's json_format raises several types
        raise HistoryFormatError(
            str(path), f"not a proto-JSON history ({type(error).__name__}: {error})",
            expected='{"events": [...]} as written by WorkflowHistory.to_json()') from error
    if not history.events:
        raise HistoryFormatError(str(path), "the history has no events",
                                 expected="at least WorkflowExecutionStarted")
    return history


def _timer_label(event: HistoryEvent) -> str:
    summary = event.user_metadata.summary
    label = ""
    if summary.data:
        try:
            label = str(json.loads(summary.data))
        except ValueError:
            label = summary.data.decode("utf-8", errors="replace")
    return f"T({label})" if label else "T"


def commands_per_turn(history: WorkflowHistory) -> list[list[str]]:
    """Activity types and timer labels (``T(instruction)``) of each turn, in command order.

    Commands before the first turn signal (none in the twin) belong to no turn and are left out.
    """
    turns: list[list[str]] = []
    for event in history.events:
        kind = event.event_type
        if (kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
                and event.workflow_execution_signaled_event_attributes.signal_name
                in TURN_SIGNALS):
            turns.append([])
        elif turns and kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            turns[-1].append(
                event.activity_task_scheduled_event_attributes.activity_type.name)
        elif turns and kind == EventType.EVENT_TYPE_TIMER_STARTED:
            turns[-1].append(_timer_label(event))
    return turns


def abbreviate(commands: list[str]) -> str:
    """``['ListMcpTools', 'T(instruction)', 'InvokeModel']`` -> ``'L T(instruction) M'``."""
    return " ".join(ABBREVIATIONS.get(c, c) for c in commands)


def listings_per_turn(history: WorkflowHistory) -> list[int]:
    """Number of ``ListMcpTools`` activities scheduled in each turn."""
    return [turn.count("ListMcpTools") for turn in commands_per_turn(history)]
