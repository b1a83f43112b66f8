"""Envelopes around log lines: strip them, keep what they carry.

Structural envelopes are unambiguous and stripped before format detection:

- docker ``json-file`` (``{"log": "...\\n", "stream": "stdout", "time": "..."}``; a ``log`` without
  the final newline is a partial line, joined with the next);
- journald ``json`` / ``json-pretty`` (``MESSAGE``, ``__REALTIME_TIMESTAMP``, ``PRIORITY``, ...);
- Kubernetes CRI (``<RFC3339Nano> stdout F <line>``, ``P`` for partial lines);
- ``docker compose`` prefixes (``svc-1  | ``, ``svc_1  | ``) and ``kubectl --prefix``
  (``[pod/name/container] ``).

Prefix envelopes are ambiguous (a leading timestamp may be the format's own header), so they are
stripped only when the whole line is in no known format: ``docker logs --timestamps`` /
``kubectl logs --timestamps`` and log-viewer timestamps, Go's ``log`` date, syslog / journald
``short`` (``Jan 01 00:00:00 host unit[pid]: ``), RFC 5424 syslog.
"""

from __future__ import annotations

import re
from typing import Any

from toolkit.logs.formats.base import GO_TS, ISO_TS, SYSLOG_TS, iso, syslog_iso
from toolkit.logs.normalize import epoch_to_ns, syslog_priority_level

__all__ = ["ANSI", "Envelope", "json_envelope", "strip_prefix", "strip_structural"]

#: ANSI escape sequences (colours, erase-line) that compose and consoles put in logs.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class Envelope:
    """What envelopes carried: the chain of their names, timestamp, stream, container, host."""

    __slots__ = ("container", "fields", "host", "level", "logger", "name", "partial", "stream",
                 "ts")

    def __init__(self, name: str, **values: Any) -> None:
        self.name = name
        self.ts: Any = values.get("ts")
        self.stream: str | None = values.get("stream")
        self.container: str | None = values.get("container")
        self.host: str | None = values.get("host")
        self.level: str | None = values.get("level")
        self.logger: str | None = values.get("logger")
        self.fields: dict[str, Any] = values.get("fields") or {}
        self.partial: bool = bool(values.get("partial"))

    def wrap(self, inner: Envelope | None) -> Envelope:
        """Merge an inner envelope into this (outer) one; inner values win where both are set."""
        if inner is None:
            return self
        merged = Envelope(f"{self.name}+{inner.name}")
        for slot in ("ts", "stream", "container", "host", "level", "logger"):
            setattr(merged, slot, getattr(inner, slot) or getattr(self, slot))
        merged.fields = {**self.fields, **inner.fields}
        merged.partial = inner.partial or self.partial
        return merged

    def key(self) -> tuple[str | None, ...]:
        """Records continue each other only within one (container, stream, host, program)."""
        return self.container, self.stream, self.host, self.logger


def _journald_time(realtime: Any) -> Any:
    """``__REALTIME_TIMESTAMP`` (microseconds, as text) -> ns; other text is left to the frame."""
    if realtime in (None, "") or isinstance(realtime, dict | list):
        return None
    try:
        return epoch_to_ns(int(realtime) * 1000)
    except (TypeError, ValueError):
        return realtime if isinstance(realtime, str) else None


def json_envelope(d: dict[str, Any]) -> tuple[Envelope, str] | None:
    """docker json-file or journald JSON object -> (envelope, inner text), else None."""
    log = d.get("log")
    if isinstance(log, str) and len(d) <= 5 and set(d) <= {"log", "stream", "time", "attrs", "tag"}:
        partial = not log.endswith("\n")
        env = Envelope("docker-json", ts=d.get("time") or None, stream=d.get("stream"),
                       partial=partial, fields=d.get("attrs") or {})
        return env, log.rstrip("\r\n") if not partial else log
    if "MESSAGE" in d and ("__REALTIME_TIMESTAMP" in d or "_PID" in d or "PRIORITY" in d
                           or "__CURSOR" in d):
        fields = dict(d)
        message = fields.pop("MESSAGE")
        if isinstance(message, list):  # journald exports non-UTF-8 messages as byte arrays
            try:
                message = bytes(message).decode("utf-8", "replace")
            except (TypeError, ValueError):
                message = str(message)
        ts = _journald_time(fields.pop("__REALTIME_TIMESTAMP", None))
        env = Envelope(
            "journald-json", ts=ts, host=fields.pop("_HOSTNAME", None),
            container=fields.get("CONTAINER_NAME"),
            level=syslog_priority_level(fields.pop("PRIORITY", None)),
            logger=fields.pop("SYSLOG_IDENTIFIER", None) or fields.get("_COMM"),
            fields=fields,
        )
        return env, str(message if message is not None else "")
    return None


