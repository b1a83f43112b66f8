"""Entity tables built column-wise: events grouped by entity, each column picked with numpy.

A table such as ``activities`` follows each entity from its opening event to the events that link
back to it. Instead of walking the events one by one and filling a record per entity, the events
of the table's types are grouped by (source, history, opening event id) once, numbered in order of
first appearance (the order records were created in), and every column is then taken from one
event per group: the first event, the last event of a stage, or the first one that has a value.
These are the rules a walk in history order produces, stated per column:

- set by every event of a stage (a stamp, an outcome): the *last* event of that stage wins;
- set only while still empty (``fill_once``): the *first* event with a value wins;
- set by one stage and filled by another while empty (a started event's identity, else the
  closing event's): the last event of the first stage, else the first value of the second stage
  seen *after* it (:meth:`Entities.overwrite_then_fill`).

Values with no column in the events frame come from the attributes: only the few fields a table
reads, decoded for all its events at once (:mod:`~toolkit.histories.tables.attribute_views`).
Fields that only stand in for an empty column (an activity id, an attempt, the link to the
opening event) are decoded for the events whose column is empty, when there are any: the
loader fills those columns, so a batch of its histories decodes none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd

from toolkit.histories.columns.lazy import LazyCell
from toolkit.histories.enums import camel
from toolkit.histories.tables.attribute_views import attribute_fields, dig
from toolkit.histories.tables.common import (
    HISTORY_COLUMNS,
    duration,
    first_present,
    to_int,
)

__all__ = [
    "Entities",
    "FrameRows",
    "cached_duration",
    "first_present_of",
    "group_entities",
    "joint_codes",
    "plain_column",
    "unzip",
]

#: Row positions, one per entity; -1 where the entity has no such event.
Picks = np.ndarray


def plain_column(frame: pd.DataFrame, column: str) -> np.ndarray:
    """A frame column as an object array whose missing markers (NA, NaN, NaT) are None.

    A column the frame lacks (an optional one) reads as all None, as in the per-event walk.
    """
    if column not in frame.columns:
        return np.full(len(frame), None, dtype=object)
    if isinstance(frame, FrameRows):
        return frame.plain(column)
    values = frame[column].to_numpy(dtype=object)
    missing = pd.isna(values)
    if missing.any():
        values = values.copy()
        values[missing] = None
    return values


class Entities:
    """The events of one entity table, grouped by entity.

    Each event belongs to the entity of its opening event: its own id for an opening event, else
    the id its ``link`` column names (its attribute where the column is empty). Entities are
    numbered 0, 1, ... in order of first appearance, per (source, history, opening event id).

    Parameters
    ----------
    events
        The table's events (its event types only), in the events frame's order.
    fields
        Attribute field -> its value on each event (see :func:`attribute_fields`): the fields
        :meth:`read` reads. Others are decoded where :meth:`column_or_attribute` needs them.
    cells
        The events' ``attributes`` cells (default: the ``attributes`` column of ``events``).
    opening
        Event types that open an entity.
    link
        The column naming the opening event on the other events (``scheduled_event_id``).

    Attributes
    ----------
    group : numpy.ndarray
        The entity of each event.
    count : int
        How many entities.
    key : numpy.ndarray
        The opening event id of each entity (None where an orphan names no opening event).
    """

    def __init__(
        self,
        events: pd.DataFrame,
        fields: dict[str, np.ndarray],
        opening: Sequence[str],
        link: str,
        cells: np.ndarray | None = None,
    ) -> None:
        self.events = events
        self.fields = fields
        if cells is None:
            cells = (events["attributes"].to_numpy(dtype=object) if "attributes" in events.columns
                     else np.full(len(events), None, dtype=object))  # fmt: skip
        self.cells = cells
        self.event_type = plain_column(events, "event_type")
        # Masks test small integer codes, not every event's type text.
        codes, names = pd.factorize(self.event_type)
        self._type_codes: np.ndarray = codes
        self._type_code = {name: code for code, name in enumerate(names.tolist())}
        self._columns: dict[str, np.ndarray] = {}
        is_opening = self.mask(opening)
        linked = self.column_or_attribute(link, camel(link), rows=~is_opening, convert=to_int)
        key = np.where(is_opening, self.column("event_id"), linked)
        self.group = joint_codes(self.column("source"), self.column("history"), key)
        self.count = int(self.group.max()) + 1 if len(key) else 0
        self.key = key[self.first()]

    # ----------------------------------------------------------------------- which event

    def mask(self, event_types: Iterable[str]) -> np.ndarray:
        """Which events have one of ``event_types``."""
        wanted = [self._type_code[kind] for kind in event_types if kind in self._type_code]
        return np.isin(self._type_codes, wanted)

    def first(self, mask: np.ndarray | None = None) -> Picks:
        """Per entity, the first event (among ``mask``); -1 where there is none."""
        rows = np.arange(len(self.group)) if mask is None else np.flatnonzero(mask)
        return self._pick(rows)

    def last(self, mask: np.ndarray) -> Picks:
        """Per entity, the last event among ``mask``; -1 where there is none."""
        return self._pick(np.flatnonzero(mask)[::-1])

    def _pick(self, rows: np.ndarray) -> Picks:
        picks = np.full(self.count, -1, dtype=np.int64)
        groups, first_seen = np.unique(self.group[rows], return_index=True)
        picks[groups] = rows[first_seen]
        return picks

    # ----------------------------------------------------------------------- values

    def column(self, name: str) -> np.ndarray:
        """The events' ``name`` column as plain values (cached)."""
        values = self._columns.get(name)
        if values is None:
            values = self._columns[name] = plain_column(self.events, name)
        return values

    def history_columns(self, picks: Picks) -> dict[str, np.ndarray]:
        """``source``, ``history``, ``workflow_id``, ``run_id`` of the events at ``picks``, as the
        frame holds them (a record took them verbatim from its first event)."""
        columns = {}
        for name in HISTORY_COLUMNS:
            if name in self.events.columns:
                columns[name] = self.events[name].to_numpy(dtype=object)[picks]
            else:
                columns[name] = np.full(len(picks), None, dtype=object)
        return columns

    def take(self, values: np.ndarray, picks: Picks) -> np.ndarray:
        """``values`` (one per event) at ``picks``, None where an entity has no pick."""
        taken = values[picks]  # -1 takes the last value: overwritten below
        taken[picks < 0] = None
        return taken

    def times(self, picks: Picks) -> Any:
        """The event times at ``picks`` (missing where none), still typed as the frame has them."""
        return self.events["event_time"].array.take(picks, allow_fill=True)

    def pick(self, column: str, picks: Picks) -> np.ndarray:
        """The ``column`` values of the events at ``picks``."""
        return self.take(self.column(column), picks)

    def ids(self, picks: Picks) -> np.ndarray:
        """The event ids at ``picks``."""
        return self.pick("event_id", picks)

    #: Leave payload cells lazy (see :func:`toolkit.activities`'s ``payload_cells``).
    payload_cells = False

    def payloads(self, column: str, picks: Picks) -> np.ndarray:
        """A payload column at ``picks``, lazy cells decoded (the tables hold plain values)
        unless :attr:`payload_cells` is set."""
        taken = self.take(self.column(column), picks)
        if self.payload_cells:
            return taken
        for i, cell in enumerate(taken):
            if isinstance(cell, LazyCell):
                taken[i] = cell.value
        return taken

    def read(self, picks: Picks, convert: Callable[..., Any], *fields: str) -> np.ndarray:
        """``convert(value of each of fields)`` for each picked event; None where no pick.

        Most events have none of the fields a column reads (a failure, a timeout type, a
        build id): ``convert`` runs once for all of those (it is a pure function of its
        values), and once per event for the others.
        """
        picked = picks >= 0
        rows = picks[picked]
        columns = [self.attribute(name, rows) for name in fields]
        result = np.full(len(picks), None, dtype=object)
        absent = np.logical_and.reduce([np.equal(c, None) for c in columns])
        nothing = convert(*(None for _ in fields)) if absent.any() else None
        if not _immutable(nothing):  # a list or dict must not be one object in many rows
            absent[:] = False
        some = np.flatnonzero(~absent)
        values = map(convert, *(c[some] for c in columns))
        held = np.fromiter(values, dtype=object, count=len(some))
        found = np.empty(len(rows), dtype=object)
        count = len(rows) - len(some)
        found[absent] = np.fromiter(repeat(nothing, count), dtype=object, count=count)
        found[some] = held
        result[picked] = found
        return result

    def column_or_attribute(
        self,
        column: str,
        *path: str,
        rows: np.ndarray | None = None,
        convert: Callable[[Any], Any] | None = None,
    ) -> np.ndarray:
        """Per event (or only at ``rows``): its ``column`` value, else its attribute at ``path``.

        The attribute is read only where the column is empty (None or ""), and passed through
        ``convert`` when given; empty results are None. Events outside ``rows`` get None.
        """
        values = self.column(column).copy()
        if rows is None:
            empty = _empty(values)
        else:  # only the rows' values tested (a stage's events: a fraction of the table's)
            at = np.flatnonzero(rows)
            empty = np.zeros(len(values), dtype=bool)
            empty[at] = _empty(values[at])
            values[~rows] = None
        needed = np.flatnonzero(empty)
        if not len(needed):  # the loader filled the column: no attribute decoded
            return values
        field = self.attribute(path[0], needed)
        # Where the event has no such attribute either, the value is the same for all.
        unset = np.equal(field, None)
        nothing = first_present(convert(None) if convert is not None else None)
        if unset.any() and _immutable(nothing) and type(nothing) is not tuple:
            values[needed[unset]] = nothing
            needed, field = needed[~unset], field[~unset]
        for row, value in zip(needed.tolist(), field.tolist(), strict=True):
            found = dig(value, *path[1:])
            values[row] = first_present(convert(found) if convert is not None else found)
        return values

    def attribute(self, name: str, rows: np.ndarray) -> np.ndarray:
        """The attribute field ``name`` of the events at ``rows`` (decoded for those only,
        unless :meth:`read` reads it anyway)."""
        if name in self.fields:
            return self.fields[name][rows]
        return attribute_fields(self.cells[rows], (name,))[name]

    def first_value(self, values: np.ndarray) -> np.ndarray:
        """Per entity, the first non-None of ``values`` (one per event): ``fill_once``."""
        return self.take(values, self.first(_present(values)))

    def overwrite_then_fill(
        self,
        stage: np.ndarray,
        stage_values: np.ndarray,
        filling: np.ndarray,
        filling_values: np.ndarray,
    ) -> np.ndarray:
        """Per entity: the last ``stage`` event's value, else the first non-None value of a
        ``filling`` event that comes after it (after any event when the stage is absent)."""
        last = self.last(stage)
        result = self.take(stage_values, last)
        after = np.arange(len(self.group)) > last[self.group]
        fill = self.first(filling & after & _present(filling_values))
        needed = np.flatnonzero(np.equal(result, None) & (fill >= 0))
        result[needed] = filling_values[fill[needed]]
        return result


