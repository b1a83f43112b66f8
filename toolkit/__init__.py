"""Investigate Temporal workflow histories and worker logs of durable AI agents with pandas.

The public API is flat, like pandas' ``read_*`` functions::

    import toolkit as tk
    events = tk.read_history("run.json")        # one row per event, any exported dialect
    tk.activities(events)                       # one row per activity execution
    tk.first_divergence(old, new)               # where replay breaks, as the SDKs say it
    logs = tk.read_logs("worker.log")           # one row per log record, any format
    tk.duplicate_tools(logs)                    # the duplicate-tool incident's signature

Everything else lives in modules whose names say what they hold: ``toolkit.histories``
(loading, tables, writing), ``toolkit.replay`` (commands, divergence, the real Replayer),
``toolkit.agents`` (turns, listings, MCP endpoints), ``toolkit.logs``, ``toolkit.plots`` and
``toolkit.lab`` (the dev server and the recorders).
"""

from toolkit import plots
from toolkit.agents.mcp import mcp_endpoints
from toolkit.agents.roles import Roles
from toolkit.agents.turns import activity_spans, agent_steps, listings_per_turn
from toolkit.errors import (
    HistoryFormatError,
    LabError,
    LogFormatError,
    PayloadError,
    ServerError,
    ToolkitError,
)
from toolkit.histories import (
    HistoryBatch,
    fetch_histories,
    fetch_history,
    read_histories,
    read_history,
    to_history,
    to_workflow_history,
    write_history,
)
from toolkit.histories.tables import (
    activities,
    child_workflows,
    markers,
    signals,
    timers,
    updates,
    workflow_tasks,
)
from toolkit.logs.detectors import (
    dead_letters,
    duplicate_tools,
    mcp_client_failures,
    retries,
)
from toolkit.logs.read import read_logs
from toolkit.replay.commands import commands
from toolkit.replay.divergence import Divergence, first_divergence
from toolkit.replay.errors_table import nondeterminism_errors
from toolkit.replay.replayer import replay

__version__ = "0.1.0"

__all__ = [
    "Divergence",
    "HistoryBatch",
    "HistoryFormatError",
    "LabError",
    "LogFormatError",
    "PayloadError",
    "Roles",
    "ServerError",
    "ToolkitError",
    "activities",
    "activity_spans",
    "agent_steps",
    "child_workflows",
    "commands",
    "dead_letters",
    "duplicate_tools",
    "fetch_histories",
    "fetch_history",
    "first_divergence",
    "listings_per_turn",
    "markers",
    "mcp_client_failures",
    "mcp_endpoints",
    "nondeterminism_errors",
    "plots",
    "read_histories",
    "read_history",
    "read_logs",
    "replay",
    "retries",
    "signals",
    "timers",
    "to_history",
    "to_workflow_history",
    "updates",
    "workflow_tasks",
    "write_history",
]
