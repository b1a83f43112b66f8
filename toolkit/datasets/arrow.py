"""Frames -> plain Arrow tables that DuckDB, Parquet, Spark and Trino read without help.

One conversion serves :func:`toolkit.sql` and the dataset writer, so a query reads the same
columns whether it runs over frames in memory or over a dataset on disk:

=============================  ===========================  ====================================
pandas column                  Arrow / SQL type             note
=============================  ===========================  ====================================
str / object holding text      ``string`` (VARCHAR)
object holding dicts, lists,   ``string`` (VARCHAR)         JSON text (``json_extract``,
lazy cells                                                  ``from_json``, ``json_parse``)
int64, Int64                   ``int64`` (BIGINT)           nullable
bool, boolean                  ``bool`` (BOOLEAN)           nullable
datetime64[ns, UTC]            ``timestamp[us, UTC]``       TIMESTAMPTZ; Spark cannot read
                                                            nanoseconds, so digits below the
                                                            microsecond are dropped
timedelta64                    ``float64`` (DOUBLE)         seconds, same column name
kind ``date``                  ``date32`` (DATE)            the UTC date of a time
=============================  ===========================  ====================================

JSON text never holds Python objects: ``bytes`` become ``{"encoding": "binary/plain", "size": n,
"base64": "..."}``, payloads the loader keeps opaque (encrypted, gob, unknown protobuf) become
``{"encoding": ..., "size": n, "metadata": {...}, "base64": "..."}``, and anything else that JSON
has no spelling for becomes its ``str()``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.datasets.json_cells import Piece, cut_json_text, json_array
from toolkit.histories.columns.lazy import LazyAttributes, LazyExtra

__all__ = ["ARROW_TYPES", "json_text", "schema_of", "to_arrow"]

try:  # the compiled text column builder (toolkit/histories/columns/_jsoncells.c: setup.py)
    from toolkit.histories.columns._jsoncells import text_buffers as _text_buffers
except ImportError:  # pragma: no cover - depends on the install
    _text_buffers = None

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_TIMESTAMP = pa.timestamp("us", tz="UTC")
_FIELDS = msgspec.json.Decoder(dict[str, msgspec.Raw])

#: The derived tables' dtype names (``toolkit.histories.tables.common.build_frame``) -> Arrow.
ARROW_TYPES: dict[str, pa.DataType] = {
    "object": pa.string(),
    "str": pa.string(),
    "json": pa.string(),
    "int64": pa.int64(),
    "Int64": pa.int64(),
    "bool": pa.bool_(),
    "boolean": pa.bool_(),
    "datetime": _TIMESTAMP,
    "datetime64[ns, UTC]": _TIMESTAMP,
    "timedelta": pa.float64(),
    "float64": pa.float64(),
    "date": pa.date32(),
}


def _fallback(value: Any) -> Any:
    """orjson's ``default``: spell what JSON cannot hold (never executes anything)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return {"encoding": "binary/plain", "size": len(raw), "base64": _b64(raw)}
    if hasattr(value, "encoding") and hasattr(value, "size") and hasattr(value, "data"):
        return {  # toolkit.histories.payloads.OpaquePayload
            "encoding": value.encoding,
            "size": value.size,
            "metadata": dict(value.metadata),
            "base64": _b64(bytes(value.data)),
        }
    if hasattr(value, "value") and type(value).__module__ == "toolkit.histories.columns.lazy":
        return value.value
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, pd.Timedelta):
        return value.total_seconds()
    return str(value)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and value != value


def json_text(value: Any) -> str | None:
    """``value`` as compact JSON text (lazy cells decoded first); None stays None."""
    if _missing(value):
        return None
    if type(value) in (LazyAttributes, LazyExtra):
        # Cut out of the source's bytes without decoding them: 3-5x faster than dumping.
        return cut_json_text(_FIELDS.decode(value.raw), value)
    if type(value).__module__ == "toolkit.histories.columns.lazy":
        value = value.value
        if value is None:
            return None
    return orjson.dumps(value, default=_fallback, option=_OPTIONS).decode("utf-8")


def _is_text_column(values: np.ndarray) -> bool:
    # pandas' type inference runs in C and skips None, NaN and NA; a Python loop over every
    # value cost a fifth of writing a dataset.
    return pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty")


