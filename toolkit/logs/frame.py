"""Finished record columns -> the logs DataFrame (timestamps converted once per frame)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["FRAME_COLUMNS", "build_frame", "empty_frame"]

#: Column order of every logs frame.
FRAME_COLUMNS = ("ts", "level", "logger", "message", "fields", "line", "lines", "format",
                 "envelope", "stream", "container", "host", "raw", "parse_error", "source")
_OBJECT_COLUMNS = ("level", "logger", "message", "fields", "format", "envelope", "stream",
                   "container", "host", "raw", "parse_error")
_AWARE = re.compile(r"(?:Z|[+-]\d\d:?\d\d)$")
_UTC = "datetime64[ns, UTC]"


def _strings_to_utc(texts: list[str], tz: str) -> pd.DatetimeIndex:
    if tz in ("UTC", "utc", "Z"):
        return pd.DatetimeIndex(pd.to_datetime(texts, format="ISO8601", utc=True, errors="coerce"))
    aware = np.fromiter((bool(_AWARE.search(t)) for t in texts), bool, len(texts))
    out = pd.Series(pd.NaT, index=range(len(texts)), dtype=_UTC)
    arr = np.array(texts, dtype=object)
    if aware.any():
        out[aware] = pd.to_datetime(arr[aware], format="ISO8601", utc=True, errors="coerce")
    if (~aware).any():
        naive = pd.to_datetime(arr[~aware], format="ISO8601", errors="coerce")
        local = naive.tz_localize(tz, ambiguous="NaT", nonexistent="shift_forward")
        out[~aware] = local.tz_convert("UTC")
    return pd.DatetimeIndex(out)


def _first_year(values: list[Any]) -> str | None:
    """Year of the first dated text timestamp, for yearless ones printed before it."""
    for v in values:
        if type(v) is str and v[:4].isdigit():
            return v[:4]
    return None


def _to_utc(values: list[Any], tz: str, year: int,
            year_hint: int | None = None) -> tuple[np.ndarray, list[int]]:
    """Convert the ``ts`` column (ISO text, ``?``-yearless text, int ns, None) to UTC ns.

    Yearless timestamps take the year of the closest full timestamp before them (``year_hint``
    when given by the caller), else ``year``. Returns the datetime64[ns] values (UTC) and the
    positions whose text could not be parsed.
    """
    n = len(values)
    result = np.full(n, np.datetime64("NaT"), dtype="datetime64[ns]")
    str_pos: list[int] = []
    str_val: list[str] = []
    seen_year = str(year_hint) if year_hint else _first_year(values)
    for i, v in enumerate(values):
        if v is None:
            continue
        if type(v) is str:
            str_pos.append(i)
            if v[:1] == "?":  # yearless (klog, syslog): the year of the records around it
                str_val.append(f"{seen_year or year}{v[1:]}")
            else:
                str_val.append(v)
                if v[:4].isdigit():
                    seen_year = v[:4]
        else:
            try:
                result[i] = np.datetime64(int(v), "ns")
            except (OverflowError, ValueError, TypeError):
                str_pos.append(i)
                str_val.append(str(v))
    failed: list[int] = []
    if str_val:
        parsed = _strings_to_utc(str_val, tz)
        as_ns = parsed.tz_convert("UTC").tz_localize(None).as_unit("ns").to_numpy()
        pos = np.asarray(str_pos)
        result[pos] = as_ns
        bad = np.isnat(as_ns)
        if bad.any():
            for k in np.flatnonzero(bad):  # rare shapes: let pandas guess, one by one
                try:
                    one = pd.Timestamp(str_val[k])
                    one = one.tz_localize(tz) if one.tzinfo is None else one
                    result[pos[k]] = one.tz_convert("UTC").tz_localize(None).as_unit("ns").asm8
                except (ValueError, TypeError, OverflowError):
                    failed.append(int(pos[k]))
    return result, failed


def _object(values: list[Any]) -> pd.Series:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return pd.Series(arr, dtype=object, copy=False)


def build_frame(cols: dict[str, list[Any]], source: str, tz: str, year: int,
                start_index: int = 0, year_hint: int | None = None) -> pd.DataFrame:
    """Build one logs frame from finished record columns."""
    n = len(cols["line"])
    ts, failed = _to_utc(cols["ts"], tz, year, year_hint)
    errors = cols["parse_error"]
    for i in failed:
        problem = f"unparsed timestamp {cols['ts'][i]!r}"
        errors[i] = problem if errors[i] is None else f"{errors[i]}; {problem}"
    index = pd.RangeIndex(start_index, start_index + n)
    data: dict[str, Any] = {
        "ts": pd.Series(pd.DatetimeIndex(ts).tz_localize("UTC"), copy=False),
    }
    for name in ("level", "logger", "message", "fields"):
        data[name] = _object(cols[name])
    data["line"] = pd.Series(np.asarray(cols["line"], dtype=np.int64), copy=False)
    data["lines"] = pd.Series(np.asarray(cols["lines"], dtype=np.int64), copy=False)
    for name in ("format", "envelope", "stream", "container", "host", "raw", "parse_error"):
        data[name] = _object(cols[name])
    data["source"] = pd.Series(np.full(n, source, dtype=object), dtype=object, copy=False)
    frame = pd.DataFrame(data, copy=False)
    if not frame["line"].is_monotonic_increasing:
        # Interleaved containers close their records out of order; rows follow the input.
        frame = frame.sort_values("line", kind="stable")
    frame.index = index
    return frame


def empty_frame() -> pd.DataFrame:
    """A logs frame with no rows and the right dtypes."""
    cols: dict[str, list[Any]] = {name: [] for name in FRAME_COLUMNS if name != "source"}
    return build_frame(cols, "", "UTC", 1970)
