"""Column lists -> the events DataFrame (the schema is documented in :mod:`toolkit.histories`).

The column builders (:mod:`~toolkit.histories.columns.from_json` and
:mod:`~toolkit.histories.columns.from_proto`) produce numpy arrays; this module sorts them, adds the
links one event learns from another (:mod:`~toolkit.histories.columns.links`) and the history-level
columns, and wraps everything in one DataFrame with the documented dtypes, built once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.internals import create_dataframe_from_blocks

from toolkit.errors import HistoryFormatError
from toolkit.histories.columns.common import EventColumns, TypeCodes
from toolkit.histories.columns.from_json import json_columns
from toolkit.histories.columns.from_json_scan import scanned_columns
from toolkit.histories.columns.from_proto import proto_columns
from toolkit.histories.columns.from_wire import wire_columns
from toolkit.histories.columns.links import (
    EventKeys,
    EventKinds,
    Unlinkable,
    copy_from_linked,
    fill_update_names,
    workflow_task_ordinals,
)
from toolkit.histories.reading.dialects import RawHistory, check_proto_events
from toolkit.histories.reading.wire import WireError

__all__ = [
    "COLUMNS",
    "HistoryItem",
    "HistoryParts",
    "build_events_frame",
    "build_parts",
    "empty_events_frame",
    "frame_from_parts",
    "history_parts",
]

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
    "history_size_bytes": "Int64",
    "suggest_continue_as_new": "boolean",
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


@dataclass
class HistoryParts:
    """The columns of one or more histories before they become rows of a frame (see
    :func:`frame_from_parts`).

    Many histories' parts are concatenated column by column into one frame, so a batch of
    files costs one DataFrame, not one per file.

    Attributes
    ----------
    columns : dict
        ``EVENT_COLUMNS`` -> numpy array, each history in event id order, one after another.
    times : numpy.ndarray
        ``datetime64[ns]`` event times (UTC; NaT where absent).
    task : numpy.ndarray
        ``float64`` workflow task ordinals (NaN where none), numbered within each history.
    facts : list of tuple
        Per history: ``(source, history, namespace, workflow_id, run_id, workflow_type)``.
    counts : numpy.ndarray
        Per history: how many of the rows are its events.
    """

    columns: dict[str, np.ndarray]
    times: np.ndarray
    task: np.ndarray
    facts: list[tuple[Any, ...]]
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.times)


def build_events_frame(
    histories: list[RawHistory],
    source_name: str,
    *,
    codec: Any = None,
    decode_payloads: bool = True,
) -> pd.DataFrame:
    """Build the events frame for all ``histories`` of one source (the caller pauses the
    cyclic collector: :func:`toolkit.gc_pause.paused_gc`)."""
    return frame_from_parts(
        history_parts(histories, source_name, codec=codec, decode_payloads=decode_payloads)
    )


def history_parts(
    histories: list[RawHistory],
    source_name: str,
    *,
    codec: Any = None,
    decode_payloads: bool = True,
) -> list[HistoryParts]:
    """The columns of every history of one source, ready for :func:`frame_from_parts`."""
    items = [(history, number, source_name) for number, history in enumerate(histories)]
    return build_parts(items, codec=codec, decode_payloads=decode_payloads)


#: ``(history, its number within its source, the source's name)``
HistoryItem = tuple[RawHistory, int, str]


def build_parts(
    items: list[HistoryItem], *, codec: Any = None, decode_payloads: bool = True
) -> list[HistoryParts]:
    """The columns of histories from any number of sources, in the order given.

    Consecutive JSON histories are built together (:func:`_joint_parts`: one fill per event
    type for all of them, one time parse, one linking pass), which is what makes a batch of
    small files cheap; protobuf histories, and JSON histories that cannot be built jointly
    (ids out of order, ...), are built one at a time. Errors are those of one history built
    alone: the first failing history's located :class:`~toolkit.errors.HistoryFormatError`.
    """
    parts: list[HistoryParts] = []
    run: list[HistoryItem] = []
    for item in [*items, None]:
        if item is not None and item[0].is_json and item[0].scanned is None:
            run.append(item)
            continue
        if len(run) > 1:
            try:
                parts.append(_joint_parts(run, codec, decode_payloads))
            except _BuildAlone:
                parts += [_history_parts(*one, codec, decode_payloads) for one in run]
        elif run:
            parts.append(_history_parts(*run[0], codec, decode_payloads))
        run = []
        if item is not None:
            parts.append(_history_parts(*item, codec, decode_payloads))
    return parts


class _BuildAlone(Exception):
    """Histories that the joint build does not handle: build each alone (same result)."""


def _joint_parts(run: list[HistoryItem], codec: Any, decode: bool) -> HistoryParts:
    histories = [history for history, _, _ in run]
    try:
        built = json_columns(histories, [name for _, _, name in run], codec, decode)
    except HistoryFormatError:
        raise _BuildAlone from None  # decoded alone, the error names its own file
    c, counts = built.columns, built.counts
    assert counts is not None
    try:
        times = _times(built.times, len(c["event_id"]))
    except (ValueError, TypeError, OverflowError):
        raise _BuildAlone from None  # located alone
    ids = c["event_id"]
    if len(ids) > 1:
        backwards = np.flatnonzero(ids[1:] < ids[:-1]) + 1
        if len(backwards) and not np.isin(backwards, np.cumsum(counts)[:-1]).all():
            raise _BuildAlone  # some history's events are out of id order
    try:
        keys = EventKeys(ids, counts)
    except Unlinkable:
        raise _BuildAlone from None
    task = _link(c, built.completed_by, keys, built.types)
    started = np.flatnonzero(_of_type(c, built.types, "WorkflowExecutionStarted"))
    first_started: dict[int, int] = {}
    if len(started):
        owners = keys.segment[started] if keys.segment is not None else np.zeros(len(started))
        distinct, first = np.unique(owners, return_index=True)
        first_started = dict(zip(distinct.tolist(), started[first].tolist(), strict=True))
    facts = []
    for k, (history, number, name) in enumerate(run):
        run_id, workflow_type, workflow_id = _facts_at(first_started.get(k), c, built, history)
        facts.append((name, number, history.namespace, workflow_id, run_id, workflow_type))
    return HistoryParts(c, times, task, facts, counts)


def _history_parts(
    history: RawHistory, number: int, source_name: str, codec: Any, decode: bool
) -> HistoryParts:
    built = _columns(history, source_name, codec, decode)
    c = built.columns
    n = len(c["event_id"])
    times = _located_times(built.times, n, source_name)
    completed_by, types = built.completed_by, built.types
    order = None
    if n > 1 and bool((c["event_id"][1:] < c["event_id"][:-1]).any()):
        # Descending UI exports and keyed-by-type fixtures: history order is event id order.
        order = np.argsort(c["event_id"], kind="stable")
        c = {name: values[order] for name, values in c.items()}
        times, completed_by = times[order], completed_by[order]
        types = types.take(order) if types is not None else None
    task = _link(c, completed_by, EventKeys(c["event_id"]), types)
    started = np.flatnonzero(_of_type(c, types, "WorkflowExecutionStarted"))
    first = None
    if len(started):
        first = int(started[0])
        first = int(order[first]) if order is not None else first  # the builder's index
    run_id, workflow_type, workflow_id = _facts_at(first, c, built, history, order)
    facts = (source_name, number, history.namespace, workflow_id, run_id, workflow_type)
    return HistoryParts(c, times, task, [facts], np.array([n], dtype=np.int64))


def frame_from_parts(parts: list[HistoryParts]) -> pd.DataFrame:
    """One events frame from the parts of any number of histories (of any number of sources),
    built once: each column is one concatenation, whatever the number of histories."""
    if not parts:
        return empty_events_frame()
    counts = np.concatenate([p.counts for p in parts])
    every = [facts for p in parts for facts in p.facts]
    facts = dict(zip(_HISTORY_LEVEL, zip(*every, strict=True), strict=True))

    def joined(values: list[np.ndarray]) -> np.ndarray:
        return values[0] if len(values) == 1 else np.concatenate(values)

    data: list[Any] = []
    for name, dtype in COLUMNS.items():
        if name in facts:
            data.append(_repeated(facts[name], counts, dtype))
        elif name == "event_time":
            times = joined([p.times for p in parts])
            data.append(pd.DatetimeIndex(times).tz_localize("UTC").array)
        elif name == "workflow_task":
            task = joined([p.task for p in parts])
            missing = np.isnan(task)
            whole = np.where(missing, 0, task).astype(np.int64)
            data.append(pd.arrays.IntegerArray(whole, missing))
        elif dtype == "Int64":
            values = joined([p.columns[name] for p in parts])
            data.append(pd.arrays.IntegerArray(values, values == 0))
        elif dtype == "boolean":  # a flag only some events carry: True where set, else NA
            values = joined([p.columns[name] for p in parts]) != 0
            data.append(pd.arrays.BooleanArray(values, ~values))
        else:
            data.append(joined([p.columns[name] for p in parts]).astype(dtype, copy=False))
    return _frame(data, int(counts.sum()))


_COLUMN_INDEX = pd.Index(list(COLUMNS))


def _frame(arrays: list[Any], rows: int) -> pd.DataFrame:
    """The frame of ``arrays`` (one per column of ``COLUMNS``, each of its dtype), as they are.

    ``pd.DataFrame`` of the same columns checks and wraps each one (about 4 ms for a history at
    the server's limit, a tenth of reading it from binary); the arrays are already what the
    frame holds, so they become its blocks directly: one per column, as the constructor makes.
    """
    blocks = [
        (array.reshape(1, -1) if isinstance(array, np.ndarray) else array, np.array([k]))
        for k, array in enumerate(arrays)
    ]
    return create_dataframe_from_blocks(blocks, pd.RangeIndex(rows), _COLUMN_INDEX.copy())


def _repeated(values: tuple[Any, ...], counts: np.ndarray, dtype: str) -> np.ndarray:
    # Filling an object array stores each str once per row by reference; ``np.array`` of str
    # would convert them to a numpy string type and back, making a copy per row.
    one = np.empty(len(values), dtype=dtype)
    one[:] = values
    return np.repeat(one, counts)


def _columns(history: RawHistory, source_name: str, codec: Any, decode: bool) -> EventColumns:
    if history.scanned is not None:
        return scanned_columns(history, source_name, codec, decode)
    if history.proto_events is None:
        return json_columns([history], [source_name], codec, decode)
    if history.wire is not None:
        try:
            return wire_columns(history, codec, decode)
        except WireError:
            check_proto_events(history.proto_events, source_name)  # then read the messages
    return proto_columns(history, codec, decode)


def _located_times(values: Any, count: int, source_name: str) -> Any:
    """:func:`_times`, or a located error naming the first event whose time is unreadable."""
    try:
        return _times(values, count)
    except (ValueError, TypeError, OverflowError):
        for index, value in enumerate(values):
            try:
                _times([value], 1)
            except (ValueError, TypeError, OverflowError):
                raise HistoryFormatError(
                    source_name,
                    f"eventTime {value!r} is not a time",
                    position=f"event #{index}",
                    expected="an RFC 3339 time (2024-01-31T12:00:00Z) or epoch nanoseconds "
                    "within 1677-2262",
                ) from None
        raise


def _times(values: Any, count: int) -> np.ndarray:
    """Event times as a ``datetime64[ns]`` array (UTC wall time; NaT where absent)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "M":
        return values.astype("datetime64[ns]", copy=False)
    if not count:
        return np.empty(0, dtype="datetime64[ns]")
    try:
        # The common case (ISO-8601 text, None for absent): Arrow's parser runs in C.
        # (The system allocator: Arrow's default pool returns and re-faults pages between
        # calls, which made this step's time swing tenfold.)
        pool = pa.system_memory_pool()
        text = pa.array(values, pa.string(), memory_pool=pool)
        parsed = pc.cast(text, pa.timestamp("ns", "UTC"), memory_pool=pool)
        return parsed.to_numpy(zero_copy_only=False).astype("datetime64[ns]", copy=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass  # epoch numbers (old files), unusual spellings: let pandas handle them below
    texts = [v if isinstance(v, str) else None for v in values]
    parsed = pd.to_datetime(pd.Series(texts, dtype="object"), utc=True, format="ISO8601")
    parsed = parsed.dt.as_unit("ns")
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        numbers = [int(v) if isinstance(v, (int, float)) else None for v in values]
        epoch = pd.to_datetime(pd.Series(numbers, dtype="Int64"), utc=True, unit="ns")
        parsed = parsed.fillna(epoch.dt.as_unit("ns"))
    return parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")


def _facts_at(
    first: int | None, c: dict[str, Any], built: EventColumns, history: RawHistory,
    order: np.ndarray | None = None,
) -> tuple[Any, Any, Any]:
    """Run id, workflow type and workflow id, from the history's first
    ``WorkflowExecutionStarted`` event (``first``: its index as the column builder gave it)
    where it says them, else from what the container or file name told (``history``).

    The run id is the exception: the container's or file name's run id comes first, because a
    reset copies the started event, ``originalExecutionRunId`` included, into the new run.
    """
    if first is None:
        return history.run_id, None, history.workflow_id
    facts = built.started.get(first)
    if facts is None:
        row = int(np.flatnonzero(order == first)[0]) if order is not None else first
        attributes = c["attributes"][row]
        workflow_type = attributes.get("workflowType")
        if isinstance(workflow_type, dict):
            workflow_type = workflow_type.get("name")
        facts = (attributes.get("originalExecutionRunId"), workflow_type, None)
        own_id = _own_workflow_id(attributes)
    else:
        own_id = facts[2]  # read with the typed view: no need to split the raw events
    original_run_id, workflow_type = facts[0], facts[1]
    workflow_id = own_id or history.workflow_id
    return history.run_id or original_run_id or None, workflow_type or None, workflow_id


def _own_workflow_id(attributes: Any) -> str | None:
    """The run's workflow id as its started event says it: ``workflowId`` (servers since 2024
    write it), else the root execution of a run without a parent (a run with no parent is its
    own root)."""
    if not hasattr(attributes, "get"):
        return None
    own = attributes.get("workflowId")
    if isinstance(own, str) and own:
        return own
    root = attributes.get("rootWorkflowExecution")
    if isinstance(root, dict) and not attributes.get("parentWorkflowExecution"):
        root_id = root.get("workflowId")
        return root_id if isinstance(root_id, str) and root_id else None
    return None


def _of_type(c: dict[str, Any], types: TypeCodes | None, short: str) -> np.ndarray:
    """Which events have the type ``short``: from the builder's codes where it gave them."""
    return types.of_type(short) if types is not None else c["event_type"] == short


def _link(
    c: dict[str, Any], completed_by: np.ndarray, keys: EventKeys, types: TypeCodes | None = None
) -> np.ndarray:
    """Fill what one event learns from another, in place; return the workflow task ordinals."""
    if not len(c["event_id"]):
        return np.zeros(0)
    kinds = EventKinds(c["event_type"], c["category"], types)
    task = workflow_task_ordinals(
        kinds, c["is_command"], keys, c["scheduled_event_id"], completed_by
    )
    copy_from_linked(
        c, keys, kinds.of_category("activity"), "scheduled_event_id",
        ("activity_id", "activity_type"),
    )  # fmt: skip
    copy_from_linked(
        c, keys, kinds.of_category("child_workflow"), "initiated_event_id",
        ("child_workflow_id", "child_workflow_type"),
    )  # fmt: skip
    fill_update_names(c, keys, kinds.of_category("update"))
    return task
