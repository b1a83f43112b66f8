"""Finished record columns -> the logs DataFrame (timestamps converted once per frame)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.logs.columns import TEXT_TS, Repeat, Segment, text_array
from toolkit.logs.isotime import UTC_NAMES, iso_to_utc_ns, local_to_utc, utc_ns
from toolkit.logs.normalize import Yearless, epoch_to_ns

__all__ = ["FRAME_COLUMNS", "build_frame", "empty_frame"]

#: Column order of every logs frame.
FRAME_COLUMNS = ("ts", "level", "logger", "message", "fields", "line", "lines", "format",
                 "envelope", "stream", "container", "host", "raw", "parse_error", "source")
_OBJECT_COLUMNS = ("level", "logger", "message", "fields", "format", "envelope", "stream",
                   "container", "host", "parse_error")
#: ``raw`` is pandas' Arrow-backed ``str`` dtype: runs of JSON lines read from bytes arrive as
#: Arrow arrays already, and a million texts take no million Python objects.
_TEXT = pd.StringDtype("pyarrow", na_value=np.nan)
_MAX_CHUNKS = 64  # more (interleaved formats) are combined: pandas is slow over many chunks
# An offset at the end: Z, +hh:mm, +hhmm, or +hh right after a time (a date's "-27" is none).
_AWARE = re.compile(r"(?:Z|[+-]\d\d:?\d\d|:\d\d(?:[.,]\d+)?[+-]\d\d)$")
_UTC = "datetime64[ns, UTC]"


def _texts_to_ns(texts: list[str | None], tz: str) -> np.ndarray:
    """ISO texts -> UTC datetime64[ns] (NaT where unparsed): Arrow's parser where it is certain
    to agree with pandas' (:mod:`toolkit.logs.isotime`, ~2x faster), else pandas'."""
    fast = iso_to_utc_ns(texts, tz)
    if fast is not None:
        return fast
    return utc_ns(_strings_to_utc(texts, tz))


def _strings_to_utc(texts: list[str | None], tz: str) -> pd.DatetimeIndex:
    if tz in UTC_NAMES:
        return pd.DatetimeIndex(pd.to_datetime(texts, format="ISO8601", utc=True, errors="coerce"))
    aware = np.fromiter((bool(t and _AWARE.search(t)) for t in texts), bool, len(texts))
    out = pd.Series(pd.NaT, index=range(len(texts)), dtype=_UTC)
    arr = np.array(texts, dtype=object)
    if aware.any():
        out[aware] = pd.to_datetime(arr[aware], format="ISO8601", utc=True, errors="coerce")
    if (~aware).any():
        naive = pd.to_datetime(arr[~aware], format="ISO8601", errors="coerce")
        out[~aware] = local_to_utc(naive, tz)
    return pd.DatetimeIndex(out)


def _first_year(values: list[Any]) -> str | None:
    """Year of the first dated text timestamp, for yearless ones printed before it."""
    for v in values:
        if type(v) is str and v[:4].isdigit():
            return v[:4]
    return None


def _ts_kinds(segments: list[Segment]) -> set[type]:
    """Types in the ``ts`` column; segments marked ``TEXT_TS`` hold ISO text only."""
    kinds: set[type] = set()
    for segment in segments:
        piece = segment["ts"]
        if type(piece) is Repeat:
            kinds.add(type(piece.value))
        elif segment.get(TEXT_TS):
            kinds.add(str)
        else:
            kinds.update(map(type, piece))
    return kinds


def _to_utc(values: list[Any], tz: str, year: int, year_hint: int | None = None,
            kinds: set[type] | None = None) -> tuple[np.ndarray, list[int]]:
    """Convert the ``ts`` column (ISO text, yearless text, int ns, None) to UTC ns.

    Yearless timestamps take the year of the closest full timestamp before them (``year_hint``
    when given by the caller), else ``year``. Returns the datetime64[ns] values (UTC) and the
    positions whose text could not be parsed. ``kinds``: the value types, when known.
    """
    n = len(values)
    kinds = set(map(type, values)) if kinds is None else kinds
    if kinds <= {str, type(None)}:  # the common case: ISO text only, converted in one call
        result = _texts_to_ns(values, tz)
        return result, _retry_failed(values, result, range(n), tz)
    if kinds == {int}:  # epoch nanoseconds only (zap's numeric times): one conversion
        try:
            return np.fromiter(values, np.int64, n).view("datetime64[ns]"), []
        except OverflowError:
            pass
    result = np.full(n, np.datetime64("NaT"), dtype="datetime64[ns]")
    str_pos: list[int] = []
    str_val: list[str] = []
    seen_year = str(year_hint) if year_hint else _first_year(values)
    for i, v in enumerate(values):
        if v is None:
            continue
        kind = type(v)
        if kind is str:
            str_pos.append(i)
            str_val.append(v)
            if v[:4].isdigit() and not year_hint:
                seen_year = v[:4]
        elif kind is Yearless:  # klog, syslog: the year of the records around it
            str_pos.append(i)
            str_val.append(f"{seen_year or year}{v[1:]}")
        else:
            ns = epoch_to_ns(v) if kind is float else v
            try:
                result[i] = np.datetime64(int(ns), "ns")
            except (OverflowError, ValueError, TypeError):
                str_pos.append(i)
                str_val.append(str(v))
    failed: list[int] = []
    if str_val:
        as_ns = _texts_to_ns(str_val, tz)
        result[np.asarray(str_pos)] = as_ns
        failed = _retry_failed(str_val, result, str_pos, tz, as_ns)
    return result, failed


def _retry_failed(texts: list[Any], result: np.ndarray, positions: Sequence[int], tz: str,
                  parsed: np.ndarray | None = None) -> list[int]:
    """Texts the ISO parser refused: let pandas guess them one by one (rare shapes)."""
    parsed = result if parsed is None else parsed
    bad = np.flatnonzero(np.isnat(parsed))
    failed: list[int] = []
    for k in bad:
        text = texts[k]
        if text is None:
            continue
        try:
            one = pd.Timestamp(text)
            one = one.tz_localize(tz) if one.tzinfo is None else one
            result[positions[k]] = one.tz_convert("UTC").tz_localize(None).as_unit("ns").asm8
        except (ValueError, TypeError, OverflowError):
            failed.append(int(positions[k]))
    return failed


def _ts_column(segments: list[Segment], tz: str, year: int,
               year_hint: int | None) -> tuple[np.ndarray, list[Any], list[int]]:
    """The ``ts`` column as UTC ns, its values and the positions whose text was not parsed.

    Runs of JSON lines hand over their times as Arrow arrays of non-empty texts: those are
    parsed in one call when Arrow's parser takes them all; otherwise (and for the other pieces)
    every value goes through :func:`_to_utc`.
    """
    pieces = _pieces(segments, "ts")
    if any(isinstance(p, pa.Array) for p in pieces):
        arrays = [p if isinstance(p, pa.Array) else _str_array(p) for p in pieces]
        if all(a is not None for a in arrays):
            texts = arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
            fast = iso_to_utc_ns(texts, tz)
            if fast is not None and not np.isnat(fast).any():
                return fast, [], []
    values = _as_list([p.to_pylist() if isinstance(p, pa.Array) else p for p in pieces])
    ts, failed = _to_utc(values, tz, year, year_hint, _ts_kinds(segments))
    return ts, values, failed


def _str_array(piece: Any) -> pa.Array | None:
    """A piece of texts only (the records the line assembler finished between runs) as Arrow."""
    if type(piece) is Repeat or not all(type(v) is str for v in piece):
        return None
    array = text_array(list(piece))
    return array if isinstance(array, pa.Array) else None


def _pieces(segments: list[Segment], name: str) -> list[Any]:
    return [segment[name] for segment in segments]


def _as_list(pieces: list[Any]) -> list[Any]:
    """One column's values as a single list (the common one-piece case is not copied)."""
    if len(pieces) == 1 and type(pieces[0]) is list:
        return pieces[0]
    if len(pieces) == 1 and type(pieces[0]) is tuple:
        return list(pieces[0])
    out: list[Any] = []
    for piece in pieces:
        out.extend(repeat(piece.value, piece.count) if type(piece) is Repeat else piece)
    return out


