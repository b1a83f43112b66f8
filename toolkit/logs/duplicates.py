"""Duplicate-tool findings: one row per failure, its redeliveries and dead letter linked to it.

A runtime that retries a failed agent turn logs the failure, then a retry record, and finally a
dead-letter record, and the retry and dead-letter records often quote the error again (in an
``error=`` field). Counting every record that quotes the error counts one failure two or three
times (11 findings for 5 failures on the lab's Go before-log). Here a retry or dead-letter record
is linked to the failure it follows instead: same correlation id (``command_id``, ...) in the
same source, else the same quoted tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from toolkit.logs.detectors import _scan, dead_letters, retries
from toolkit.logs.duplicate_shapes import DUPLICATE_SHAPES, shape_needles

__all__ = ["DUPLICATE_COLUMNS", "find_duplicate_tools"]

DUPLICATE_COLUMNS = ["line", "ts", "level", "source", "kind", "framework", "behaviour",
                     "retried_by", "tool", "toolset", "existing", "correlation_id", "attempt",
                     "max_attempts", "retry_line", "dead_letter_line", "dead_letter_reason",
                     "echo_lines", "text"]

# Where Temporal's workers say the failure happened (Python worker, sdk-core, Go SDK).
_WORKFLOW_TASK_CONTEXT = ("Failed activation on workflow", "Failing workflow task",
                          "WorkflowTaskFailure")
_ACTIVITY_CONTEXT = ("Completing activity as failed", "Activity error.")
# Fields that name the unit a runtime redelivers, most specific first.
_CORRELATION_KEYS = ("command_id", "message_id", "delivery_id", "task_id", "activity_id",
                     "run_id", "RunID", "workflow_id", "WorkflowID")

# ``run ID x``, ``run_id=x``, ``RunID: x``; sdk-core colours its key=value pairs with ANSI codes.
_RUN_MENTION = re.compile(
    r"\brun(?:[ _]?id)(?:\x1b\[[0-9;]*m|[\s=:\"'])*([0-9A-Za-z][0-9A-Za-z-]{7,})", re.I)


def _correlation(fields: Mapping[str, Any]) -> str | None:
    for key in _CORRELATION_KEYS:
        value = fields.get(key)
        if value not in (None, ""):
            return f"{key}={value}"
    return None


def _tool_names(raw: str) -> str:
    """``{'a', 'b'}`` (a Python set in older openai-agents) or ``a, b`` -> ``a, b``."""
    names = [n.strip().strip("'\"") for n in raw.strip("{}").split(",")]
    return ", ".join(n for n in names if n)


def _correlation_of(fields: Mapping[str, Any], run: str | None) -> str | None:
    """The record's correlation id, unless the quote sits under another run's failure."""
    own = fields.get("run_id") or fields.get("RunID")
    if run and run != own:
        return f"run_id={run}"
    return _correlation(fields) or (run and f"run_id={run}")


def _run_mentioned_before(text: str, end: int, fields: Mapping[str, Any]) -> str | None:
    """The last run id the text names before ``end`` (core's ``run_id=``, Python's ``run ID``),
    else the record's own ``run_id`` field."""
    found = fields.get("run_id") or fields.get("RunID")
    for m in _RUN_MENTION.finditer(text, 0, end):
        found = m.group(1)
    return found