def first_present_of(values: np.ndarray, fallbacks: np.ndarray) -> np.ndarray:
    """Element-wise :func:`~toolkit.histories.tables.common.first_present` of two arrays."""
    return np.fromiter(
        (first_present(v, f) for v, f in zip(values, fallbacks, strict=True)),
        dtype=object,
        count=len(values),
    )


def unzip(rows: np.ndarray, width: int) -> list[np.ndarray]:
    """An array of ``width``-tuples (or None) as ``width`` arrays: the first items, ..."""
    def part(i: int) -> np.ndarray:
        return np.fromiter(
            (None if row is None else row[i] for row in rows), dtype=object, count=len(rows)
        )

    return [part(i) for i in range(width)]


def cached_duration(value: Any) -> Any:
    """:func:`~toolkit.histories.tables.common.duration`, each distinct text parsed once (the
    same few timeouts repeat over a fleet's schedules)."""
    if isinstance(value, str):
        return _text_duration(value)
    return duration(value)


@lru_cache(maxsize=1024)
def _text_duration(value: str) -> Any:
    return duration(value)


def _immutable(value: Any) -> bool:
    """Whether one object may stand for the value of many cells."""
    if value is None or value is pd.NaT or type(value) in (str, int, float, bool, pd.Timedelta):
        return True
    return type(value) is tuple and all(_immutable(v) for v in value)


