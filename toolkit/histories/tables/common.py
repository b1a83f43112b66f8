"""Helpers shared by the derived tables: input checks, event rows, values, enums, frames.

Every table is built the same way: select the few event types it joins, walk them once in history
order, and fill one record per entity (activity, workflow task, timer, ...) keyed by the history it
belongs to and the event id that opens it. Events whose opening event is missing (partial or
corrupt histories) still get a record, with the opening fields left empty, so nothing is dropped.
This module reads and converts values; :mod:`toolkit.histories.tables.build` fills the records.
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from toolkit.errors import HistoryFormatError
from toolkit.histories.columns.lazy import LazyCell
from toolkit.histories.enums import canonical_enum

__all__ = [
    "EVENT_BASICS",
    "HISTORY_COLUMNS",
    "HISTORY_SCHEMA",
    "HistoryKey",
    "attr",
    "build_frame",
    "canonical",
    "check_events",
    "duration",
    "event_rows",
    "failure_of",
    "first_present",
    "frame_of_columns",
    "history_fields",
    "nullable",
    "to_int",
]

#: Columns every table starts with: which history a row comes from.
HISTORY_COLUMNS: tuple[str, ...] = ("source", "history", "workflow_id", "run_id")

#: Column -> dtype of those columns: the head of every table's schema.
HISTORY_SCHEMA: dict[str, str] = {
    "source": "object",
    "history": "Int64",
    "workflow_id": "object",
    "run_id": "object",
}

#: Columns of the events frame every table reads from each of its events.
EVENT_BASICS: tuple[str, ...] = (
    *HISTORY_COLUMNS,
    "event_id",
    "event_time",
    "event_type",
    "workflow_task",
    "attributes",
)

#: Columns of the events frame the tables read (beyond the per-table ones).
_BASE_REQUIRED = (
    "source",
    "history",
    "run_id",
    "event_id",
    "event_time",
    "event_type",
    "attributes",
)

_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)s\s*$")


def check_events(events: pd.DataFrame, needed: Iterable[str], table: str) -> None:
    """Raise HistoryFormatError unless ``events`` looks like the events frame.

    Parameters
    ----------
    events
        What the caller passed.
    needed
        Columns this table reads besides the always-needed ones.
    table
        The table's name, for the message.
    """
    if not isinstance(events, pd.DataFrame):
        raise HistoryFormatError(
            f"<{type(events).__name__}>",
            f"{table}() needs an events frame",
            expected="the DataFrame returned by toolkit.read_history",
        )
    missing = [c for c in (*_BASE_REQUIRED, *needed) if c not in events.columns]
    if missing:
        raise HistoryFormatError(
            "<events frame>",
            f"{table}() cannot read a frame without columns {missing}",
            position=f"columns {list(events.columns)[:12]}",
            expected="the columns of toolkit.read_history (see CONTRIBUTING.md)",
        )


class HistoryKey(NamedTuple):
    """Identifies one history inside a (possibly multi-history, multi-source) events frame."""

    source: Any
    history: Any


def event_rows(
    events: pd.DataFrame,
    event_types: Iterable[str],
    columns: Sequence[str],
) -> Iterator[Any]:
    """Yield the events of the given types, in frame order, as namedtuples of ``columns``.

    The frame's own order (history, then event id) is what the joins rely on: an entity's opening
    event comes before the events that refer to it.
    """
    wanted = events[events["event_type"].isin(set(event_types))]
    row_type = _row_type(tuple(columns))
    arrays = []
    for column in columns:
        if column not in wanted.columns:  # optional contract columns a frame may lack
            arrays.append([None] * len(wanted))
        elif column in _LAZY_COLUMNS:
            arrays.append(_plain_values(wanted[column]))
        else:
            # Plain object arrays: iterating pandas' Arrow-backed strings row by row is slow.
            arrays.append(wanted[column].to_numpy(dtype=object))
    for values in zip(*arrays, strict=True):
        yield row_type._make(values)


@cache
def _row_type(columns: tuple[str, ...]) -> Any:
    return namedtuple("Event", columns)


#: Columns whose cells the loader may keep as lazily decoded proxies.
_LAZY_COLUMNS = frozenset({"attributes", "input", "result", "details"})


def _plain_values(column: pd.Series) -> list[Any]:
    """A column's cells as plain values (dict, list, None): lazy cells are decoded.

    Lookups on plain dicts are faster, ``isinstance(..., Mapping)`` and ``is None`` tests hold,
    and the tables hand users plain values rather than the loader's proxies.
    """
    return [cell.value if isinstance(cell, LazyCell) else cell for cell in column.to_numpy(object)]


def attr(attributes: Any, *path: str | int, default: Any = None) -> Any:
    """Walk nested attributes: ``attr(a, "activityType", "name")``; ``default`` if a step fails."""
    value = attributes
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, Sequence) or isinstance(value, str) or len(value) <= step:
                return default
            value = value[step]
        else:
            if not isinstance(value, Mapping):
                return default
            value = value.get(step)
        if value is None:
            return default
    return value


def to_int(value: Any) -> int | None:
    """int64 fields arrive as numbers or strings; empty, null and non-numbers give None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def first_present(*values: Any) -> Any:
    """The first value that is not None/NaN/empty string."""
    for value in values:
        if value is None or value is pd.NA or value == "":
            continue
        if isinstance(value, float) and value != value:  # NaN
            continue
        return value
    return None


