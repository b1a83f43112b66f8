"""Key=value families: Go slog text, logrus text, go-kit / Grafana logfmt.

- slog text: ``time=2024-01-01T00:00:00.000Z level=ERROR msg="..." key=value`` (time unquoted,
  level upper case).
- logrus text: ``time="2024-01-01T00:00:00Z" level=error msg="..." key=value``.
- logfmt (go-kit, Grafana): ``ts=... level=warn caller=x.go:12 msg="..."`` or ``t=... lvl=...``.
"""

from __future__ import annotations

from toolkit.logs.formats.base import Family, Parsed, iso, logfmt_whole
from toolkit.logs.normalize import norm_level

__all__ = ["FAMILIES"]

_TS_KEYS = ("time", "ts", "t", "timestamp")
_LEVEL_KEYS = ("level", "lvl", "severity")
_MSG_KEYS = ("msg", "message")


def parse_logfmt(text: str) -> Parsed | None:
    """A whole line of ``key=value`` pairs with a level or a message key."""
    if "=" not in text[:16]:
        return None
    pairs = logfmt_whole(text)
    if not pairs:
        return None
    level_key = next((k for k in _LEVEL_KEYS if k in pairs), None)
    msg_key = next((k for k in _MSG_KEYS if k in pairs), None)
    ts_key = next((k for k in _TS_KEYS if k in pairs), None)
    if level_key is None and msg_key is None:
        return None
    if ts_key is None and level_key is None:
        return None
    head = text.split("=", 1)[0]
    raw_level = pairs.pop(level_key) if level_key else None
    if head == "time" and text[5:6] == '"':
        family = "logrus_text"
    elif head == "time" or (raw_level and raw_level[:1].isupper() and ts_key == "time"):
        family = "slog_text"
    else:
        family = "logfmt"
    ts = iso(pairs.pop(ts_key)) if ts_key else None
    message = pairs.pop(msg_key) if msg_key else ""
    logger = pairs.pop("logger", None) or pairs.pop("component", None)
    return family, ts or None, norm_level(raw_level), logger, message, dict(pairs)


FAMILIES = [Family("logfmt", "tlTmsc", parse_logfmt)]
