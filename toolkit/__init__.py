"""Investigate Temporal workflow histories and worker logs of durable AI agents with pandas.

The public API is flat, like pandas' ``read_*`` functions::

    import toolkit as tk
    events = tk.read_history("run.json")        # one row per event, any exported dialect
    tk.activities(events)                       # one row per activity execution

Everything else lives in modules whose names say what they hold (``toolkit.histories``,
``toolkit.replay``, ``toolkit.agents``, ``toolkit.logs``, ``toolkit.lab``).
"""

from toolkit.errors import (
    HistoryFormatError,
    LabError,
    LogFormatError,
    PayloadError,
    ServerError,
    ToolkitError,
)
from toolkit.histories import (
    fetch_histories,
    fetch_history,
    read_histories,
    read_history,
    to_history,
    to_workflow_history,
    write_history,
)

__version__ = "0.1.0"

__all__ = [
    "HistoryFormatError",
    "LabError",
    "LogFormatError",
    "PayloadError",
    "ServerError",
    "ToolkitError",
    "fetch_histories",
    "fetch_history",
    "read_histories",
    "read_history",
    "to_history",
    "to_workflow_history",
    "write_history",
]
