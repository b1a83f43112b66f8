"""The one parser of nondeterminism (``[TMPRL1100]``) message shapes.

Shared by the history side (``WorkflowTaskFailed`` failure messages, replayer exceptions) and the
log side (worker logs). It recognises only the shapes Temporal's SDKs actually print (see
``histories-and-replay.md``) and returns ``None`` for anything else, so a caller never mistakes
an unrelated line that merely mentions "nondeterminism" for a parsed divergence.

Shapes
------
- Core (Python, TypeScript, .NET, Ruby): ``[TMPRL1100] Nondeterminism error: <detail>``; older
  core: ``Nondeterminism("<detail>")``; worker log
  ``Failing workflow task run_id=<id> failure=Failure { failure: Some(Failure { message: "..."``.
  Python wraps it in ``NondeterminismError``, TypeScript in ``DeterminismViolationError: Replay
  failed with a nondeterminism error. ... Details: <detail>``.
- Go: ``[TMPRL1100] nondeterministic workflow: missing replay command for <event>`` /
  ``extra replay command for <command>`` / ``history event is <event>, replay command is
  <command>``; ``[TMPRL1100] During replay, a matching <kind> command was expected in history
  event position <n>. ...``; ``[TMPRL1100] lookup failed for scheduledEventID to activityID: ...``.
- Java: ``NonDeterministicException: [TMPRL1100] ... Command <X> doesn't match event <Y> with
  EventId=<n> on check <field> with an expected value '<a>' and an actual value '<b>'``; the bare
  exception ``NonDeterministicException: Failure handling event <n> of type '<T>' during replay.
  Event <n> of type <T> does not match command type <C>``, whose ``Wrapped by: ... WorkflowId=<w>,
  RunId=<r>`` section names the run.

Text pasted into postmortems and issue threads wraps these messages over several lines and cuts
Go's structs short (``(ActivityId:11, ActivityType:(Name:X) …``) or abbreviates them
(``ActivityTaskScheduled: ServiceA.reserveStock``): whitespace, line breaks included, is read as
one space, and a Go item is read up to where its text stops.
"""

from __future__ import annotations

import re
from typing import Any

from toolkit.histories.enums import _pascal

__all__ = ["parse_nondeterminism", "pascal_case_type"]

_HISTORY_EVENT = r"HistoryEvent\(id: (?P<event_id>\d+), (?:Some\()?(?P<event_type>\w+)\)?\)"

# Core detail shapes; each named group feeds the result dict.
_CORE_DETAILS: list[tuple[str, re.Pattern[str]]] = [
    ("no_command_for_event", re.compile(r"No command scheduled for event " + _HISTORY_EVENT)),
    (
        "field_mismatch",
        re.compile(
            r"(?P<subject>Activity|Child workflow|Local activity|Timer) (?P<field>type|id) of "
            r"(?:scheduled |started |initiated )?event '(?P<expected>[^']*)' does not match "
            r"[\w ]*?(?:type|id) of [\w ]*?command '(?P<actual>[^']*)'"
        ),
    ),
    (
        "machine_mismatch",
        re.compile(r"(?P<subject>[\w ]+?) machine does not handle this event: " + _HISTORY_EVENT),
    ),
]

_CORE_PREFIX = re.compile(r"(?:\[TMPRL1100\] )?Nondeterminism error: ")
_CORE_OLD = re.compile(r'Nondeterminism\("(?P<detail>(?:[^"\\]|\\.)*)"\)')
_CORE_RUN_ID = re.compile(r"\brun_id[=:] ?\"?(?P<run_id>[0-9a-fA-F-]{8,})")
_TS_DETAILS = re.compile(
    r"DeterminismViolationError: Replay failed with a nondeterminism error\..*?Details: "
    r"(?P<detail>.*)",
    re.DOTALL,
)

