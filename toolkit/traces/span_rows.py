"""What the spans of one run share (:class:`RunSpans`: its ids, the base of their attributes),
and the helpers that make their ids, attributes and span events (:mod:`toolkit.traces.spans`
states what each span is; :mod:`toolkit.traces.span_columns` makes them, :data:`SPAN_COLUMNS`
their table's columns)."""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pandas as pd

__all__ = ["SPAN_COLUMNS", "ModelAttributes", "RunSpans", "span_ids"]

SPAN_COLUMNS = [
    "source", "history", "run_id", "trace_id", "span_id", "parent_span_id", "name", "kind",
    "role", "event_id", "turn", "start", "end", "status", "status_message", "attributes",
    "events",
]  # fmt: skip

_CLOSE_STATUS = {
    "WorkflowExecutionCompleted": ("OK", "completed"),
    "WorkflowExecutionContinuedAsNew": ("OK", "continued_as_new"),
    "WorkflowExecutionFailed": ("ERROR", "failed"),
    "WorkflowExecutionTimedOut": ("ERROR", "timed_out"),
    "WorkflowExecutionTerminated": ("ERROR", "terminated"),
    "WorkflowExecutionCanceled": ("ERROR", "canceled"),
}
_TASK_FAILURES = ("WorkflowTaskFailed", "WorkflowTaskTimedOut")
_ACTIVITY_STATUS = {"completed": "OK", "failed": "ERROR", "timed_out": "ERROR",
                    "canceled": "ERROR"}  # fmt: skip
#: OpenInference span kinds (what Phoenix reads to draw a span).
_OPENINFERENCE = {"workflow": "CHAIN", "turn": "AGENT", "activity": "CHAIN", "model": "LLM",
                  "tool_call": "TOOL"}  # fmt: skip

#: Model-call attributes by (source, history, scheduled event id): GenAI and OpenInference keys.
ModelAttributes = Mapping[tuple[Any, int, int], Mapping[str, Any]]

#: The fields of an activity the spans read (:func:`toolkit.traces.activity_facts.activity_facts`;
#: ``input`` and ``result`` with content).
ACTIVITY_FIELDS = ("source", "history", "scheduled_event_id", "activity_id", "activity_type",
                   "task_queue", "scheduled_time", "started_time", "closed_time", "attempt",
                   "outcome", "queue_duration", "failure_message", "last_failure_message",
                   "input", "result")  # fmt: skip


def span_ids(namespace: str, run: str, event_id: int, kind: str) -> tuple[str, str]:
    """(trace id, span id) in hex for one span: a hash of where it comes from, never random.

    Examples
    --------
    >>> span_ids("default", "run-1", 1, "workflow") == span_ids("default", "run-1", 1, "workflow")
    True
    >>> len(span_ids("default", "run-1", 1, "workflow")[0])
    32
    """
    trace = hashlib.blake2b(f"{namespace}\x1f{run}".encode(), digest_size=16).hexdigest()
    return trace, _span_id(namespace, run, event_id, kind)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _time(value: Any) -> pd.Timestamp | None:
    if type(value) is pd.Timestamp:  # the common case, without pd.isna
        return value
    return None if value is None or pd.isna(value) else pd.Timestamp(value)


def _stamp(nanos: int | None) -> pd.Timestamp | None:
    """A time in nanoseconds since the epoch (or None) as the UTC timestamp it is."""
    return None if nanos is None else pd.Timestamp(nanos, tz="UTC")


_EPOCH_DAY = datetime.date(1970, 1, 1).toordinal()
_DAYS: dict[int, str] = {}  # days since the epoch -> "YYYY-MM-DD "
_MINUTES: dict[int, str] = {}  # minutes since the epoch -> "YYYY-MM-DD HH:MM:"


def _stamp_text(nanos: int) -> str:
    """``str(_stamp(nanos))`` without the timestamp: ``YYYY-MM-DD HH:MM:SS``, then the
    fraction as pandas writes it (nine digits where there are nanoseconds, else six where there
    are microseconds, else none), then ``+00:00``."""
    seconds, fraction = divmod(nanos, 1_000_000_000)
    minutes, second = divmod(seconds, 60)
    # "YYYY-MM-DD HH:MM:" once per minute (a run's activities share a few)
    minute = _MINUTES.get(minutes)
    if minute is None:
        days, rest = divmod(minutes, 1440)
        day = _DAYS.get(days)
        if day is None:
            day = datetime.date.fromordinal(_EPOCH_DAY + days).isoformat() + " "
            if len(_DAYS) < 65536:
                _DAYS[days] = day
        minute = f"{day}{rest // 60:02d}:{rest % 60:02d}:"
        if len(_MINUTES) < 65536:
            _MINUTES[minutes] = minute
    if fraction % 1000:
        return f"{minute}{second:02d}.{fraction:09d}+00:00"
    if fraction:
        return f"{minute}{second:02d}.{fraction // 1000:06d}+00:00"
    return f"{minute}{second:02d}+00:00"


