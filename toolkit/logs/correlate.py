"""``correlate``: log records joined to the history events they are about.

A worker log and a workflow history tell one story from two sides. A record is tied to events by
the identifiers it states (workflow id, run id, activity id and attempt, found in its structured
``fields``, one level of nested dicts included, or in its message text), most specific first;
records stating none are tied by time to the nearest event within a window. Every log record
appears in the result (``how="left"``), matched or not.

The identifier spellings are those of the SDKs' loggers: Go (``WorkflowID wf RunID r`` and
``WorkflowID=wf``), Python (``{'workflow_id': 'wf', 'workflow_run_id': 'r'}`` appended to the
message by ``temporalio``'s adapters, ``temporal_activity`` in ``extra``), core's tracing
(``run_id=r``) and JSON loggers (``workflowId``, ``runId``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from toolkit.errors import HistoryFormatError, LogFormatError, ToolkitError
from toolkit.logs.detectors import rows_mentioning

__all__ = ["CORRELATE_COLUMNS", "correlate", "log_identifiers"]

# Canonical identifier -> spellings, in order of preference.
_SPELLINGS: dict[str, tuple[str, ...]] = {
    # The server's own log tags are wf-id and wf-run-id (temporalio/temporal common/log/tag).
    "workflow_id": ("WorkflowID", "workflow_id", "workflowId", "WorkflowId", "workflowID",
                    "wf-id"),
    "run_id": ("RunID", "run_id", "runId", "RunId", "workflow_run_id", "workflowRunId",
               "wf-run-id"),
    "activity_id": ("ActivityID", "activity_id", "activityId", "ActivityId"),
    "attempt": ("Attempt", "attempt"),
}
_LOOKUP = {spelling: key for key, names in _SPELLINGS.items() for spelling in names}
_NAMES = "|".join(sorted(_LOOKUP, key=len, reverse=True))
_VALUE = r"(?P<v>[^\s\"',;)}\]]+)"
# key=value / key: value (logfmt, slog, core tracing), 'key': 'value' (Python dict repr, JSON
# text), and the Go SDK default logger's "Key Value" pairs (only its CamelCase keys).
_TEXT_SHAPES = (
    re.compile(rf"(?<![\w.])(?P<k>{_NAMES})\s*[=:]\s*[\"']?{_VALUE}"),
    re.compile(rf"[\"'](?P<k>{_NAMES})[\"']\s*:\s*[\"']?{_VALUE}"),
    re.compile(rf"(?<![\w.])(?P<k>WorkflowID|RunID|ActivityID|Attempt) {_VALUE}"),
)
_NEEDLES = ("orkflow", "un_id", "unId", "unID", "ctivity", "ttempt", "wf-id", "wf-run-id")

_LOG_COLUMNS = ("line", "ts", "level", "message", "fields", "raw")
_EVENT_COLUMNS = ("run_id", "workflow_id", "event_id", "event_time", "event_type", "activity_id",
                  "attempt")
_OUT_EVENT = ["history", "workflow_id", "run_id", "event_id", "event_time", "event_type",
              "activity_id", "activity_type", "attempt"]

#: Column order of the result.
CORRELATE_COLUMNS = ["line", "ts", "level", "message", "log_workflow_id", "log_run_id",
                     "log_activity_id", "log_attempt", "match", "delta", *_OUT_EVENT]

MatchKind = Literal["activity_attempt", "activity", "run", "workflow", "time"]


def _take(key: str, value: Any, found: dict[str, str]) -> None:
    canonical = _LOOKUP.get(key)
    if (canonical and canonical not in found and value not in (None, "")
            and not isinstance(value, Mapping | list)):
        found[canonical] = str(value)


def _from_mapping(fields: Mapping[str, Any], found: dict[str, str]) -> None:
    for key, value in fields.items():
        _take(key, value, found)
    for value in fields.values():  # one level down: temporal_activity, temporal_workflow, ...
        if isinstance(value, Mapping):
            for key, inner in value.items():
                _take(key, inner, found)


def log_identifiers(message: Any, fields: Any) -> dict[str, str]:
    """Workflow id, run id, activity id and attempt a log record states.

    Parameters
    ----------
    message
        The record's message (``None`` allowed).
    fields
        The record's structured attributes (a dict; anything else is ignored).

    Returns
    -------
    dict
        Subset of ``workflow_id``, ``run_id``, ``activity_id``, ``attempt`` (values as text).
        Structured fields win over the message text.

    Examples
    --------
    >>> log_identifiers("Failing workflow task run_id=abc failure=x", {})
    {'run_id': 'abc'}
    >>> log_identifiers("done ({'activity_id': '4', 'attempt': 2})", {})
    {'activity_id': '4', 'attempt': '2'}
    """
    found: dict[str, str] = {}
    if isinstance(fields, Mapping):
        _from_mapping(fields, found)
    if isinstance(message, str) and any(n in message for n in _NEEDLES):
        for shape in _TEXT_SHAPES:
            for m in shape.finditer(message):
                found.setdefault(_LOOKUP[m.group("k")], m.group("v"))
    return found


def _check(logs: pd.DataFrame, events: pd.DataFrame) -> None:
    missing = [c for c in _LOG_COLUMNS if c not in logs.columns]
    if missing:
        raise LogFormatError("<logs frame>", f"missing columns {missing}",
                             expected="a frame from toolkit.read_logs")
    missing = [c for c in _EVENT_COLUMNS if c not in events.columns]
    if missing:
        raise HistoryFormatError("<events frame>", f"missing columns {missing}",
                                 expected="a frame from toolkit.read_history")


def _identifiers(logs: pd.DataFrame) -> pd.DataFrame:
    """One row per log record: the identifiers it states (None where it states none)."""
    # Every spelling holds one of the needles, and a structured key is spelled out in the raw
    # line.
    candidates = rows_mentioning(logs, _NEEDLES, unknown_spans=True)
    subset = logs.loc[candidates, ["message", "fields"]]
    found = [log_identifiers(message, fields)
             for message, fields in zip(subset["message"], subset["fields"], strict=True)]
    ids = pd.DataFrame(found, index=subset.index, columns=list(_SPELLINGS), dtype=object)
    ids = ids.reindex(logs.index)
    ids = ids.astype(object).where(ids.notna(), None)
    ids["attempt"] = pd.to_numeric(ids["attempt"], errors="coerce").astype("Int64")
    return ids


def _nearest(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per log record (``_log``), the candidate event(s) nearest in time (ties kept).

    Records without a timestamp keep the scope's first event.
    """
    distance = (pairs["ts"] - pairs["event_time"]).abs()
    pairs = pairs.assign(_distance=distance)
    timed = pairs[pairs["_distance"].notna()]
    best = timed.groupby("_log")["_distance"].transform("min")
    kept = timed[timed["_distance"] == best]
    untimed_logs = pairs.loc[~pairs["_log"].isin(kept["_log"]), "_log"].unique()
    first = (pairs[pairs["_log"].isin(untimed_logs)]
             .sort_values(["_log", "history", "event_id"]).groupby("_log").head(1))
    return pd.concat([kept, first]).drop(columns="_distance")


