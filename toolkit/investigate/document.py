"""The investigation report as a document a team pastes into a postmortem.

Sections, in reading order: what happened in one sentence, when and the impact; the incident
timeline (:func:`toolkit.plots.plot_incident_timeline`); the findings as cards ranked by severity
(:mod:`toolkit.investigate.cards`); the runs with their status; one section per affected run with
its activity timeline and whatever per-run tables the investigation holds (:data:`RUN_TABLES`);
the files left out and why. :func:`summary_html` is the part a notebook shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from toolkit.investigate.cards import card, run_anchor, run_name
from toolkit.investigate.html import badge, escape, figure_html, table_html
from toolkit.text import count, duration, is_missing, listing, span, when

if TYPE_CHECKING:
    from toolkit.investigate.report import Investigation

__all__ = ["RUN_TABLES", "document_html", "summary_html"]

#: Per-run tables of a run's section, in order: evidence table -> (heading, columns or None for
#: every column with a value, which rows to show or None for all). A table the investigation
#: does not hold is left out; one with a ``run_id`` column is cut to the run's rows.
RUN_TABLES: dict[str, tuple[str, list[str] | None, Callable[[pd.DataFrame], Any] | None]] = {
    "activities": ("Activities", ["activity_type", "attempt", "outcome", "retry_state",
                                  "failure_message", "scheduled_time", "total_duration"], None),
    "workflow_tasks": ("Workflow tasks that failed or timed out",
                       ["workflow_task", "outcome", "cause", "failure_message", "identity",
                        "closed_time"], lambda t: t["outcome"] != "completed"),
    "tokens_per_turn": ("Tokens per turn (the provider's own counts)",
                        ["turn", "calls", "calls_with_usage", "input_tokens", "output_tokens",
                         "total_tokens", "failed_calls", "retried_attempts"], None),
    "agent_steps": ("Agent turns and model steps", ["turn", "trigger", "step", "model_activity",
                                                    "listings_before", "tool_calls", "status",
                                                    "failure"], None),
    # tk.model_calls, once the investigation holds it as evidence["model_calls"]
    "model_calls": ("Model calls and their tokens", ["turn", "step", "agent", "model", "outcome",
                                                     "input_tokens", "output_tokens",
                                                     "total_tokens", "usage_note"], None),
}  # fmt: skip
#: Runs given a section of their own at most (each draws a chart), affected runs first.
MAX_RUN_SECTIONS = 8
_MAX_RUNS_TABLE = 200


#: Findings whose runs count as the incident's impact (a medium or low finding, such as a
#: change in tool listings between versions, is evidence about runs, not damage to them).
IMPACT_SEVERITIES = ("critical", "high")


def _touched(inv: Investigation, severities: tuple[str, ...] | None = None) -> list[str]:
    """Run ids the findings (of ``severities``) touch, most severe finding first."""
    out: list[str] = []
    findings = inv.findings
    if severities is not None and len(findings):
        findings = findings[findings["severity"].isin(severities)]
    for runs in findings["runs"] if len(findings) else []:
        out += [r for r in runs if r not in out]
    return out


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    """A boolean column that may be absent or hold unknowns (an investigation built by hand)."""
    if column not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame[column].fillna(False).astype(bool)


def _facts(inv: Investigation) -> str:
    runs, findings = inv.runs, inv.findings
    affected = _touched(inv, IMPACT_SEVERITIES)
    touched = _touched(inv)
    times = pd.concat([findings["first_seen"], findings["last_seen"]]) if len(findings) else \
        pd.Series(dtype="datetime64[ns, UTC]")  # fmt: skip
    times = times.dropna()
    if times.empty and len(runs):
        times = pd.concat([runs["start"], runs["close"]]).dropna()
    when_text = span(times.min(), times.max()) if len(times) else "unknown time"
    mine = runs[runs["run_id"].isin(affected)] if len(runs) else runs
    states = [f"{int(_flag(mine, 'open').sum())} open", f"{int(_flag(mine, 'stuck').sum())} "
              f"stuck", f"{int((mine['status'] == 'failed').sum())} failed"] if len(mine) else []
    impact = (f"{count(len(mine), 'run')} affected of {len(runs):,}"
              + (f" ({', '.join(states)})" if states else ""))
    if len(touched) > len(affected):
        impact += f"; {len(touched):,} touched by a finding of any severity"
    versions = [v for vs in findings["versions"] for v in vs] if len(findings) else []
    read = [count(inv.inputs.get("history_files", 0), "history file"),
            count(len(runs), "run")]  # fmt: skip
    if inv.inputs.get("log_lines"):
        read.append(count(inv.inputs["log_lines"], "log record"))
    left = inv.errors["status"].value_counts() if len(inv.errors) else pd.Series(dtype=int)
    if len(left):
        read.append(", ".join(f"{count(n, 'file')} {s}" for s, n in left.items())
                    + " (see <a href='#left-out'>left out</a>)")
    rows = [("When", escape(when_text)), ("Impact", escape(impact)),
            ("Versions", escape(listing(dict.fromkeys(versions), limit=6,
                                        missing="no version named by a finding"))),
            ("Read", ", ".join(escape(r) if "<a" not in r else r for r in read))]  # fmt: skip
    if inv.label_note:
        rows.append(("Labels", escape(inv.label_note[0].upper() + inv.label_note[1:] + ".")))
    return "<dl class='facts'>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def _timeline(inv: Investigation) -> str:
    if inv.runs.empty:
        return ""
    from toolkit.plots.incident import plot_incident_timeline

    events = inv.evidence.get("events")
    figure = plot_incident_timeline(inv.runs, events, inv.findings)
    return figure_html(figure, "Incident timeline: runs by version label",
                       "Each bar is a run, from its start to its close, in the lane of its "
                       "version label; marks show failed workflow tasks, failed activity "
                       "attempts and terminations.")


def _cards(inv: Investigation, sections: set[str] | None) -> str:
    if not len(inv.findings):
        return "<p>No findings: nothing in these inputs looks wrong.</p>"
    steps: dict[str, int] = {}
    return "".join(card(inv, row, number, steps, sections)
                   for number, (_, row) in enumerate(inv.findings.iterrows(), 1))


def summary_html(inv: Investigation, *, sections: set[str] | None = None) -> str:
    """The head of the report: headline, facts, timeline and the finding cards."""
    return ("<h1>Incident report</h1>"
            f"<p class='headline'>{escape(inv.headline())}</p>{_facts(inv)}"
            + _timeline(inv)
            + f"<h2 id='findings'>{count(len(inv.findings), 'finding')}, most severe first</h2>"
            + _cards(inv, sections))  # fmt: skip


def _runs_table(inv: Investigation, affected: list[str], sections: set[str]) -> str:
    runs = inv.runs.copy()
    runs["_affected"] = ~runs["run_id"].isin(affected)
    runs = runs.sort_values(["_affected", "start"], kind="stable")
    runs["duration"] = runs["close"].fillna(runs["start"]) - runs["start"]
    runs["_stuck"] = _flag(runs, "stuck")

    def run_cell(row: pd.Series) -> str:
        text = escape(run_name(row))
        if row["run_id"] in sections:
            text = f"<a href='#{run_anchor(row['run_id'])}'>{text}</a>"
        return text

    def status_cell(row: pd.Series) -> str:
        return badge("stuck" if row["_stuck"] else str(row["status"]))

    def duration_cell(row: pd.Series) -> str:
        if is_missing(row["close"]):
            return "still open"
        return escape(duration(row["duration"]))

    quiet = int(runs["_affected"].sum())
    more = f"({count(quiet, 'run')} that no finding touches)" if quiet else ""
    return table_html(runs, ["workflow_id", "workflow_type", "label", "status", "start",
                             "duration", "events", "failed_workflow_tasks"],
                      limit=_MAX_RUNS_TABLE,
                      headers={"workflow_id": "run", "label": "version", "start": "started",
                               "failed_workflow_tasks": "failed tasks"},
                      cells={"workflow_id": run_cell, "status": status_cell,
                             "duration": duration_cell}, more=more)  # fmt: skip


def _run_section(inv: Investigation, run: pd.Series, numbers: dict[str, list[int]]) -> str:
    status = "stuck" if run["stuck"] is True else str(run["status"])
    title = run_name(run)
    facts = [("Run id", escape(run["run_id"])), ("Workflow type", escape(run["workflow_type"])),
             ("Version", escape(run["label"])),
             ("Workers", escape(listing(run["labels"], limit=4))),
             ("Started", escape(when(run["start"]))),
             ("Closed", escape(when(run["close"], missing="still open"))),
             ("Events", escape(f"{int(run['events']):,}"))]  # fmt: skip
    if isinstance(run["stuck_reason"], str):
        facts.append(("Stuck", escape(run["stuck_reason"])))
    found = numbers.get(run["run_id"], [])
    if found:
        facts.append(("Findings", ", ".join(f"<a href='#finding-{n}'>{n}</a>" for n in found)))
    parts = [f"<section class='run' id='{run_anchor(run['run_id'])}'>"
             f"<h3>{badge(status)}<span>{escape(title)}</span></h3><dl class='facts'>"
             + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"]  # fmt: skip
    events = inv.evidence.get("events")
    if events is not None:
        mine = events[(events["source"] == run["source"]) & (events["history"] == run["history"])]
        parts.append(_activity_chart(mine, title))
    for name, (heading, columns, rows) in RUN_TABLES.items():
        if name not in inv.evidence:
            continue
        table = inv.evidence[name]
        if not isinstance(table, pd.DataFrame) or table.empty:
            continue
        if {"source", "history"} <= set(table.columns):
            table = table[(table["source"] == run["source"]) & (table["history"] == run["history"])]
        elif "run_id" in table.columns:
            table = table[table["run_id"] == run["run_id"]]
        else:
            continue
        if rows is not None and len(table):
            table = table[rows(table)]
        if len(table):
            chosen = [c for c in columns if c in table.columns] if columns else None
            parts.append(f"<h4>{escape(heading)}</h4>" + table_html(
                table, chosen, limit=15, more=f"in inv.evidence[{name!r}]"))
    parts.append("</section>")
    return "".join(parts)


def _activity_chart(events: pd.DataFrame, title: str) -> str:
    if events.empty or not (events["event_type"] == "ActivityTaskScheduled").any():
        return "<p class='note'>No activity in this run.</p>"
    from toolkit.errors import ToolkitError
    from toolkit.plots import plot_activity_timeline

    try:
        figure = plot_activity_timeline(events, title=f"Activities of {title}")
    except ToolkitError as exc:
        return f"<p class='note'>No activity timeline: {escape(exc)}</p>"
    return figure_html(figure, f"Activities of {title}")


def _left_out(inv: Investigation) -> str:
    errors = inv.errors
    if errors.empty:
        return ""
    ordered = errors.assign(_failed=errors["status"] != "failed").sort_values(
        ["_failed", "source"], kind="stable")
    counts = errors["status"].value_counts()
    said = listing([count(n, "file") + f" {s}" for s, n in counts.items()])
    return (f"<h2 id='left-out'>Files left out</h2><p>{escape(said)}: nothing in this report "
            "comes from them.</p>"
            + table_html(ordered, ["source", "kind", "status", "reason"], limit=100,
                         cells={"status": lambda r: badge(str(r["status"]),
                                                          "failed" if r["status"] == "failed"
                                                          else "low")}))  # fmt: skip


def document_html(inv: Investigation) -> str:
    """The whole report's body (:func:`toolkit.investigate.html.page` wraps it)."""
    affected = _touched(inv, IMPACT_SEVERITIES) or _touched(inv)
    runs = inv.runs.drop_duplicates("run_id")
    chosen = [r for r in affected if r in set(runs["run_id"])][:MAX_RUN_SECTIONS]
    sections = set(chosen)
    numbers: dict[str, list[int]] = {}
    for number, found in enumerate(inv.findings["runs"] if len(inv.findings) else [], 1):
        for run_id in found:
            numbers.setdefault(run_id, []).append(number)
    toc = ["<a href='#findings'>Findings</a>", "<a href='#runs'>Runs</a>"]
    if chosen:
        toc.append("<a href='#affected'>Affected runs</a>")
    if len(inv.errors):
        toc.append("<a href='#left-out'>Files left out</a>")
    by_id = runs.set_index("run_id")
    body = [summary_html(inv, sections=sections).replace(
        "</dl>", f"</dl><nav class='toc'>{''.join(toc)}</nav>", 1)]
    body.append(f"<h2 id='runs'>{count(len(inv.runs), 'run')}</h2>"
                + _runs_table(inv, affected, sections))
    if chosen:
        skipped = len(affected) - len(chosen)
        body.append("<h2 id='affected'>Affected runs</h2>"
                    + (f"<p class='note'>The first {len(chosen)} of {len(affected)} affected "
                       f"runs; the {skipped} others are in the runs table.</p>" if skipped
                       else ""))  # fmt: skip
        body += [_run_section(inv, pd.concat([by_id.loc[r], pd.Series({"run_id": r})]),
                              numbers) for r in chosen]  # fmt: skip
    body.append(_left_out(inv))
    body.append("<p class='note'>Every table of this report is a DataFrame in "
                "<code>inv.evidence</code>.</p>")
    return "".join(body)
