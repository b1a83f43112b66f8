"""Finding cards: each finding of an investigation as the report shows it.

A card is built from the finding's own fields (severity, kind, title, times, runs, versions,
explanation, next step, confidence) and its ``evidence`` mapping, whatever the kind:

- the log lines it cites (``log_lines`` with ``sources``), as the file holds them, numbered;
- the rows of its evidence table (``evidence["table"]``) that its other keys select: a key
  names a column (``activity_type``, ``workflow_type``) or its plural (``labels``, ``sources``,
  ``event_ids``, ``subjects``);
- for a table without rows of its own (``runs``), the events it cites;
- the runs it touches, linked to their sections; for findings from logs alone, "seen in logs"
  with the ids the log records carry.

A kind whose evidence needs more (a divergence's two command sequences) registers a function in
:data:`EVIDENCE_RENDERERS`; :data:`TABLE_COLUMNS` chooses an evidence table's columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit.investigate.html import badge, escape, table_html, value_html
from toolkit.text import count, is_missing, listing, span

if TYPE_CHECKING:
    from toolkit.investigate.report import Investigation

__all__ = [
    "EVIDENCE_RENDERERS", "TABLE_COLUMNS", "card", "divergence_window", "run_anchor", "run_name",
]  # fmt: skip

#: Columns shown of each evidence table (others: every column with a value, wide ones left out).
TABLE_COLUMNS: dict[str, list[str]] = {
    "activities": ["run_id", "activity_type", "attempt", "outcome", "retry_state",
                   "failure_message", "scheduled_time", "total_duration"],
    "nondeterminism_errors": ["found_in", "run_id", "failed_event_id", "line", "sdk", "kind",
                              "expected", "actual"],
    "listing_summary": ["label", "toolsets", "tool_calls", "runs", "turns", "listings_min",
                        "listings_median", "listings_max", "first_seen"],
    "duplicate_tools": ["line", "ts", "framework", "behaviour", "tool", "attempt", "retry_line",
                        "dead_letter_line"],
    "dead_letters": ["line", "ts", "subject", "reason"],
    "duplicate_tools_in_history": ["run_id", "event_id", "event_time", "framework", "behaviour",
                                   "retried_by", "tool", "toolset", "existing"],
    "log_errors": ["records", "shape", "first_seen", "last_seen", "lines", "example"],
    "declared_duplicates": ["run_id", "event_id", "event_time", "framework", "behaviour", "tool"],
    "declared_summary": ["label", "runs", "model_calls", "declared", "other_orders",
                         "first_seen"],
    "replay": ["run_id", "outcome", "message"],
    "history_budget": ["run_id", "status", "model_calls", "history_bytes",
                       "largest_payload_bytes", "resent_share", "limit_hit",
                       "forecast_model_calls"],
    "size_errors": ["found_in", "run_id", "event_id", "line", "limit", "who", "activity_type",
                    "attempt", "size", "limit_value", "text"],
}  # fmt: skip
#: Columns never worth a reader's line in an evidence table.
_WIDE = {"source", "history", "attributes", "extra", "input", "result", "details", "fields",
         "check", "raw", "echo_lines", "lines"}  # fmt: skip
#: Evidence keys that name a column by its plural.
_KEY_COLUMNS = {"sources": ["source"], "labels": ["label"], "subjects": ["subject"],
                "event_ids": ["event_id", "failed_event_id", "scheduled_event_id"],
                "log_lines": ["line"]}  # fmt: skip
_EVENT_COLUMNS = ["event_id", "event_time", "event_type", "name", "attempt", "failure_message"]
_NAMES = ("activity_type", "timer_id", "signal_name", "update_name", "child_workflow_type",
          "marker_name")  # fmt: skip
_SHOWN_LINES = 12
#: Log fields whose values identify what a record is about (``seen in logs`` names them).
_ID_FIELDS = ("workflow_id", "run_id", "workflow", "session_id", "command_id", "correlation_id",
              "request_id", "subject", "activity_id", "task_queue")  # fmt: skip


def run_name(run: Any) -> str:
    """What a reader calls a run (a row of the runs table): its workflow id, else its run id,
    else its file's name (an export may carry neither id)."""
    for key in ("workflow_id", "run_id"):
        value = run.get(key) if hasattr(run, "get") else None
        if isinstance(value, str) and value:
            return value
    source = run.get("source") if hasattr(run, "get") else None
    name = Path(str(source)).name if isinstance(source, str) else "unnamed run"
    history = run.get("history") if hasattr(run, "get") else None
    return f"{name} #{history}" if isinstance(history, int | float) and history else name