def _keyed(ids: pd.DataFrame, logs: pd.DataFrame, events: pd.DataFrame,
           done: set[Any]) -> list[pd.DataFrame]:
    """Matches by stated identifiers, most specific scope first."""
    left = ids.join(logs[["ts"]]).rename(columns={k: f"log_{k}" for k in _SPELLINGS})
    left["_log"] = left.index
    ev = events[_OUT_EVENT].copy()
    out: list[pd.DataFrame] = []

    def merge(kind: str, log_keys: list[str], event_keys: list[str], event_rows: pd.DataFrame
              ) -> pd.DataFrame:
        rows = left[~left["_log"].isin(done)].dropna(subset=log_keys)
        if rows.empty or event_rows.empty:
            return rows.iloc[0:0]
        typed = rows.astype(dict.fromkeys(log_keys, object))
        return typed.merge(event_rows.astype(dict.fromkeys(event_keys, object)),
                           left_on=log_keys, right_on=event_keys, how="inner").assign(match=kind)

    activity_rows = ev[ev["activity_id"].notna()]
    for scope in ("log_run_id", "log_workflow_id"):
        pairs = merge("activity", [scope, "log_activity_id"],
                      [scope.removeprefix("log_"), "activity_id"], activity_rows)
        if pairs.empty:
            continue
        same = pairs["attempt"].notna() & (pairs["attempt"] == pairs["log_attempt"]).fillna(False)
        exact = pairs[same].assign(match="activity_attempt")
        rest = pairs[~pairs["_log"].isin(exact["_log"])]
        found = pd.concat([exact, _nearest(rest)])
        done.update(found["_log"])
        out.append(found)
    for scope, kind in (("log_run_id", "run"), ("log_workflow_id", "workflow")):
        pairs = merge(kind, [scope], [scope.removeprefix("log_")], ev)
        if not pairs.empty:
            found = _nearest(pairs)
            done.update(found["_log"])
            out.append(found)
    return out


def _by_time(ids: pd.DataFrame, logs: pd.DataFrame, events: pd.DataFrame, done: set[Any],
             window: pd.Timedelta) -> pd.DataFrame | None:
    """The nearest event within ``window`` for records not matched by identifiers."""
    left = ids.join(logs[["ts"]]).rename(columns={k: f"log_{k}" for k in _SPELLINGS})
    left["_log"] = left.index
    left = left[~left["_log"].isin(done) & left["ts"].notna()].sort_values("ts")
    right = events[_OUT_EVENT].dropna(subset=["event_time"]).sort_values("event_time")
    if left.empty or right.empty:
        return None
    joined = pd.merge_asof(left, right, left_on="ts", right_on="event_time",
                           direction="nearest", tolerance=window)
    joined = joined[joined["event_id"].notna()].assign(match="time")
    done.update(joined["_log"])
    return joined


