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

Names are imported on first use (PEP 562): ``import toolkit`` stays cheap, and workflow code in
``toolkit.lab`` can be loaded by temporalio's sandbox (or by an old google-adk environment)
without pulling in pandas.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolkit.errors import (
    HistoryFormatError,
    LabError,
    LocatedError,
    LogFormatError,
    PayloadError,
    ServerError,
    ToolkitError,
)

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "HistoryBatch": "toolkit.histories.reading.batch",
    "read_histories": "toolkit.histories.reading.batch",
    "iter_histories": "toolkit.histories.reading.batch",
    "read_history": "toolkit.histories.reading.read",
    "fetch_history": "toolkit.histories.reading.fetch",
    "fetch_histories": "toolkit.histories.reading.fetch",
    "write_history": "toolkit.histories.write",
    "to_history": "toolkit.histories.write",
    "to_workflow_history": "toolkit.histories.write",
    "event_sizes": "toolkit.histories.sizes",
    "payload_sizes": "toolkit.histories.sizes",
    "size_errors": "toolkit.histories.size_errors",
    "LimitsError": "toolkit.histories.server_limits",
    "activities": "toolkit.histories.tables",
    "workflow_tasks": "toolkit.histories.tables",
    "timers": "toolkit.histories.tables",
    "signals": "toolkit.histories.tables",
    "updates": "toolkit.histories.tables",
    "child_workflows": "toolkit.histories.tables",
    "markers": "toolkit.histories.tables",
    "commands": "toolkit.replay.commands",
    "Divergence": "toolkit.replay.divergence",
    "first_divergence": "toolkit.replay.divergence",
    "nondeterminism_errors": "toolkit.replay.errors_table",
    "replay_verdict": "toolkit.replay.verdict",
    "InexactVerdictWarning": "toolkit.replay.verdict",
    # Not ``replay``: importing the ``toolkit.replay`` subpackage rebinds that name on the package.
    "replay_histories": "toolkit.replay.replayer",
    "read_replay_matrix": "toolkit.replay.report",
    "replay_cells": "toolkit.replay.report",
    "check_against_matrix": "toolkit.replay.report",
    "core_text": "toolkit.replay.report",
    # The package is callable, as investigate is (see toolkit/replay_check/__init__.py).
    "replay_check": "toolkit.replay_check",
    "ReplayCheck": "toolkit.replay_check.result",
    "sql": "toolkit.datasets.query",
    "write_dataset": "toolkit.datasets.writer",
    "DatasetWrite": "toolkit.datasets.writer",
    "check_dataset": "toolkit.datasets.check",
    "repair_dataset": "toolkit.datasets.check",
    "compact_dataset": "toolkit.datasets.compact",
    "DatasetCompaction": "toolkit.datasets.compact",
    "step_commands": "toolkit.agents.step_commands",
    "Roles": "toolkit.agents.roles",
    "agent_steps": "toolkit.agents.turns",
    "activity_spans": "toolkit.agents.turns",
    "listings_per_turn": "toolkit.agents.turns",
    "mcp_endpoints": "toolkit.agents.mcp",
    "history_budget": "toolkit.agents.budget",
    "model_call_sizes": "toolkit.agents.growth",
    "read_logs": "toolkit.logs.read",
    "correlate": "toolkit.logs.correlate",
    # Logs or histories: the histories add duplicate declarations read from model calls.
    "duplicate_tools": "toolkit.agents.declared",
    "retries": "toolkit.logs.detectors",
    "dead_letters": "toolkit.logs.detectors",
    "mcp_client_failures": "toolkit.logs.detectors",
    "delivery_timeline": "toolkit.logs.deliveries",
    "to_otel": "toolkit.traces.export",
    "model_calls": "toolkit.agents.tokens",
    "token_usage": "toolkit.agents.tokens",
    "OtelExport": "toolkit.traces.export",
    "plots": "toolkit.plots",
    # The package is callable: ``tk.investigate(...)`` (see toolkit/investigate/__init__.py).
    "investigate": "toolkit.investigate",
    "Investigation": "toolkit.investigate.report",
}

#: Public names that differ from the defining module's name for the object.
_RENAMED = {"replay_histories": "replay"}

__all__ = sorted(
    [
        *_EXPORTS,
        "HistoryFormatError",
        "LabError",
        "LocatedError",
        "LogFormatError",
        "PayloadError",
        "ServerError",
        "ToolkitError",
    ]
)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'toolkit' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    attribute = _RENAMED.get(name, name)
    value = module if module_name == f"toolkit.{name}" else getattr(module, attribute)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and IDEs see
    from toolkit import plots
    from toolkit.agents.budget import history_budget
    from toolkit.agents.declared import duplicate_tools
    from toolkit.agents.growth import model_call_sizes
    from toolkit.agents.mcp import mcp_endpoints
    from toolkit.agents.roles import Roles
    from toolkit.agents.step_commands import step_commands
    from toolkit.agents.tokens import model_calls, token_usage
    from toolkit.agents.turns import activity_spans, agent_steps, listings_per_turn
    from toolkit.datasets.check import check_dataset, repair_dataset
    from toolkit.datasets.compact import DatasetCompaction, compact_dataset
    from toolkit.datasets.query import sql
    from toolkit.datasets.writer import DatasetWrite, write_dataset
    from toolkit.histories.reading.batch import HistoryBatch, iter_histories, read_histories
    from toolkit.histories.reading.fetch import fetch_histories, fetch_history
    from toolkit.histories.reading.read import read_history
    from toolkit.histories.server_limits import LimitsError
    from toolkit.histories.size_errors import size_errors
    from toolkit.histories.sizes import event_sizes, payload_sizes
    from toolkit.histories.tables import (
        activities,
        child_workflows,
        markers,
        signals,
        timers,
        updates,
        workflow_tasks,
    )
    from toolkit.histories.write import to_history, to_workflow_history, write_history
    from toolkit.investigate import investigate
    from toolkit.investigate.report import Investigation
    from toolkit.logs.correlate import correlate
    from toolkit.logs.deliveries import delivery_timeline
    from toolkit.logs.detectors import dead_letters, mcp_client_failures, retries
    from toolkit.logs.read import read_logs
    from toolkit.replay.commands import commands
    from toolkit.replay.divergence import Divergence, first_divergence
    from toolkit.replay.errors_table import nondeterminism_errors
    from toolkit.replay.replayer import replay as replay_histories
    from toolkit.replay.report import (
        check_against_matrix,
        core_text,
        read_replay_matrix,
        replay_cells,
    )
    from toolkit.replay.verdict import InexactVerdictWarning, replay_verdict
    from toolkit.replay_check import replay_check
    from toolkit.replay_check.result import ReplayCheck
    from toolkit.traces.export import OtelExport, to_otel