def _present(values: np.ndarray) -> np.ndarray:
    return np.not_equal(values, None)


def _empty(values: np.ndarray) -> np.ndarray:
    """None or the empty string: values ``column_or_attribute`` does not take from a column."""
    # One comparison per cell in numpy's C loop; the columns read hold text, ints or None.
    return np.equal(values, None) | np.equal(values, "")


def group_entities(
    events: pd.DataFrame,
    opening: Sequence[str],
    others: Sequence[str],
    link: str,
    fields: Sequence[str],
) -> Entities:
    """Select the events of ``opening`` and ``others`` types and group them by entity.

    Parameters
    ----------
    events
        The events frame.
    opening
        Event types that open an entity (keyed by their own event id).
    others
        Event types naming their opening event in the ``link`` column (else attribute).
    link
        The link column (``scheduled_event_id``).
    fields
        The attribute fields the table reads with :meth:`Entities.read` (see
        :func:`attribute_fields`); the fallbacks of columns are decoded where needed.
    """
    kept = np.flatnonzero(events["event_type"].isin(set(opening) | set(others)).to_numpy())
    selected = FrameRows(events, kept)
    cells = selected["attributes"].to_numpy(dtype=object)
    decoded = attribute_fields(cells, tuple(dict.fromkeys(fields)))
    return Entities(selected, decoded, opening, link, cells)  # type: ignore[arg-type]


