"""Derived tables: one row per activity, workflow task, timer, signal, update, child, marker.

Each function takes the events frame of :func:`toolkit.read_history` (one history or many, from one
source or many) and returns a DataFrame whose columns are documented in the function's docstring
and listed, with dtypes, in the matching ``*_COLUMNS`` dict. The tables read the frame's columns and
its raw ``attributes``; they accept both current and Cadence-era (``DecisionTask*``) histories and
open histories (entities still running show ``pending``).

Examples
--------
>>> events = toolkit.read_history("history.json")                       # doctest: +SKIP
>>> acts = toolkit.activities(events)                                   # doctest: +SKIP
>>> acts[acts.outcome != "completed"][["activity_type", "attempt", "failure_message"]]
"""

from toolkit.histories.tables.activity import ACTIVITY_COLUMNS, activities
from toolkit.histories.tables.child import CHILD_WORKFLOW_COLUMNS, child_workflows
from toolkit.histories.tables.marker import MARKER_COLUMNS, markers
from toolkit.histories.tables.message import SIGNAL_COLUMNS, UPDATE_COLUMNS, signals, updates
from toolkit.histories.tables.timer import TIMER_COLUMNS, timers
from toolkit.histories.tables.workflow_task import WORKFLOW_TASK_COLUMNS, workflow_tasks

__all__ = [
    "ACTIVITY_COLUMNS",
    "CHILD_WORKFLOW_COLUMNS",
    "MARKER_COLUMNS",
    "SIGNAL_COLUMNS",
    "TIMER_COLUMNS",
    "UPDATE_COLUMNS",
    "WORKFLOW_TASK_COLUMNS",
    "activities",
    "child_workflows",
    "markers",
    "signals",
    "timers",
    "updates",
    "workflow_tasks",
]
