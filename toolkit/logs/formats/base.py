"""Building blocks shared by the format parsers: the parsed-record shape and token helpers.

A parser returns a :data:`Parsed` tuple ``(family, ts, level, logger, message, fields)`` or
``None`` when the text is not in its family. ``ts`` follows the conventions of
:mod:`toolkit.logs.normalize` (ISO text, ``?``-prefixed yearless ISO text, int ns, or None).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from toolkit.logs.normalize import Yearless, month_number

Parsed = tuple[str, Any, str | None, str | None, str, dict[str, Any]]

#: ISO 8601 / RFC 3339 timestamp as loggers print it (``T`` or space, ``.`` or ``,`` fraction).
ISO_TS = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
#: Go's standard ``log`` timestamp (``2006/01/02 15:04:05[.000000]``).
GO_TS = r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?"
#: BSD syslog / journald short timestamp (``Jan  2 15:04:05``), no year.
SYSLOG_TS = r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})?"

_LOGFMT_PAIR = re.compile(r'([\w.@/-]+)=("(?:[^"\\]|\\.)*"|\S*)')


class Family(NamedTuple):
    """One log family: its name, the first characters its lines can start with, its parser."""

    name: str
    first: str
    parse: Callable[[str], Parsed | None]


def iso(text: str) -> str:
    """Normalise a logger's ISO-like timestamp text so that pandas' ISO 8601 parser reads it."""
    return text.replace(",", ".").replace("/", "-")


def syslog_iso(text: str) -> str | None:
    """``Jan  2 15:04:05`` -> ``?-01-02T15:04:05`` (year filled in later)."""
    month = month_number(text[:3])
    if month is None:
        return None
    day = text[4:6].strip().zfill(2)
    return Yearless(f"?-{month:02d}-{day}T{text[7:]}")


def unquote(value: str) -> str:
    """Undo logfmt / Go ``%q`` quoting of one value."""
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        inner = value[1:-1]
        if "\\" in inner:
            inner = (
                inner.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t")
                .replace("\\\\", "\\")
            )
        return inner
    return value


def logfmt_pairs(text: str) -> dict[str, str]:
    """All ``key=value`` / ``key="quoted value"`` pairs of a logfmt text, in order."""
    return {k: unquote(v) for k, v in _LOGFMT_PAIR.findall(text)}


def logfmt_whole(text: str) -> dict[str, str] | None:
    """Pairs when the whole text is logfmt (only pairs separated by spaces), else None."""
    pos = 0
    out: dict[str, str] = {}
    n = len(text)
    while pos < n:
        while pos < n and text[pos] == " ":
            pos += 1
        if pos >= n:
            break
        m = _LOGFMT_PAIR.match(text, pos)
        if not m:
            return None
        out[m.group(1)] = unquote(m.group(2))
        pos = m.end()
        if pos < n and text[pos] != " ":
            return None
    return out


def split_trailing_pairs(text: str) -> tuple[str, dict[str, str]]:
    """Split ``message k=v k2="v 2"`` into the message and the trailing pairs."""
    fields: dict[str, str] = {}
    matches = list(_LOGFMT_PAIR.finditer(text))
    cut = len(text)
    for m in reversed(matches):
        tail = text[m.end() : cut]
        if tail.strip():
            break
        if m.start() > 0 and text[m.start() - 1] != " ":
            break
        fields[m.group(1)] = unquote(m.group(2))
        cut = m.start()
    if not fields:
        return text, {}
    return text[:cut].rstrip(), dict(reversed(fields.items()))
