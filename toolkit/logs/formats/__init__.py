"""Format families: one small parser per family, dispatched on a line's first character.

:func:`parse_text` tries, in order, the parsers registered for the first character of a line
(after envelopes are stripped); the first that recognises the line wins. JSON lines are handled by
:mod:`toolkit.logs.formats.jsonlog`. Families in :data:`ONE_LINE_FAMILIES` never absorb headerless
lines that follow them (their records cannot contain raw newlines); the others (Python, Java, Go
SDK, zap console, hclog, tracing, timestamped text) do, as log viewers do.
"""

from __future__ import annotations

from toolkit.logs.formats import golang, java, logfmt, python, rust
from toolkit.logs.formats.base import Family, Parsed
from toolkit.logs.formats.jsonlog import classify_json, otlp_records

__all__ = ["FAMILY_NAMES", "ONE_LINE_FAMILIES", "Parsed", "classify_json", "otlp_records",
           "parse_text"]

# Order matters where shapes overlap: tab-separated zap before generic timestamp + level shapes,
# Rust tracing (``target: ``) and Java (``[thread]``) before the Python asctime variants.
_ORDERED: list[Family] = [
    *golang.FAMILIES[1:4],  # zap_console, hclog, temporal_go_sdk
    *rust.FAMILIES,
    *java.FAMILIES,
    python.FAMILIES[1],  # structlog console
    python.FAMILIES[2],  # python asctime
    golang.FAMILIES[0],  # klog
    python.FAMILIES[0],  # WARNING:root:msg, uvicorn, pytest
    *golang.FAMILIES[4:],  # panic, data race, go test
    *logfmt.FAMILIES,
    python.FAMILIES[3],  # [ts] / Rich
    python.FAMILIES[4],  # VDSM
]

_BY_FIRST: dict[str, tuple] = {}
for _family in _ORDERED:
    for _ch in _family.first:
        _BY_FIRST[_ch] = (*_BY_FIRST.get(_ch, ()), _family.parse)

ONE_LINE_FAMILIES = frozenset({
    "json", "slog_json", "logrus_json", "zap", "temporal_server", "zerolog", "bunyan",
    "structlog_json", "python_json", "rust_tracing_json", "typescript_sdk", "otlp",
    "slog_text", "logrus_text", "logfmt", "klog", "go_test", "go_panic", "go_race", "text",
    "uvicorn", "java_exception",
})

FAMILY_NAMES = frozenset({
    *ONE_LINE_FAMILIES, "zap_console", "hclog", "temporal_go_sdk", "rust_tracing",
    "temporal_core", "spring_boot", "logback", "log4j", "java_exception", "structlog_console",
    "python", "pytest", "rich",
})


def parse_text(text: str) -> Parsed | None:
    """Parse one line (envelopes already stripped) with the first family that recognises it."""
    for parse in _BY_FIRST.get(text[:1], ()):
        parsed = parse(text)
        if parsed is not None:
            return parsed
    return None