def correlate(
    logs: pd.DataFrame,
    events: pd.DataFrame,
    *,
    window: str | pd.Timedelta = "5s",
    how: Literal["left", "inner"] = "left",
    by_time: bool = True,
) -> pd.DataFrame:
    """Join log records to the history events they are about.

    Parameters
    ----------
    logs
        A frame from :func:`toolkit.read_logs`.
    events
        A frame from :func:`toolkit.read_history` (one or several histories, concatenated).
    window
        Largest distance between a record's ``ts`` and an event's ``event_time`` for the
        time fallback (anything ``pandas.Timedelta`` accepts).
    how
        ``left`` keeps every log record (unmatched ones with ``match`` None); ``inner`` keeps
        matched records only.
    by_time
        Use the time fallback for records that state no identifier an event carries.

    Returns
    -------
    pandas.DataFrame
        One row per (log record, matched event), in log order: the record's ``line``, ``ts``,
        ``level``, ``message``; the identifiers it states (``log_workflow_id``, ``log_run_id``,
        ``log_activity_id``, ``log_attempt``); ``match`` (how it matched, most specific first):
        ``activity_attempt`` (same activity and attempt as an event, typically
        ``ActivityTaskStarted``), ``activity`` (same activity in the same run or workflow; an
        attempt the history does not record, since only the last attempt's start is kept: the
        activity's event nearest in time), ``run`` / ``workflow`` (the run's event nearest in
        time), ``time`` (no identifiers matched: the nearest event within ``window``) or None;
        ``delta`` (``ts - event_time``); then the event's ``history``, ``workflow_id``,
        ``run_id``, ``event_id``, ``event_time``, ``event_type``, ``activity_id``,
        ``activity_type``, ``attempt``. Ties in time keep every tied event.

    Raises
    ------
    LogFormatError
        ``logs`` lacks the columns of a logs frame.
    HistoryFormatError
        ``events`` lacks the columns of an events frame.
    ToolkitError
        ``window`` is not a duration.

    Examples
    --------
    >>> rows = correlate(tk.read_logs("worker.log"), tk.read_history("run.json"))  # doctest: +SKIP
    >>> rows.groupby("match", dropna=False).size()                                 # doctest: +SKIP
    """
    _check(logs, events)
    if how not in ("left", "inner"):
        raise ToolkitError(f"correlate: how={how!r}; expected 'left' or 'inner'")
    try:
        tolerance = pd.Timedelta(window)
    except (TypeError, ValueError) as error:
        raise ToolkitError(f"correlate: window {window!r} is not a duration ({error}); "
                           "expected e.g. '5s' or a pandas.Timedelta") from None
    if pd.isna(tolerance) or tolerance < pd.Timedelta(0):
        raise ToolkitError(f"correlate: window {window!r} must be a non-negative duration")
    events = events.copy()
    for column in _OUT_EVENT:
        if column not in events.columns:
            events[column] = None
    events["attempt"] = events["attempt"].astype("Int64")
    logs = logs.reset_index(drop=True)
    ids = _identifiers(logs)
    done: set[Any] = set()
    parts = _keyed(ids, logs, events, done)
    if by_time:
        timed = _by_time(ids, logs, events, done, tolerance)
        if timed is not None:
            parts.append(timed)
    parts = [p for p in parts if not p.empty]
    matched = (pd.concat(parts, ignore_index=True) if parts
               else pd.DataFrame(columns=["_log", "match", *_OUT_EVENT]))
    matched = matched[["_log", "match", *_OUT_EVENT]]
    if how == "left":
        unmatched = pd.DataFrame({"_log": [i for i in logs.index if i not in done]})
        matched = pd.concat([matched, unmatched], ignore_index=True)
    base = ids.rename(columns={k: f"log_{k}" for k in _SPELLINGS})
    base = logs[["line", "ts", "level", "message"]].join(base)
    result = base.join(matched.set_index("_log"), how="inner")
    result = result.reset_index(names="_log").sort_values(
        ["_log", "history", "event_id"], kind="stable", na_position="last")
    result["delta"] = result["ts"] - pd.to_datetime(result["event_time"], utc=True)
    result = result[CORRELATE_COLUMNS].reset_index(drop=True)
    return _typed(result)


def _typed(result: pd.DataFrame) -> pd.DataFrame:
    result["event_time"] = pd.to_datetime(result["event_time"], utc=True).astype(
        "datetime64[ns, UTC]")
    result["delta"] = result["delta"].astype("timedelta64[ns]")
    for column in ("history", "event_id", "attempt", "log_attempt", "line"):
        result[column] = pd.to_numeric(result[column]).astype("Int64")
    result["line"] = result["line"].astype(np.int64)
    result["match"] = result["match"].astype(object).where(result["match"].notna(), None)
    return result
