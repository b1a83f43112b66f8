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

__all__ = [
    "LEVELS",
    "Yearless",
    "epoch_to_ns",
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
    """Epoch seconds / ms / µs / ns (guessed by magnitude, as loggers emit) -> ns."""
    try:
        number = float(value) if not isinstance(value, int) else value
    except (TypeError, ValueError):
        return None
    magnitude = abs(number)
    if magnitude < 1e11:  # seconds (until year 5138)
        return round(number * 1e9) if isinstance(number, float) else number * 10**9
    if magnitude < 1e14:
        return int(number * 10**6)
    if magnitude < 1e17:
        return int(number * 10**3)
    return int(number)