def _extract(text: str, fields: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    taken: list[tuple[int, int]] = []
    # One failure is often quoted several times in one record (sdk-core's WARN line, then the
    # worker's traceback with the exception line); a record can also hold the failures of
    # several runs when bare traceback lines were joined to it. One finding per run and tool.
    seen: set[tuple[Any, ...]] = set()
    in_workflow_task = any(marker in text for marker in _WORKFLOW_TASK_CONTEXT)
    in_activity = any(marker in text for marker in _ACTIVITY_CONTEXT)
    for shape in DUPLICATE_SHAPES:
        if shape.needle not in text:
            continue
        for m in shape.pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue  # already read by a more specific shape
            taken.append(m.span())
            groups = m.groupdict()
            run = _run_mentioned_before(text, m.start(), fields)
            key = (shape.kind, groups.get("tool"), groups.get("toolset"), run)
            if key in seen:
                continue
            seen.add(key)
            behaviour, retried_by = shape.behaviour, None
            if in_workflow_task:  # raised in workflow code: the server retries the task
                behaviour, retried_by = "retried", "workflow_task"
            elif in_activity or shape.behaviour == "retried":
                behaviour, retried_by = "retried", "activity"
            tool = groups.get("tool")
            out.append({
                "kind": shape.kind, "framework": shape.framework, "behaviour": behaviour,
                "retried_by": retried_by,
                "tool": _tool_names(tool.replace('\\"', '"')) if tool else None,
                "toolset": groups.get("toolset"), "existing": groups.get("existing"),
                "correlation_id": _correlation_of(fields, run),
                "text": m.group(0),
                "in_activity": in_activity,
            })
    return out


def _host_records(logs: pd.DataFrame) -> pd.DataFrame:
    """The runtime's retry and dead-letter records: ``source``, ``line``, ``role``, ``attempt``,
    ``max_attempts``, ``reason``; a record that is both (dead-lettered on its last attempt) is
    the dead letter."""
    columns = ["source", "line", "role", "attempt", "max_attempts", "reason"]
    parts = [frame.assign(role=role).reindex(columns=columns)
             for role, frame in (("dead_letter", dead_letters(logs)), ("retry", retries(logs)))
             if not frame.empty]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True).drop_duplicates(["source", "line"], keep="first")


def _link(found: pd.DataFrame, logs: pd.DataFrame) -> pd.DataFrame:
    """Fold retry and dead-letter records into the failures they follow (see the module doc)."""
    host_rows = _host_records(logs)
    keys = _keys_by_line(logs, host_rows)
    findings: list[dict[str, Any]] = []
    open_by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    quoting: dict[tuple[Any, int], list[dict[str, Any]]] = {}
    for row in found.to_dict("records"):
        quoting.setdefault((row["source"], row["line"]), []).append(row)
    host_by_line = {(r["source"], r["line"]): r for r in host_rows.to_dict("records")}
    for source_line in sorted({*quoting, *host_by_line}, key=lambda sl: (str(sl[0]), sl[1])):
        quotes, hosted = quoting.get(source_line, []), host_by_line.get(source_line)
        first = quotes[0] if quotes else {}
        key = first.get("correlation_id") or keys.get(source_line)
        # Linked by correlation id, else by the same shape quoting the same tool.
        lookup = [(source_line[0], key)] if key else []
        lookup += [(source_line[0], q["kind"], q["tool"]) for q in quotes if q.get("tool")]
        target = next((open_by_key[k] for k in lookup if k in open_by_key), None)
        role = hosted["role"] if hosted is not None else None
        if role == "retry" and target is not None and target["retry_line"] is None:
            target.update(attempt=hosted["attempt"], max_attempts=hosted["max_attempts"],
                          retry_line=source_line[1])
            continue
        if role == "dead_letter" and target is not None:
            target.update(dead_letter_line=source_line[1], dead_letter_reason=hosted["reason"])
            continue
        if role is None and quotes and _echo(quotes, open_by_key, source_line):
            continue
        # The failure itself, or a host record that is the only one to tell of this failure:
        # either way it is counted once, here.
        for quote in quotes:
            row = {**quote, "attempt": None, "max_attempts": None, "retry_line": None,
                   "dead_letter_line": None, "dead_letter_reason": None, "echo_lines": []}
            if role == "retry":
                row.update(attempt=hosted["attempt"], max_attempts=hosted["max_attempts"],
                           retry_line=source_line[1])
            elif role == "dead_letter":
                row.update(dead_letter_line=source_line[1], dead_letter_reason=hosted["reason"])
            findings.append(row)
            if row["behaviour"] != "shadowed":  # a warning is never redelivered
                for k in lookup:
                    open_by_key[k] = row
    return pd.DataFrame(findings, columns=DUPLICATE_COLUMNS)


def _echo(quotes: list[dict[str, Any]], open_by_key: dict[tuple[Any, ...], dict[str, Any]],
          source_line: tuple[Any, int]) -> bool:
    """Whether these quotes re-log an activity's failure from outside the activity (the
    workflow or agent runner reporting the same error once the activity gave up): if so, the
    lines are added to that finding's ``echo_lines`` instead of counting a new failure."""
    if any(q["in_activity"] for q in quotes):
        return False
    targets = [open_by_key.get((source_line[0], q["kind"], q["tool"])) for q in quotes]
    if not all(t is not None and t["in_activity"] for t in targets):
        return False
    for target in {id(t): t for t in targets}.values():
        target["echo_lines"].append(source_line[1])
    return True


