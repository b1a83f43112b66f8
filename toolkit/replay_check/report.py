"""A :class:`~toolkit.replay_check.ReplayCheck` as an investigation, so that the check's page is
the investigation report's: one finding per group of failures (a replay kind, ranked by the open
runs it would break), the runs, and the check's tables as evidence.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit.investigate.cards import EVIDENCE_RENDERERS, TABLE_COLUMNS, divergence_window
from toolkit.investigate.findings import finding, rank
from toolkit.investigate.html import escape, table_html
from toolkit.investigate.labels import RUN_COLUMNS, label_note
from toolkit.investigate.report import Investigation, LazyTables
from toolkit.text import count, listing

__all__ = ["investigation", "replay_check_findings"]

_NEXT_STEP = (
    "Do not deploy this code to these runs' task queue as it is: guard the change "
    "(workflow.patched() in Python, GetVersion in Go), pin the open runs to their build with "
    "Worker Versioning, or let them finish first; then run the check again."
)


def _title(group: Any) -> str:
    broken = [count(n, f"{kind} run") for n, kind in ((group.open, "open"), (group.closed,
              "closed")) if n]  # fmt: skip
    check = group.check if isinstance(group.check, str) else ""
    if group.outcome == "nondeterminism" and check in {"kind", "missing_command"}:
        issued = group.actual if isinstance(group.actual, str) else "nothing"
        what = f"where the history has {group.expected}, the new code issues {issued}"
    elif group.outcome == "nondeterminism" and check:
        what = (f"{check} {group.expected!r} in the history, {group.actual!r} from the new code "
                f"({group.event_type})")  # fmt: skip
    else:
        what = str(group.message or group.outcome).splitlines()[0][:160]
    return f"{listing(broken)} would break on replay: {what}"


def replay_check_findings(check: Any) -> list[dict[str, Any]]:
    """Finding rows (:data:`toolkit.investigate.findings.FINDING_COLUMNS`) of a check: one per
    group of failures (kind ``replay_nondeterminism`` or ``replay_failure``; critical when it
    breaks open runs), and one for the histories it could not read (``not_checked``)."""
    results = check.results
    rows = []
    for group in check.groups.itertuples():
        members = results[results["group"] == group.group]
        rows.append(finding(
            "replay_nondeterminism" if group.outcome == "nondeterminism" else "replay_failure",
            "critical" if group.open else "high", _title(group),
            runs=group.runs, times=members["start"], versions=group.labels,
            evidence={"table": "replay_check", "sources": members["source"].tolist(),
                      "event_ids": group.event_ids, "open_runs": group.open_runs,
                      "example": int(members["history"].iloc[0])},
            explanation=f"{group.explanation or ''} The Replayer: {group.message}".strip(),
            next_step=_NEXT_STEP, confidence="replayer",
        ))  # fmt: skip
    unreadable = results[results["reason"].fillna("").str.startswith("unreadable")]
    if len(unreadable):
        rows.append(finding(
            "not_checked", "medium",
            f"{count(len(unreadable), 'history', 'histories')} could not be read and were not "
            "checked", evidence={"table": "replay_check", "sources": unreadable["source"].tolist()},
            explanation="; ".join(unreadable["reason"].head(5)),
            next_step="Export these runs again (temporal workflow show -o json) and re-run.",
        ))  # fmt: skip
    return rows


def _runs(check: Any) -> pd.DataFrame:
    runs = check.runs.reindex(columns=RUN_COLUMNS) if len(check.runs) else pd.DataFrame(
        columns=RUN_COLUMNS)  # fmt: skip
    outcome = check.results.set_index("history")["outcome"]
    return runs.assign(replay=[outcome.get(h) for h in runs["history"]])


def _errors(check: Any) -> pd.DataFrame:
    skipped = check.results[check.results["outcome"] == "skipped"]
    return pd.DataFrame({
        "source": skipped["source"], "kind": "history",
        "status": ["failed" if r.startswith("unreadable") else "skipped"
                   for r in skipped["reason"]],
        "reason": skipped["reason"],
    }).reset_index(drop=True)  # fmt: skip


def _replayed_commands(inv: Investigation, row: pd.Series) -> str:
    """A replay finding's two command sequences, from the replay itself: the group's first
    history, and the commands the new code issued when the Replayer ran it."""
    evidence = row["evidence"] if isinstance(row["evidence"], dict) else {}
    found = inv.evidence.get("replay_divergences", {}).get(evidence.get("example"))
    if found is None or not len(found.aligned):
        return ""
    aligned, hit = divergence_window(found)
    results = inv.evidence["replay_check"]
    name = results.loc[results["history"] == evidence["example"], "workflow_id"].iloc[0]
    return (f"<h4>The recorded history of {escape(name)} and the commands the new code "
            "issued replaying it</h4>"
            + table_html(aligned, ["position", "recorded", "recorded_event_id", "replayed"],
                         headers={"recorded": "recorded history", "recorded_event_id": "event",
                                  "replayed": "new code"}, limit=12, highlight=hit))  # fmt: skip


# The report's registries (additive): how a replay check's cards show their evidence.
EVIDENCE_RENDERERS.setdefault("replay_nondeterminism", _replayed_commands)
TABLE_COLUMNS.setdefault("replay_check", ["workflow_id", "run_id", "open", "label", "outcome",
                                          "event_id", "check", "expected", "actual"])


def investigation(check: Any) -> Investigation:
    """The :class:`~toolkit.investigate.report.Investigation` of a check (its report is the
    check's page): runs, findings, evidence ``replay_check`` (the results), ``replay_groups``,
    ``replay_chains``, and the histories not checked as ``errors``."""
    runs = _runs(check)
    evidence = LazyTables({"replay_check": lambda: check.results, "replay_groups": lambda:
                           check.groups, "replay_chains": lambda: check.chains,
                           "runs": lambda: runs,
                           "replay_divergences": lambda: check.divergences})  # fmt: skip
    return Investigation(
        runs=runs, findings=rank(replay_check_findings(check)), evidence=evidence,
        figures=LazyTables({}), errors=_errors(check),
        label_note=label_note(runs) if len(runs) else "",
        inputs={"history_files": check.results["source"].nunique(), "replay_check":
                check.summary()},
    )  # fmt: skip