def run_anchor(run_id: Any) -> str:
    """The id of a run's section in the report."""
    return "run-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in str(run_id))


def card(
    inv: Investigation,
    row: pd.Series,
    number: int,
    next_steps: dict[str, int],
    sections: set[str] | None,
) -> str:
    """One finding as an ``<article>``: what, when, evidence, runs, next step.

    ``next_steps`` maps each next step already shown to its finding's number (a shared next
    step is written once, later cards point to it); ``sections`` holds the runs that have a
    section to link to (None: no links, as in a notebook).
    """
    severity = str(row["severity"])
    parts = [
        f"<article class='card {escape(severity)}' id='finding-{number}'>",
        f"<header>{badge(severity)}<span class='kind'>{escape(row['kind'])}</span>"
        f"<h3>{number}. {escape(row['title'])}</h3></header>",
        f"<p class='meta'>{_meta(row)}</p>",
    ]
    if isinstance(row["explanation"], str) and row["explanation"]:
        parts.append(f"<p>{escape(row['explanation'])}</p>")
    parts.append(_evidence(inv, row))
    parts.append(_runs(inv, row, sections))
    step = row["next_step"]
    if isinstance(step, str) and step:
        if step in next_steps:
            parts.append(f"<p class='next'><b>Next step:</b> as for "
                         f"<a href='#finding-{next_steps[step]}'>finding "
                         f"{next_steps[step]}</a>.</p>")  # fmt: skip
        else:
            next_steps[step] = number
            parts.append(f"<p class='next'><b>Next step:</b> {escape(step)}</p>")
    parts.append("</article>")
    return "".join(parts)


def _meta(row: pd.Series) -> str:
    bits = []
    if not is_missing(row["first_seen"]):
        bits.append(f"seen {escape(span(row['first_seen'], row['last_seen']))}")
    bits.append(escape(count(row["run_count"], "run")) if row["run_count"] else "seen in logs")
    if not is_missing(row["versions"]):
        bits.append(f"versions: {escape(listing(row['versions'], limit=4))}")
    if row["confidence"] not in (None, "", "certain"):
        bits.append(f"confidence: {escape(row['confidence'])}")
    return " · ".join(bits)


def _evidence(inv: Investigation, row: pd.Series) -> str:
    evidence = row["evidence"] if isinstance(row["evidence"], dict) else {}
    blocks = []
    special = EVIDENCE_RENDERERS.get(str(row["kind"]))
    if special is not None:
        blocks.append(special(inv, row))
    name = evidence.get("table")
    table = inv.evidence.get(name) if isinstance(name, str) and name in inv.evidence else None
    if name == "runs":
        blocks.append(_cited_events(inv, row, evidence))
    elif isinstance(table, pd.DataFrame) and name not in ("logs", "events"):
        chosen = _select(table, evidence, row)
        if len(chosen):
            columns = [c for c in TABLE_COLUMNS.get(name, []) if c in chosen.columns] or (
                _readable_columns(chosen))
            blocks.append(f"<h4>{escape(name.replace('_', ' '))} ({count(len(chosen), 'row')})"
                          f"</h4>" + table_html(chosen, columns, limit=10,
                                                more=f"in inv.evidence[{name!r}]"))  # fmt: skip
    blocks.append(_log_lines(inv, evidence))
    body = "".join(b for b in blocks if b)
    if not body:
        return ""
    return f"<details open><summary>Evidence</summary>{body}</details>"