_GO_NONDET = re.compile(
    r"\[TMPRL1100\] nondeterministic workflow: (?:"
    r"missing replay command for (?P<missing>.+)"
    r"|extra replay command for (?P<extra>.+)"
    r"|history event is (?P<event>.+?), replay command is (?P<command>.+))"
)
# The same three shapes with every run of whitespace read as one space, the comma optional, and
# Cadence's older "decision" for "command" (pasted text; see the module docstring).
_GO_NONDET_LOOSE = re.compile(
    r"(?:\[TMPRL1100\] )?nondeterministic workflow: (?:"
    r"missing replay (?:command|decision) for (?P<missing>.+)"
    r"|extra replay (?:command|decision) for (?P<extra>.+)"
    r"|history event is (?P<event>.+?),? replay (?:command|decision) is (?P<command>.+))"
)
_WHITESPACE = re.compile(r"\s+")
_GO_MATCHING = re.compile(
    r"\[TMPRL1100\] During replay, a matching (?P<kind>\w+) command was expected in history "
    r"event position (?P<position>[^\s.]+)\. However, the replayed code did not produce that\."
    r"(?: Possible causes are nondeterministic workflow definition code, or an incompatible "
    r"change in the workflow definition\.)?"
)
_GO_LOOKUP = re.compile(
    r"\[TMPRL1100\] lookup failed for scheduledEventID to activityID: (?P<detail>.*)"
)
_GO_ITEM = re.compile(r"^(?P<type>\w+): \((?P<attrs>.*)\)\s*$", re.DOTALL)
_GO_ATTRS = {
    "activity_id": re.compile(r"\bActivityId:(?P<v>[^,)\s]+)"),
    "activity_type": re.compile(r"\bActivityType:\(Name:(?P<v>[^,)]+)\)"),
    "timer_id": re.compile(r"\bTimerId:(?P<v>[^,)\s]+)"),
    "workflow_type": re.compile(r"\bWorkflowType:\(Name:(?P<v>[^,)]+)\)"),
    "workflow_id": re.compile(r"\bWorkflowId:(?P<v>[^,)\s]+)"),
    "marker_name": re.compile(r"\bMarkerName:(?P<v>[^,)\s]+)"),
}

_JAVA = re.compile(
    r"Command (?P<command>\w+) doesn't match event (?P<event>\w+) with EventId=(?P<event_id>\d+) "
    r"on check (?P<check>\w+) with an expected value '(?P<expected>.*?)' and an actual value "
    r"'(?P<actual>.*?)'(?=\s|$|\.|,|\))",
    re.DOTALL,
)
_JAVA_NAME = re.compile(r'^\s*name: "(?P<name>(?:[^"\\]|\\.)*)"\s*$')
_JAVA_EVENT_COMMAND = re.compile(
    r"(?:Failure handling event (?P<failed_id>\d+) of type '(?P<failed_type>\w+)' "
    r"during replay\. )?"
    r"(?:\[TMPRL1100\] )?Event (?P<event_id>\d+) of type (?P<event>\w+) does not match command "
    r"type (?P<command>\w+)"
)
_JAVA_RUN = re.compile(r"WorkflowId=(?P<workflow_id>[^,\s]+), RunId=(?P<run_id>[0-9a-fA-F-]{8,})")

_KIND_OF_EVENT = {
    "ActivityTask": "activity",
    "Timer": "timer",
    "StartChildWorkflowExecution": "child_workflow",
    "ChildWorkflowExecution": "child_workflow",
    "MarkerRecorded": "marker",
    "RecordMarker": "marker",
    "SignalExternalWorkflowExecution": "signal_external",
    "RequestCancelExternalWorkflowExecution": "cancel_external",
    "ScheduleActivityTask": "activity",
    "RequestCancelActivityTask": "activity",
    "StartTimer": "timer",
    "CancelTimer": "timer",
    "UpsertWorkflowSearchAttributes": "search_attributes",
    "NexusOperation": "nexus",
    "ScheduleNexusOperation": "nexus",
}


def pascal_case_type(name: str | None) -> str | None:
    """``EVENT_TYPE_ACTIVITY_TASK_SCHEDULED`` / ``COMMAND_TYPE_X`` -> PascalCase, else unchanged."""
    if not name:
        return name
    for prefix in ("EVENT_TYPE_", "COMMAND_TYPE_"):
        if name.startswith(prefix):
            return _pascal(name[len(prefix) :])
    return name


def _kind_of(type_name: str | None) -> str | None:
    if not type_name:
        return None
    for prefix, kind in _KIND_OF_EVENT.items():
        if type_name.startswith(prefix):
            return kind
    return None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _result(sdk: str, kind: str, message: str, **values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "sdk": sdk,
        "kind": kind,
        "event_id": None,
        "event_type": None,
        "command_type": None,
        "expected": None,
        "actual": None,
        "check": {},
        "run_id": None,
        "workflow_id": None,
        "message": message,
    }
    out.update({k: v for k, v in values.items() if v is not None})
    return out


