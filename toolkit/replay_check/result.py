"""The :class:`ReplayCheck`: one row per history, the failures grouped, the verdict for CI."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["RESULT_COLUMNS", "ReplayCheck"]

#: Columns of :attr:`ReplayCheck.results`, in order.
RESULT_COLUMNS = [
    "history", "source", "position", "namespace", "workflow_id", "workflow_id_from", "run_id",
    "workflow_type", "label", "label_source", "status", "open", "start", "chain",
    "chain_position",
    "events", "replayed_events", "trimmed", "tasks", "outcome", "reason", "error_type",
    "message", "core_message", "event_id", "event_type", "check", "expected", "actual",
    "explanation", "group", "seconds",
]  # fmt: skip

_BREAKING = ("nondeterminism", "failed")


@dataclass
class ReplayCheck:
    """What :func:`toolkit.replay_check` found: would the new code replay these histories?

    Attributes
    ----------
    results : pandas.DataFrame
        One row per history, in input order (:data:`RESULT_COLUMNS`):

        ============================  ==========================================================
        ``history``                   position in the check (0-based, input order)
        ``source``, ``position``      the file (or ``temporal://ns/id/run``) and the history's
                                      index inside it
        ``namespace``                 where the source says it
        ``workflow_id``               the id the history was replayed under; ``workflow_id_from``
                                      says where it came from: ``history`` (its started
                                      event), ``source`` (container, server, path rule) or
                                      ``file name`` (a guess: code building ids from it may then
                                      fail here only)
        ``run_id``, ``workflow_type``
        ``label``, ``label_source``   the version label of the code that recorded it (worker
                                      deployment version, build id, SDK; see
                                      :mod:`toolkit.histories.versions`)
        ``status``, ``open``          ``running``/``completed``/...; open: still running
        ``start``                     when the run started (UTC)
        ``chain``, ``chain_position`` the continue-as-new chain (first execution run id) and the
                                      run's place in it among the checked runs (0 first)
        ``events``                    events in the history; ``replayed_events`` those replayed
                                      (an open run is cut after its last completed workflow
                                      task, ``trimmed`` events later); ``tasks`` completed
                                      workflow tasks replayed
        ``outcome``                   ``ok``, ``nondeterminism``, ``failed`` (another replay
                                      failure: the code raised, a time limit) or ``skipped``
                                      (not checked: ``reason`` says why)
        ``error_type``, ``message``   the Replayer's exception type and whole text
        ``core_message``              the failure's own message (``[TMPRL1100] ...``)
        ``event_id``, ``event_type``  the recorded event where replay fails
        ``check``, ``expected``,      what differs: the comparison, the recorded value and the
        ``actual``                    new code's (from the commands the code issued)
        ``explanation``               a sentence saying it
        ``group``                     the row of :attr:`groups` (failures only)
        ``seconds``                   replay time
        ============================  ==========================================================
    groups : pandas.DataFrame
        Failures grouped by what differs (:data:`toolkit.replay_check.groups.GROUP_COLUMNS`),
        with the open and closed runs each would break and the version labels affected; groups
        with open runs first.
    chains : pandas.DataFrame
        One row per continue-as-new chain (:data:`toolkit.replay_check.groups.CHAIN_COLUMNS`).
    runs : pandas.DataFrame
        The readable histories as :func:`toolkit.investigate` tabulates runs
        (:data:`toolkit.investigate.labels.RUN_COLUMNS`; ``history`` is the results' row).
    code : dict
        What replayed: ``workflows`` (specs), ``types`` (workflow types they define),
        ``python`` (the interpreter), ``temporalio`` (its release), ``workers``.
    divergences : dict
        Result row (``history``) -> the :class:`toolkit.Divergence` of each explained failure:
        the recorded commands beside those the code issued (``aligned``), Go's and Java's
        wording.
    """

    results: pd.DataFrame
    groups: pd.DataFrame
    chains: pd.DataFrame
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    code: dict[str, Any] = field(default_factory=dict)
    divergences: dict[int, Any] = field(default_factory=dict, repr=False)

    # -- the verdict -----------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Histories per outcome, and the open ones that would break."""
        outcomes = self.results["outcome"]
        breaking = self.results[outcomes.isin(_BREAKING)]
        return {
            "histories": len(self.results),
            **{name: int((outcomes == name).sum()) for name in
               ("ok", "nondeterminism", "failed", "skipped")},
            "open_breaking": int(breaking["open"].sum()),
            "unreadable": int(self.results["reason"].fillna("").str.startswith("unreadable").sum()),
        }  # fmt: skip

    @property
    def exit_code(self) -> int:
        """0: every checked history replays (histories of other workflow types are skipped and
        listed); 1: some would break, or some could not be read; 2: nothing was checked."""
        counts = self.counts()
        if counts["ok"] + counts["nondeterminism"] + counts["failed"] == 0:
            return 2
        if counts["nondeterminism"] or counts["failed"] or counts["unreadable"]:
            return 1
        return 0

    @property
    def ok(self) -> bool:
        """Whether the deploy may go ahead (:attr:`exit_code` is 0)."""
        return self.exit_code == 0

    def assert_replays(self) -> None:
        """Raise ``AssertionError`` unless :attr:`exit_code` is 0, saying what would break
        (open runs first, with the explanation and the Replayer's words), what could not be
        read, or that nothing was checked (for a test suite)."""
        if self.exit_code == 0:
            return
        lines = [self.summary()]
        for row in self.groups.itertuples():
            lines.append(f"- {row.open} open / {row.closed} closed runs "
                         f"({', '.join(map(str, row.labels))}): "
                         f"{row.explanation or row.outcome}\n  the Replayer: {row.message}")
        unread = self.results[self.results["reason"].fillna("").str.startswith("unreadable")]
        lines += [f"- not checked: {reason}" for reason in unread["reason"]]
        raise AssertionError("\n".join(lines))

    def summary(self) -> str:
        """One paragraph: what was checked, what would break, what was not checked."""
        c = self.counts()
        if c["histories"] == 0:
            return "No histories to check."
        broken = c["nondeterminism"] + c["failed"]
        text = (f"{c['histories']} histories: {c['ok']} replay with the new code, {broken} would "
                f"break ({c['nondeterminism']} nondeterminism, {c['failed']} other failures; "
                f"{c['open_breaking']} of them open runs)")  # fmt: skip
        if c["skipped"]:
            reasons = self.results.loc[self.results["outcome"] == "skipped", "reason"]
            kinds = reasons.str.split(":").str[0].value_counts()
            text += f", {c['skipped']} not checked (" + ", ".join(
                f"{n} {k}" for k, n in kinds.items()) + ")"
        if len(self.groups):
            text += f"; {len(self.groups)} distinct failure{'s' * (len(self.groups) != 1)}"
        verdict = {0: "safe to deploy for these runs", 1: "do not deploy as it is",
                   2: "nothing was checked"}[self.exit_code]  # fmt: skip
        return f"{text}. Verdict: {verdict}."

    def __repr__(self) -> str:
        lines = [f"ReplayCheck: {self.summary()}"]
        for row in self.groups.itertuples():
            what = row.explanation or row.message
            lines.append(f"  [{row.open} open / {row.closed} closed] {what}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from toolkit.replay_check.report import investigation

        return investigation(self)._repr_html_()

    # -- outputs ---------------------------------------------------------------------------
    def to_html(self, path: str | Path | None = None) -> str:
        """The check as the investigation report (one self-contained page; written to
        ``path`` when given): a finding per group of failures, the runs, the evidence tables."""
        from toolkit.replay_check.report import investigation

        return investigation(self).to_html(path)

    def to_junit(self, path: str | Path | None = None) -> str:
        """JUnit XML for CI: one test suite per workflow type, one test case per history
        (a failure with the explanation and the Replayer's text, or skipped with the reason);
        written to ``path`` when given."""
        suites = ET.Element("testsuites", name="replay-check")
        by_type = self.results.groupby(
            self.results["workflow_type"].fillna("(unknown type)"), sort=False
        )
        for workflow_type, rows in by_type:
            suite = ET.SubElement(suites, "testsuite", name=f"replay {workflow_type}")
            counts = rows["outcome"].value_counts()
            suite.set("tests", str(len(rows)))
            suite.set("failures", str(int(counts.get("nondeterminism", 0))))
            suite.set("errors", str(int(counts.get("failed", 0))))
            suite.set("skipped", str(int(counts.get("skipped", 0))))
            suite.set("time", f"{rows['seconds'].fillna(0).sum():.3f}")
            for row in rows.to_dict("records"):
                _test_case(suite, row)
        ET.indent(suites)
        text = ET.tostring(suites, encoding="unicode", xml_declaration=True)
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def records(self) -> list[dict[str, Any]]:
        """The results as JSON-ready dicts (missing values as None), in order."""
        frame = self.results.astype(object).where(self.results.notna(), None)
        return [
            {k: (v if not isinstance(v, Mapping) else dict(v)) for k, v in row.items()}
            for row in frame.to_dict("records")
        ]


def _test_case(suite: ET.Element, row: dict[str, Any]) -> None:
    name = f"{row['workflow_id'] or row['source']} {row['run_id'] or ''}".strip()
    case = ET.SubElement(suite, "testcase", name=name, classname=str(row["label"] or "unlabelled"),
                         file=str(row["source"]), time=f"{row['seconds'] or 0:.3f}")  # fmt: skip
    properties = ET.SubElement(case, "properties")
    for key in ("open", "status", "event_id", "group"):
        if row.get(key) is not None and not (isinstance(row[key], float) and pd.isna(row[key])):
            ET.SubElement(properties, "property", name=key, value=str(row[key]))
    if row["outcome"] in _BREAKING:
        tag = "failure" if row["outcome"] == "nondeterminism" else "error"
        open_run = "open run " if row["open"] else ""
        summary = row["explanation"] or row["core_message"] or row["message"] or row["outcome"]
        element = ET.SubElement(case, tag, type=str(row["error_type"] or row["outcome"]),
                                message=f"{open_run}{summary}"[:2000])  # fmt: skip
        element.text = str(row["message"] or "")
    elif row["outcome"] == "skipped":
        ET.SubElement(case, "skipped", message=str(row["reason"] or "not checked"))