def canonical(enum: EnumTypeWrapper, value: Any) -> str | None:
    """An enum value as its canonical proto name (``TIMEOUT_TYPE_START_TO_CLOSE``).

    Every spelling :func:`toolkit.histories.enums.canonical_enum` knows; empty values give None,
    values unknown to the installed API come back verbatim, as text.
    """
    return canonical_enum(enum.DESCRIPTOR, value)


def duration(value: Any) -> pd.Timedelta:
    """A proto duration (``"10s"``, ``"0.001s"``, ``{"seconds": 1, "nanos": 5}``) or NaT.

    NaT also for a value no timedelta holds (beyond pandas' +-292 years): the raw value stays in
    the event's ``attributes``.
    """
    try:
        return _duration(value)
    except (ValueError, OverflowError):
        return pd.NaT


def _duration(value: Any) -> pd.Timedelta:
    if value is None or value == "":
        return pd.NaT
    if isinstance(value, Mapping):
        seconds = to_int(value.get("seconds")) or 0
        nanos = to_int(value.get("nanos")) or 0
        return pd.Timedelta(seconds=seconds) + pd.Timedelta(nanoseconds=nanos)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return pd.Timedelta(nanoseconds=int(value))  # pre-1.0 dialects store nanoseconds
    match = _DURATION.match(str(value))
    if not match:
        return pd.NaT
    return pd.Timedelta(seconds=float(match.group(1)))


def failure_of(attributes: Any, key: str = "failure") -> tuple[str | None, str | None]:
    """``(message, type)`` of a failure object: the application type or the failure-info kind."""
    failure = attr(attributes, key)
    if not isinstance(failure, Mapping):
        return None, None
    message = failure.get("message")
    app_type = attr(failure, "applicationFailureInfo", "type")
    if app_type:
        return message, app_type
    kind = next((k for k in failure if k.endswith("FailureInfo")), None)
    return message, kind


def build_frame(
    records: Iterable[dict[str, Any]],
    schema: Mapping[str, str],
    sort_by: Sequence[str],
) -> pd.DataFrame:
    """A DataFrame with exactly the schema's columns and dtypes, sorted by ``sort_by``.

    ``schema`` maps column -> dtype (``object``, ``Int64``, ``boolean``, ``datetime``,
    ``timedelta``). Sorting is stable and keeps missing sources (None) in place.
    """
    rows = list(records)
    columns = {column: [row.get(column) for row in rows] for column in schema}
    return frame_of_columns(columns, schema, sort_by)