#: Columns of an evidence table no kind chose columns for (TABLE_COLUMNS), at most.
_GENERIC_COLUMNS = 9


def _readable_columns(table: pd.DataFrame) -> list[str]:
    """Columns of a table no kind chose columns for: those with a value, short enough to scan
    (a column of long text or nested values stays in ``inv.evidence``), at most nine."""
    out = []
    for column in table.columns:
        values = table[column].head(20)
        if column in _WIDE or values.map(is_missing).all():
            continue
        if values.map(lambda v: isinstance(v, dict | list)).any():
            continue
        if values.map(lambda v: len(str(v))).median() > 60:
            continue
        out.append(column)
    return out[:_GENERIC_COLUMNS]


def _select(table: pd.DataFrame, evidence: dict[str, Any], row: pd.Series) -> pd.DataFrame:
    """The rows of ``table`` the finding's evidence keys (and runs) pick out."""
    mask = pd.Series(True, index=table.index)
    for key, value in evidence.items():
        if key == "table" or is_missing(value):
            continue
        columns = _KEY_COLUMNS.get(key, [key])
        column = next((c for c in columns if c in table.columns), None)
        if column is None:
            continue
        values = value if isinstance(value, list) else [value]
        mask &= table[column].isin(values)
    runs = row["runs"] if isinstance(row["runs"], list) else []
    if runs and "run_id" in table.columns and table["run_id"].isin(runs).any():
        mask &= table["run_id"].isin(runs)
    return table[mask]


def _cited_events(inv: Investigation, row: pd.Series, evidence: dict[str, Any]) -> str:
    ids = evidence.get("event_ids") or []
    if not ids or "events" not in inv.evidence:
        return ""
    events = inv.evidence["events"]
    mask = events["event_id"].isin(ids)
    if evidence.get("sources"):
        mask &= events["source"].isin(evidence["sources"])
    elif row["runs"]:
        mask &= events["run_id"].isin(row["runs"])
    chosen = events[mask]
    if chosen.empty:
        return ""
    chosen = chosen.assign(name=chosen[list(_NAMES)].bfill(axis=1).iloc[:, 0])
    return (f"<h4>{count(len(chosen), 'event')} cited</h4>"
            + table_html(chosen, [c for c in _EVENT_COLUMNS if c in chosen.columns]))


def _log_lines(inv: Investigation, evidence: dict[str, Any]) -> str:
    """The log lines a finding cites, as the file holds them, with their numbers."""
    lines = evidence.get("log_lines") or []
    logs = inv.evidence.get("logs") if "logs" in inv.evidence else None
    if not lines or logs is None or logs.empty:
        return ""
    pairs = evidence.get("log_records")
    if pairs:  # (source, line) of each record: exact where a finding spans several files
        keys = set(map(tuple, pairs))
        cited = logs[[(s, int(n)) in keys for s, n in zip(logs["source"], logs["line"],
                                                           strict=True)]]  # fmt: skip
    else:
        sources = evidence.get("sources") or list(logs["source"].unique())
        cited = logs[logs["source"].isin(sources) & logs["line"].isin(lines)]
    cited = cited.sort_values(["source", "line"])
    if cited.empty:
        return ""
    out = []
    for source, group in cited.groupby("source", sort=False):
        shown = group.head(_SHOWN_LINES)
        text = "\n".join(f"<span class='no'>{int(n)}</span>{escape(_one_line(raw))}"
                         for n, raw in zip(shown["line"], shown["raw"], strict=True))
        rest = len(group) - len(shown)
        more = f"<p class='more'>and {count(rest, 'more line')}.</p>" if rest > 0 else ""
        out.append(f"<h4>{escape(Path(str(source)).name)}: {count(len(group), 'line')} "
                   f"cited</h4><pre class='lines'>{text}</pre>{more}")  # fmt: skip
    return "".join(out)


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _one_line(raw: Any) -> str:
    text = _ANSI.sub("", str(raw)) if not is_missing(raw) else ""  # a terminal's colours
    return text if len(text) <= 600 else text[:599] + "…"