class FrameRows:
    """Rows of an events frame, a column at a time: the few columns a table reads are taken,
    instead of copying every column of the frame (payloads, attributes ...) to select rows.
    Reads like a frame for :func:`plain_column` and :class:`Entities`."""

    def __init__(self, frame: pd.DataFrame, rows: np.ndarray) -> None:
        self.frame = frame
        self.rows = rows
        self.columns = frame.columns

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, column: str) -> pd.Series:
        return self.frame[column].take(self.rows)

    def plain(self, column: str) -> np.ndarray:
        """:func:`plain_column` of the rows' ``column``, taken from the frame's values without
        a Series of the rows: integers and booleans (never missing) boxed as they are, nullable
        ones with None where masked, only other kinds tested for missing markers."""
        series = self.frame[column]
        dtype = series.dtype
        if isinstance(dtype, np.dtype) and dtype.kind in "iub":
            return series.to_numpy()[self.rows].astype(object)
        if isinstance(dtype, (pd.Int64Dtype, pd.BooleanDtype)):
            return series.array.take(self.rows).to_numpy(dtype=object, na_value=None)
        if dtype is np.dtype(object):
            values = series.to_numpy()[self.rows]  # a copy: the frame's own stay as they are
        else:
            values = series.take(self.rows).to_numpy(dtype=object)
        missing = pd.isna(values)
        if missing.any():
            values[missing] = None
        return values


def joint_codes(*keys: np.ndarray) -> np.ndarray:
    """One code per distinct tuple of ``keys`` (None a value like any), in order of first sight."""
    combined = np.zeros(len(keys[0]), dtype=np.int64)
    for values in keys:
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        combined, _ = pd.factorize(combined * max(len(uniques), 1) + codes)
    return combined
