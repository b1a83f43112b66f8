"""Java families: Spring Boot, logback / log4j2 pattern layouts, uncaught exceptions.

- Spring Boot: ``2024-01-01T00:00:00.000Z  INFO 1234 --- [main] c.e.App : msg`` (Boot 3.2+ adds
  ``[app-name]`` before the thread).
- logback / log4j2: ``2024-01-01 00:00:00,123 [main] INFO  c.e.App - msg`` (also time-only),
  ``2024-01-01T00:00:00,139 INFO [thread] Logger : msg``.
- ``Exception in thread "main" java.lang.RuntimeException: ...`` starts a stack of its own.
"""

from __future__ import annotations

import re

from toolkit.logs.formats.base import ISO_TS, Family, Parsed, iso
from toolkit.logs.normalize import norm_level

__all__ = ["FAMILIES"]

_LEVEL = r"TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE"
_TIME_ONLY = r"\d\d:\d\d:\d\d[.,]\d{3}"
_SPRING = re.compile(
    rf"({ISO_TS})\s+({_LEVEL})\s+(\d+)\s+---\s+(?:\[[^\]]*\]\s+)?\[\s*([^\]]*?)\s*\]\s+"
    r"(\S+)\s*:\s(.*)",
    re.DOTALL,
)
_THREAD_FIRST = re.compile(
    rf"({ISO_TS}|{_TIME_ONLY})\s+\[\s*([^\]]*?)\s*\]\s+({_LEVEL})\s+(\S+)\s+-\s(.*)", re.DOTALL
)
_LEVEL_FIRST = re.compile(
    rf"({ISO_TS})\s+({_LEVEL})\s+\[\s*([^\]]*?)\s*\]\s+(\S+?)\s*[:-]\s(.*)", re.DOTALL
)


def parse_java(text: str) -> Parsed | None:
    m = _SPRING.match(text)
    if m:
        fields = {"pid": int(m.group(3)), "thread": m.group(4)}
        level = norm_level(m.group(2))
        return "spring_boot", iso(m.group(1)), level, m.group(5), m.group(6), fields
    m = _THREAD_FIRST.match(text)
    if m:
        ts_text = m.group(1)
        ts = iso(ts_text) if len(ts_text) > 12 else None
        fields: dict[str, object] = {"thread": m.group(2)}
        if ts is None:
            fields["time"] = ts_text
        return "logback", ts, norm_level(m.group(3)), m.group(4), m.group(5), fields
    m = _LEVEL_FIRST.match(text)
    if m:
        fields = {"thread": m.group(3)}
        return "log4j", iso(m.group(1)), norm_level(m.group(2)), m.group(4), m.group(5), fields
    return None


_UNCAUGHT = re.compile(r'Exception in thread "([^"]*)" (.*)', re.DOTALL)


def parse_uncaught(text: str) -> Parsed | None:
    m = _UNCAUGHT.match(text)
    if not m:
        return None
    return "java_exception", None, "error", None, text, {"thread": m.group(1)}


FAMILIES = [
    Family("java", "0123456789", parse_java),
    Family("java_exception", "E", parse_uncaught),
]