def _parse_core_detail(detail: str) -> tuple[str, dict[str, Any]] | None:
    """Parse one core detail string; returns (kind, values) or None."""
    for kind, pattern in _CORE_DETAILS:
        m = pattern.search(detail)
        if not m:
            continue
        groups = m.groupdict()
        values: dict[str, Any] = {}
        if groups.get("event_id"):
            values["event_id"] = int(groups["event_id"])
            values["event_type"] = groups["event_type"]
        if kind == "field_mismatch":
            subject = groups["subject"].lower().replace(" ", "_")
            field = f"{subject}_{groups['field']}"
            values.update(expected=groups["expected"], actual=groups["actual"])
            values["check"] = {"kind": subject, "field": field, field: groups["expected"]}
            kind = f"{groups['field']}_mismatch"
        elif kind == "machine_mismatch":
            subject = groups["subject"].strip().lower().replace(" ", "_")
            values["check"] = {"kind": subject, "machine": groups["subject"].strip()}
            values["actual"] = groups["event_type"]
            values["expected"] = subject
        else:
            values["check"] = {"kind": _kind_of(groups.get("event_type"))}
        return kind, values
    return None


def _core_span(text: str) -> tuple[str, str] | None:
    """Find a core nondeterminism detail: returns (matched message, detail)."""
    m = _CORE_PREFIX.search(text)
    if m:
        rest = text[m.end() :]
        # Inside a Rust Debug-printed Failure the message ends at the closing quote.
        end = rest.find('", ')
        detail = rest if end < 0 else rest[:end]
        detail = detail.splitlines()[0] if detail else detail
        start = m.start()
        return text[start : m.end() + len(detail)], detail
    m = _CORE_OLD.search(text)
    if m:
        return m.group(0), m.group("detail").replace('\\"', '"')
    return None


def _parse_go_item(item: str) -> tuple[str | None, dict[str, str]]:
    m = _GO_ITEM.match(item.strip())
    if not m:
        return _parse_go_item_loose(item)
    attrs = {key: am.group("v") for key, rx in _GO_ATTRS.items() if (am := rx.search(m["attrs"]))}
    return m["type"], attrs


# The identity a Go item's bare name stands for, by kind (``ActivityTaskScheduled: X``).
_GO_BARE_NAME = {
    "activity": "activity_type",
    "timer": "timer_id",
    "child_workflow": "workflow_type",
    "marker": "marker_name",
}


def _parse_go_item_loose(item: str) -> tuple[str | None, dict[str, str]]:
    """A Go item as pasted: struct cut short (``Type: (A:1, B:(Name:x) …``) or a bare name."""
    m = re.match(r"\s*(?P<type>[A-Z]\w+):?\s*(?P<rest>.*)", item, re.DOTALL)
    if not m:
        return None, {}
    rest = m["rest"].strip().rstrip("….").strip()
    attrs = {key: am.group("v") for key, rx in _GO_ATTRS.items() if (am := rx.search(rest))}
    if not attrs and rest:
        name = re.match(r"\(?(?P<name>[\w./-]+)", rest)
        field = _GO_BARE_NAME.get(_kind_of(m["type"]) or "")
        if field and name:
            attrs[field] = name["name"]
    return m["type"], attrs


def _go_item_end(text: str) -> int:
    """Where a Go item that starts ``text`` ends: its balanced parentheses, else the line."""
    depth = 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index + 1
        elif char == "\n" and depth == 0:
            return index
    return len(text)


def _go_loose(text: str) -> tuple[re.Match[str], str] | None:
    """The Go shapes in pasted text: lines joined, items cut where their text stops."""
    flat = _WHITESPACE.sub(" ", text)
    m = _GO_NONDET_LOOSE.search(flat)
    if m is None:
        return None
    # The last item runs to its closing parenthesis (or, cut short, to the end of the text).
    last = next(g for g in ("command", "missing", "extra") if m[g] is not None)
    end = m.start(last) + _go_item_end(flat[m.start(last) :])
    matched = flat[m.start() : end].rstrip()
    again = _GO_NONDET_LOOSE.match(matched)
    return (again, matched) if again else None