def _keys_by_line(logs: pd.DataFrame, host_rows: pd.DataFrame) -> dict[tuple[Any, int], str]:
    """Correlation ids of the host records (from their fields)."""
    wanted = set(zip(host_rows["source"], host_rows["line"], strict=True))
    if not wanted:
        return {}
    keys = {}
    subset = logs[logs["line"].isin({line for _, line in wanted})]
    for source, line, fields in subset[["source", "line", "fields"]].itertuples(index=False):
        if (source, line) in wanted and isinstance(fields, Mapping):
            key = _correlation(fields)
            if key:
                keys[(source, line)] = key
    return keys


def find_duplicate_tools(logs: pd.DataFrame) -> pd.DataFrame:
    """One row per duplicate-tool failure or warning; see :func:`toolkit.duplicate_tools`."""
    scan_columns = ["kind", "framework", "behaviour", "retried_by", "tool", "toolset", "existing",
                    "correlation_id", "text", "in_activity"]
    found = _scan(logs, shape_needles(), _extract, scan_columns)
    # Nothing to link to when nothing matched: skip the retry and dead-letter scans.
    linked = _link(found, logs) if len(found) else found.reindex(columns=DUPLICATE_COLUMNS)
    linked["ts"] = pd.to_datetime(linked["ts"], utc=True).astype("datetime64[ns, UTC]")
    linked["line"] = linked["line"].astype("int64")
    for column in ("attempt", "max_attempts", "retry_line", "dead_letter_line"):
        linked[column] = pd.array(linked[column].tolist(), dtype="Int64")
    for column in ("retried_by", "toolset", "existing", "correlation_id", "dead_letter_reason"):
        linked[column] = linked[column].astype(object).where(linked[column].notna(), None)
    return linked


#: Columns of :func:`duplicate_tools_in_history`.
HISTORY_DUPLICATE_COLUMNS = ["source", "history", "workflow_type", "workflow_id", "run_id",
                             "event_id", "event_time", "event_type", "kind", "framework",
                             "behaviour", "retried_by", "tool", "toolset", "existing", "text"]

# Where a failure recorded in a history leaves the run: the server retries a failed workflow
# task (the run stays open and stuck), an activity failure is retried by its policy unless the
# retry state says it gave up, and a failed workflow execution is the end of the run.
_EVENT_BEHAVIOUR = {
    "WorkflowTaskFailed": ("retried", "workflow_task"),
    "ActivityTaskFailed": ("retried", "activity"),
    "WorkflowExecutionFailed": ("failed", None),
    "ChildWorkflowExecutionFailed": ("failed", None),
}


def duplicate_tools_in_history(events: pd.DataFrame) -> pd.DataFrame:
    """Duplicate-tool errors recorded in histories: one row per failure event that quotes one.

    Frameworks that raise the error in workflow code leave it in the history, not only in
    logs: OpenAI Agents on Temporal fails the workflow task (``WorkflowTaskFailed``, retried
    by the server, the run stuck), pydantic-ai fails the workflow (``WorkflowExecutionFailed``).
    The same exact shapes as :func:`toolkit.duplicate_tools` are matched against each event's
    ``failure_message``.
    """
    failed = events[events["failure_message"].notna()
                    & events["event_type"].isin(list(_EVENT_BEHAVIOUR))]
    needles = shape_needles()
    rows = []
    for row in failed.to_dict("records"):
        text = str(row["failure_message"])
        if not any(needle in text for needle in needles):
            continue
        behaviour, retried_by = _EVENT_BEHAVIOUR[row["event_type"]]
        if row["event_type"] == "ActivityTaskFailed" and str(row.get("retry_state") or "") not in (
                "", "RETRY_STATE_IN_PROGRESS", "RETRY_STATE_UNSPECIFIED"):
            behaviour, retried_by = "failed", None  # the activity gave up
        for quote in _extract(text, {}):
            rows.append({
                **{key: row.get(key) for key in HISTORY_DUPLICATE_COLUMNS[:8]},
                **{key: quote[key] for key in ("kind", "framework", "tool", "toolset",
                                               "existing", "text")},
                "behaviour": "shadowed" if quote["behaviour"] == "shadowed" else behaviour,
                "retried_by": None if quote["behaviour"] == "shadowed" else retried_by,
            })
    return pd.DataFrame(rows, columns=HISTORY_DUPLICATE_COLUMNS)
