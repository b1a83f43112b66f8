"""Column lists -> the events DataFrame (the schema is documented in :mod:`toolkit.histories`).

The column builders (:mod:`~toolkit.histories.columns_json` and
:mod:`~toolkit.histories.columns_proto`) produce numpy arrays; this module sorts them, adds the
links one event learns from another (:mod:`~toolkit.histories.links`) and the history-level
columns, and wraps everything in one DataFrame with the documented dtypes, built once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.histories.columns_common import EventColumns
from toolkit.histories.columns_json import json_columns
from toolkit.histories.columns_proto import proto_columns
from toolkit.histories.columns_wire import wire_columns
from toolkit.histories.dialects import RawHistory, check_proto_events
from toolkit.histories.links import copy_from_linked, fill_update_names, workflow_task_ordinals
from toolkit.histories.wire import WireError

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
    """Build the events frame for all ``histories`` of one source (the caller pauses the
    cyclic collector: :func:`toolkit.gc_pause.paused_gc`)."""
    frames = [
        _history_frame(history, number, source_name, codec, decode_payloads)
        for number, history in enumerate(histories)
    ]
    if not frames:
        return empty_events_frame()
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _history_frame(
    history: RawHistory, number: int, source_name: str, codec: Any, decode: bool
) -> pd.DataFrame:
    built = _columns(history, source_name, codec, decode)
    c = built.columns
    n = len(c["event_id"])
    times = _times(built.times, n)
    completed_by = built.completed_by
    order = None
    if n > 1 and bool((c["event_id"][1:] < c["event_id"][:-1]).any()):
        # Descending UI exports and keyed-by-type fixtures: history order is event id order.
        order = np.argsort(c["event_id"], kind="stable")
        c = {name: values[order] for name, values in c.items()}
        times, completed_by = times[order], completed_by[order]
    task = _link(c, completed_by)
    run_id, workflow_type = _run_facts(c, built, order, history)
    facts = {
        "source": source_name,
        "history": number,
        "namespace": history.namespace,
        "workflow_id": history.workflow_id,
        "run_id": run_id,
        "workflow_type": workflow_type,
    }
    data: dict[str, Any] = {}
    for name, dtype in COLUMNS.items():
        if name in facts:
            data[name] = pd.Series(_constant(n, facts[name], dtype), dtype=dtype, copy=False)
        elif name == "event_time":
            data[name] = times
        elif name == "workflow_task":
            missing = np.isnan(task)
            data[name] = pd.arrays.IntegerArray(
                np.where(missing, 0, task).astype(np.int64), missing
            )
        elif dtype == "Int64":
            data[name] = pd.arrays.IntegerArray(c[name], c[name] == 0)
        else:
            # Explicit dtype: pandas 3 would otherwise infer (and convert to) its str dtype.
            data[name] = pd.Series(c[name], dtype=dtype, copy=False)
    return pd.DataFrame(data, copy=False)


def _constant(n: int, value: Any, dtype: str) -> np.ndarray:
    # ``fill`` stores the one object n times; ``np.full`` would convert a str to a numpy string
    # and back, making n copies of it.
    array = np.empty(n, dtype=dtype)
    array.fill(value)
    return array


def _columns(history: RawHistory, source_name: str, codec: Any, decode: bool) -> EventColumns:
    if history.proto_events is None:
        return json_columns(history, source_name, codec, decode)
    if history.wire is not None:
        try:
            return wire_columns(history, codec, decode)
        except WireError:
            check_proto_events(history.proto_events, source_name)  # then read the messages
    return proto_columns(history, codec, decode)


def _times(values: Any, count: int) -> Any:
    """Event times as a ``datetime64[ns, UTC]`` array."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "M":
        return pd.DatetimeIndex(values).tz_localize("UTC").array
    if not count:
        return pd.array([], dtype="datetime64[ns, UTC]")
    try:
        # The common case (ISO-8601 text, None for absent): Arrow's parser runs in C.
        # (The system allocator: Arrow's default pool returns and re-faults pages between
        # calls, which made this step's time swing tenfold.)
        pool = pa.system_memory_pool()
        text = pa.array(values, pa.string(), memory_pool=pool)
        parsed = pc.cast(text, pa.timestamp("ns", "UTC"), memory_pool=pool)
        return pd.DatetimeIndex(parsed.to_numpy(zero_copy_only=False)).tz_localize("UTC").array
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass  # epoch numbers (old files), unusual spellings: let pandas handle them below
    texts = [v if isinstance(v, str) else None for v in values]
    parsed = pd.to_datetime(pd.Series(texts, dtype="object"), utc=True, format="ISO8601")
    parsed = parsed.dt.as_unit("ns")
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        numbers = [int(v) if isinstance(v, (int, float)) else None for v in values]
        epoch = pd.to_datetime(pd.Series(numbers, dtype="Int64"), utc=True, unit="ns")
        parsed = parsed.fillna(epoch.dt.as_unit("ns"))
    return parsed.array


def _run_facts(
    c: dict[str, Any], built: EventColumns, order: np.ndarray | None, history: RawHistory
) -> tuple[Any, Any]:
    """Run id and workflow type from the first ``WorkflowExecutionStarted`` event."""
    started = np.flatnonzero(c["event_type"] == "WorkflowExecutionStarted")
    if not len(started):
        return history.run_id, None
    first = int(started[0])
    facts = built.started.get(int(order[first]) if order is not None else first)
    if facts is None:
        attributes = c["attributes"][first]
        workflow_type = attributes.get("workflowType")
        if isinstance(workflow_type, dict):
            workflow_type = workflow_type.get("name")
        facts = (attributes.get("originalExecutionRunId"), workflow_type)
    original_run_id, workflow_type = facts
    return history.run_id or original_run_id or None, workflow_type or None


def _link(c: dict[str, Any], completed_by: np.ndarray) -> np.ndarray:
    """Fill what one event learns from another, in place; return the workflow task ordinals."""
    if not len(c["event_id"]):
        return np.zeros(0)
    category = c["category"]
    task = workflow_task_ordinals(
        c["event_type"], category, c["is_command"], c["event_id"], c["scheduled_event_id"],
        completed_by,
    )  # fmt: skip
    copy_from_linked(
        c, category == "activity", "scheduled_event_id", ("activity_id", "activity_type")
    )
    copy_from_linked(
        c, category == "child_workflow", "initiated_event_id",
        ("child_workflow_id", "child_workflow_type"),
    )  # fmt: skip
    fill_update_names(c, category == "update")
    return task