def _runs(inv: Investigation, row: pd.Series, sections: set[str] | None) -> str:
    runs = row["runs"] if isinstance(row["runs"], list) else []
    if runs:
        known = inv.runs.drop_duplicates("run_id").set_index("run_id", drop=False)
        items = []
        for run_id in runs[:12]:
            text = escape(run_name(known.loc[run_id]) if run_id in known.index else run_id)
            if sections is not None and run_id in sections:
                text = f"<a href='#{run_anchor(run_id)}'>{text}</a>"
            items.append(f"<span>{text}</span>")
        if len(runs) > 12:
            items.append(f"<span class='more'>and {len(runs) - 12} more</span>")
        return f"<p class='runs-list'><b>Runs:</b> {''.join(items)}</p>"
    return _seen_in_logs(inv, row)


def _seen_in_logs(inv: Investigation, row: pd.Series) -> str:
    """Where a finding with no run was seen: files, lines and the ids the records carry."""
    evidence = row["evidence"] if isinstance(row["evidence"], dict) else {}
    lines = evidence.get("log_lines") or []
    if not lines:
        return ""
    files = [Path(str(s)).name for s in evidence.get("sources", [])]
    numbers = f"line {min(lines)}" if min(lines) == max(lines) else (
        f"lines {min(lines)}–{max(lines)}")  # fmt: skip
    where = f"{listing(files)}, {numbers}" if files else "the logs"
    ids: dict[str, list[str]] = {}
    logs = inv.evidence.get("logs") if "logs" in inv.evidence else None
    if logs is not None and "fields" in logs.columns:
        cited = logs[logs["line"].isin(lines) & logs["source"].isin(evidence.get("sources", []))]
        for fields in cited["fields"]:
            for key, value in (fields.items() if isinstance(fields, dict) else ()):
                if key in _ID_FIELDS and not is_missing(value):
                    ids.setdefault(key, [])
                    if str(value) not in ids[key]:
                        ids[key].append(str(value))
    named = "; ".join(f"{key.replace('_', ' ')} {listing(values, limit=4)}"
                      for key, values in ids.items())  # fmt: skip
    text = f"Seen in logs ({escape(where)})"
    if named:
        text += f"; the records name {escape(named)}"
    return (f"<p class='runs-list'>{text}. No history in these inputs holds "
            "these records' runs.</p>")


def _divergence(inv: Investigation, row: pd.Series) -> str:
    """A nondeterminism finding's two command sequences, the divergence highlighted.

    The recorded side is the failing run's own history. The new code's side is a run that only
    failing versions ran, whose signals begin with the recorded run's, and whose comparison
    with :func:`toolkit.first_divergence` reproduces the failure the worker reported (same
    expected and actual): its commands are what that code issues for those inputs. Without
    such a run, only the command the failure message names is known, and the card says so.
    """
    import toolkit as tk

    runs = row["runs"] if isinstance(row["runs"], list) else []
    if not runs or "events" not in inv.evidence:
        return ""
    events = inv.evidence["events"]
    recorded = events[events["run_id"] == runs[0]]
    if recorded.empty:
        return ""
    details = inv.evidence.get("nondeterminism_errors", pd.DataFrame())
    mine = details[details["run_id"] == runs[0]] if "run_id" in details else details
    expected, actual = (next(iter(mine[c].dropna()), None) if c in mine else None
                        for c in ("expected", "actual"))  # fmt: skip
    own = set(inv.runs.loc[inv.runs["run_id"] == runs[0], "label"])
    failing = [v for v in row["versions"] if v not in own] if row["versions"] else []
    for twin in _same_signals(inv, recorded, failing)[:5]:
        try:
            found = tk.first_divergence(recorded, events[events["run_id"] == twin])
        except tk.ToolkitError:
            continue
        if found is not None and len(found.aligned) and (found.expected, found.actual) == (
                expected, actual):  # fmt: skip
            return _aligned(found, inv, twin)
    commands = tk.commands(recorded)
    if commands.empty:
        return ""
    hits = commands["activity_type"].eq(expected) if expected is not None else None
    note = (f"<p>The new code issued <code>{escape(actual)}</code> where the history has "
            f"<code>{escape(expected)}</code> (from the failure message). No run of the new "
            "version had the same inputs, so the rest of its sequence is not known.</p>"
            if actual is not None else "")  # fmt: skip
    return (f"<h4>Commands the history recorded ({count(len(commands), 'command')})</h4>"
            + table_html(commands, ["position", "workflow_task", "event_id", "identity"],
                         headers={"identity": "command"}, limit=14, highlight=hits)
            + note)


