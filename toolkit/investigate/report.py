"""The :class:`Investigation`: runs, findings, evidence, figures, and the report written from them.

``_repr_html_`` shows it in Jupyter, :meth:`Investigation.to_html` writes one self-contained file
(charts embedded as base64 PNG, no network needed to open it), :meth:`Investigation.to_markdown`
a postmortem skeleton for a person to complete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.investigate.findings import SEVERITIES
from toolkit.text import count, listing
from toolkit.text import when as when_text

__all__ = ["Investigation", "LazyTables"]


class LazyTables(Mapping[str, Any]):
    """A mapping whose values are computed on first access (evidence tables, figures).

    Building every table of a large investigation up front would cost more than the findings
    need; each is built once, when someone looks at it.
    """

    def __init__(self, builders: Mapping[str, Callable[[], Any]]) -> None:
        self._builders = dict(builders)
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            self._built[name] = self._builders[name]()
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)

    def __repr__(self) -> str:
        return f"LazyTables({sorted(self._builders)})"


@dataclass
class Investigation:
    """What :func:`toolkit.investigate` found.

    Attributes
    ----------
    runs : pandas.DataFrame
        One row per run (:data:`toolkit.investigate.labels.RUN_COLUMNS`): ``source``,
        ``history``, ``workflow_type``, ``workflow_id``, ``run_id``, ``status`` (``running``,
        ``completed``, ``failed``, ...), ``start``, ``close``, ``label`` (the version label),
        ``label_source`` (``deployment``, ``build_id``, ``sdk``, ``binary_checksum``, ``none``,
        ``sidecar``, ``versions``), ``labels`` (every worker version that ran a task),
        ``failed_labels``, ``events``, ``failed_workflow_tasks``, ``open``, ``stuck``,
        ``stuck_reason``.
    findings : pandas.DataFrame
        One row per finding, ranked by severity then runs affected: ``kind``, ``severity``,
        ``title``, ``runs`` (run ids), ``run_count``, ``first_seen``, ``last_seen``,
        ``versions``, ``evidence`` (the evidence table's name and the sources, event ids and
        log lines behind it), ``explanation``, ``next_step``, ``confidence``.
    evidence : Mapping[str, pandas.DataFrame]
        Tables built on first access: ``runs``, ``activities``, ``workflow_tasks``,
        ``nondeterminism_errors``, ``agent_steps``, ``listings_per_turn``, ``listing_summary``,
        and with logs ``logs``, ``duplicate_tools``, ``retries``, ``dead_letters``,
        ``correlations``; with configs ``mcp_endpoints``; with workflows ``replay``.
    figures : Mapping[str, matplotlib.figure.Figure]
        Charts built on first access (``listings_per_turn`` for agent runs).
    errors : pandas.DataFrame
        Every input left out: ``source``, ``kind`` (history, logs, config), ``status``
        (``skipped``: not a history, with what it is; ``failed``: could not be read) and
        ``reason``.
    label_note : str
        How far the labels tell versions apart (see :mod:`toolkit.histories.versions`).
    """

    runs: pd.DataFrame
    findings: pd.DataFrame
    evidence: Mapping[str, Any]
    figures: Mapping[str, Any]
    errors: pd.DataFrame
    label_note: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """One paragraph: what was read and what was found."""
        statuses = self.errors["status"].value_counts() if len(self.errors) else pd.Series()
        runs = self.runs
        opened = int(runs["open"].sum()) if len(runs) else 0
        stuck = int(runs["stuck"].sum()) if len(runs) else 0
        labels = runs["label"].nunique() if len(runs) else 0
        left_out = [
            f"{count(statuses[status], 'file')} {what}"
            for status, what in (("skipped", "skipped (not histories)"),
                                 ("failed", "failed to load"))
            if statuses.get(status, 0)
        ]  # fmt: skip
        read = f"{count(len(runs), 'run')} ({opened} open, {stuck} stuck) under " + count(
            labels, "version label"
        )
        if self.inputs.get("log_lines"):
            read += f", {count(self.inputs['log_lines'], 'log record')}"
        return f"{read}; {listing(left_out, missing='no file left out')}. Found: {self._found()}."

    def _found(self, findings: pd.DataFrame | None = None) -> str:
        """``7 findings (2 critical, 4 high, 1 medium)``, or ``nothing``."""
        findings = self.findings if findings is None else findings
        if not len(findings):
            return "nothing"
        severities = findings["severity"].value_counts()
        parts = [f"{severities[s]} {s}" for s in SEVERITIES if severities.get(s, 0)]
        return f"{count(len(findings), 'finding')} ({', '.join(parts)})"

    def headline(self) -> str:
        """What happened, in one sentence: the most severe findings' titles, then how many more.

        The first line of the report, of the notebook's display and of ``toolkit investigate``.
        """
        if not len(self.findings):
            read = [count(len(self.runs), "run")]
            if self.inputs.get("log_lines"):
                read.append(count(self.inputs["log_lines"], "log record"))
            return f"Nothing went wrong that these inputs show ({listing(read)} read)."
        top = self.findings["severity"].iloc[0]
        leading = self.findings[self.findings["severity"] == top].head(2)
        sentence = "; ".join(_lower_first(t, i) for i, t in enumerate(leading["title"]))
        rest = self.findings.iloc[len(leading) :]
        if len(rest):
            sentence += f"; and {self._found(rest).replace('finding', 'more finding', 1)}"
        return sentence.rstrip(".") + "."

    def __repr__(self) -> str:
        lines = [f"Investigation: {self.summary()}"]
        for row in self.findings.itertuples():
            lines.append(f"  [{row.severity}] {row.kind}: {row.title}")
        return "\n".join(lines)

    # -- HTML ---------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        """In a notebook: the report's head (headline, facts, timeline, finding cards)."""
        from toolkit.investigate.document import summary_html
        from toolkit.investigate.html import css

        return f"<div class='tkr'><style>{css()}</style>{summary_html(self)}</div>"

    def to_html(self, path: str | Path | None = None) -> str:
        """The report as one self-contained HTML page; written to ``path`` when given.

        An incident document: what happened in one sentence, when and the impact; the incident
        timeline; the findings as cards ranked by severity, each with its evidence (log lines,
        events, table rows), the runs it touches and its next step; the runs with their status;
        a section per affected run with its activity timeline; the files left out. Styles and
        charts are inline (no network needed), it prints, and it reads on a phone.
        """
        from toolkit.investigate.document import document_html
        from toolkit.investigate.html import page

        text = page(f"Incident report: {self.headline()}", document_html(self))
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text, encoding="utf-8")
        return text

    # -- Markdown -----------------------------------------------------------------------------
    def to_markdown(self) -> str:
        """A postmortem skeleton: summary, timeline, impact, root causes, evidence, fix checks."""
        lines = [
            "# Postmortem: <title>",
            "",
            "## Summary",
            "",
            self.headline(),
            "",
            self.summary(),
            "",
            "<what happened, in two sentences>",
            "",
            "## Timeline (UTC)",
            "",
        ]
        events = [
            (row.first_seen, f"first seen: [{row.kind}] {row.title}")
            for row in self.findings.itertuples()
            if pd.notna(row.first_seen)
        ]
        events += [
            (row.last_seen, f"last seen: [{row.kind}] {row.title}")
            for row in self.findings.itertuples()
            if pd.notna(row.last_seen) and row.last_seen != row.first_seen
        ]
        for when, text in sorted(events, key=lambda item: item[0]):
            lines.append(f"- {when_text(when, zone=False)} {text}")
        lines += [
            "",
            "## Impact",
            "",
            f"- runs examined: {len(self.runs)}; stuck: "
            f"{int(self.runs['stuck'].sum()) if len(self.runs) else 0}",
            f"- versions: {', '.join(self.runs['label'].unique()) if len(self.runs) else ''}",
            "- <users / requests affected>",
            "",
            "## Root cause candidates",
            "",
        ]
        for index, row in enumerate(self.findings.itertuples(), 1):
            lines += [
                f"{index}. **[{row.severity}] {row.title}** ({row.kind}, "
                f"{count(row.run_count, 'run') if row.run_count else 'seen in logs'}; "
                f"confidence: {row.confidence})",
                f"   - {row.explanation}",
                f"   - next step: {row.next_step}",
            ]
        if not len(self.findings):
            lines.append("- none found in these inputs")
        lines += ["", "## Evidence", ""]
        for row in self.findings.itertuples():
            lines.append(f"- {row.kind}: {_evidence_text(row.evidence)}")
        if self.label_note:
            lines.append(f"- version labels: {self.label_note}")
        lines += [
            "",
            "## Fix checks",
            "",
            "- [ ] replay the affected histories with the fixed code "
            "(`tk.replay_histories(paths, [Workflow])`): no nondeterminism",
            "- [ ] stuck runs progress (or were reset) after the fix",
            "- [ ] the error signatures above no longer appear in the worker logs",
            "- [ ] <a test or alert that would have caught this>",
            "",
        ]
        return "\n".join(lines)


def _lower_first(text: str, index: int) -> str:
    """A title inside a sentence: the first letter lower-cased after the first title, unless
    the title starts with a name (``LabAdkAgent``, ``MCP``)."""
    if index == 0 or not text or text.split(" ", 1)[0][1:].lower() != text.split(" ", 1)[0][1:]:
        return text
    return text[0].lower() + text[1:]


def _evidence_text(evidence: Mapping[str, Any]) -> str:
    parts = []
    for key, value in evidence.items():
        if isinstance(value, list):
            shown = ", ".join(map(str, value[:8])) + (
                f", ... ({len(value)})" if len(value) > 8 else ""
            )
            parts.append(f"{key}=[{shown}]")
        else:
            parts.append(f"{key}={value}")
    return "; ".join(parts)
