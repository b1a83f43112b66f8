"""The analyses the duplicate-tool notebook presents, on the toolkit's frames.

* :func:`delivery_timeline` (``toolkit.delivery_timeline``) - a command's deliveries, errors and
  dead-letter on one time axis, drawn by ``toolkit.plots.plot_delivery_timeline``;
* :func:`pattern_comparison` / :func:`naive_false_positives` - the strict ``duplicate tool:``
  detector against a naive substring search;
* :func:`command_outcomes` - per command: completed or dead-lettered, deliveries, tool responses;
* :func:`toolset_activities` and :func:`read_mcp_requests` - which toolset served the calls, from
  the history's activity types and from the MCP server's request log;
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.errors import LogFormatError
from toolkit.lab.mcp_server import read_request_log
from toolkit.logs.deliveries import delivery_timeline
from toolkit.logs.detectors import duplicate_tools
from toolkit.plots.timeline import plot_delivery_timeline

__all__ = ["NAIVE_PATTERN", "command_outcomes", "delivery_timeline", "naive_false_positives",
           "pattern_comparison", "plot_delivery_timeline", "read_mcp_requests",
           "toolset_activities"]

NAIVE_PATTERN = "duplicate tool"
"""What ``grep -c "duplicate tool"`` looks for: it also finds the fix's own skip line."""


def naive_false_positives(logs: pd.DataFrame) -> pd.DataFrame:
    """Records a naive ``str.contains("duplicate tool")`` finds that are not duplicate tools."""
    naive = logs[logs["raw"].fillna("").str.contains(NAIVE_PATTERN, regex=False)]
    found = duplicate_tools(logs)
    # Records linked to a finding (its retry and dead letter) are the incident, not noise.
    strict_lines = {*found["line"], *found["retry_line"].dropna().astype(int),
                    *found["dead_letter_line"].dropna().astype(int)}
    return naive[~naive["line"].isin(strict_lines)][["line", "ts", "level", "message"]]


def pattern_comparison(logs_by_name: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per log: records the naive search counts, failures the strict detector counts (each once,
    its retry and dead-letter records linked to it), and the naive search's false positives.

    Returns
    -------
    pandas.DataFrame
        Index: log name; columns ``naive``, ``strict``, ``false_positives``.
    """
    rows = {}
    for name, logs in logs_by_name.items():
        naive = int(logs["raw"].fillna("").str.contains(NAIVE_PATTERN, regex=False).sum())
        strict = len(duplicate_tools(logs))  # failures, each counted once
        rows[name] = {"naive": naive, "strict": strict,
                      "false_positives": len(naive_false_positives(logs))}
    return pd.DataFrame.from_dict(rows, orient="index")


def command_outcomes(logs: pd.DataFrame) -> pd.DataFrame:
    """Per ``command_id`` in the runtime's log: how it ended.

    Returns
    -------
    pandas.DataFrame
        ``command_id``, ``status`` (``completed``, ``deadlettered`` or ``open``), ``deliveries``
        (failed deliveries, plus the successful one), ``errors`` (``agent run failed`` records),
        ``function_response_part_count``, ``served_by``, ``reply``.
    """
    rows: dict[str, dict[str, Any]] = {}
    for message, fields in logs[["message", "fields"]].itertuples(index=False):
        fields = fields if isinstance(fields, Mapping) else {}
        command = fields.get("command_id")
        if not command:
            continue
        row = rows.setdefault(command, {"command_id": command, "status": "open", "deliveries": 0,
                                        "errors": 0, "function_response_part_count": 0,
                                        "served_by": None, "reply": None})
        if message == "agent run failed":
            row["errors"] += 1
        elif message == "command failed with retryable error":
            row["deliveries"] += 1
        elif isinstance(message, str) and message.startswith("command deadlettered"):
            row["status"] = "deadlettered"
        elif message == "turn complete":
            row.update(status="completed", deliveries=row["deliveries"] + 1,
                       function_response_part_count=int(fields.get(
                           "function_response_part_count", 0)),
                       served_by=fields.get("served_by") or None, reply=fields.get("reply"))
    return pd.DataFrame(list(rows.values()), columns=[
        "command_id", "status", "deliveries", "errors", "function_response_part_count",
        "served_by", "reply"])


def toolset_activities(events: pd.DataFrame) -> pd.DataFrame:
    """Activities of the Python ADK plugin per toolset: ``<toolset>-list-tools`` and
    ``<toolset>-call-tool`` counts (``invoke_model`` is not a toolset's).

    Returns
    -------
    pandas.DataFrame
        Index: toolset name; columns ``list-tools`` and ``call-tool`` (scheduled activities).
    """
    scheduled = events[events["event_type"] == "ActivityTaskScheduled"]["activity_type"]
    parts = scheduled.str.extract(r"^(?P<toolset>.+)-(?P<operation>list-tools|call-tool)$")
    parts = parts.dropna()
    table = pd.crosstab(parts["toolset"], parts["operation"])
    return table.reindex(columns=["list-tools", "call-tool"], fill_value=0)


def read_mcp_requests(path: str | Path) -> pd.DataFrame:
    """The lab MCP server's request log (JSON lines) as a frame, one row per JSON-RPC message.

    Raises
    ------
    LogFormatError
        A line is not a JSON object (the message names the file and the line).
    """
    records = read_request_log(path, error=LogFormatError)
    frame = pd.DataFrame(records, columns=["seq", "time", "method", "path", "query",
                                           "mcp_method", "tool", "rpc_id"])
    frame["time"] = pd.to_datetime(frame["time"], unit="s", utc=True)
    return frame