def frame_of_columns(
    columns: Mapping[str, Any],
    schema: Mapping[str, str],
    sort_by: Sequence[str],
) -> pd.DataFrame:
    """:func:`build_frame` from the values of each column (sequences of equal length).

    A column may be given as plain values (None where missing) or, for ``datetime`` columns, as
    an array pandas already holds as times: either gives the same typed column.
    """
    typed = {column: _typed_column(columns[column], dtype) for column, dtype in schema.items()}
    frame = pd.DataFrame(typed)
    if len(frame) and not _in_order(frame, sort_by):
        sortable = frame.assign(source=frame["source"].astype(str))
        order = sortable.sort_values(list(sort_by), kind="stable").index
        frame = frame.loc[order]
    return frame.reset_index(drop=True)


def _in_order(frame: pd.DataFrame, sort_by: Sequence[str]) -> bool:
    """Whether the stable sort of :func:`frame_of_columns` would leave every row where it is
    (entities are numbered in the order of their events, so the rows mostly come sorted):
    known here where every source is text and the other keys are integers, none missing;
    False where it is not known (the sort then decides)."""
    keys = []
    for name in sort_by:
        column = frame[name]
        if name == "source":  # sorted as text: text as it is
            values = column.to_numpy(dtype=object)
            if pd.api.types.infer_dtype(values, skipna=False) != "string":
                return False
        elif pd.api.types.is_integer_dtype(column.dtype) and not column.hasnans:
            values = column.to_numpy(dtype=np.int64)
        else:
            return False
        keys.append(values)
    undecided = np.ones(len(frame) - 1, dtype=bool)  # rows equal to the next on the keys so far
    for values in keys:
        before, after = values[:-1], values[1:]
        if (undecided & (before > after)).any():
            return False
        undecided &= before == after
    return True


def _typed_column(values: Any, dtype: str) -> pd.Series:
    if dtype == "datetime":
        return pd.Series(pd.to_datetime(values, utc=True), dtype="datetime64[ns, UTC]")
    if dtype == "timedelta":
        return pd.Series(pd.to_timedelta(values), dtype="timedelta64[ns]")
    if dtype == "object":
        # Built as object explicitly: pandas 3 would otherwise infer its own string dtype.
        return pd.Series(values, dtype=object)
    fast = _masked(values, dtype)
    if fast is not None:
        return pd.Series(fast, copy=False)
    return pd.Series([None if v is None or v is pd.NA else v for v in values], dtype=dtype)


_MISSING_TYPES = (type(None), type(pd.NA))
_MASKED = {"Int64": (int, np.int64, pd.arrays.IntegerArray),
           "boolean": (bool, np.bool_, pd.arrays.BooleanArray)}


def _masked(values: Any, dtype: str) -> Any:
    """A nullable ``Int64`` / ``boolean`` column built from a value array and a mask, when every
    value is a plain int (bool) or missing: what the per-value conversion gives, without it.
    None for anything else (that conversion decides)."""
    kinds = _MASKED.get(dtype)
    if kinds is None:
        return None
    plain, numpy_type, array_type = kinds
    if isinstance(values, np.ndarray) and values.dtype == numpy_type:
        return array_type(values.copy(), np.zeros(len(values), dtype=bool))
    cells = values if isinstance(values, np.ndarray) else np.array(values, dtype=object)
    if cells.dtype != object or not set(map(type, cells)) <= {plain, *_MISSING_TYPES}:
        return None
    # Every cell an int or None / NA (checked above): pandas' C test of missing markers finds
    # exactly those, without a Python call per cell.
    missing = pd.isna(cells)
    present = cells.copy()
    present[missing] = 0 if plain is int else False
    try:
        data = present.astype(numpy_type)
    except OverflowError:  # beyond 64 bits: as the per-value conversion reports it
        return None
    return array_type(data, missing)


def history_fields(event: Any) -> dict[str, Any]:
    """The identity columns of the history an event belongs to."""
    return {
        "source": event.source,
        "history": event.history,
        "workflow_id": event.workflow_id,
        "run_id": event.run_id,
    }


def nullable(value: Any) -> Any:
    """pandas missing markers (NA, NaN, NaT) as None, for records built from frame rows."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and value != value:
        return None
    return value
