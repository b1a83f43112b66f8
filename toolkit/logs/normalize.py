"""Normalisation shared by every format parser: levels, timestamps, numbers.

Parsers hand timestamps to the frame builder in one of three forms, so that the expensive
conversion happens once per frame, vectorised:

- ``str``: ISO 8601 text (``2024-01-01T00:00:00.123Z``, offset or naive). A string starting with
  ``?`` lacks the year (klog, syslog); the frame builder fills it in.
- ``int``: nanoseconds since the Unix epoch (UTC).
- ``None``: no timestamp.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

__all__ = [
    "LEVELS",
    "Yearless",
    "epoch_to_ns",
    "epochs_to_ns",
    "level_from_number",
    "month_number",
    "norm_level",
    "otlp_severity_level",
    "syslog_priority_level",
]

class Yearless(str):
    """A ``?-MM-DDTHH:MM:SS`` timestamp text without its year (klog, syslog).

    A distinct type so that the frame builder finds them without scanning every string.
    """

    __slots__ = ()


#: Raw level spellings (lower case) mapped to the five canonical levels.
LEVELS: dict[str, str | None] = {
    "trace": "debug", "debug": "debug", "dbug": "debug", "dbg": "debug", "d": "debug",
    "verbose": "debug", "fine": "debug", "finer": "debug", "finest": "debug", "debug2": "debug",
    "info": "info", "inf": "info", "information": "info", "informational": "info", "i": "info",
    "notice": "info", "note": "info", "config": "info",
    "warn": "warning", "warning": "warning", "wrn": "warning", "w": "warning",
    "error": "error", "err": "error", "eror": "error", "e": "error", "severe": "error",
    "critical": "critical", "crit": "critical", "fatal": "critical", "ftl": "critical",
    "f": "critical", "panic": "critical", "dpanic": "critical", "emerg": "critical",
    "emergency": "critical", "alert": "critical",
    "notset": None, "unspecified": None, "": None,
}

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES, start=1)}
_SLOG_OFFSET = re.compile(r"^(debug|info|warn|error)([+-]\d+)$")


def norm_level(raw: Any) -> str | None:
    """Map a level spelling (``ERROR``, ``warn``, ``E``, ``ERROR+2``, 50) to a canonical level."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return level_from_number(raw)
    text = str(raw).strip().lower()
    if text in LEVELS:
        return LEVELS[text]
    m = _SLOG_OFFSET.match(text)  # slog's "ERROR+2", "INFO-4"
    if m:
        return LEVELS[m.group(1)]
    return LEVELS.get(text.rstrip(":").strip("[]"))


def level_from_number(value: float) -> str | None:
    """Numeric levels: bunyan/pino (10..60), zerolog (-1..5), OTLP severityNumber (1..24)."""
    n = int(value)
    if n >= 10:  # bunyan / pino
        return {10: "debug", 20: "debug", 30: "info", 40: "warning", 50: "error"}.get(
            n, "critical" if n >= 60 else None)
    return None


def otlp_severity_level(number: int | None) -> str | None:
    """OTLP ``severityNumber``: 1-8 debug, 9-12 info, 13-16 warn, 17-20 error, 21-24 fatal."""
    if not number:
        return None
    bands = ((8, "debug"), (12, "info"), (16, "warning"), (20, "error"), (24, "critical"))
    for upper, name in bands:
        if number <= upper:
            return name
    return None


def syslog_priority_level(priority: Any) -> str | None:
    """journald/syslog ``PRIORITY`` 0..7 to a canonical level."""
    try:
        p = int(priority)
    except (TypeError, ValueError):
        return None
    return ("critical", "critical", "critical", "error", "warning", "info", "info", "debug")[
        min(max(p, 0), 7)]


def month_number(name: str) -> int | None:
    """``Jan`` -> 1 (case-insensitive), None when not a month abbreviation."""
    return _MONTHS.get(name[:3].lower())


def epoch_to_ns(value: float | int | str) -> int | None:
    """Epoch seconds / ms / µs / ns (guessed by magnitude, as loggers emit) -> ns.

    None for what is no number, and for infinities and NaN (``1e400`` in JSON).
    """
    try:
        number = float(value) if not isinstance(value, int) else value
    except (TypeError, ValueError):
        return None
    magnitude = abs(number)
    if magnitude != magnitude or magnitude == float("inf"):
        return None
    if magnitude < 1e11:  # seconds (until year 5138)
        return round(number * 1e9) if isinstance(number, float) else number * 10**9
    if magnitude < 1e14:
        return int(number * 10**6)
    if magnitude < 1e17:
        return int(number * 10**3)
    return int(number)


_INT64_MAX = 2**63 - 1


def epochs_to_ns(values: list[Any]) -> list[int] | None:
    """:func:`epoch_to_ns` of a whole column of floats, or of ints, in a few NumPy passes.

    Returns exactly what ``[epoch_to_ns(v) for v in values]`` gives, or None when the column is
    anything else (mixed kinds, bools, None) or holds a value where 64-bit arithmetic could
    differ from Python's (not finite, or beyond the int64 range once scaled): the caller then
    converts value by value.
    """
    kinds = set(map(type, values))
    if kinds == {float}:
        x = np.array(values, dtype=np.float64)
        if not np.isfinite(x).all():
            return None
        magnitude = np.abs(x)
        seconds = magnitude < 1e11
        # The same IEEE products as ``number * 1e9`` / ``number * 10**6`` ... (exact factors).
        scale = np.where(seconds, 1e9, np.where(magnitude < 1e14, 1e6,
                                                np.where(magnitude < 1e17, 1e3, 1.0)))
        scaled = x * scale
        if (np.abs(scaled) >= 2.0**63).any():
            return None
        # round() for seconds (half to even, like np.rint), int() (truncation) otherwise.
        return np.where(seconds, np.rint(scaled), np.trunc(scaled)).astype(np.int64).tolist()
    if kinds == {int}:
        try:
            x = np.array(values, dtype=np.int64)
        except OverflowError:
            return None
        if (x == np.iinfo(np.int64).min).any():
            return None
        magnitude = np.abs(x)  # integer thresholds: comparing int64 with 1e17 would round
        factor = np.where(magnitude < 10**11, 10**9, np.where(
            magnitude < 10**14, 10**6, np.where(magnitude < 10**17, 10**3, 1)))
        if (magnitude > _INT64_MAX // factor).any():
            return None
        return (x * factor).tolist()
    return None
