"""ISO-8601 texts -> UTC nanoseconds through Arrow's parser, only where it equals pandas.

:func:`iso_to_utc_ns` is a fast path for the ``ts`` column of a logs frame. It answers only
when Arrow's result is certain to be the one ``pd.to_datetime(texts, format="ISO8601",
utc=True, errors="coerce")`` gives (naive texts local to ``tz`` when ``tz`` is not UTC), and
``None`` otherwise, so that the caller falls back to pandas.

Why it can be certain: Arrow's string -> timestamp cast accepts one narrow grammar and refuses
everything else (it never guesses)::

    YYYY-MM-DD[( |T)hh[:mm[:ss[.f{1,9}]]]][Z|(+|-)hh|(+|-)hhmm|(+|-)hh:mm]

with hours < 24, minutes and seconds < 60, real calendar dates, ASCII digits only, and a zone
required for a zoned target type and forbidden for a naive one. Inside that grammar pandas gives
the same instant (tests/test_logs_isotime.py checks every shape of it against pandas, plus
random texts around it). Every text outside it (comma decimals, ten or more fraction digits,
leap seconds, 24:00, lowercase ``t``/``z``, week and ordinal dates, year or month only,
surrounding blanks, empty strings, years outside the nanosecond range) makes the whole cast
fail, and the answer is ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["UTC_NAMES", "iso_to_utc_ns", "local_to_utc", "utc_ns"]

#: Spellings of UTC as a ``tz`` argument (naive texts are then UTC already).
UTC_NAMES = frozenset({"UTC", "utc", "Z"})
_ZONED = pa.timestamp("ns", "UTC")
_NAIVE = pa.timestamp("ns")
#: Texts probed before the whole column is cast (see :func:`_probe_kind`).
_PROBES = 64
#: Extra safety margin inside the datetime64[ns] range: Arrow refuses the instants that do not
#: fit, but an instant near either end would be the first place an overflow could hide.
_EARLIEST = np.datetime64("1678-01-01", "ns").astype(np.int64)
_LATEST = np.datetime64("2262-01-01", "ns").astype(np.int64)

Texts = Sequence[str | None] | pa.Array | pa.ChunkedArray


def _as_text_array(texts: Texts) -> pa.Array | pa.ChunkedArray | None:
    """The texts as an Arrow string array, or None when they are not all str / None.

    Arrow infers ``binary`` as soon as one element is bytes-like; pandas turns those into NaT
    while a cast would parse them, so anything but a string (or all-null) array is refused.
    """
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        array = texts
    else:
        try:
            array = pa.array(texts)
        except (pa.ArrowException, TypeError, ValueError):  # ints, floats, NaN, surrogates ...
            return None
    kind = array.type
    if pa.types.is_dictionary(kind) or pa.types.is_string_view(kind):
        value_type = kind.value_type if pa.types.is_dictionary(kind) else kind
        if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)
                or pa.types.is_string_view(value_type)):
            return None
        try:
            return array.cast(pa.large_string())
        except pa.ArrowException:
            return None
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return array
    return None


def _sample(texts: Texts, count: int) -> list[str | None]:
    """Up to ``_PROBES`` texts spread over the column, first and last included.

    Positions are drawn from a fixed seed: the same column always gets the same answer, and
    unlike a fixed stride the draw does not line up with periodic patterns (alternating
    formats from interleaved streams).
    """
    if count <= _PROBES:
        positions = np.arange(count)
    else:
        drawn = np.random.default_rng(0).choice(count, size=_PROBES - 2, replace=False)
        positions = np.concatenate(([0, count - 1], drawn))
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        return texts.take(pa.array(positions)).to_pylist()
    return [texts[int(i)] for i in positions]


def _probe_kind(sample: list[str | None]) -> pa.DataType | None:
    """The target type that parses every probed text: zoned, naive, or None for neither.

    Arrow reports a failing text at about a microsecond each (it formats an error per element)
    and a wrong-kind cast fails on every element: casting a million zoned texts to the naive type
    costs ~0.45 s, more than pandas. The probe picks the kind on a few texts first, so a full
    cast that fails is rare (a column that mixes kinds or holds a few odd texts) and cheap.
    """
    try:
        probe = pa.array(sample, pa.large_string())
    except (pa.ArrowException, ValueError):  # lone surrogates cannot be encoded
        return None
    for target in (_ZONED, _NAIVE):
        try:
            pc.cast(probe, target)
        except pa.ArrowException:
            continue
        return target
    return None


def _within_safe_range(parsed: pa.Array | pa.ChunkedArray) -> bool:
    extremes = pc.min_max(parsed.cast(pa.int64()))
    low, high = extremes["min"].as_py(), extremes["max"].as_py()
    return low is None or (low >= _EARLIEST and high < _LATEST)


def local_to_utc(naive: pd.DatetimeIndex, tz: str) -> pd.DatetimeIndex:
    """Naive wall times in ``tz`` -> UTC: the one policy for local times of every log path.

    Times in a DST gap shift forward; ambiguous ones (the repeated hour) become NaT.
    """
    return naive.tz_localize(tz, ambiguous="NaT", nonexistent="shift_forward").tz_convert("UTC")


def utc_ns(times: pd.DatetimeIndex) -> np.ndarray:
    """Zoned times -> naive UTC datetime64[ns] values."""
    return times.tz_convert("UTC").tz_localize(None).as_unit("ns").to_numpy()


def _localize(naive: np.ndarray, tz: str) -> np.ndarray | None:
    """Naive local times in ``tz`` -> UTC with :func:`local_to_utc`, as the pandas path does;
    only the parsing was done by Arrow."""
    try:
        return utc_ns(local_to_utc(pd.DatetimeIndex(naive), tz))
    except (KeyError, ValueError, TypeError):  # unknown zone: let the pandas path report it
        return None


def iso_to_utc_ns(texts: Texts, tz: str = "UTC") -> np.ndarray | None:
    """Parse ISO-8601 texts to UTC datetime64[ns] with Arrow, or None where that may differ.

    Parameters
    ----------
    texts
        Timestamp texts and None (a list, or an Arrow string / large_string array).
    tz
        Zone of naive texts (``"UTC"`` by default). Texts with an offset or ``Z`` ignore it.

    Returns
    -------
    numpy.ndarray or None
        datetime64[ns] values in UTC (NaT for None), equal element for element to what
        ``pd.to_datetime(texts, format="ISO8601", utc=True, errors="coerce")`` gives (for
        another ``tz``: naive texts localized with ``ambiguous="NaT",
        nonexistent="shift_forward"``). None when any text falls outside the shapes proven
        equal, when the column mixes zoned and naive texts, or when an element is not a str;
        the caller then takes the pandas path.
    """
    count = len(texts)
    if count == 0:
        return np.empty(0, dtype="datetime64[ns]")
    sample = _sample(texts, count)
    if any(text is not None and type(text) is not str for text in sample):
        return None
    target = _probe_kind(sample)
    if target is None:
        return None
    array = _as_text_array(texts)
    if array is None:
        return None
    try:
        parsed = pc.cast(array, target)
    except pa.ArrowException:  # some text outside the grammar, or of the other kind
        return None
    if not _within_safe_range(parsed):
        return None
    values = parsed.to_numpy(zero_copy_only=False)
    if not isinstance(values, np.ndarray) or values.dtype != np.dtype("datetime64[ns]"):
        return None
    if target == _NAIVE and tz not in UTC_NAMES:
        return _localize(values, tz)
    # Without nulls Arrow lends its own (read-only) buffer; callers fill in retried texts.
    return values if values.flags.writeable else values.copy()
