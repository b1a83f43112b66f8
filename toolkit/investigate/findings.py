"""Findings: what went wrong, across runs and versions, each with the evidence behind it.

One function per finding kind; each takes the investigation's tables and returns finding rows
(:data:`FINDING_COLUMNS`). Kinds: ``nondeterminism``, ``stuck_run``, ``activity_retries``,
``duplicate_tool``, ``listing_change``, ``dead_letter`` and ``log_errors`` (one finding for the
error records that no other finding explains, their message shapes counted). Nothing here
reads files: a file that failed to load never reaches a finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from toolkit.text import count

__all__ = ["FINDING_COLUMNS", "SEVERITIES", "finding", "log_error_shapes", "rank"]

#: Severities, most severe first (findings are ranked by severity, then runs affected).
SEVERITIES = ("critical", "high", "medium", "low")

#: Columns of :attr:`toolkit.investigate.Investigation.findings`.
FINDING_COLUMNS = [
    "kind",
    "severity",
    "title",
    "runs",
    "run_count",
    "first_seen",
    "last_seen",
    "versions",
    "evidence",
    "explanation",
    "next_step",
    "confidence",
]


def finding(
    kind: str,
    severity: str,
    title: str,
    *,
    runs: Iterable[Any] = (),
    times: Iterable[Any] = (),
    versions: Iterable[Any] = (),
    evidence: Mapping[str, Any] | None = None,
    explanation: str = "",
    next_step: str = "",
    confidence: str = "certain",
) -> dict[str, Any]:
    """One finding row; ``times`` gives ``first_seen`` / ``last_seen``."""
    run_ids = sorted({str(r) for r in runs if isinstance(r, str) and r})
    stamps = pd.to_datetime(pd.Series(list(times), dtype=object), utc=True, errors="coerce")
    stamps = stamps.dropna()
    return {
        "kind": kind,
        "severity": severity,
        "title": title,
        "runs": run_ids,
        "run_count": len(run_ids),
        "first_seen": stamps.min() if len(stamps) else pd.NaT,
        "last_seen": stamps.max() if len(stamps) else pd.NaT,
        "versions": list(dict.fromkeys(str(v) for v in versions if v is not None)),
        "evidence": dict(evidence or {}),
        "explanation": explanation,
        "next_step": next_step,
        "confidence": confidence,
    }


def rank(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Findings as a frame, ranked by severity, then runs affected, then evidence size."""
    frame = pd.DataFrame(rows, columns=FINDING_COLUMNS)
    if frame.empty:
        return frame
    order = {name: index for index, name in enumerate(SEVERITIES)}
    size = [
        sum(len(v) for v in e.values() if isinstance(v, list))
        for v in [None]
        for e in frame["evidence"]
    ]
    frame = frame.assign(_severity=frame["severity"].map(order), _size=size)
    frame = frame.sort_values(
        ["_severity", "run_count", "_size"], ascending=[True, False, False], kind="stable"
    )
    return frame.drop(columns=["_severity", "_size"]).reset_index(drop=True)


def _labels_of(runs: pd.DataFrame, run_ids: Iterable[Any], column: str = "label") -> list[str]:
    chosen = runs[runs["run_id"].isin(set(run_ids))]
    out: list[str] = []
    for value in chosen[column]:
        for label in value if isinstance(value, list) else [value]:
            if isinstance(label, str) and label not in out:
                out.append(label)
    return out


