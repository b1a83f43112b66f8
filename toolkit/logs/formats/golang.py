"""Go families: klog/glog, zap console, the Temporal Go SDK default logger, hclog, runtime output.

- klog/glog: ``E0101 00:00:00.000000    1 file.go:12] msg`` (structured: ``"msg" key=value``).
- zap console: ``<ISO ts><TAB>ERROR<TAB>[logger<TAB>]caller.go:12<TAB>msg<TAB>{json}``.
- Temporal Go SDK default logger: ``2024/01/01 00:00:00 ERROR Workflow panic Namespace default
  TaskQueue q ... Error [TMPRL1100] ...`` (also RoadRunner's tab-separated variant).
- hclog: ``2024-05-07T10:58:13.877Z [INFO]  name: message: key=value``.
- runtime: ``panic: ...`` / ``fatal error: ...``, ``WARNING: DATA RACE``, ``go test`` markers.
"""

from __future__ import annotations

import re

import orjson

from toolkit.logs.formats.base import (
    GO_TS,
    ISO_TS,
    Family,
    Parsed,
    iso,
    split_trailing_pairs,
    unquote,
)
from toolkit.logs.normalize import Yearless, norm_level

__all__ = ["FAMILIES", "GO_SDK_KEYS"]

_KLOG = re.compile(
    r"([IWEF])(\d\d)(\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)\s+(\d+) ([^\s:\]]+:\d+)\] ?(.*)", re.DOTALL
)
_KLOG_LEVEL = {"I": "info", "W": "warning", "E": "error", "F": "critical"}
_KLOG_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def parse_klog(text: str) -> Parsed | None:
    m = _KLOG.match(text)
    if not m:
        return None
    sev, month, day, clock, thread, caller, rest = m.groups()
    fields: dict[str, object] = {"thread": int(thread), "caller": caller}
    message = rest
    q = _KLOG_QUOTED.match(rest)
    if q:  # structured klog: "message" key=value ...
        left, pairs = split_trailing_pairs(rest[q.end() :])
        if not left.strip():
            message = unquote(q.group(0))
            fields.update(pairs)
    ts = Yearless(f"?-{month}-{day}T{clock}")
    return "klog", ts, _KLOG_LEVEL[sev], None, message, fields


_ZAP_CONSOLE = re.compile(rf"({ISO_TS})\t([A-Za-z]+)\t(.*)", re.DOTALL)
_CALLER = re.compile(r"\S+:\d+")


def parse_zap_console(text: str) -> Parsed | None:
    m = _ZAP_CONSOLE.match(text)
    if not m:
        return None
    level = norm_level(m.group(2))
    if level is None and m.group(2).lower() not in ("notset",):
        return None
    parts = m.group(3).split("\t")
    fields: dict[str, object] = {}
    if len(parts) > 1 and parts[-1].startswith("{"):
        try:
            ctx = orjson.loads(parts[-1])
        except orjson.JSONDecodeError:
            ctx = None
        if isinstance(ctx, dict):
            fields.update(ctx)
            parts.pop()
    logger = None
    caller_at = next((i for i, p in enumerate(parts[:-1]) if _CALLER.fullmatch(p)), None)
    if caller_at is not None:
        fields["caller"] = parts[caller_at]
        if caller_at > 0:
            logger = parts[0]
        message = "\t".join(parts[caller_at + 1 :])
    else:
        message = "\t".join(parts)
    return "zap_console", iso(m.group(1)), level, logger, message, fields


#: Keys the Temporal Go SDK's default logger prints after the message (``Key value`` pairs).
GO_SDK_KEYS = (
    "Namespace", "TaskQueue", "WorkerID", "WorkflowType", "WorkflowID", "RunID", "Attempt",
    "ActivityID", "ActivityType", "Error", "StackTrace", "PanicError", "PanicStack", "EventID",
    "EventType", "CommandType", "ScheduledEventID", "StartedEventID", "TimerID", "SignalName",
    "ChildWorkflowID", "ChildWorkflowType", "QueryType", "UpdateID", "UpdateName", "Identity",
    "LocalActivityID", "WorkflowTaskStartedEventID", "PreviousStartedEventID", "TaskFirstEventID",
    "TaskStartedEventID", "BuildID", "DeploymentName", "TaskToken",
)
_GO_SDK = re.compile(rf"({GO_TS})[ \t]+(DEBUG|INFO|WARN|WARNING|ERROR|PANIC|FATAL)[ \t]+(.*)",
                     re.DOTALL)
_GO_SDK_KEY = re.compile(r"(?:^|\s)(" + "|".join(GO_SDK_KEYS) + r")\s")


def parse_go_sdk(text: str) -> Parsed | None:
    m = _GO_SDK.match(text)
    if not m:
        return None
    rest = m.group(3)
    fields: dict[str, object] = {}
    if "\t" in rest:  # RoadRunner: message<TAB>{json context}
        head, _, tail = rest.rpartition("\t")
        if tail.startswith("{"):
            try:
                ctx = orjson.loads(tail)
            except orjson.JSONDecodeError:
                ctx = None
            if isinstance(ctx, dict):
                fields.update(ctx)
                rest = head
    keys = list(_GO_SDK_KEY.finditer(rest))
    message = rest
    if keys:
        message = rest[: keys[0].start()].rstrip()
        for i, km in enumerate(keys):
            end = keys[i + 1].start() if i + 1 < len(keys) else len(rest)
            fields[km.group(1)] = rest[km.end() : end].strip()
    return "temporal_go_sdk", iso(m.group(1)), norm_level(m.group(2)), None, message, fields


_HCLOG = re.compile(
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) "
    r"\[(TRACE|DEBUG|INFO|WARN|ERROR)\] +(.*)",
    re.DOTALL,
)
_HCLOG_NAME = re.compile(r"([\w.\-/]+): ")


def parse_hclog(text: str) -> Parsed | None:
    m = _HCLOG.match(text)
    if not m:
        return None
    rest = m.group(3)
    logger = None
    n = _HCLOG_NAME.match(rest)
    if n:
        logger = n.group(1)
        rest = rest[n.end() :]
    message, fields = split_trailing_pairs(rest)
    return "hclog", iso(m.group(1)), norm_level(m.group(2)), logger, message.rstrip(":"), fields


_PANIC = re.compile(r"(panic|fatal error): (.*)", re.DOTALL)


def parse_go_runtime(text: str) -> Parsed | None:
    m = _PANIC.match(text)
    if m:
        return "go_panic", None, "critical", None, text, {}
    if text == "WARNING: DATA RACE":
        return "go_race", None, "warning", None, text, {}
    return None


_GO_TEST = re.compile(
    r"(?:=== (?:RUN|PAUSE|CONT|NAME)\s|\s*--- (PASS|FAIL|SKIP): |(PASS|FAIL)$"
    r"|(ok|FAIL|\?)\s+\S+\s)"
)


def parse_go_test(text: str) -> Parsed | None:
    m = _GO_TEST.match(text)
    if not m:
        return None
    failed = "FAIL" in (m.group(1), m.group(2), m.group(3))
    return "go_test", None, "error" if failed else "info", None, text.strip(), {}


FAMILIES = [
    Family("klog", "IWEF", parse_klog),
    Family("zap_console", "0123456789", parse_zap_console),
    Family("hclog", "0123456789", parse_hclog),
    Family("temporal_go_sdk", "0123456789", parse_go_sdk),
    Family("go_runtime", "pfW", parse_go_runtime),
    Family("go_test", "=- PFo?", parse_go_test),
]
