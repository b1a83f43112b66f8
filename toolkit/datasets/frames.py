"""Dataset rows (Arrow) -> an events frame the derived-table builders accept.

The dataset stores payloads and attributes as JSON text and times in microseconds
(:mod:`toolkit.datasets.arrow`); the builders of :mod:`toolkit.histories.tables` read an events
frame (:mod:`toolkit.histories.events`). This is the way back, for engines that hand over Arrow
(``toolkit.spark.tables``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa

from toolkit.errors import ToolkitError
from toolkit.histories.events import COLUMNS

__all__ = ["events_from_arrow"]

_JSON = ("input", "result", "details", "attributes", "extra")


def _objects(column: pa.ChunkedArray, parse: bool) -> np.ndarray:
    values = column.to_pylist()
    out = np.empty(len(values), dtype=object)
    out[:] = [orjson.loads(v) if parse and v is not None else v for v in values]
    return out


def events_from_arrow(table: pa.Table) -> pd.DataFrame:
    """The events frame of dataset ``events`` rows (columns of :data:`COLUMNS`, their dtypes;
    JSON text parsed back into dicts and lists; times at the microseconds stored)."""
    data = {}
    missing = [name for name in COLUMNS if name not in table.column_names]
    if [name for name in missing if name not in _ADDED]:
        raise ToolkitError(f"dataset rows lack the events columns {missing}: not rows of a "
                           "toolkit dataset's events table")  # fmt: skip
    for name, dtype in COLUMNS.items():
        if name in missing:
            continue
        column = table.column(name)
        if dtype == "object":
            data[name] = pd.Series(_objects(column, name in _JSON), dtype=object, copy=False)
        elif dtype in ("Int64", "boolean"):  # nullable: None back to <NA>
            data[name] = pd.array(column.to_pylist(), dtype=dtype)
        elif dtype.startswith("datetime64"):
            times = column.to_pandas()
            data[name] = pd.Series(times).dt.tz_convert("UTC").dt.as_unit("ns").array
        else:
            data[name] = column.to_numpy(zero_copy_only=False).astype(dtype)
    for name in missing:  # rows written before the column existed: read off the attributes
        data[name] = _ADDED[name](data["event_type"], data["attributes"])
    return pd.DataFrame(data)


def _started_field(field: str, dtype: str) -> Any:
    def read(kinds: pd.Series, attributes: pd.Series) -> pd.Series:
        values = [(a or {}).get(field) if kind == "WorkflowTaskStarted" and isinstance(a, dict)
                  else None for kind, a in zip(kinds, attributes, strict=True)]  # fmt: skip
        if dtype == "Int64":
            return pd.array([int(v) if v not in (None, "", 0, "0") else None for v in values],
                            dtype="Int64")  # fmt: skip
        return pd.array([True if v is True or v == "true" else None for v in values],
                        dtype="boolean")  # fmt: skip

    return read


#: Events columns newer than the dataset format, and how rows without them get them.
_ADDED = {
    "history_size_bytes": _started_field("historySizeBytes", "Int64"),
    "suggest_continue_as_new": _started_field("suggestContinueAsNew", "boolean"),
}
