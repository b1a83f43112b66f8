"""The runs of an investigation, one row each, with the version label that compares them.

Labels come from the history itself (:mod:`toolkit.histories.versions`: worker deployment
version, build id, SDK name and version, binary checksum, in that order). The lab's
``<name>.meta.json`` sidecar, when one sits next to a file, names the version instead (it is
never required); ``versions=`` overrides both.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit.agents.turns import sidecar_fields, sidecar_label
from toolkit.histories.enums import CLOSE_STATUS
from toolkit.histories.versions import apply_versions, version_labels

__all__ = ["RUN_COLUMNS", "label_note", "runs_table"]

#: Columns of :attr:`toolkit.investigate.Investigation.runs`.
RUN_COLUMNS = [
    "source",
    "history",
    "workflow_type",
    "workflow_id",
    "run_id",
    "status",
    "start",
    "close",
    "label",
    "label_source",
    "labels",
    "failed_labels",
    "events",
    "failed_workflow_tasks",
    "open",
    "stuck",
    "stuck_reason",
]

_CLOSED = CLOSE_STATUS
_TASK_EVENTS = {"WorkflowTaskCompleted", "WorkflowTaskFailed", "WorkflowTaskTimedOut"}
_MESSAGES = {
    "WorkflowExecutionSignaled",
    "WorkflowExecutionUpdateAdmitted",
    "WorkflowExecutionUpdateAccepted",
}


def _stuck_reason(status: str, last_task: Any, last_message: Any, last_done: Any) -> str | None:
    """Why an open run is stuck, or None: its last workflow task failed, or a message waits."""
    if status != "running":
        return None
    if last_task in ("WorkflowTaskFailed", "WorkflowTaskTimedOut"):
        outcome = "failed" if last_task == "WorkflowTaskFailed" else "timed out"
        return f"its last workflow task {outcome}"
    if pd.notna(last_message) and (pd.isna(last_done) or last_message > last_done):
        return "a signal or update was never answered (no workflow task completed after it)"
    return None


def runs_table(events: pd.DataFrame, versions: Any = None) -> pd.DataFrame:
    """One row per run (``source``, ``history``) of ``events``; columns :data:`RUN_COLUMNS`.

    ``status`` is ``running`` for a run without a close event, else how it closed; ``stuck``
    marks an open run whose last workflow task failed or timed out, or after whose last signal
    or update no workflow task completed (``stuck_reason`` says which).
    """
    if events.empty:
        return pd.DataFrame(columns=RUN_COLUMNS)
    keys = ["source", "history"]
    frame = events.assign(source=events["source"].fillna("<events>"))
    groups = frame.groupby(keys, sort=False)
    runs = groups.agg(
        workflow_type=("workflow_type", "first"),
        workflow_id=("workflow_id", "first"),
        run_id=("run_id", "first"),
        start=("event_time", "min"),
        events=("event_id", "size"),
    ).reset_index()
    closed = (
        frame[frame["event_type"].isin(_CLOSED)]
        .groupby(keys, sort=False)
        .agg(close=("event_time", "last"), closed_by=("event_type", "last"))
    )
    tasks = frame[frame["event_type"].isin(_TASK_EVENTS)]
    task_facts = tasks.groupby(keys, sort=False).agg(last_task=("event_type", "last"))
    failed = tasks[tasks["event_type"] == "WorkflowTaskFailed"].groupby(keys).size()
    done = tasks[tasks["event_type"] == "WorkflowTaskCompleted"].groupby(keys)["event_id"].max()
    messages = frame[frame["event_type"].isin(_MESSAGES)].groupby(keys)["event_id"].max()
    runs = runs.join(closed, on=keys).join(task_facts, on=keys)
    runs["failed_workflow_tasks"] = runs.set_index(keys).index.map(failed).fillna(0).astype(int)
    last_done = runs.set_index(keys).index.map(done)
    last_message = runs.set_index(keys).index.map(messages)
    runs["status"] = [
        _CLOSED.get(c, "running") if isinstance(c, str) else "running" for c in runs["closed_by"]
    ]
    runs["open"] = runs["status"] == "running"
    runs["stuck_reason"] = [
        _stuck_reason(*values)
        for values in zip(runs["status"], runs["last_task"], last_message, last_done, strict=True)
    ]
    runs["stuck"] = runs["stuck_reason"].notna()
    labels = version_labels(frame)
    runs = runs.merge(
        labels[[*keys, "label", "label_source", "labels", "failed_labels"]], on=keys, how="left"
    )
    history_labels = runs["label"].tolist()
    runs = apply_versions(_sidecars(runs), versions)
    return _translate_lists(runs, history_labels)[RUN_COLUMNS].reset_index(drop=True)


def _translate_lists(runs: pd.DataFrame, history_labels: list[str]) -> pd.DataFrame:
    """Rename ``labels`` / ``failed_labels`` entries the way the runs' own labels were renamed.

    A run labelled ``adk-1.28.1`` by its sidecar (or by ``versions=``) names its worker that
    way; the worker that failed its task later is named the same way when another run gives it a
    name (its build started that run).
    """
    renamed = {
        old: new
        for old, new in zip(history_labels, runs["label"], strict=True)
        if old != new and old != "unknown"
    }
    if not renamed:
        return runs
    return runs.assign(
        **{
            column: [[renamed.get(label, label) for label in value] for value in runs[column]]
            for column in ("labels", "failed_labels")
        }
    )


def _sidecars(runs: pd.DataFrame) -> pd.DataFrame:
    """Use the lab's optional ``.meta.json`` label where one sits next to a history file."""
    labels, sources = runs["label"].tolist(), runs["label_source"].tolist()
    for index, source in enumerate(runs["source"]):
        named = sidecar_label(sidecar_fields(source if isinstance(source, str) else None))
        if named is not None:
            labels[index], sources[index] = named, "sidecar"
    return runs.assign(label=labels, label_source=sources)


def label_note(runs: pd.DataFrame) -> str:
    """How far the runs' labels can tell versions apart, in one sentence for reports."""
    used = set(runs["label_source"].dropna())
    notes = []
    if "build_id" in used:
        notes.append(
            "build ids (a checksum of the worker's code unless the team sets them) tell "
            "code releases apart but do not name them: map them to releases with "
            "versions="
        )
    if "sdk" in used:
        notes.append(
            "some runs are labelled by SDK version only: application releases on the "
            "same SDK version share a label"
        )
    if "binary_checksum" in used:
        notes.append("some runs are labelled by binary checksum only")
    if "none" in used:
        notes.append("some histories name no version at all (label 'unknown')")
    if "sidecar" in used:
        notes.append("some labels come from the lab's .meta.json sidecars")
    if "versions" in used:
        notes.append("some labels were given with versions=")
    return "; ".join(notes)
