"""Python families: stdlib logging variants, pytest live-log, uvicorn, structlog console, Rich.

- ``WARNING:root:msg`` (``basicConfig`` default).
- asctime-led: ``2024-01-01 00:00:00,123 - name - ERROR - msg``, ``... ERROR msg``,
  ``... [ERROR] name: msg``, ``...:INFO:name:msg``; Flask ``[ts] ERROR in app: msg``.
- pytest live-log ``INFO     name:file.py:12 msg``; uvicorn ``INFO:     msg``.
- structlog console ``2024-01-01 00:00:00 [info     ] event   key=value`` (or a JSON tail).
- Rich ``[01/01/24 00:00:00] INFO     msg        file.py:12`` (wrapped lines are indented).
- oVirt VDSM ``Thread::LEVEL::ts::module::line::logger::(func) msg``.
"""

from __future__ import annotations

import re

import orjson

from toolkit.logs.formats.base import ISO_TS, Family, Parsed, iso, logfmt_pairs
from toolkit.logs.normalize import norm_level

__all__ = ["FAMILIES"]

_LEVEL = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE|NOTSET|EXCEPTION"
_UVICORN = re.compile(rf"({_LEVEL}):\s{{2,}}(.*)", re.DOTALL)
_BASIC = re.compile(rf"({_LEVEL}):([^:\s]*):(.*)", re.DOTALL)
_PYTEST = re.compile(rf"({_LEVEL})\s+([\w.\-<>]+):([\w.\-]+\.py):(\d+) (.*)", re.DOTALL)


def parse_level_first(text: str) -> Parsed | None:
    m = _UVICORN.match(text)
    if m:
        return "uvicorn", None, norm_level(m.group(1)), "uvicorn", m.group(2), {}
    m = _PYTEST.match(text)
    if m:
        fields = {"file": m.group(3), "lineno": int(m.group(4))}
        return "pytest", None, norm_level(m.group(1)), m.group(2), m.group(5), fields
    m = _BASIC.match(text)
    if m:
        return "python", None, norm_level(m.group(1)), m.group(2) or None, m.group(3), {}
    return None


_STRUCTLOG = re.compile(rf"({ISO_TS}) \[([a-z]+)\s*\] (.*)", re.DOTALL)
_GAP = re.compile(r"\s{2,}")


def parse_structlog_console(text: str) -> Parsed | None:
    m = _STRUCTLOG.match(text)
    if not m or (norm_level(m.group(2)) is None and m.group(2) not in ("notset",)):
        return None
    rest = m.group(3)
    fields: dict[str, object] = {}
    parts = _GAP.split(rest.rstrip(), maxsplit=1)
    message = parts[0]
    if len(parts) == 2:
        tail = parts[1]
        parsed = None
        if tail.startswith("{"):
            try:
                parsed = orjson.loads(tail)
            except orjson.JSONDecodeError:
                parsed = None
        if isinstance(parsed, dict):
            fields.update(parsed)
        else:
            pairs = logfmt_pairs(tail)
            if pairs:
                fields.update(pairs)
            else:
                message = rest
    return "structlog_console", iso(m.group(1)), norm_level(m.group(2)), None, message, fields


_DASHED = re.compile(rf"({ISO_TS}) - ([^\s]+) - ({_LEVEL}) - (.*)", re.DOTALL)
_DASHED_NO_NAME = re.compile(rf"({ISO_TS}) - ({_LEVEL}) - (.*)", re.DOTALL)
# ``ts LEVEL msg``, ``ts [LEVEL] msg`` or ``ts:LEVEL:msg`` (separators do not mix: a
# ``<RFC3339> WARNING: msg`` line is a docker timestamp in front of a bare message).
_TS_LEVEL = re.compile(
    rf"({ISO_TS})(?:( )\[?({_LEVEL})\]? +|(:)({_LEVEL}):)(.*)", re.DOTALL
)
_NAME_COLON = re.compile(r"([\w.\-]+):(?=\S|$)")
_NAME_BRACKET = re.compile(r"\[([\w.\-]+)\] ")
_NAME_PREFIX = re.compile(r"([\w.\-]+): ")  # "[LEVEL] name: message"
_PYTEST_TS = re.compile(rf"({ISO_TS}) \[ *({_LEVEL})\] (.*) \((\S+\.py):(\d+)\)$", re.DOTALL)


def parse_asctime(text: str) -> Parsed | None:
    m = _DASHED.match(text)
    if m:
        return "python", iso(m.group(1)), norm_level(m.group(3)), m.group(2), m.group(4), {}
    m = _DASHED_NO_NAME.match(text)
    if m:
        return "python", iso(m.group(1)), norm_level(m.group(2)), None, m.group(3), {}
    m = _PYTEST_TS.match(text)
    if m:
        fields = {"file": m.group(4), "lineno": int(m.group(5))}
        return "pytest", iso(m.group(1)), norm_level(m.group(2)), None, m.group(3), fields
    m = _TS_LEVEL.match(text)
    if not m:
        return None
    rest, logger = m.group(6), None
    level = m.group(3) or m.group(5)
    if m.group(4) == ":":
        n = _NAME_COLON.match(rest)
        if n:
            logger, rest = n.group(1), rest[n.end() :]
    else:
        n = _NAME_BRACKET.match(rest) or (_NAME_PREFIX.match(rest) if "[" in text[:40] else None)
        if n:
            logger, rest = n.group(1), rest[n.end() :]
    return "python", iso(m.group(1)), norm_level(level), logger, rest, {}


_FLASK = re.compile(rf"\[({ISO_TS})\] ({_LEVEL}) in ([\w.\-]+): (.*)", re.DOTALL)
_RICH = re.compile(
    rf"\[(\d\d)/(\d\d)/(\d\d) (\d\d:\d\d:\d\d)\] ({_LEVEL})\s+(.*?)(?:\s+(\S+\.py):(\d+))?$",
    re.DOTALL,
)


def parse_bracketed(text: str) -> Parsed | None:
    m = _FLASK.match(text)
    if m:
        return "python", iso(m.group(1)), norm_level(m.group(2)), m.group(3), m.group(4), {}
    m = _RICH.match(text)
    if m:
        month, day, year, clock = m.group(1), m.group(2), m.group(3), m.group(4)
        fields: dict[str, object] = {}
        if m.group(7):
            fields = {"file": m.group(7), "lineno": int(m.group(8))}
        ts = f"20{year}-{month}-{day}T{clock}"
        return "rich", ts, norm_level(m.group(5)), None, m.group(6), fields
    return None


_VDSM = re.compile(
    rf"([\w\-]+)::({_LEVEL})::(\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)::([\w.]+)::(\d+)::"
    r"([\w.]+)::\((\w+)\) ?(.*)",
    re.DOTALL,
)


def parse_vdsm(text: str) -> Parsed | None:
    m = _VDSM.match(text)
    if not m:
        return None
    fields = {"thread": m.group(1), "module": m.group(4), "lineno": int(m.group(5)),
              "function": m.group(7)}
    return "python", iso(m.group(3)), norm_level(m.group(2)), m.group(6), m.group(8), fields


FAMILIES = [
    Family("python_level_first", "DIWECFTN", parse_level_first),
    Family("structlog_console", "0123456789", parse_structlog_console),
    Family("python_asctime", "0123456789", parse_asctime),
    Family("python_bracketed", "[", parse_bracketed),
    Family("vdsm", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", parse_vdsm),
]
