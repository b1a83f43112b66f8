"""Values as a reader reads them: times, durations, counts, lists and unknowns in sentences.

Reports, charts and the command line say ``3.2 s`` and ``4 min 10 s``, not ``0 days
00:04:10.000000``; ``2026-11-29 19:58:25.362 UTC``, not ``19:58:25.361997072+00:00``; ``1 run``
and ``2 runs``; and "unknown" (or what is unknown) where a frame holds ``NaT``, ``None``, ``nan``
or an empty list. Nothing here reads a frame: each function takes one value.

::

    >>> duration(250.4)
    '4 min 10 s'
    >>> count(1, "run"), count(3, "retry", "retries")
    ('1 run', '3 retries')
    >>> listing(["a", "b", "c", "d"], limit=2)
    'a, b and 2 more'
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["count", "duration", "is_missing", "listing", "nbytes", "shown", "span", "when"]


def is_missing(value: Any) -> bool:
    """True for what a reader should never see printed: None, NaN, NaT, NA and empty lists."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float | np.floating):
        return bool(np.isnan(value))
    if isinstance(value, pd.Timestamp | pd.Timedelta | np.datetime64 | np.timedelta64):
        return bool(pd.isna(value))
    if isinstance(value, list | tuple | set | dict | np.ndarray | pd.Series):
        return len(value) == 0
    return isinstance(value, str) and not value.strip()


def _timestamp(value: Any) -> pd.Timestamp | None:
    if is_missing(value):
        return None
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    if pd.isna(stamp):
        return None
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def when(value: Any, *, date: bool = True, zone: bool = True, missing: str = "unknown time") -> str:
    """A time in UTC, to the millisecond at most: ``2026-11-29 19:58:25.362 UTC``.

    Whole seconds drop their milliseconds (``19:58:25``). ``date=False`` gives the time of day
    only, for a second time on the same day; ``zone=False`` leaves out ``UTC`` (a table whose
    header names the zone). Naive times are taken as UTC, as the loaders make them.
    """
    stamp = _timestamp(value)
    if stamp is None:
        return missing
    stamp = stamp.round("ms")
    text = stamp.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S")
    if stamp.microsecond:
        text += f".{stamp.microsecond // 1000:03d}"
    return f"{text} UTC" if zone else text


def span(first: Any, last: Any, *, missing: str = "unknown time") -> str:
    """From ``first`` to ``last``: ``2026-11-29 19:54:44 to 19:58:25 UTC (3 min 41 s)``.

    A single instant (or one end unknown) is written once; the second date is left out when it
    is the first's.
    """
    start, end = _timestamp(first), _timestamp(last)
    if start is None or end is None or start == end:
        return when(start if start is not None else end, missing=missing)
    if end < start:
        start, end = end, start
    same_day = start.date() == end.date()
    return (f"{when(start, zone=False)} to {when(end, date=not same_day)} "
            f"({duration(end - start)})")  # fmt: skip


def duration(value: Any, *, missing: str = "unknown duration") -> str:
    """A duration in words a reader scans: ``850 µs``, ``12 ms``, ``3.2 s``, ``4 min 10 s``,
    ``2 h 5 min``, ``3 d 4 h``. Takes a Timedelta, a timedelta or seconds."""
    if is_missing(value):
        return missing
    if isinstance(value, pd.Timedelta | dt.timedelta | np.timedelta64):
        seconds = pd.Timedelta(value).total_seconds()
    else:
        seconds = float(value)
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds == 0:
        return "0 s"
    # Each unit is chosen by the value as it will be printed: 0.9996 s is "1 s", not "1000 ms".
    if round(seconds * 1e6) < 1000:
        return f"{sign}{seconds * 1e6:.0f} µs"
    if round(seconds * 1e3) < 1000:
        return f"{sign}{seconds * 1e3:.0f} ms"
    if round(seconds, 1) < 10:
        return f"{sign}{seconds:.1f} s".replace(".0 s", " s")
    whole = round(seconds)
    if whole < 60:
        return f"{sign}{whole} s"
    units = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))
    for index, (size, name) in enumerate(units[:-1]):
        if whole >= size:
            major, rest = divmod(whole, size)
            minor_size, minor_name = units[index + 1]
            minor = rest // minor_size
            return f"{sign}{major} {name}" + (f" {minor} {minor_name}" if minor else "")
    return f"{sign}{whole} s"  # pragma: no cover (60 s and more always has a unit above)


def nbytes(value: Any, *, missing: str = "unknown size") -> str:
    """A size in bytes as people say it, in 1024-based units as Temporal's limits are:
    ``512 B``, ``3.2 KiB``, ``48 KiB``, ``1.5 MiB``, ``50 MiB``."""
    if is_missing(value):
        return missing
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            if unit == "B":
                return f"{size:,.0f} B"
            return (f"{size:.1f} {unit}" if abs(size) < 10 else f"{size:,.0f} {unit}").replace(
                ".0 ", " ")
        size /= 1024
    return f"{size:,.0f} GiB"  # pragma: no cover


def count(number: Any, singular: str, plural: str | None = None) -> str:
    """``1 run``, ``2 runs``, ``1,204 runs``; ``plural`` for irregular words (``retries``)."""
    value = int(number)
    word = singular if value == 1 else (plural or f"{singular}s")
    return f"{value:,} {word}"


def listing(
    items: Iterable[Any], *, limit: int = 5, conjunction: str = "and", missing: str = "none"
) -> str:
    """``a``, ``a and b``, ``a, b and c``; past ``limit`` items, ``a, b and 3 more``."""
    values = [shown(item) for item in items if not is_missing(item)]
    if not values:
        return missing
    if len(values) > limit:
        values = [*values[:limit], f"{len(values) - limit} more"]
    if len(values) == 1:
        return values[0]
    return f"{', '.join(values[:-1])} {conjunction} {values[-1]}"


def shown(value: Any, *, missing: str = "unknown") -> str:
    """Any cell as text for a reader: times and durations as above, lists joined, numbers with
    no trailing ``.0``, and ``missing`` for None, NaN, NaT, NA and empty lists."""
    if is_missing(value):
        return missing
    if isinstance(value, pd.Timestamp | dt.datetime | np.datetime64):
        return when(value)
    if isinstance(value, pd.Timedelta | dt.timedelta | np.timedelta64):
        return duration(value)
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return f"{int(value)}"
    if isinstance(value, float | np.floating):
        return f"{float(value):,.6g}" if abs(value) < 1e15 else f"{float(value):.3e}"
    if isinstance(value, list | tuple | set | np.ndarray | pd.Series):
        return ", ".join(shown(v, missing=missing) for v in value if not is_missing(v)) or missing
    return str(value)