def _seconds(nanos: int) -> float:
    """``pd.Timedelta(nanos).total_seconds()`` without the Timedelta: the whole seconds plus
    the rest's fraction (floored, as pandas splits a duration)."""
    whole, rest = divmod(nanos, 1_000_000_000)
    return whole + rest / 1e9


def _nanos(value: Any) -> int | None:
    """:func:`_time` of ``value`` in nanoseconds since the epoch (``Timestamp.value``)."""
    stamp = _time(value)
    return None if stamp is None else stamp.value


def _span_id(namespace: str, run: str, event_id: int, kind: str) -> str:
    """The span id of :func:`span_ids` alone (a run's trace id is computed once)."""
    key = f"{namespace}\x1f{run}\x1f{event_id}\x1f{kind}".encode()
    return hashlib.blake2b(key, digest_size=8).hexdigest()


def _content(value: Any) -> str:
    """A decoded payload value as JSON text (bytes and opaque payloads by their repr)."""
    return orjson.dumps(value, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()


def _set(attributes: dict[str, Any], key: str, value: Any) -> None:
    """Set an attribute unless the value is missing (OTel attributes have no null)."""
    if type(value) in (str, int, bool):  # the common case, without pandas
        attributes[key] = value
        return
    if value is None or (not isinstance(value, (str, list, dict)) and pd.isna(value)):
        return
    attributes[key] = value.item() if hasattr(value, "item") else value


def _set_text(attributes: dict[str, Any], key: str, value: Any) -> None:
    """``_set(attributes, key, _text(value))``, a plain string set without the checks."""
    if type(value) is str:
        attributes[key] = value
    elif isinstance(value, str):
        _set(attributes, key, value)


#: The keys of a run's base (:attr:`RunSpans.base`), then those every span sets after it: a
#: span's own attributes among these replace the base's (:meth:`RunSpans._attributes`).
_FIXED = frozenset({"temporalWorkflowID", "temporalRunID", "temporal.namespace",
                    "temporal.workflow.type", "session.id", "openinference.span.kind",
                    "temporal.event_id"})  # fmt: skip


def failure_events(failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run's span events: one ``exception`` per workflow-task failure or timeout (the events'
    rows, as dicts of their columns)."""
    return [
        {"time": _time(event["event_time"]), "name": "exception", "attributes": {
            "exception.type": _text(event.get("failure_type")) or _text(event.get("cause"))
            or str(event["event_type"]),
            "exception.message": _text(event.get("failure_message"))
            or _text(event.get("cause")) or str(event["event_type"]),
            "temporal.event_type": str(event["event_type"]),
            "temporal.event_id": int(event["event_id"]),
            **({"temporal.workflow_task.cause": event["cause"]}
               if _text(event.get("cause")) else {}),
        }}
        for event in failures
    ]  # fmt: skip


class RunSpans:
    """What the spans of one history share (its ids, the base of their attributes);
    :mod:`toolkit.traces.span_columns` makes its spans.

    Times are nanoseconds since the epoch (UTC, ``Timestamp.value``) or None, in what it takes
    and in the rows' ``start`` and ``end``; the span events' are timestamps, as in the table.
    """

    def __init__(self, head: Mapping[str, Any], source: Any, history: int,
                 namespace: str | None, first_time: int | None,
                 last_time: int | None, hashed: bool = True) -> None:  # fmt: skip
        """``hashed=False`` leaves :attr:`trace_id` and :attr:`root_id` None, for the caller
        to hash those of many runs at once (:func:`span_ids`' texts)."""
        self.source, self.history = source, history
        self.namespace = namespace if namespace is not None else (_text(head["namespace"]) or "")
        self.run_id = _text(head["run_id"])
        self.workflow_id = _text(head["workflow_id"])
        self.workflow_type = _text(head["workflow_type"]) or "workflow"
        self.key = self.run_id or self.workflow_id or f"{source}#{history}"
        self.first_time, self.last_time = first_time, last_time
        self.trace_id, self.root_id = (span_ids(self.namespace, self.key, 1, "workflow")
                                       if hashed else (None, None))  # fmt: skip
        self.base = {"temporalWorkflowID": self.workflow_id, "temporalRunID": self.run_id,
                     "temporal.namespace": self.namespace or None,
                     "temporal.workflow.type": self.workflow_type,
                     "session.id": self.workflow_id}  # fmt: skip
        self.base_set: dict[str, Any] = {}  # the base as every span carries it
        for key, value in self.base.items():
            if type(value) is str:  # _set's common case, without the call
                self.base_set[key] = value
            elif value is not None:
                _set(self.base_set, key, value)
        self.fixed = _FIXED  # {*self.base, "openinference.span.kind", "temporal.event_id"}
        # The span id's key up to the event id: f"{namespace}\x1f{run}\x1f"
        self.id_prefix = f"{self.namespace}\x1f{self.key}\x1f"

    @classmethod
    def many(cls, heads: Mapping[str, Sequence[Any]], runs: Sequence[tuple[Any, Any]],
             namespace: str | None, first_times: Sequence[int | None],
             last_times: Sequence[int | None]) -> list[RunSpans]:  # fmt: skip
        """``RunSpans(head, source, int(history), namespace, first_time, last_time,
        hashed=False)`` of each run, its head read off ``heads`` (``namespace``, ``run_id``,
        ``workflow_id``, ``workflow_type``: one value per run) and its key off ``runs``
        ((source, history) pairs): the same objects, made without a head dict or a call per
        run (``tests/test_activity_columns.py`` holds each attribute equal)."""
        made: list[RunSpans] = []
        new = cls.__new__
        for stated, run_id, workflow_id, workflow_type, (source, history), first, last in zip(
                heads["namespace"], heads["run_id"], heads["workflow_id"], heads["workflow_type"],
                runs, first_times, last_times, strict=True):  # fmt: skip
            run = new(cls)
            history = int(history)
            run.source, run.history = source, history
            # __init__'s steps, _text inlined: a value is kept where it is a str
            if namespace is None:
                run_namespace = (stated if isinstance(stated, str) else None) or ""
            else:
                run_namespace = namespace
            run.namespace = run_namespace
            run.run_id = run_id = run_id if isinstance(run_id, str) else None
            run.workflow_id = workflow_id = workflow_id if isinstance(workflow_id, str) else None
            run.workflow_type = workflow_type = (
                workflow_type if isinstance(workflow_type, str) else None) or "workflow"
            run.key = key = run_id or workflow_id or f"{source}#{history}"
            run.first_time, run.last_time = first, last
            run.trace_id = run.root_id = None
            shown = run_namespace or None
            run.base = base = {"temporalWorkflowID": workflow_id, "temporalRunID": run_id,
                               "temporal.namespace": shown, "temporal.workflow.type": workflow_type,
                               "session.id": workflow_id}  # fmt: skip
            if (type(workflow_id) is str and type(run_id) is str and type(shown) is str
                    and type(workflow_type) is str):  # fmt: skip
                run.base_set = base.copy()  # every value a plain str: each one set as it is
            else:
                base_set: dict[str, Any] = {}
                for name, value in base.items():
                    if type(value) is str:
                        base_set[name] = value
                    elif value is not None:
                        _set(base_set, name, value)
                run.base_set = base_set
            run.fixed = _FIXED
            run.id_prefix = f"{run_namespace}\x1f{key}\x1f"
            made.append(run)
        return made

    def _attributes(self, role: str, event_id: int,
                    attributes: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
        """The span's attributes: the base, its kind and event id, then its own."""
        if self.fixed.isdisjoint(attributes):  # the common case: the base as it is
            attrs = self.base_set.copy()
            attrs["openinference.span.kind"] = _OPENINFERENCE[role]
            _set(attrs, "temporal.event_id", event_id)
            for key, value in attributes.items():
                kind_of = type(value)
                if kind_of is str or kind_of is int or kind_of is bool:  # _set's common case
                    attrs[key] = value
                elif value is not None:
                    _set(attrs, key, value)
            return attrs
        # An attribute replaces a base one in its place (or drops it, when missing).
        attrs = {}
        for key, value in {**self.base, "openinference.span.kind": _OPENINFERENCE[role],
                           "temporal.event_id": event_id, **attributes}.items():  # fmt: skip
            _set(attrs, key, value)
        return attrs
