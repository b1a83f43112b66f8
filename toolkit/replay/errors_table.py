"""Every nondeterminism failure found in histories or worker logs, one row each.

In a history a nondeterminism failure is a ``WorkflowTaskFailed`` event with cause
``WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR`` (or a failure message in one of the known
shapes); in logs it is a line whose text holds one of those shapes. Both are parsed by the one
parser, :func:`toolkit.replay.messages.parse_nondeterminism`.

Examples
--------
>>> toolkit.nondeterminism_errors(toolkit.read_history("stuck-run.json"))   # doctest: +SKIP
>>> toolkit.nondeterminism_errors(toolkit.read_logs("worker.log"))           # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from toolkit.errors import ToolkitError
from toolkit.logs.correlate import log_identifiers
from toolkit.replay.messages import parse_nondeterminism

__all__ = ["NONDETERMINISM_COLUMNS", "nondeterminism_errors"]

NONDETERMINISTIC_CAUSE = "WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR"

NONDETERMINISM_COLUMNS = [
    "found_in",
    "source",
    "history",
    "failed_event_id",
    "line",
    "line_end",
    "ts",
    "workflow_id",
    "run_id",
    "sdk",
    "kind",
    "event_id",
    "event_type",
    "command_type",
    "expected",
    "actual",
    "check",
    "message",
]


def _clean(value: Any) -> Any:
    if value is None or isinstance(value, (str, Mapping, list)):
        return value
    return None if pd.isna(value) else value


def _parsed_fields(parsed: Mapping[str, Any] | None, text: str) -> dict[str, Any]:
    parsed = parsed or {}
    return {
        "sdk": parsed.get("sdk"),
        "kind": parsed.get("kind"),
        "event_id": parsed.get("event_id"),
        "event_type": parsed.get("event_type"),
        "command_type": parsed.get("command_type"),
        "expected": parsed.get("expected"),
        "actual": parsed.get("actual"),
        "check": parsed.get("check"),
        "message": parsed.get("message") or text,
    }


def _from_events(events: pd.DataFrame) -> list[dict[str, Any]]:
    failed = events[events["event_type"] == "WorkflowTaskFailed"]
    rows = []
    for event in failed.to_dict("records"):
        text = _clean(event.get("failure_message")) or ""
        parsed = parse_nondeterminism(text) if text else None
        if parsed is None and _clean(event.get("cause")) != NONDETERMINISTIC_CAUSE:
            continue
        row = {
            "found_in": "history",
            "source": _clean(event.get("source")),
            "history": _clean(event.get("history")),
            "failed_event_id": int(event["event_id"]),
            "line": None,
            "line_end": None,
            "ts": _clean(event.get("event_time")),
            "workflow_id": _clean(event.get("workflow_id")),
            "run_id": _clean(event.get("run_id")),
        }
        row.update(_parsed_fields(parsed, text))
        rows.append(row)
    return rows


#: How many following records without their own timestamp a message may be wrapped over.
_MAX_CONTINUATION = 6


def _record_text(record: Mapping[str, Any]) -> str:
    text = _clean(record.get("message")) or ""
    if parse_nondeterminism(text) is None:
        raw = _clean(record.get("raw")) or ""
        if raw and parse_nondeterminism(raw) is not None:
            return raw
    return text


def _continues(record: Mapping[str, Any]) -> bool:
    """A record with no timestamp of its own continues the text before it (pasted, wrapped)."""
    return _clean(record.get("ts")) is None


def _complete(parsed: Mapping[str, Any] | None) -> bool:
    # Java names the run only in the "Wrapped by:" section printed after the exception.
    return parsed is not None and (parsed["sdk"] != "java" or parsed.get("run_id") is not None)


def _last_line(record: Mapping[str, Any]) -> Any:
    line, lines = _clean(record.get("line")), _clean(record.get("lines"))
    if line is None:
        return None
    return int(line) + max(int(lines or 1), 1) - 1


def _from_logs(logs: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    records = logs.to_dict("records")
    index = 0
    while index < len(records):
        record = records[index]
        text = _record_text(record)
        parsed = parse_nondeterminism(text) if text else None
        end = index
        if not _complete(parsed) and text and _mentions_nondeterminism(text):
            # Pasted or wrapped text: join the records that continue this one, line by line,
            # until the message is whole; the row keeps the span of lines it was read from.
            joined = [text]
            for after in range(index + 1, min(index + 1 + _MAX_CONTINUATION, len(records))):
                following = _record_text(records[after])
                if not _continues(records[after]) or _mentions_nondeterminism(following):
                    break
                joined.append(following)
                candidate = parse_nondeterminism("\n".join(joined))
                if candidate is not None and (parsed is None or _complete(candidate)):
                    parsed, text, end = candidate, "\n".join(joined), after
                    if _complete(parsed):
                        break
        index = end + 1
        if parsed is None:
            continue
        # read_logs moves key=value pairs such as sdk-core's ``run_id=`` out of the message
        # into ``fields``; the ids stated there belong to this failure.
        stated = log_identifiers(text, _clean(record.get("fields")))
        row = {
            "found_in": "log",
            "source": _clean(record.get("source")),
            "history": None,
            "failed_event_id": None,
            "line": _clean(record.get("line")),
            "line_end": _last_line(records[end]),
            "ts": _clean(record.get("ts")),
            "workflow_id": _clean(record.get("workflow_id"))
            or parsed.get("workflow_id")
            or stated.get("workflow_id"),
            "run_id": parsed.get("run_id") or _clean(record.get("run_id")) or stated.get("run_id"),
        }
        row.update(_parsed_fields(parsed, text))
        rows.append(row)
    return rows


def _mentions_nondeterminism(text: str) -> bool:
    """Whether ``text`` holds the head of an SDK's message (not merely the word)."""
    return any(head in text for head in _MESSAGE_HEADS)