def _filled(n: int, value: Any) -> np.ndarray:
    """``n`` references to ``value`` (``np.full`` would convert a str to a NumPy string first
    and create ``n`` new str objects from it)."""
    out = np.empty(n, dtype=object)
    out.fill(value)
    return out


def _objects(pieces: list[Any], n: int) -> np.ndarray:
    """An object array of ``n`` values from list / tuple / object array / Repeat pieces.

    ``np.fromiter`` stores the objects as they are; assigning a list to an object array would
    probe every element for the array protocols first (slow for lazy cells).
    """
    if all(type(p) is Repeat for p in pieces) and len({p.value for p in pieces}) <= 1:
        return _filled(n, pieces[0].value if pieces else None)
    if len(pieces) == 1:
        piece = pieces[0]
        return piece if type(piece) is np.ndarray else np.fromiter(piece, dtype=object, count=n)
    out = np.empty(n, dtype=object)  # filled with None
    pos = 0
    for piece in pieces:
        if type(piece) is Repeat:
            if piece.value is not None:
                out[pos:pos + piece.count].fill(piece.value)
            pos += piece.count
        else:
            size = len(piece)
            out[pos:pos + size] = piece if type(piece) is np.ndarray else \
                np.fromiter(piece, dtype=object, count=size)
            pos += size
    return out


