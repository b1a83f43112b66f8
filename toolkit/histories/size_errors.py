"""Size-limit failures in histories and worker logs, one parser for both.

The server, sdk-core and gRPC word a size limit in a few fixed ways; each shape below names the
limit it reports (the names of :mod:`toolkit.histories.server_limits`) and where the words come
from. In a history they are the reason of a ``WorkflowExecutionTerminated`` event, the failure of
an activity, a workflow task or the run, or a workflow task's failure cause; in logs, a record's
message or fields.

=========================  ==============================================================  =====
limit                      shape                                                           who
=========================  ==============================================================  =====
``history_bytes``          ``Workflow history size exceeds limit.``                        server
``history_events``         ``Workflow history count exceeds limit.``                       server
``history_bytes_warn``     ``history size exceeds warn limit.`` (its log line)             server
``history_events_warn``    ``history count exceeds warn limit.``                           server
``payload_bytes``          ``<Command>CommandAttributes.<Field> exceeds size limit.``,     server
                           ``Complete result exceeds size limit.``, ``Failure exceeds
                           size limit.``, ``... details exceed size limit.``, ``Blob data
                           size exceeds limit.``
``payload_bytes``          ``[TMPRL1103] ... exceeded the error limit``, workflow task     sdk
                           cause ``PAYLOADS_TOO_LARGE``
``payload_bytes_warn``     ``Blob data size exceeds the warning limit.``, ``[TMPRL1103]    both
                           ... warning limit``
``memo_bytes``             ``Memo size exceeds limit.``                                    server
``task_completion_bytes``  ``received message larger than max (N vs. M)``, cause           grpc,
                           ``GRPC_MESSAGE_TOO_LARGE`` / ``REQUEST_TOO_LARGE``, ``Workflow  sdk
                           task completion exceeds the namespace size limit``
``transaction_bytes``      ``Transaction size exceeds limit.``                             server
``mutable_state_bytes``    ``Workflow mutable state size exceeds limit.``                  server
=========================  ==============================================================  =====

Sources: temporalio/temporal ``common/util.go`` (the ``FailureReason*`` and ``Err*`` texts),
``service/history/workflow/context.go`` (the warn log lines),
``service/history/api/respondworkflowtaskcompleted/workflow_task_completed_handler.go`` (the
command attribute texts); temporalio/sdk-core (``TMPRL1103``, the task-completion texts); grpc-go
(``received message larger than max``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from toolkit.errors import ToolkitError

__all__ = ["LIMIT_EVENT_TYPES", "SIZE_ERROR_COLUMNS", "SIZE_SHAPES", "Hit", "first_limit_hit",
           "parse_size_error", "size_errors"]  # fmt: skip

#: (limit, who, pattern). First match wins, so the specific shapes come first.
SIZE_SHAPES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (limit, who, re.compile(pattern))
    for limit, who, pattern in (
        ("history_bytes_warn", "server", r"history size exceeds warn limit"),
        ("history_events_warn", "server", r"history count exceeds warn limit"),
        ("history_bytes", "server", r"[Ww]orkflow history size exceeds limit|history size "
                                    r"exceeds error limit"),
        ("history_events", "server", r"[Ww]orkflow history count exceeds limit|history count "
                                     r"exceeds error limit"),
        ("mutable_state_bytes", "server", r"mutable state size exceeds (?:error )?limit"),
        ("transaction_bytes", "server", r"Transaction size exceeds limit"),
        ("payload_bytes_warn", "server", r"Blob data size exceeds the warning limit"),
        ("payload_bytes_warn", "sdk", r"\[TMPRL1103\][^\n]*warning limit"),
        ("payload_bytes", "sdk", r"\[TMPRL1103\][^\n]*"),
        ("payload_bytes", "server",
         r"(?P<operation>\w+CommandAttributes\.\w+) exceeds size limit(?:\. Length=(?P<size>\d+) "
         r"Limit=(?P<limit_value>\d+))?"),
        ("payload_bytes", "server",
         r"(?P<operation>Complete result|Failure|Cancel details|Heartbeat details) exceeds? size "
         r"limit"),
        ("payload_bytes", "server", r"Blob data size exceeds limit"),
        ("memo_bytes", "server", r"Memo size exceeds limit"),
        ("payload_bytes", "sdk", r"PAYLOADS_TOO_LARGE|PayloadsTooLarge"),
        ("task_completion_bytes", "grpc",
         r"[Rr]eceived message (?:after decompression )?larger than max "
         r"\((?P<size>\d+) vs\.? (?P<limit_value>\d+)\)"),
        ("task_completion_bytes", "sdk",
         r"GRPC_MESSAGE_TOO_LARGE|GrpcMessageTooLarge|GRPC Message too large|REQUEST_TOO_LARGE|"
         r"RequestTooLarge|[Ww]orkflow task completion exceeds the namespace(?:'s recombined)? "
         r"size limit"),
    )
)

SIZE_ERROR_COLUMNS = [
    "found_in", "source", "history", "event_id", "event_type", "line", "ts", "workflow_id",
    "run_id", "activity_type", "attempt", "limit", "who", "operation", "size", "limit_value",
    "text",
]  # fmt: skip

#: The events whose reason or failure can name a size limit.
LIMIT_EVENT_TYPES = ("WorkflowExecutionTerminated", "WorkflowTaskFailed", "ActivityTaskFailed",
                     "WorkflowExecutionFailed", "ChildWorkflowExecutionFailed")  # fmt: skip
_HISTORY_TYPES = frozenset(LIMIT_EVENT_TYPES)
_NEEDLES = ("exceeds", "exceed size", "TMPRL1103", "larger than max", "TOO_LARGE", "TooLarge",
            "too large")  # fmt: skip


def parse_size_error(text: str) -> dict[str, Any] | None:
    """The size limit a message reports: ``limit``, ``who``, ``operation``, ``size``,
    ``limit_value`` (bytes, where the text states them), ``text`` (the matched part); None when
    the text is in no known shape."""
    if not isinstance(text, str) or not text:
        return None
    found = _parsed(text)
    return None if found is None else dict(found)


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> dict[str, Any] | None:
    """:func:`parse_size_error` of a text, remembered: the runs of a fleet fail with a few
    texts (the caller gets a copy of what is remembered)."""
    for limit, who, pattern in SIZE_SHAPES:
        match = pattern.search(text)
        if match is None:
            continue
        groups = match.groupdict()
        return {
            "limit": limit,
            "who": who,
            "operation": groups.get("operation"),
            "size": int(groups["size"]) if groups.get("size") else None,
            "limit_value": int(groups["limit_value"]) if groups.get("limit_value") else None,
            "text": match.group(0),
        }
    return None


@dataclass(frozen=True)
class Hit:
    """A size limit that stopped (or is stopping) a run, as its history says it."""

    limit: str
    reason: str
    event_id: int
    event_type: str


def _event_text(event_type: str, attributes: Any, failure: Any, cause: Any) -> str:
    parts = []
    if event_type == "WorkflowExecutionTerminated" and attributes is not None:
        try:
            reason = attributes.get("reason")
        except Exception:  # an attributes cell that does not decode: nothing to read
            reason = None
        if isinstance(reason, str):
            parts.append(reason)
    for value in (failure, cause):
        if isinstance(value, str):
            parts.append(value)
    return "\n".join(parts)


def first_limit_hit(
    event_types: list[str], event_ids: list[int], attributes: list[Any],
    failures: list[Any], causes: list[Any],
) -> Hit | None:  # fmt: skip
    """The error limit a run's history shows it hit: a termination for size wins (it ended the
    run), else the first failure for size (a task or an activity that could not complete)."""
    found: list[Hit] = []
    for p, event_type in enumerate(event_types):
        if event_type not in _HISTORY_TYPES:
            continue
        text = _event_text(event_type, attributes[p], failures[p], causes[p])
        parsed = parse_size_error(text)
        if parsed is None or parsed["limit"].endswith("_warn"):
            continue
        reason = text.split("\n", 1)[0] if event_type == "WorkflowExecutionTerminated" else text
        found.append(Hit(parsed["limit"], reason, int(event_ids[p]), event_type))
    terminated = [hit for hit in found if hit.event_type == "WorkflowExecutionTerminated"]
    return (terminated or found or [None])[0]


def size_errors(events_or_logs: Any) -> pd.DataFrame:
    """One row per size-limit failure or warning in an events frame, a logs frame, or a list.

    Parameters
    ----------
    events_or_logs
        An events frame (:func:`toolkit.read_history`), a logs frame (:func:`toolkit.read_logs`),
        a history path, or a list of these.

    Returns
    -------
    pandas.DataFrame
        ``found_in`` (``history``/``log``), ``source``, ``history``, ``event_id`` and
        ``event_type`` (history), ``line`` (log), ``ts``, ``workflow_id``, ``run_id``,
        ``activity_type`` (the activity whose payload it was, where the history says it),
        ``attempt`` (the attempt of that activity that failed: how often it was tried),
        ``limit`` (:mod:`toolkit.histories.server_limits` names, plus ``memo_bytes``,
        ``transaction_bytes``, ``mutable_state_bytes``), ``who`` (``server``, ``sdk``,
        ``grpc``), ``operation`` (the command field or request), ``size`` and ``limit_value``
        (bytes, where the text states them), ``text`` (the matched words).
    """
    if isinstance(events_or_logs, pd.DataFrame):
        frames: Iterable[Any] = [events_or_logs]
    elif isinstance(events_or_logs, (list, tuple)):
        frames = events_or_logs
    else:
        from toolkit.replay.commands import events_frame

        frames = [events_frame(events_or_logs)]
    rows: list[dict[str, Any]] = []
    for frame in frames:
        if not isinstance(frame, pd.DataFrame):
            rows.extend(size_errors(frame).to_dict("records"))
        elif "event_type" in frame.columns:
            rows.extend(_from_events(frame))
        elif "message" in frame.columns:
            rows.extend(_from_logs(frame))
        else:
            columns = list(frame.columns)[:8]
            raise ToolkitError(f"size_errors: a frame with columns {columns} is neither an "
                               "events frame (event_type) nor a logs frame (message)")  # fmt: skip
    out = pd.DataFrame(rows, columns=SIZE_ERROR_COLUMNS)
    for column in ("history", "event_id", "line", "attempt", "size", "limit_value"):
        out[column] = pd.array(out[column].tolist(), dtype="Int64")
    return out


def _clean(value: Any) -> Any:
    if value is None or isinstance(value, (str, Mapping, list)):
        return value
    try:
        return None if pd.isna(value) else value
    except (TypeError, ValueError):
        return value


def _from_events(events: pd.DataFrame) -> list[dict[str, Any]]:
    picked = events[events["event_type"].isin(_HISTORY_TYPES)]
    started = events[events["event_type"] == "ActivityTaskStarted"]
    attempts = dict(zip(zip(started.get("source", pd.Series(index=started.index)),
                            started["event_id"], strict=True),
                        started["attempt"], strict=True))  # fmt: skip
    rows = []
    for event in picked.to_dict("records"):
        failure, cause = _clean(event.get("failure_message")), _clean(event.get("cause"))
        text = _event_text(event["event_type"], event.get("attributes"), failure, cause)
        parsed = parse_size_error(text)
        if parsed is None:
            continue
        link = _clean(event.get("started_event_id"))
        attempt = attempts.get((event.get("source"), int(link))) if link is not None else None
        rows.append({
            "found_in": "history", "source": _clean(event.get("source")),
            "history": _clean(event.get("history")), "event_id": int(event["event_id"]),
            "event_type": event["event_type"], "line": None, "ts": _clean(event.get("event_time")),
            "workflow_id": _clean(event.get("workflow_id")), "run_id": _clean(event.get("run_id")),
            "activity_type": _clean(event.get("activity_type")), "attempt": _clean(attempt),
            **parsed,
        })  # fmt: skip
    return rows


def _from_logs(logs: pd.DataFrame) -> list[dict[str, Any]]:
    from toolkit.logs.correlate import log_identifiers
    from toolkit.logs.detectors import haystack, rows_mentioning

    rows = []
    picked = logs.loc[rows_mentioning(logs, _NEEDLES)]
    for record in picked.to_dict("records"):
        fields = record.get("fields") if isinstance(record.get("fields"), Mapping) else {}
        text = haystack(record.get("message"), fields)
        parsed = parse_size_error(text)
        if parsed is None:
            continue
        stated = log_identifiers(text, fields)
        for key, column in (("size", "size"), ("limit", "limit_value"),
                            ("wf-history-size", "size"), ("wf-event-count", "size")):
            if parsed[column] is None and str(fields.get(key, "")).isdigit():
                parsed[column] = int(fields[key])  # sdk-core logs them as fields
        rows.append({
            "found_in": "log", "source": _clean(record.get("source")), "history": None,
            "event_id": None, "event_type": None, "line": _clean(record.get("line")),
            "ts": _clean(record.get("ts")), "workflow_id": stated.get("workflow_id"),
            "run_id": stated.get("run_id"), "activity_type": stated.get("activity_type"),
            "attempt": int(stated["attempt"]) if str(stated.get("attempt", "")).isdigit() else None,
            **parsed,
        })  # fmt: skip
    return rows