def _text_array(values: np.ndarray) -> pa.Array | None:
    """``values`` as an Arrow string array when pyarrow's own inference finds only text (and
    nulls: None, NaN, NA) in them; None for anything else, left to :func:`_is_text_column` and
    the general conversion. One pass over the values, not pandas' inference and then
    pyarrow's conversion: text columns are most of a dataset's columns. A column of only str
    and None is made in C where it is built (pyarrow infers, then converts: two passes)."""
    if len(values) and values[0] is not None and type(values[0]) is not str:
        return None  # dicts, lists, lazy cells ...: no inferring a struct to throw away
    found = _text_buffers(values) if _text_buffers is not None else None
    if found is not None:  # only str and None: their UTF-8 copied in C, in a third of the time
        bits, offsets, data = found
        buffers = [None if bits is None else pa.py_buffer(bits), pa.py_buffer(offsets),
                   pa.py_buffer(data)]  # fmt: skip
        return pa.Array.from_buffers(pa.string(), len(values), buffers)
    try:
        array = pa.array(values, from_pandas=True)
    except Exception:  # whatever pyarrow refuses, the general path decides
        return None
    if array.type == pa.null():  # no value but nulls: pandas' "empty", all-null text
        return array.cast(pa.string())
    return array if array.type == pa.string() else None


def _column(series: pd.Series, kind: str | None, memo: dict[int, Piece] | None = None) -> pa.Array:
    """One pandas column as an Arrow array of the documented type (``kind`` forces one)."""
    dtype = series.dtype
    if kind == "date":  # UTC calendar date of a time (or of a date)
        array = pa.array(series, from_pandas=True)
        return array if array.type == pa.date32() else pc.cast(array, pa.date32())
    if kind == "json":
        return json_array(series.to_numpy(dtype=object), json_text, memo)
    if isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype):
        utc = series if isinstance(dtype, pd.DatetimeTZDtype) else series.dt.tz_localize("UTC")
        utc = utc.dt.tz_convert("UTC")
        return pa.array(utc, pa.timestamp("ns", tz="UTC")).cast(_TIMESTAMP, safe=False)
    if pd.api.types.is_timedelta64_dtype(dtype):
        return pa.array(series.dt.total_seconds(), pa.float64(), from_pandas=True)
    if dtype is np.dtype(object):
        values = series.to_numpy(dtype=object)
        text = _text_array(values)
        if text is not None:
            return text
        if _is_text_column(values):
            return pa.array(values, pa.string(), from_pandas=True)
        if kind in ("object", "str"):  # a text column with a stray value: that value as JSON
            return pa.array([v if type(v) is str else json_text(v) for v in values], pa.string())
        return json_array(values, json_text, memo)
    target = ARROW_TYPES.get(kind or "")
    array = pa.array(series, from_pandas=True)
    if pa.types.is_large_string(array.type) or pa.types.is_string_view(array.type):
        array = array.cast(pa.string())
    return array.cast(target) if target is not None and array.type != target else array


def to_arrow(
    frame: pd.DataFrame,
    kinds: Mapping[str, str] | None = None,
    *,
    drop: Iterable[str] = (),
    memo: dict[int, Piece] | None = None,
) -> pa.Table:
    """Convert ``frame`` to an Arrow table by the rules of this module.

    Parameters
    ----------
    frame
        Any DataFrame: an events frame, a derived table, a logs frame, your own.
    kinds
        Column -> dtype name (``object``, ``json``, ``Int64``, ``datetime``, ``timedelta``, ...)
        for a fixed schema: listed columns absent from ``frame`` become all-null columns and the
        output has exactly these columns, in this order. Without it every column is converted
        by its dtype, and object columns holding anything but text become JSON text.
    drop
        Columns to leave out (the dataset's partition columns).
    memo
        JSON texts of payload cells already converted, by cell identity, for frames that share
        cells (see :func:`toolkit.datasets.json_cells.json_texts`); filled as it goes.
    """
    skip = set(drop)
    columns = list(kinds) if kinds is not None else [str(c) for c in frame.columns]
    names: list[str] = []
    arrays: list[pa.Array] = []
    for name in columns:
        if name in skip:
            continue
        kind = kinds.get(name) if kinds is not None else None
        if name in frame.columns:
            arrays.append(_column(frame[name], kind, memo))
        else:
            arrays.append(pa.nulls(len(frame), ARROW_TYPES.get(kind or "object", pa.string())))
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def schema_of(kinds: Mapping[str, str], *, drop: Iterable[str] = ()) -> pa.Schema:
    """The Arrow schema :func:`to_arrow` produces for a fixed ``kinds`` mapping."""
    skip = set(drop)
    return pa.schema([(n, ARROW_TYPES[k]) for n, k in kinds.items() if n not in skip])