def _texts(pieces: list[Any]) -> pd.Series:
    """A ``str`` column from list / tuple / Arrow array / :class:`Repeat` pieces."""
    chunks = []
    for piece in pieces:
        if type(piece) is Repeat:
            piece = pa.array(repeat(piece.value, piece.count), type=pa.large_string())
        elif not isinstance(piece, pa.Array):
            piece = _text_array(piece)
        if len(piece):
            chunks.append(piece)
    column = pa.chunked_array(chunks, type=pa.large_string())
    if column.num_chunks > _MAX_CHUNKS:
        column = pa.chunked_array([column.combine_chunks()])
    return pd.Series(pd.array(column, dtype=_TEXT), copy=False)


def _text_array(values: Any) -> pa.Array:
    """An Arrow string array; lone surrogates (text from ``surrogateescape`` decoding or built in
    Python) cannot be UTF-8, so they are kept as ``\\udXXX`` escapes rather than failing."""
    try:
        return pa.array(values, type=pa.large_string())
    except UnicodeEncodeError:
        safe = [
            v.encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(v, str) else v
            for v in values
        ]
        return pa.array(safe, type=pa.large_string())


def _integers(pieces: list[Any]) -> np.ndarray:
    arrays = [
        np.full(p.count, p.value, dtype=np.int64) if type(p) is Repeat
        else np.arange(p.start, p.stop, p.step, dtype=np.int64) if type(p) is range
        else np.asarray(p, dtype=np.int64)
        for p in pieces
    ]
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)


def _series(values: np.ndarray) -> pd.Series:
    return pd.Series(values, dtype=values.dtype, copy=False)


def build_frame(segments: list[Segment], source: str, tz: str, year: int,
                start_index: int = 0, year_hint: int | None = None) -> pd.DataFrame:
    """Build one logs frame from segments of finished records (see :mod:`toolkit.logs.columns`)."""
    lines = _integers(_pieces(segments, "line"))
    n = len(lines)
    ts, ts_values, failed = _ts_column(segments, tz, year, year_hint)
    objects = {name: _objects(_pieces(segments, name), n) for name in _OBJECT_COLUMNS}
    errors = objects["parse_error"]
    for i in failed:
        problem = f"unparsed timestamp {ts_values[i]!r}"
        errors[i] = problem if errors[i] is None else f"{errors[i]}; {problem}"
    data: dict[str, Any] = {
        "ts": pd.Series(pd.DatetimeIndex(ts).tz_localize("UTC"), copy=False),
    }
    for name in ("level", "logger", "message", "fields"):
        data[name] = _series(objects[name])
    data["line"] = _series(lines)
    data["lines"] = _series(_integers(_pieces(segments, "lines")))
    for name in ("format", "envelope", "stream", "container", "host"):
        data[name] = _series(objects[name])
    data["raw"] = _texts(_pieces(segments, "raw"))
    data["parse_error"] = _series(errors)
    data["source"] = _series(_filled(n, source))
    frame = pd.DataFrame(data, copy=False)
    if not frame["line"].is_monotonic_increasing:
        # Interleaved containers close their records out of order; rows follow the input.
        frame = frame.sort_values("line", kind="stable")
    frame.index = pd.RangeIndex(start_index, start_index + n)
    return frame


def empty_frame() -> pd.DataFrame:
    """A logs frame with no rows and the right dtypes."""
    return build_frame([], "", "UTC", 1970)
