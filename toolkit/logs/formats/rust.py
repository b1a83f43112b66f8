"""Rust ``tracing`` text lines, including Temporal Core's (``temporal_sdk_core::...``).

``2024-01-01T00:00:00.000000Z  WARN span{a=1}: temporal_sdk_core::worker::workflow: Failing
workflow task run_id=... failure=Failure { ... }``: the message runs to the first `` key=``, each
field value runs to the next one (Debug-printed values contain spaces).
"""

from __future__ import annotations

import re

from toolkit.logs.formats.base import ISO_TS, Family, Parsed, iso
from toolkit.logs.normalize import norm_level

__all__ = ["FAMILIES"]

_LINE = re.compile(
    rf"({ISO_TS})\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+((?:\S*\{{[^}}]*\}}:\s*)*)"
    r"([A-Za-z_]\w*(?:::\w+)*): (.*)",
    re.DOTALL,
)
_FIELD = re.compile(r" ([A-Za-z_]\w*)=")


def parse_tracing(text: str) -> Parsed | None:
    m = _LINE.match(text)
    if not m or "T" not in m.group(1):
        return None
    target, rest = m.group(4), m.group(5)
    fields: dict[str, object] = {}
    if m.group(3):
        fields["spans"] = m.group(3).strip().rstrip(":")
    keys = list(_FIELD.finditer(rest))
    message = rest
    if keys:
        message = rest[: keys[0].start()]
        for i, km in enumerate(keys):
            end = keys[i + 1].start() if i + 1 < len(keys) else len(rest)
            fields[km.group(1)] = rest[km.end() : end]
    family = "temporal_core" if target.startswith("temporal") else "rust_tracing"
    return family, iso(m.group(1)), norm_level(m.group(2)), target, message, fields


FAMILIES = [Family("rust_tracing", "0123456789", parse_tracing)]