def nondeterminism(errors: pd.DataFrame, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Runs whose workflow task failed for nondeterminism, grouped by what differs."""
    if errors.empty:
        return []
    frame = errors.assign(
        _key=[
            f"{k}|{e}|{a}"
            for k, e, a in zip(errors["kind"], errors["expected"], errors["actual"], strict=True)
        ]
    )
    out = []
    for _, group in frame.groupby("_key", sort=False):
        first = group.iloc[0]
        run_ids = group["run_id"].dropna().unique().tolist()
        recorded = _labels_of(runs, run_ids)
        failing = _labels_of(runs, run_ids, "failed_labels")
        same_type = runs[
            runs["workflow_type"].isin(runs.loc[runs["run_id"].isin(run_ids), "workflow_type"])
        ]
        healthy = [
            label
            for label in same_type.loc[same_type["failed_workflow_tasks"] == 0, "label"].unique()
        ]
        what = (
            f"recorded {first['expected']!r}, the new code issued {first['actual']!r}"
            if pd.notna(first["expected"])
            else first["kind"]
        )
        boundary = (
            f"Runs recorded under {', '.join(recorded) or 'an unknown version'} fail on "
            f"workers {', '.join(failing) or '(not named in the history)'}; "
            f"runs of this workflow type without failed tasks: "
            f"{', '.join(healthy) or 'none'}."
        )
        lines = group["line"].dropna().astype(int).tolist() if "line" in group else []
        out.append(
            finding(
                "nondeterminism",
                "critical",
                f"Replay fails after a version change: {what} ({count(len(run_ids), 'run')})",
                runs=run_ids,
                times=group["ts"],
                versions=recorded + failing,
                evidence={
                    "table": "nondeterminism_errors",
                    "sources": group["source"].dropna().unique().tolist(),
                    "event_ids": group["failed_event_id"].dropna().astype(int).tolist(),
                    "log_lines": lines,
                },
                explanation=f"{first['message']} {boundary}",
                next_step="Roll the workers back to the recorded version (or route the old runs to "
                "it), or guard the change with a patch/versioning; check with "
                "tk.replay_histories(paths, [NewWorkflow]) before deploying.",
            )
        )
    return out


def stuck_runs(runs: pd.DataFrame, failures: Mapping[str, tuple[int, str]]) -> list[dict[str, Any]]:
    """Open runs whose last workflow task failed, or whose last message got no answer.

    ``failures`` maps a run id to its last failed workflow task (event id, what it says).
    """
    stuck = runs[runs["stuck"]]
    out = []
    for (workflow_type, reason), group in stuck.groupby(
        ["workflow_type", "stuck_reason"], dropna=False, sort=False
    ):
        run_ids = group["run_id"].tolist()
        messages = sorted({failures[r][1] for r in run_ids if r in failures})
        event_ids = [failures[r][0] for r in run_ids if r in failures]
        out.append(
            finding(
                "stuck_run",
                "critical",
                f"{count(len(group), f'open {workflow_type} run')} "
                f"{'is' if len(group) == 1 else 'are'} stuck: {reason}",
                runs=run_ids,
                times=group["start"],
                versions=_labels_of(runs, run_ids, "labels"),
                evidence={
                    "table": "runs",
                    "sources": group["source"].tolist(),
                    "event_ids": event_ids,
                },
                explanation=(
                    f"These runs are open and make no progress: {reason}."
                    + (f" Last failure: {messages[0]}" if messages else "")
                ),
                next_step="Fix the cause (see the other findings), then let the task retry on a "
                "fixed worker or reset the runs to before the failing task.",
            )
        )
    return out


def activity_retries(activities: pd.DataFrame, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Retry storms, timeouts and final failures, by activity type."""
    if activities.empty:
        return []
    out = []
    for activity_type, group in activities.groupby("activity_type", sort=False):
        retried = group[group["attempt"].fillna(1) > 1]
        final = group[group["outcome"].isin(["failed", "timed_out"])]
        non_retryable = group[
            group["retry_state"].astype(str).str.contains("NON_RETRYABLE", na=False)
        ]
        timeouts = group[group["outcome"] == "timed_out"]
        if retried.empty and final.empty:
            continue
        top = int(group["attempt"].fillna(1).max())  # an execution never started has no attempt
        severity = "high" if len(final) else ("medium" if top >= 3 else "low")
        run_ids = pd.concat([retried, final])["run_id"].dropna().unique().tolist()
        parts = []
        if len(retried):
            parts.append(f"{count(len(retried), 'execution')} retried (up to attempt {top})")
        if len(final):
            parts.append(f"{len(final)} failed for good")
        if len(timeouts):
            parts.append(f"{len(timeouts)} timed out")
        if len(non_retryable):
            parts.append(f"{len(non_retryable)} non-retryable")
        message = final["failure_message"].dropna()
        message = message.iloc[0] if len(message) else group["last_failure_message"].dropna()
        text = message if isinstance(message, str) else (message.iloc[0] if len(message) else "")
        out.append(
            finding(
                "activity_retries",
                severity,
                f"Activity {activity_type}: {', '.join(parts)}",
                runs=run_ids,
                times=pd.concat([retried, final])["scheduled_time"],
                versions=_labels_of(runs, run_ids),
                evidence={
                    "table": "activities",
                    "activity_type": activity_type,
                    "event_ids": pd.concat([retried, final])["scheduled_event_id"]
                    .dropna()
                    .astype(int)
                    .tolist(),
                },
                explanation=f"Last failure: {text}" if text else "",
                next_step="Check the failure message and the retry policy (maximum attempts, "
                "timeouts, non-retryable error types) of this activity.",
            )
        )
    return out


def duplicate_tool(found: pd.DataFrame, endpoints: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Duplicate tool declarations in logs (:func:`toolkit.duplicate_tools`, whose rows link
    each failure's retry and dead-letter records), one finding per framework shape and tool."""
    if found.empty:
        return []
    out = []
    for (kind, tool), group in found.groupby(["kind", "tool"], sort=False, dropna=False):
        # The detector gives one row per failure, its retry and dead-letter records linked.
        silent = (group["behaviour"] == "shadowed").all()
        attempts = group["attempt"].dropna()
        letters = group["dead_letter_line"].dropna()
        text = (
            count(len(group), "failure")
            + (f" over {count(attempts.max(), 'delivery', 'deliveries')}" if len(attempts) else "")
            + (f", {len(letters)} sent to the dead letter queue" if len(letters) else "")
        )
        explanation = f"Two toolsets declare the tool {tool!r} ({kind}); " + (
            "the later one silently shadows the earlier one, so calls may reach the wrong server."
            if silent
            else f"the agent refuses to run: {text}."
        )
        next_step = "Declare each MCP server once."
        if endpoints is not None and len(endpoints):
            shared = endpoints[endpoints["group_size"] > 1]
            if len(shared):
                keep = shared[shared["keep"]]
                explanation += (
                    f" {len(shared)} configured servers share the endpoint "
                    f"{shared['endpoint'].iloc[0]}."
                )
                if len(keep):
                    next_step = (
                        f"Keep {keep['id'].iloc[0]!r} ({keep['reason'].iloc[0]}) and "
                        "drop the other entries of that endpoint."
                    )
        out.append(
            finding(
                "duplicate_tool",
                "medium" if silent else "high",
                f"Duplicate tool {tool!r} ({kind}): " + ("shadowed silently" if silent else text),
                times=group["ts"],
                evidence={
                    "table": "duplicate_tools",
                    "sources": group["source"].unique().tolist(),
                    "log_lines": [
                        int(line)
                        for column in ("line", "retry_line", "dead_letter_line")
                        for line in group[column].dropna()
                    ]
                    + [int(line) for lines in group["echo_lines"] for line in lines],
                },
                explanation=explanation,
                next_step=next_step,
            )
        )
    return out


def dead_letters(dead: pd.DataFrame) -> list[dict[str, Any]]:
    """Deliveries given up on, by reason."""
    if dead.empty:
        return []
    out = []
    for reason, group in dead.groupby("reason", sort=False, dropna=False):
        out.append(
            finding(
                "dead_letter",
                "high",
                f"{count(len(group), 'delivery', 'deliveries')} sent to the dead letter queue "
                f"({reason})",
                times=group["ts"],
                evidence={
                    "table": "dead_letters",
                    "sources": group["source"].unique().tolist(),
                    "log_lines": group["line"].astype(int).tolist(),
                    "subjects": group["subject"].dropna().astype(str).tolist(),
                },
                explanation="These deliveries exhausted their attempts; their work was dropped.",
                next_step="Find the failure each retry logged (see duplicate_tool / log_errors), "
                "fix it, then redrive the dead letters.",
            )
        )
    return out


_SHAPE = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\"[^\"]*\"|'[^']*'"), "<text>"),
    (re.compile(r"\b0x[0-9a-f]+\b|\b\d+(\.\d+)?\b", re.I), "<n>"),
]