def _same_signals(inv: Investigation, recorded: pd.DataFrame, labels: list[str]) -> list[str]:
    """Runs only ``labels`` ran, of the same workflow type, whose signals (names and inputs)
    begin with those of ``recorded``: candidates for what the new code does with its inputs."""
    events = inv.evidence["events"]

    def signals(frame: pd.DataFrame) -> list[tuple[Any, str]]:
        got = frame[frame["event_type"] == "WorkflowExecutionSignaled"]
        return [(name, value_html(payload)) for name, payload in
                zip(got["signal_name"], got["input"], strict=True)]  # fmt: skip

    wanted = signals(recorded)
    if not wanted:
        return []
    workflow_type = recorded["workflow_type"].iloc[0]
    runs = inv.runs
    only_new = pd.Series([isinstance(w, list) and bool(w) and set(w) <= set(labels)
                          for w in runs["labels"]], index=runs.index)  # fmt: skip
    candidates = runs[(runs["workflow_type"] == workflow_type) & runs["label"].isin(labels)
                      & ~runs["stuck"].fillna(False).astype(bool) & only_new]  # fmt: skip
    # The recorded run may have stopped early (stuck): its signals begin the other's.
    return [str(run_id) for run_id in candidates["run_id"]
            if signals(events[events["run_id"] == run_id])[: len(wanted)] == wanted]


def divergence_window(found: Any) -> tuple[pd.DataFrame, pd.Series]:
    """A divergence's aligned commands around where they part, and which row that is."""
    aligned = found.aligned
    hit = (aligned["recorded_event_id"].eq(found.event_id) if found.event_id else
           ~aligned["same"].astype(bool)).fillna(False).astype(bool)  # fmt: skip
    if hit.any():
        at = int(hit.to_numpy().nonzero()[0][0])
        aligned, hit = aligned.iloc[max(0, at - 6): at + 4], hit.iloc[max(0, at - 6): at + 4]
    return aligned, hit


def _aligned(found: Any, inv: Investigation, twin: str) -> str:
    aligned, hit = divergence_window(found)
    label = inv.runs.loc[inv.runs["run_id"] == twin, "label"]
    workflow = inv.runs.loc[inv.runs["run_id"] == twin, "workflow_id"]
    who = f"{workflow.iloc[0]} ({label.iloc[0]})" if len(label) else twin
    return (f"<h4>The two command sequences: the recorded history, and the new code as run "
            f"{escape(who)} issued them for the same signals</h4>"
            + table_html(aligned, ["position", "recorded", "recorded_event_id", "replayed"],
                         headers={"recorded": "recorded history", "recorded_event_id": "event",
                                  "replayed": "new code"}, limit=12, highlight=hit)
            + f"<p class='note'>Replaying the recorded history against these commands fails "
              f"with: {escape(found.core_message or 'a mismatch')}</p>")  # fmt: skip


#: Kinds whose evidence needs its own picture, beside the generic parts of the card.
EVIDENCE_RENDERERS: dict[str, Callable[[Investigation, pd.Series], str]] = {
    "nondeterminism": _divergence,
}