def _parse_go(text: str) -> dict[str, Any] | None:
    m = _GO_NONDET.search(text)
    line = m.group(0).splitlines()[0] if m else ""
    exact = _GO_NONDET.match(line) if m else None
    if exact is None and "nondeterministic workflow:" in text:
        loose = _go_loose(text)
        if loose is not None:
            m, line = loose
    elif m:
        m = exact or m
    if m:
        if m["missing"]:
            etype, attrs = _parse_go_item(m["missing"])
            return _result(
                "go", "missing_replay_command", line, event_type=etype,
                check={"kind": _kind_of(etype), **attrs}, expected=attrs.get("activity_type"),
            )
        if m["extra"]:
            ctype, attrs = _parse_go_item(m["extra"])
            return _result(
                "go", "extra_replay_command", line, command_type=ctype,
                check={"kind": _kind_of(ctype), **attrs}, actual=attrs.get("activity_type"),
            )
        etype, eattrs = _parse_go_item(m["event"])
        ctype, cattrs = _parse_go_item(m["command"])
        differing = [k for k in sorted(set(eattrs) | set(cattrs)) if eattrs.get(k) != cattrs.get(k)]
        field = differing[0] if differing else None
        return _result(
            "go", "event_command_mismatch", line, event_type=etype, command_type=ctype,
            expected=eattrs.get(field) if field else etype,
            actual=cattrs.get(field) if field else ctype,
            check={"kind": _kind_of(etype), "field": field, **eattrs,
                   "command": {"kind": _kind_of(ctype), **cattrs}},
        )
    m = _GO_MATCHING.search(text)
    if m:
        position = m["position"]
        return _result(
            "go", "missing_matching_command", m.group(0),
            event_id=int(position) if position.isdigit() else None,
            expected=m["kind"], check={"kind": _snake(m["kind"]), "position": position},
        )
    m = _GO_LOOKUP.search(text)
    if m:
        detail = m["detail"].splitlines()[0] if m["detail"] else ""
        # Go prints "scheduleEventID: 5, activityID: 5" (older Cadence code: "scheduleEvenyID").
        ids = re.search(r"scheduled?Even[ty]ID:\s*(\d+)", detail)
        act = re.search(r"activityID:\s*([^\s,]+)", detail)
        return _result(
            "go", "lookup_failed", m.group(0).splitlines()[0],
            event_id=int(ids.group(1)) if ids else None,
            check={"kind": "activity", "activity_id": act.group(1) if act else None},
        )
    return None


def _java_value(value: str) -> str:
    m = _JAVA_NAME.match(value)
    return m["name"] if m else value.strip()


def _parse_java(text: str) -> dict[str, Any] | None:
    m = _JAVA.search(text)
    if not m:
        return _parse_java_event_command(text)
    event_type = pascal_case_type(m["event"])
    field = _snake(m["check"])
    expected, actual = _java_value(m["expected"]), _java_value(m["actual"])
    return _result(
        "java", "check_mismatch", m.group(0), event_id=int(m["event_id"]),
        event_type=event_type, command_type=pascal_case_type(m["command"]),
        expected=expected, actual=actual,
        check={"kind": _kind_of(event_type), "field": field, field: expected},
    )


def _parse_java_event_command(text: str) -> dict[str, Any] | None:
    """Java's ``Event <n> of type <T> does not match command type <C>`` (a kind mismatch)."""
    m = _JAVA_EVENT_COMMAND.search(text)
    if not m:
        return None
    event_type, command_type = pascal_case_type(m["event"]), pascal_case_type(m["command"])
    run = _JAVA_RUN.search(text)
    return _result(
        "java", "command_type_mismatch", m.group(0), event_id=int(m["event_id"]),
        event_type=event_type, command_type=command_type, expected=event_type,
        actual=command_type, check={"kind": _kind_of(event_type), "field": "command_type"},
        run_id=run["run_id"] if run else None, workflow_id=run["workflow_id"] if run else None,
    )


def parse_nondeterminism(text: str) -> dict[str, Any] | None:
    """Parse a nondeterminism error message into structured fields.

    Parameters
    ----------
    text : str
        A failure message, exception text or log line (may span several lines).

    Returns
    -------
    dict or None
        ``None`` unless ``text`` holds one of the known shapes. Otherwise a dict with ``sdk``
        (``core``, ``python``, ``typescript``, ``go``, ``java``), ``kind`` (shape of the detail:
        ``no_command_for_event``, ``type_mismatch``, ``id_mismatch``, ``machine_mismatch``,
        ``missing_replay_command``, ``extra_replay_command``, ``event_command_mismatch``,
        ``missing_matching_command``, ``lookup_failed``, ``check_mismatch``,
        ``command_type_mismatch``), ``event_id``,
        ``event_type``, ``command_type``, ``expected`` (what history holds), ``actual`` (what the
        replayed code produced), ``check`` (dict: ``kind`` of command, ``field`` compared and the
        identities parsed such as ``activity_type`` / ``activity_id``), ``run_id`` and
        ``workflow_id`` when the text carries them, and ``message`` (the matched text).
    """
    if not isinstance(text, str) or not (
        "TMPRL1100" in text or "ondeterminis" in text or "NonDeterministic" in text
    ):
        return None
    parsed = _parse_go(text) or _parse_java(text)
    if parsed:
        return parsed
    ts = _TS_DETAILS.search(text)
    span = _core_span(ts["detail"] if ts else text)
    if span is None:
        return None
    message, detail = span
    found = _parse_core_detail(detail)
    if found is None:
        return None
    kind, values = found
    if ts:
        sdk = "typescript"
    elif "NondeterminismError" in text:
        sdk = "python"
    else:
        sdk = "core"
    run = _CORE_RUN_ID.search(text)
    return _result(sdk, kind, message, run_id=run["run_id"] if run else None, **values)