def message_shape(text: str) -> str:
    """A message with ids, quoted text and numbers replaced, to group records of one kind."""
    lines = text.strip().splitlines()
    text = lines[0] if lines else ""  # a stack trace's first line names it
    for pattern, placeholder in _SHAPE:
        text = pattern.sub(placeholder, text)
    return text.strip()[:120]


def log_error_shapes(logs: pd.DataFrame, explained: set[tuple[Any, int]]) -> pd.DataFrame:
    """Error records that no other finding explains, one row per message shape.

    Returns
    -------
    pandas.DataFrame
        ``shape`` (:func:`message_shape`), ``records``, ``first_seen``, ``last_seen``,
        ``sources``, ``lines`` (every line number), ``example`` (the first record's message),
        most records first.
    """
    columns = ["shape", "records", "first_seen", "last_seen", "sources", "lines", "example"]
    errors = logs[logs["level"].isin(["error", "critical"])]
    keep = [
        (s, int(n)) not in explained for s, n in zip(errors["source"], errors["line"], strict=True)
    ]
    errors = errors[keep]
    if errors.empty:
        return pd.DataFrame(columns=columns)
    text = errors["message"].fillna(errors["raw"].astype(str)).astype(str)
    errors = errors.assign(_shape=[message_shape(t) for t in text], _text=text)
    rows = []
    for shape, group in errors.groupby("_shape", sort=False):
        rows.append({
            "shape": shape, "records": len(group), "first_seen": group["ts"].min(),
            "last_seen": group["ts"].max(), "sources": group["source"].unique().tolist(),
            "lines": group["line"].astype(int).tolist(), "example": group["_text"].iloc[0],
        })  # fmt: skip
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values("records", ascending=False, kind="stable").reset_index(drop=True)


