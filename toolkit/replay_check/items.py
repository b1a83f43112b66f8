"""The histories a replay check replays, one :class:`Item` each, whatever they were read from.

Each item carries the history twice: as temporalio's ``WorkflowHistory`` (what the ``Replayer``
takes; for plain proto-JSON files parsed the way ``WorkflowHistory.from_json`` parses them, which
is also what a hand-written replay loop pays) and as the toolkit's events frame (every dialect,
the run's ids, status and version label, and the recorded commands an explanation compares).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
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
    batch : pandas.DataFrame or None
        The events frame it was read in (shared by every history read with it: the check
        labels them in one pass); :attr:`frame` is its own rows.
    rows : numpy.ndarray or None
        Its rows' positions in ``batch``, in event order.
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
    batch: pd.DataFrame | None = None
    rows: Any = None
    error: str | None = None
    workflow_id_from: str = "history"
    namespace: str | None = None
    _frame: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def frame(self) -> pd.DataFrame | None:
        """Its events frame (built from :attr:`batch` on first use)."""
        if self._frame is None and self.batch is not None:
            self._frame = self.batch.take(self.rows)
        return self._frame


def load_failure(source: str, error: str) -> Item:
    """An item for a source that could not be read."""
    return Item(source, 0, error=error)


def _first(values: np.ndarray) -> Any:
    """The first value that is not missing, else None."""
    for value in values:
        if value is not None and not (isinstance(value, float) and value != value):
            return value
    return None


def _recorded_id(history: Any, attributes: Any) -> str | None:
    """The started event's ``workflowId``, from the protobuf where at hand (no JSON decoded)."""
    if history is not None and history.events:
        first = history.events[0]
        if first.HasField("workflow_execution_started_event_attributes"):
            return first.workflow_execution_started_event_attributes.workflow_id or None
        return None
    value = dict(attributes).get("workflowId") if attributes is not None else None
    return str(value) if value else None


def items_from_frame(
    frame: pd.DataFrame, histories: Any = None, *, fallback_id: str = "replayed"
) -> list[Item]:
    """Items for every history of an events frame, in (``source``, ``history``) order of first
    appearance. ``histories`` are their ``WorkflowHistory`` objects where already at hand: a
    list (one per history, in that order) or a mapping from (``source``, ``history``); the
    others are built from the frame."""
    if frame.empty:
        return []
    if frame["source"].isna().any():
        frame = frame.assign(source=frame["source"].fillna("<frame>"))
    groups = frame.groupby(["source", "history"], sort=False).indices
    if isinstance(histories, list):
        keyed = dict(zip(groups, histories, strict=True)) if len(histories) == len(groups) else {}
    else:
        keyed = dict(histories or {})
    event_ids = frame["event_id"].to_numpy()
    types, attributes = frame["event_type"].to_numpy(), frame["attributes"].to_numpy()
    ids, namespaces = frame["workflow_id"].to_numpy(), frame["namespace"].to_numpy()
    out = []
    for (source, position), rows in groups.items():
        if len(rows) > 1 and (np.diff(event_ids[rows]) < 0).any():
            rows = rows[np.argsort(event_ids[rows], kind="stable")]
        given = keyed.get((source, position))
        started = attributes[rows[0]] if types[rows[0]] == "WorkflowExecutionStarted" else None
        recorded = _recorded_id(given, started)
        known = _first(ids[rows])
        stem = Path(str(source)).name.split(".")[0] or fallback_id
        workflow_id = recorded or (str(known) if known is not None else stem)
        where = "history" if recorded else ("source" if known is not None else "file name")
        item = Item(str(source), int(position), None, frame, rows, None, where, _first(
            namespaces[rows]))  # fmt: skip
        try:
            item.history = (replace(given, workflow_id=workflow_id) if given is not None
                            else to_workflow_history(item.frame, workflow_id=workflow_id))
        except ToolkitError as error:
            item = Item(str(source), int(position), error=str(error))
        out.append(item)
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
        if out[-1].workflow_id_from == "file name":  # named by whoever handed it over
            out[-1].workflow_id_from = "source"
    return out