_CRI = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) "
                  r"(stdout|stderr) ([FP]) ?(.*)", re.DOTALL)
_COMPOSE = re.compile(r"([\w.\-]+[-_]\d+)\s+\| ?(.*)", re.DOTALL)
_KUBECTL_PREFIX = re.compile(r"\[pod/([^/\]\s]+)/([^\]\s]+)\] (.*)", re.DOTALL)


def strip_structural(text: str) -> tuple[Envelope, str] | None:
    """Strip one unambiguous text envelope (CRI, compose, kubectl --prefix)."""
    c0 = text[:1]
    if c0.isdigit():
        m = _CRI.match(text)
        if m:
            env = Envelope("cri", ts=m.group(1), stream=m.group(2), partial=m.group(3) == "P")
            return env, m.group(4)
    if c0 == "[":
        m = _KUBECTL_PREFIX.match(text)
        if m:
            return Envelope("kubectl-prefix", host=m.group(1), container=m.group(2)), m.group(3)
    if "|" in text[:64]:
        m = _COMPOSE.match(text)
        if m:
            return Envelope("compose", container=m.group(1)), m.group(2)
    return None


_TS_PREFIX = re.compile(rf"({ISO_TS})(?: UTC)? {{1,2}}(.*)", re.DOTALL)
_GO_PREFIX = re.compile(rf"({GO_TS}) (.*)", re.DOTALL)
_SYSLOG = re.compile(rf"(?:<(\d{{1,3}})>)?({SYSLOG_TS}) (\S+) ([\w.\-/@()]+?)(?:\[(\d+)\])?: (.*)",
                     re.DOTALL)
_SYSLOG_BARE = re.compile(rf"({SYSLOG_TS}) (.*)", re.DOTALL)
_RFC5424 = re.compile(
    rf"<(\d{{1,3}})>1 ({ISO_TS}|-) (\S+) (\S+) (\S+) (\S+) (-|\[.*?\]) ?(.*)", re.DOTALL
)


def strip_prefix(text: str) -> tuple[Envelope, str] | None:
    """Strip a leading timestamp / syslog header that is not part of a known format."""
    c0 = text[:1]
    if c0.isdigit():
        m = _TS_PREFIX.match(text)
        if m:
            return Envelope("timestamp", ts=iso(m.group(1))), m.group(2)
        m = _GO_PREFIX.match(text)
        if m:
            return Envelope("timestamp", ts=iso(m.group(1))), m.group(2)
        return None
    if c0 == "<":
        m = _RFC5424.match(text)
        if m:
            pri = int(m.group(1))
            fields = {"facility": pri >> 3, "procid": m.group(5), "msgid": m.group(6)}
            ts = iso(m.group(2)) if m.group(2) != "-" else None
            env = Envelope("syslog", ts=ts, host=m.group(3), logger=m.group(4),
                           level=syslog_priority_level(pri & 7), fields=fields)
            return env, m.group(8)
    if c0.isalpha() or c0 == "<":
        m = _SYSLOG.match(text)
        if m:
            fields: dict[str, Any] = {"pid": int(m.group(5))} if m.group(5) else {}
            level = None
            if m.group(1):
                level = syslog_priority_level(int(m.group(1)) & 7)
            env = Envelope("syslog", ts=syslog_iso(m.group(2)), host=m.group(3),
                           logger=m.group(4), level=level, fields=fields)
            return env, m.group(6)
        m = _SYSLOG_BARE.match(text)
        if m:
            return Envelope("timestamp", ts=syslog_iso(m.group(1))), m.group(2)
    return None