def log_errors(shapes: pd.DataFrame) -> list[dict[str, Any]]:
    """One finding for the error records no other finding explains (``shapes``:
    :func:`log_error_shapes`), their kinds counted in its evidence table ``log_errors``."""
    if shapes.empty:
        return []
    records = int(shapes["records"].sum())
    top = shapes.iloc[0]
    kinds = count(len(shapes), "kind")
    most = f"most often ({top['records']}×): {top['shape']}" if len(shapes) > 1 else top["shape"]
    return [
        finding(
            "log_errors",
            "low",
            f"{count(records, 'error record')} in the logs that no other finding explains "
            f"({kinds}; {most})",
            times=[*shapes["first_seen"], *shapes["last_seen"]],
            evidence={
                "table": "log_errors",
                "sources": list(dict.fromkeys(s for ss in shapes["sources"] for s in ss)),
                "log_lines": [n for lines in shapes["lines"] for n in lines][:200],
            },
            explanation=f"Error-level records grouped by the shape of their message (ids, "
            f"quoted text and numbers set aside): {kinds}, counted in the evidence table.",
            next_step="Read a few of these lines in context and correlate them with the runs "
            "(tk.correlate(inv.evidence['logs'], events)).",
        )
    ]


def replay_failures(replay: pd.DataFrame, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Histories the given workflow code cannot replay (temporalio's Replayer), by message."""
    failed = replay[replay["outcome"] != "ok"]
    out = []
    for message, group in failed.groupby("message", sort=False, dropna=False):
        run_ids = group["run_id"].dropna().tolist()
        out.append(
            finding(
                "nondeterminism",
                "critical",
                f"{count(len(group), 'history', 'histories')} "
                f"fail{'s' if len(group) == 1 else ''} replay with the given code "
                f"({group['outcome'].iloc[0]})",
                runs=run_ids,
                versions=_labels_of(runs, run_ids),
                evidence={"table": "replay", "sources": group["source"].dropna().tolist()},
                explanation=str(message),
                confidence="replayer",
                next_step="Do not deploy this code for these runs' task queue while they are open.",
            )
        )
    return out


def duplicate_tool_in_history(found: pd.DataFrame, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Duplicate-tool failures the histories record (frameworks that raise the error in
    workflow code), one finding per framework and tool; see
    :func:`toolkit.logs.duplicates.duplicate_tools_in_history`."""
    out = []
    failures = found[found["kind"] != "declared_twice"]  # declarations: duplicate_declaration
    for (framework, tool), group in failures.groupby(["framework", "tool"], sort=False):
        run_ids = group["run_id"].dropna().unique().tolist()
        where = {
            "workflow_task": "fails the workflow task, which the server retries: the run is "
            "stuck until the code changes",
            "activity": "fails the activity, which its retry policy retries",
        }
        surfaced = sorted({
            where.get(r, "fails the workflow run") if b != "shadowed" else "shadows silently"
            for b, r in zip(group["behaviour"], group["retried_by"], strict=True)
        })
        toolsets = sorted({t for t in group["toolset"].dropna()} | {
            e for e in group["existing"].dropna()})
        out.append(
            finding(
                "duplicate_tool",
                "high",
                f"Duplicate tool {tool!r} ({framework}): {count(len(group), 'failure')} "
                f"recorded in {count(len(run_ids), 'run')}",
                runs=run_ids,
                times=group["event_time"],
                versions=_labels_of(runs, run_ids),
                evidence=_history_rows(group),
                explanation=(
                    f"Two toolsets{' (' + ', '.join(toolsets) + ')' if toolsets else ''} declare "
                    f"the same tool names; {framework} raises in workflow code and "
                    + "; ".join(surfaced) + f". Recorded error: {group['text'].iloc[0]}"
                ),
                next_step="Declare each MCP server once (one entry per endpoint), or give the "
                "toolsets distinct tool prefixes; then reset or restart the affected runs.",
            )
        )
    return out


def _history_rows(group: pd.DataFrame, table: str = "duplicate_tools_in_history") -> dict[str, Any]:
    """The evidence of a finding made of rows of ``table``."""
    return {
        "table": table,
        "sources": group["source"].unique().tolist(),
        "event_ids": group["event_id"].astype(int).tolist(),
    }


def duplicate_declaration(found: pd.DataFrame, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Model calls that declared one tool name twice (rows of kind ``declared_twice`` of
    :func:`toolkit.duplicate_tools` over the histories, the evidence table
    ``declared_duplicates``), one finding per framework and names.

    Read from the model calls' own inputs, so it holds without logs and where nothing failed.
    """
    out = []
    twice = found[found["kind"] == "declared_twice"] if len(found) else found
    for (framework, tool), group in twice.groupby(["framework", "tool"], sort=False):
        run_ids = group["run_id"].dropna().unique().tolist()
        failed = int((group["behaviour"] == "failed").sum())
        outcome = (f"{count(failed, 'model call')} failed" if failed else
                   "every one completed: the model was offered both and the framework ran one "
                   "of them under that name, or failed the tool call on the ambiguous name "
                   "(see the runs' other findings)")  # fmt: skip
        out.append(
            finding(
                "duplicate_tool",
                "high" if failed else "medium",
                f"Tool {tool} declared twice to the model ({framework}): "
                f"{count(len(group), 'model call')} in {count(len(run_ids), 'run')}",
                runs=run_ids,
                times=group["event_time"],
                versions=_labels_of(runs, run_ids),
                evidence=_history_rows(group, "declared_duplicates"),
                explanation=(
                    f"The model calls' inputs declare {tool} twice in one request: two "
                    "toolsets serve the same tools (one endpoint configured twice), or one "
                    "server lists a tool twice. Providers that check reject such a request "
                    "(Gemini: 'Duplicate function declaration found'); " + outcome
                    + f". First call: {group['text'].iloc[0]}"
                ),
                next_step="Declare each MCP server once (one entry per endpoint), or give the "
                "toolsets distinct tool prefixes (or filters).",
                confidence="certain: read from the model calls' inputs",
            )
        )
    return out
