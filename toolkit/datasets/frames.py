"""Dataset rows (Arrow) -> an events frame the derived-table builders accept.

The dataset stores payloads and attributes as JSON text and times in microseconds
(:mod:`toolkit.datasets.arrow`); the builders of :mod:`toolkit.histories.tables` read an events
frame (:mod:`toolkit.histories.events`). This is the way back, for engines that hand over Arrow
(``toolkit.spark.tables``).
"""

from __future__ import annotations

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa

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
    for name, dtype in COLUMNS.items():
        if name not in table.column_names:  # a dataset written before the column existed
            data[name] = pd.Series([None] * table.num_rows, dtype=dtype)
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
    return pd.DataFrame(data)
