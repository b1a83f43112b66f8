"""A scanned proto-JSON history (:mod:`toolkit.histories.reading.json_scan`) -> column arrays.

The scanner hands over each column's values as arrays (ids and counts as numbers, texts decoded
in one Arrow call), so a column costs a few numpy operations, not a Python object per field as
the typed msgspec decode does (:mod:`~toolkit.histories.columns.from_json`, which this equals).
The few event types whose columns come from nested messages (updates, child workflows) and the
started event are read through their msgspec views, with the same code as the typed path.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from toolkit.histories.columns.common import (
    BadFieldValue,
    EventColumns,
    cause_name,
    failure_columns,
    fill_types,
    new_columns,
    retry_state_name,
    scatter,
    small_codes,
    type_info,
)
from toolkit.histories.columns.from_json import (
    ATTRIBUTE_COLUMNS,
    fill_group,
    name_text,
    not_a_number,
    own_id,
)
from toolkit.histories.columns.lazy import LazyPayloads, lazy_json_cells
from toolkit.histories.reading.dialects import RawHistory
from toolkit.histories.reading.json_scan import FIELDS, KEYS, NAMED, SHAPES, SPELLINGS, TEXT
from toolkit.histories.views import ATTRIBUTE_VIEWS

__all__ = ["scanned_columns"]

_CODE = {name: field + 1 for field, name in enumerate(FIELDS)}
_QUOTE = ord('"')


def scanned_columns(
    history: RawHistory, source_name: str, codec: Any, decode: bool
) -> EventColumns:
    """Column arrays, event times, producing task ids and start facts of a scanned history.

    Raises
    ------
    HistoryFormatError
        For a value a number column cannot hold, as the typed path does.
    """
    s = history.scanned
    n = len(s.ids)
    c = new_columns(n)
    c["event_id"] = s.ids.copy()
    distinct, codes = small_codes(s.types)
    infos = [type_info(SPELLINGS[code]) for code in distinct.tolist()]
    types = fill_types(c, infos, codes)
    keys = np.array([KEYS[code] for code in distinct.tolist()], dtype=object)[codes].tolist()
    _fill_rows(c, s, codec, decode)
    started: dict[int, tuple[Any, ...]] = {}
    for code, views in s.views.items():
        positions = np.flatnonzero(s.types == code)
        info = type_info(SPELLINGS[code])
        empty = ATTRIBUTE_VIEWS[KEYS[code]]()
        views = [v if v is not None else empty for v in views]
        try:
            fill_group(c, positions, views, frozenset(type(empty).__struct_fields__), info,
                       codec, decode)  # fmt: skip
        except BadFieldValue as bad:
            raise not_a_number(source_name, int(positions[bad.index]), info, bad) from None
        if info.short == "WorkflowExecutionStarted":
            for i, view in zip(positions.tolist(), views, strict=True):
                started[i] = (
                    view.originalExecutionRunId, name_text(view.workflowType), own_id(view)
                )
    c["attributes"], c["extra"] = lazy_json_cells(history, keys)
    history.scanned = None  # the cells keep the history alive; they need only its bytes
    counts = np.array([n], dtype=np.int64)
    return EventColumns(c, s.times, c.pop("completed_by"), started, counts, types)


def _rows(s: Any, field: str) -> tuple[np.ndarray, ...]:
    code = _CODE[field]
    at = slice(int(s.bounds[code]), int(s.bounds[code + 1]))
    return tuple(column[at] for column in s.rows)


def _fill_rows(c: dict[str, Any], s: Any, codec: Any, decode: bool) -> None:
    """Every routed field's rows into its column (the typed path's ``fill_group`` rules)."""
    taken = 0  # texts of the TEXT/NAMED rows used so far (they come in code order)
    for field, code in _CODE.items():
        count = int(s.bounds[code + 1] - s.bounds[code])
        if SHAPES[code] in (TEXT, NAMED) and count:
            events = _rows(s, field)[0]
            c[ATTRIBUTE_COLUMNS[field]][events] = s.texts[taken : taken + count]
            taken += count
    for field in ("scheduledEventId", "startedEventId", "initiatedEventId", "attempt",
                  "historySizeBytes", "suggestContinueAsNew"):  # fmt: skip
        events, values, _, _ = _rows(s, field)
        c[ATTRIBUTE_COLUMNS[field]][events] = values
    _completed_by(c, s)
    events = _rows(s, "retryState")[0]
    states = s.decoded.get(_CODE["retryState"], [])
    scatter(c["retry_state"], events, [retry_state_name(v) for v in states])
    events = _rows(s, "cause")[0]
    enums = [type_info(SPELLINGS[t]).cause_enum for t in s.types[events].tolist()]
    causes = zip(enums, s.decoded.get(_CODE["cause"], []), strict=True)
    scatter(c["cause"], events, [cause_name(enum, v) for enum, v in causes])
    if decode:
        view = memoryview(s.data)
        for field in ("input", "result", "details"):
            events, _, starts, lengths = _rows(s, field)
            cells = [LazyPayloads(msgspec.Raw(view[a : a + b]), codec)
                     for a, b in zip(starts.tolist(), lengths.tolist(), strict=True)]  # fmt: skip
            scatter(c[field], events, cells)
    events = _rows(s, "failure")[0]
    for i, failure in zip(events.tolist(), s.decoded.get(_CODE["failure"], []), strict=True):
        c["failure_message"][i], c["failure_type"][i] = failure_columns(failure, codec, decode)


def _completed_by(c: dict[str, Any], s: Any) -> None:
    """``workflowTaskCompletedEventId``, else the legacy ``decisionTaskCompletedEventId``: the
    typed path takes the first that is truthy as read (a non-empty text, or a non-zero number)."""
    legacy, values, _, _ = _rows(s, "decisionTaskCompletedEventId")
    c["completed_by"][legacy] = values
    events, values, starts, lengths = _rows(s, "workflowTaskCompletedEventId")
    quoted = np.frombuffer(s.data, dtype=np.uint8)[starts] == _QUOTE if len(starts) else starts
    truthy = np.where(quoted, lengths > 2, values != 0) if len(starts) else starts.astype(bool)
    c["completed_by"][events[truthy]] = values[truthy]
