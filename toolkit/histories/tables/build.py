"""Filling the derived tables' records: one per entity, joined from the events that concern it.

Most tables follow one entity (an activity, a timer, a child workflow, ...) from the event that
opens it to the events that refer back to it by id (``scheduledEventId``, ``startedEventId``,
``initiatedEventId``). An :class:`EntityJoin` states what is specific to a table: its schema, its
events, the link back to the opening event, the starting values of a record and the durations to
derive. :func:`entity_table` does the rest: check the input, walk the events once in history
order, create each record on first sight (an orphan event whose opening event is missing still
gets one), let the table's ``apply`` fill it, then build the typed, sorted frame.

The small record helpers (:func:`column_or_attribute`, :func:`stamp`, :func:`close`,
:func:`record_failure`, ...) are what the tables' ``apply`` functions share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from temporalio.api.enums.v1 import RetryState

from toolkit.histories.enums import camel
from toolkit.histories.tables.common import (
    EVENT_BASICS,
    HistoryKey,
    attr,
    build_frame,
    canonical,
    check_events,
    event_rows,
    failure_of,
    first_present,
    history_fields,
    nullable,
    to_int,
)

__all__ = [
    "RETRY_STATE",
    "EntityJoin",
    "Record",
    "Records",
    "add_durations",
    "canonical_of",
    "close",
    "column_or_attribute",
    "entity_frame",
    "entity_table",
    "fill_once",
    "join_entities",
    "new_record",
    "record_failure",
    "stamp",
]

#: A record being filled: column -> value (plus any private keys a table uses while joining).
Record = dict[str, Any]
#: Records by (history, key): the key is the opening event id for :class:`EntityJoin` tables.
Records = dict[tuple[HistoryKey, Any], Record]


# --------------------------------------------------------------------------- values of one event


def column_or_attribute(
    event: Any,
    column: str,
    *path: str | int,
    convert: Callable[[Any], Any] | None = None,
) -> Any:
    """The event's value in the frame ``column``, else its attribute at ``path``.

    The loader fills the frame's columns for the histories it reads; the attributes are the
    fallback for frames built otherwise. The attribute is read only when the column is empty, and
    passed through ``convert`` (``to_int``, an enum's :func:`canonical_of`) when given.
    """
    value = nullable(getattr(event, column))
    if value is not None and value != "":
        return value
    found = attr(event.attributes, *path)
    return first_present(convert(found) if convert is not None else found)


def canonical_of(enum: EnumTypeWrapper) -> Callable[[Any], str | None]:
    """A converter giving an ``enum``'s canonical names (for ``column_or_attribute(convert=)``)."""

    def convert(value: Any) -> str | None:
        return canonical(enum, value)

    return convert


#: ``RETRY_STATE_*`` names of any spelling.
RETRY_STATE = canonical_of(RetryState)


# --------------------------------------------------------------------------- filling a record


def new_record(schema: Mapping[str, str], event: Any, **fields: Any) -> Record:
    """An empty record of ``schema`` for the history ``event`` belongs to, with ``fields`` set."""
    record: Record = dict.fromkeys(schema)
    record.update(history_fields(event))
    record.update(fields)
    return record


def fill_once(
    record: Record,
    event: Any,
    column: str,
    *path: str | int,
    convert: Callable[[Any], Any] | None = None,
) -> None:
    """Set ``record[column]`` from the event (its column, else ``path``) unless already set.

    For the values several events of an entity carry (ids, types, names): the first one seen wins.
    """
    if record[column] is None:
        record[column] = column_or_attribute(event, column, *path, convert=convert)


def stamp(record: Record, stage: str, event: Any) -> None:
    """Record ``event`` as the entity's ``stage``: ``{stage}_event_id`` and ``{stage}_time``."""
    record[f"{stage}_event_id"] = event.event_id
    record[f"{stage}_time"] = nullable(event.event_time)


def close(record: Record, event: Any, outcome: str) -> None:
    """Record ``event`` as the closing event, with the ``outcome`` it gives the entity."""
    record["outcome"] = outcome
    stamp(record, "closed", event)


def record_failure(record: Record, event: Any, holder: Any = None, fallback: Any = None) -> None:
    """Set ``failure_message`` and ``failure_type`` from the frame, else from a failure object.

    ``holder`` is the mapping whose ``failure`` is read (default: the event's attributes);
    ``fallback`` is the message when there is no failure (pre-1.0 ``reason``, ``details``).
    """
    message, failure_type = failure_of(event.attributes if holder is None else holder)
    record["failure_message"] = first_present(nullable(event.failure_message), message, fallback)
    record["failure_type"] = first_present(nullable(event.failure_type), failure_type)


# --------------------------------------------------------------------------- tables of entities


@dataclass(frozen=True)
class EntityJoin:
    """What one entity table joins, and how.

    Attributes
    ----------
    table : str
        The table's function name, for error messages.
    schema : Mapping[str, str]
        Column -> dtype of the table (its ``*_COLUMNS``).
    key_column : str
        The record column holding the id of the entity's opening event (also the sort key).
    opening : tuple[str, ...]
        Event types that open an entity.
    others : tuple[str, ...]
        Event types that refer back to the opening event through ``link``.
    link : str
        The frame column naming the opening event on ``others`` (``scheduled_event_id``).
    reads : tuple[str, ...]
        Frame columns the table reads beyond :data:`~toolkit.histories.tables.common.EVENT_BASICS`.
    requires : tuple[str, ...]
        Frame columns the table cannot work without (beyond the always-needed ones).
    starts : Mapping[str, Any]
        Values of a new record (``outcome="pending"``, ...).
    inherits : tuple[str, ...]
        Frame columns copied onto a new record from the event that creates it (opening or orphan).
    durations : Mapping[str, tuple[str, str]]
        Duration column -> (start time column, end time column).
    """

    table: str
    schema: Mapping[str, str]
    key_column: str
    opening: tuple[str, ...]
    others: tuple[str, ...]
    link: str
    reads: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    starts: Mapping[str, Any] = field(default_factory=dict)
    inherits: tuple[str, ...] = ()
    durations: Mapping[str, tuple[str, str]] = field(default_factory=dict)


def join_entities(
    events: pd.DataFrame, join: EntityJoin, apply: Callable[[Record, Any], None]
) -> Records:
    """One record per entity: events walked in history order, each passed to ``apply``."""
    opening = frozenset(join.opening)
    link_attribute = camel(join.link)
    records: Records = {}
    for event in event_rows(events, (*join.opening, *join.others), (*EVENT_BASICS, *join.reads)):
        if event.event_type in opening:
            key_id = event.event_id
        else:
            key_id = column_or_attribute(event, join.link, link_attribute, convert=to_int)
        key = (HistoryKey(event.source, event.history), key_id)
        record = records.get(key)
        if record is None:
            fields = {join.key_column: key_id, **join.starts}
            fields.update({column: nullable(getattr(event, column)) for column in join.inherits})
            record = records[key] = new_record(join.schema, event, **fields)
        apply(record, event)
    return records


def entity_frame(records: Iterable[Record], join: EntityJoin) -> pd.DataFrame:
    """The table of ``records``: sorted by history then opening event, durations derived."""
    frame = build_frame(records, join.schema, ("source", "history", join.key_column))
    add_durations(frame, join.durations)
    return frame


def entity_table(
    events: pd.DataFrame, join: EntityJoin, apply: Callable[[Record, Any], None]
) -> pd.DataFrame:
    """Check ``events``, join them into records and return the table."""
    check_events(events, join.requires, join.table)
    return entity_frame(join_entities(events, join, apply).values(), join)


def add_durations(frame: pd.DataFrame, durations: Mapping[str, Sequence[str]]) -> None:
    """Set each duration column to its end time minus its start time, in place."""
    for column, (start, end) in durations.items():
        frame[column] = frame[end] - frame[start]
