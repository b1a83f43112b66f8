"""The histories a replay check replays, one :class:`Item` each, whatever they were read from.

Each item carries the history twice: as temporalio's ``WorkflowHistory`` (what the ``Replayer``
takes; for plain proto-JSON files parsed the way ``WorkflowHistory.from_json`` parses them, which
is also what a hand-written replay loop pays) and as the toolkit's events frame (every dialect,
the run's ids, status and version label, and the recorded commands an explanation compares).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.errors import ToolkitError
from toolkit.histories.write import to_workflow_history
from toolkit.replay.replayer import _from_json_text

__all__ = ["Item", "items_from_frame", "items_from_histories", "load_failure"]


@dataclass
class Item:
    """One history to check.

    Attributes
    ----------
    source : str
        The file (or a description: ``temporal://namespace/workflow-id/run-id``, ``<frame>``).
    position : int
        The history's index inside its source (0 unless the source holds several).
    history : temporalio.client.WorkflowHistory or None
        The history as recorded, under the workflow id the check replays it with; None when it
        could not be read.
    frame : pandas.DataFrame or None
        Its events frame (``source`` and ``history`` as above).
    error : str or None
        Why it could not be read (the item is then ``skipped`` and counts as not checked).
    workflow_id_from : str
        Where the workflow id comes from: ``history`` (its started event), ``source`` (the
        container, the server, a path rule) or ``file name`` (a guess: nothing else named it).
    namespace : str or None
        The namespace, where the source says it.
    """

    source: str
    position: int
    history: Any = None
    frame: pd.DataFrame | None = None
    error: str | None = None
    workflow_id_from: str = "history"
    namespace: str | None = None


def load_failure(source: str, error: str) -> Item:
    """An item for a source that could not be read."""
    return Item(source, 0, error=error)


def _started_attributes(frame: pd.DataFrame) -> dict[str, Any]:
    first = frame[frame["event_type"] == "WorkflowExecutionStarted"]
    value = first["attributes"].iloc[0] if len(first) else None
    return dict(value) if value is not None else {}


def _resolved_id(frame: pd.DataFrame, fallback: str) -> tuple[str, str]:
    """The workflow id the check replays under, and where it came from."""
    if _started_attributes(frame).get("workflowId"):
        return str(_started_attributes(frame)["workflowId"]), "history"
    known = frame["workflow_id"].dropna()
    if len(known):
        return str(known.iloc[0]), "source"
    return fallback, "file name"


def items_from_frame(
    frame: pd.DataFrame, histories: list[Any] | None = None, *, fallback_id: str = "replayed"
) -> list[Item]:
    """Items for every history of an events frame, in (``source``, ``history``) order of first
    appearance; ``histories`` are their ``WorkflowHistory`` objects where already at hand (one
    per history, same order), else they are built from the frame."""
    if frame.empty:
        return []
    keyed = frame.assign(source=frame["source"].fillna("<frame>"))
    groups = list(keyed.groupby(["source", "history"], sort=False))
    if histories is not None and len(histories) != len(groups):
        histories = None  # the fast parse saw another number of histories: trust the frame
    out = []
    for index, ((source, position), one) in enumerate(groups):
        one = one.sort_values("event_id")
        stem = Path(str(source)).name.split(".")[0] or fallback_id
        workflow_id, where = _resolved_id(one, stem)
        namespace = one["namespace"].dropna()
        try:
            history = (
                replace(histories[index], workflow_id=workflow_id)
                if histories is not None
                else to_workflow_history(one, workflow_id=workflow_id)
            )
        except ToolkitError as error:
            out.append(Item(str(source), int(position), error=str(error)))
            continue
        out.append(Item(
            str(source), int(position), history, one, None, where,
            str(namespace.iloc[0]) if len(namespace) else None,
        ))  # fmt: skip
    return out


def fast_histories(path: Path) -> list[Any] | None:
    """The ``WorkflowHistory`` objects of a plain proto-JSON file (gzipped or not), parsed as
    ``WorkflowHistory.from_json`` does; None for any other dialect (read through the frame)."""
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        if data.lstrip()[:1] not in (b"{", b"["):
            return None
        return [history for history in _from_json_text(data, str(path))]
    except Exception:  # any dialect WorkflowHistory.from_json does not read
        return None


def items_from_histories(histories: Iterable[tuple[str, Any]]) -> list[Item]:
    """Items for ``(source name, WorkflowHistory)`` pairs (fetched or given)."""
    from toolkit.histories.reading.read import read_history

    out = []
    for name, history in histories:
        try:
            frame = read_history(history, name=name)
        except ToolkitError as error:
            out.append(load_failure(name, str(error)))
            continue
        out += items_from_frame(frame, [history], fallback_id=history.workflow_id)
        out[-1].workflow_id_from = (
            "history" if _started_attributes(frame).get("workflowId") else "source"
        )
    return out
