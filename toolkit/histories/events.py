"""Column lists -> the events DataFrame (the schema is documented in :mod:`toolkit.histories`).

The column builders (:mod:`~toolkit.histories.columns_json` and
:mod:`~toolkit.histories.columns_proto`) produce plain lists; this module sets the dtypes,
sorts, adds the history-level columns and the links one event learns from another (workflow
task ordinals, activity and child names), all as vectorised pandas operations.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pandas as pd

from toolkit.histories.columns_json import json_columns
from toolkit.histories.columns_proto import proto_columns
from toolkit.histories.dialects import RawHistory

__all__ = ["COLUMNS", "build_events_frame", "empty_events_frame"]

#: Column name -> dtype, in frame order. Documented in ``toolkit/histories/__init__.py``.
COLUMNS: dict[str, str] = {
    "source": "object",
    "history": "int64",
    "namespace": "object",
    "workflow_id": "object",
    "run_id": "object",
    "workflow_type": "object",
    "event_id": "int64",
    "event_time": "datetime64[ns, UTC]",
    "event_type": "object",
    "category": "object",
    "is_command": "bool",
    "workflow_task": "Int64",
    "activity_id": "object",
    "activity_type": "object",
    "task_queue": "object",
    "scheduled_event_id": "Int64",
    "started_event_id": "Int64",
    "initiated_event_id": "Int64",
    "attempt": "Int64",
    "timer_id": "object",
    "signal_name": "object",
    "update_name": "object",
    "update_id": "object",
    "child_workflow_id": "object",
    "child_workflow_type": "object",
    "marker_name": "object",
    "identity": "object",
    "failure_message": "object",
    "failure_type": "object",
    "retry_state": "object",
    "cause": "object",
    "input": "object",
    "result": "object",
    "details": "object",
    "attributes": "object",
    "extra": "object",
}

_HISTORY_LEVEL = ("source", "history", "namespace", "workflow_id", "run_id", "workflow_type")
_LAZY_COLUMNS = frozenset({"input", "result", "details", "attributes", "extra"})
_WORKFLOW_TASK_OPENERS = ("WorkflowTaskScheduled", "DecisionTaskScheduled")
_WORKFLOW_TASK_STARTS = ("WorkflowTaskStarted", "DecisionTaskStarted")


def empty_events_frame() -> pd.DataFrame:
    """An events frame with every column and no rows."""
    return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in COLUMNS.items()})


def build_events_frame(
    histories: list[RawHistory],
    source_name: str,
    *,
    codec: Any = None,
    decode_payloads: bool = True,
) -> pd.DataFrame:
    """Build the events frame for all ``histories`` of one source."""
    # Millions of short-lived objects: the cyclic collector would rescan them over and over.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        frames = [
            _history_frame(history, number, source_name, codec, decode_payloads)
            for number, history in enumerate(histories)
        ]
    finally:
        if was_enabled:
            gc.enable()
    if not frames:
        return empty_events_frame()
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _history_frame(
    history: RawHistory, number: int, source_name: str, codec: Any, decode: bool
) -> pd.DataFrame:
    if history.proto_events is not None:
        columns, times, completed_by = proto_columns(history, codec, decode)
    else:
        columns, times, completed_by = json_columns(history, source_name, codec, decode)
    count = len(columns["event_id"])
    data: dict[str, Any] = {}
    for name, dtype in COLUMNS.items():
        if name in _HISTORY_LEVEL:
            data[name] = None  # filled below, after the order is known
        elif name == "event_time":
            data[name] = _times(times, count)
        elif name == "workflow_task":
            data[name] = pd.array([None] * count, dtype="Int64")  # computed by _link
        elif dtype == "int64":
            data[name] = np.asarray(columns[name], dtype=np.int64)
        elif name in _LAZY_COLUMNS:
            values = columns[name]
            array = values if isinstance(values, np.ndarray) else _objects(values)
            data[name] = pd.Series(array, dtype=object, copy=False)
        elif dtype == "object":
            # Explicit object arrays: pandas 3 would otherwise infer (and convert to) its str dtype.
            data[name] = pd.Series(
                np.asarray(columns[name], dtype=object), dtype=object, copy=False
            )
        else:
            values = columns[name]
            data[name] = values if hasattr(values, "dtype") else pd.array(values, dtype=dtype)
    data["_completed_by"] = (
        completed_by if isinstance(completed_by, pd.arrays.IntegerArray)
        else pd.array(completed_by, dtype="Int64")
    )  # fmt: skip
    frame = pd.DataFrame({k: v for k, v in data.items() if v is not None})
    if not frame["event_id"].is_monotonic_increasing:
        # Descending UI exports and keyed-by-type fixtures: history order is event id order.
        frame = frame.sort_values("event_id", kind="stable", ignore_index=True)
    _link(frame)
    run_id, workflow_type = _run_facts(frame, history)
    facts = {
        "source": source_name,
        "history": number,
        "namespace": history.namespace,
        "workflow_id": history.workflow_id,
        "run_id": run_id,
        "workflow_type": workflow_type,
    }
    for position, (name, value) in enumerate(facts.items()):
        dtype = COLUMNS[name]
        frame.insert(position, name, pd.Series([value] * len(frame), dtype=dtype))
    return frame.drop(columns="_completed_by")


def _objects(values: list[Any]) -> np.ndarray:
    # Element by element: handing numpy the list would make it probe every lazy cell
    # (len(), indexing) and so decode them all.
    array = np.empty(len(values), dtype=object)
    for index, value in enumerate(values):
        array[index] = value
    return array


def _times(values: list[Any], count: int) -> Any:
    if not count:
        return pd.array([], dtype="datetime64[ns, UTC]")
    if all(isinstance(v, str) and v.endswith("Z") for v in values):
        # The common case (UTC, 'Z'): numpy's ISO parser is several times faster than pandas'.
        try:
            parsed_np = np.array([v[:-1] for v in values], dtype="datetime64[ns]")
            return pd.array(pd.DatetimeIndex(parsed_np).tz_localize("UTC"))
        except ValueError:
            pass  # an unusual spelling: let pandas handle it below
    texts = [v if isinstance(v, str) else None for v in values]
    parsed = pd.to_datetime(pd.Series(texts, dtype="object"), utc=True, format="ISO8601")
    parsed = parsed.dt.as_unit("ns")
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        numbers = [int(v) if isinstance(v, (int, float)) else None for v in values]
        epoch = pd.to_datetime(pd.Series(numbers, dtype="Int64"), utc=True, unit="ns")
        parsed = parsed.fillna(epoch.dt.as_unit("ns"))
    return parsed.array


def _run_facts(frame: pd.DataFrame, history: RawHistory) -> tuple[Any, Any]:
    started = frame.index[frame["event_type"] == "WorkflowExecutionStarted"]
    if not len(started):
        return history.run_id, None
    attributes = frame.at[started[0], "attributes"]
    workflow_type = attributes.get("workflowType")
    if isinstance(workflow_type, dict):
        workflow_type = workflow_type.get("name")
    run_id = history.run_id or attributes.get("originalExecutionRunId") or None
    return run_id, workflow_type or None


def _floats(values: pd.Series) -> np.ndarray:
    return values.to_numpy(dtype="float64", na_value=np.nan)


def _unique_index(values: pd.Series, index: pd.Series) -> pd.Series:
    series = pd.Series(values.to_numpy(), index=index.to_numpy())
    return series[~series.index.duplicated()]


def _link(frame: pd.DataFrame) -> None:
    """Fill what one event learns from another, in place (the frame is in event id order)."""
    n = len(frame)
    if not n:
        return
    event_type = frame["event_type"]
    category = frame["category"].to_numpy()
    ids = frame["event_id"]
    opens = event_type.isin(_WORKFLOW_TASK_OPENERS).to_numpy()
    task = pd.Series(np.nan, index=frame.index)
    task[opens] = np.arange(1, opens.sum() + 1)
    task_of_scheduled = _unique_index(task[opens], ids[opens])
    task_events = (category == "workflow_task") & ~opens
    task[task_events] = _floats(frame.loc[task_events, "scheduled_event_id"].map(task_of_scheduled))
    commands = frame["is_command"].to_numpy()
    known = task.notna().to_numpy()
    task_of_event = _unique_index(task[known], ids[known])
    by_producer = _floats(frame.loc[commands, "_completed_by"].map(task_of_event))
    # A command without a producing task id (old dialects): the latest task opened before it.
    latest = np.cumsum(opens).astype("float64")
    latest[latest == 0] = np.nan
    task[commands] = np.where(np.isnan(by_producer), latest[commands], by_producer)
    starts = (event_type.isin(_WORKFLOW_TASK_STARTS) & task.notna()).to_numpy()
    others = ~(opens | task_events | commands)
    start_positions = np.flatnonzero(starts)
    if len(start_positions) and others.any():
        other_positions = np.flatnonzero(others)
        nxt = np.searchsorted(start_positions, other_positions, side="left")
        valid = nxt < len(start_positions)
        values = np.full(len(other_positions), np.nan)
        values[valid] = task.to_numpy()[start_positions[nxt[valid]]]
        task.iloc[other_positions] = values
    frame["workflow_task"] = pd.array(task.to_numpy(), dtype="Int64")
    _copy_from(
        frame, category == "activity", "scheduled_event_id", ("activity_id", "activity_type")
    )
    _copy_from(
        frame, category == "child_workflow", "initiated_event_id",
        ("child_workflow_id", "child_workflow_type"),
    )  # fmt: skip
    updates = (category == "update") & frame["update_id"].notna().to_numpy()
    if updates.any():
        named = updates & frame["update_name"].notna().to_numpy()
        names = _unique_index(frame.loc[named, "update_name"], frame.loc[named, "update_id"])
        missing = updates & frame["update_name"].isna().to_numpy()
        frame.loc[missing, "update_name"] = frame.loc[missing, "update_id"].map(names)


def _copy_from(frame: pd.DataFrame, rows: np.ndarray, link: str, columns: tuple[str, ...]) -> None:
    """Copy ``columns`` from the event that ``link`` points at, where a row lacks them."""
    rows = rows & frame[link].notna().to_numpy()
    if not rows.any():
        return
    targets = frame.loc[rows, link]
    for column in columns:
        source = _unique_index(frame[column], frame["event_id"])
        missing = rows & frame[column].isna().to_numpy()
        if missing.any():
            frame.loc[missing, column] = frame.loc[missing, link].map(source)
    del targets