_MESSAGE_HEADS = ("TMPRL1100", "nondeterministic workflow:", "NonDeterministicException")


def nondeterminism_errors(events_or_logs: Any) -> pd.DataFrame:
    """One row per nondeterminism failure in an events frame, a logs frame, or a list of them.

    Parameters
    ----------
    events_or_logs
        An events frame (:func:`toolkit.read_history`; ``WorkflowTaskFailed`` events with the
        nondeterministic cause or a recognised message), a logs frame (:func:`toolkit.read_logs`;
        columns ``message``/``raw``/``line``/``ts``), a history path, or a list of these.

    Returns
    -------
    pandas.DataFrame
        Columns: ``found_in`` (``history``/``log``), ``source``, ``history``,
        ``failed_event_id`` (the ``WorkflowTaskFailed`` event), ``line`` and ``line_end`` (the
        span of log lines the message was read from: pasted text wraps it over several), ``ts``,
        ``workflow_id``, ``run_id`` (from the history, or from the log text when it carries one),
        then the parser's fields: ``sdk``, ``kind``, ``event_id`` and ``event_type`` (the history
        event the SDK names), ``command_type``, ``expected`` (what history holds), ``actual``
        (what the code produced), ``check``, ``message``. A failure whose cause says
        nondeterministic but whose text is in no known shape keeps a row with empty parsed fields.

    Raises
    ------
    toolkit.errors.ToolkitError
        When a frame is neither an events frame nor a logs frame.
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
            rows.extend(_rows_of(nondeterminism_errors(frame)))
        elif "event_type" in frame.columns:
            rows.extend(_from_events(frame))
        elif "message" in frame.columns:
            rows.extend(_from_logs(frame))
        else:
            raise ToolkitError(
                "nondeterminism_errors: a frame with columns "
                f"{list(frame.columns)[:8]} is neither an events frame (event_type) nor a logs "
                "frame (message)"
            )
    out = pd.DataFrame(rows, columns=NONDETERMINISM_COLUMNS)
    for column in ("failed_event_id", "event_id", "history", "line", "line_end"):
        out[column] = pd.array(out[column].tolist(), dtype="Int64")
    return out


def _rows_of(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dict("records")
