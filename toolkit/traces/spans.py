"""Spans of agent runs, read from their workflow histories: one table row per span.

One trace per workflow run; inside it (names as temporalio's OpenTelemetry interceptor and the
OpenTelemetry GenAI semantic conventions spell them):

==============================  ====================================================================
span                            what it covers
==============================  ====================================================================
``RunWorkflow:<type>``          the run, from its first event to its close (or its last event while
                                open); workflow-task failures and timeouts are its span events
                                (``exception``)
``invoke_agent <agent>``        one turn: from the user message (start, signal, update) to the end
                                of its last activity; a turn no workflow task answered is an error
``RunActivity:<type>``          one activity, the attempt the history records (started to closed;
                                earlier failed attempts are a ``temporal.activity.retried`` event)
``chat <model>``                inside a model activity: the model call, with its token counts
``execute_tool <tool>``         inside a tool-call activity
==============================  ====================================================================

Ids are derived, never drawn: the trace id from (namespace, run id), a span id from (namespace,
run id, event id, kind), so that the same history exported twice gives the same spans and a
receiver replaces (or ignores) them rather than counting them twice. Replays leave no trace in a
history and an activity's retries share one scheduled event, so no work is counted twice.

Columns of :func:`trace_spans`
------------------------------
==================  ===========================  ===============================================
column              dtype                        meaning
==================  ===========================  ===============================================
``source``          object                       the history's source
``history``         int64                        index of the history in the source
``run_id``          object                       the run
``trace_id``        object                       32 hex digits
``span_id``         object                       16 hex digits
``parent_span_id``  object                       16 hex digits, None for the run's span
``name``            object                       span name (table above)
``kind``            object                       ``SERVER``, ``CLIENT`` or ``INTERNAL``
``role``            object                       ``workflow``, ``turn``, ``activity``, ``model``,
                                                 ``tool_call``
``event_id``        int64                        the history event the span comes from
``turn``            Int64                        the turn (None for the run's span)
``start``, ``end``  datetime64[ns, UTC]          span times
``status``          object                       ``OK``, ``ERROR`` or ``UNSET``
``status_message``  object                       why an ``ERROR``
``attributes``      object (dict)                OTel attributes (str, int, float, bool)
``events``          object (list)                span events: dicts ``time``, ``name``,
                                                 ``attributes``
==================  ===========================  ===============================================
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson
import pandas as pd

from toolkit.agents.activity_turns import ActivityTurns, activity_turns, column_at
from toolkit.agents.roles import Roles
from toolkit.gc_pause import paused_gc
from toolkit.traces.activity_facts import activity_facts

__all__ = ["SPAN_COLUMNS", "span_ids", "trace_spans"]

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


def trace_spans(
    events: pd.DataFrame,
    *,
    namespace: str | None = None,
    roles: str | Roles = "auto",
    content: bool = False,
    model_attributes: ModelAttributes | None = None,
) -> pd.DataFrame:
    """One row per span of every run in ``events`` (see the module docstring for the columns).

    Parameters
    ----------
    events
        An events frame (one or many histories).
    namespace
        The namespace in the ids and attributes; by default the frame's ``namespace`` column,
        else ``""``. Export a history under the same namespace every time to keep its ids.
    roles
        As in :func:`toolkit.agent_steps`; a history no framework is recognised in still gets
        its run and activity spans, without turns or GenAI spans.
    content
        Put the payloads' decoded values into ``input.value`` / ``output.value`` (off: sizes
        only, the contents stay in the history).
    model_attributes
        Attributes of each model call (``gen_ai.*``, ``llm.*``) keyed by (source, history,
        scheduled event id): :func:`toolkit.agents.tokens.genai_attributes`. Its
        ``_requested_tools`` (the names the answer asks for) name the tool calls that follow.
    """
    events = with_run_columns(events)
    with paused_gc():
        return spans_of(events, activity_turns(events, roles), namespace=namespace,
                        content=content, model_attributes=model_attributes)  # fmt: skip


def with_run_columns(events: pd.DataFrame) -> pd.DataFrame:
    """``events`` with a ``source`` (None) and a ``history`` (0) column where it has none."""
    columns = set(events.columns)
    if "source" not in columns:
        events = events.assign(source=None)
    if "history" not in columns:
        events = events.assign(history=0)
    return events


def spans_of(
    events: pd.DataFrame,
    found: ActivityTurns,
    *,
    namespace: str | None = None,
    content: bool = False,
    model_attributes: ModelAttributes | None = None,
) -> pd.DataFrame:
    """:func:`trace_spans` of a frame with ``source`` and ``history`` columns
    (:func:`with_run_columns`) whose activity turns are ``found`` already (the token ledger
    needs them too: :func:`toolkit.to_otel` finds them once)."""
    facts = _RunFacts(events, found)
    # A source with a run no framework is recognised in gets run and activity spans only.
    unrecognised = {_key(source) for source, _ in found.errors}
    turn_of = facts.turn_of(unrecognised)
    acts = facts.activities(content)
    models = model_attributes or {}
    rows: list[dict[str, Any]] = []
    for code, (source, history) in enumerate(found.runs):
        run = _Run(facts.head(code), source, int(history), namespace,
                   facts.first_time[code], facts.last_time[code])  # fmt: skip
        rows.append(run.root(facts.last(code), facts.failures.get(code, [])))
        mine, acts_of = turn_of.get(code, {}), acts.get(code, [])
        starts = [] if _key(source) in unrecognised else found.turns.get((source, history), [])
        rows.extend(run.turns(starts, acts_of, mine, models, facts.times, code))
        for act in acts_of:
            rows.extend(run.activity(act, mine, models, content))
    # object, not pandas' string dtype: a missing parent stays None (NaN would read as an id)
    out = pd.DataFrame(rows, columns=SPAN_COLUMNS, dtype=object)
    out["history"] = out["history"].astype("int64")
    out["event_id"] = out["event_id"].astype("int64")
    out["turn"] = out["turn"].astype("Int64")
    for column in ("start", "end"):
        out[column] = pd.to_datetime(out[column], utc=True)
    return out


def _key(source: Any) -> Any:
    """A source as a dictionary key (a missing one is None, whichever NA the frame holds)."""
    return None if source is None or (isinstance(source, float) and pd.isna(source)) else source


class _RunFacts:
    """What the spans of every run need from the events frame, read column-wise once for all
    runs (run codes as in :attr:`ActivityTurns.runs`): no pandas operation per run."""

    _HEAD = ("namespace", "run_id", "workflow_id", "workflow_type")
    _FAILURE = ("event_time", "event_type", "event_id", "failure_type", "failure_message",
                "cause")  # fmt: skip
    _ACTIVITY = ("source", "history", "scheduled_event_id", "scheduled_time", "started_time",
                 "closed_time", "outcome", "failure_message", "attempt", "last_failure_message",
                 "queue_duration", "activity_id", "activity_type", "task_queue")  # fmt: skip

    def __init__(self, events: pd.DataFrame, found: ActivityTurns) -> None:
        self.events, self.found = events, found
        run = found.positions["rows"]
        count = len(events)
        # A run's first and last events in frame order (the row-wise walk's iloc[0], iloc[-1]).
        self.first_row = np.unique(run, return_index=True)[1]
        self.last_row = count - 1 - np.unique(run[::-1], return_index=True)[1]
        self.heads = {name: column_at(events, name, self.first_row) for name in self._HEAD}
        self.lasts = {name: column_at(events, name, self.last_row)
                      for name in ("event_type", "failure_message")}  # fmt: skip
        times = events["event_time"]
        grouped = times.groupby(run, sort=True)
        self.first_time = [_time(t) for t in grouped.min().tolist()]
        self.last_time = [_time(t) for t in grouped.max().tolist()]
        event_type = events["event_type"].to_numpy(dtype=object)
        failed = np.flatnonzero(np.isin(event_type, _TASK_FAILURES))
        wanted = [c for c in self._FAILURE if c in events.columns]
        self.failures: dict[int, list[dict[str, Any]]] = {}
        for code, record in zip(run[failed].tolist(),
                                events.iloc[failed][wanted].to_dict("records"),
                                strict=True):  # fmt: skip
            self.failures.setdefault(code, []).append(record)
        # The times of the turns' user messages, by (run, event id).
        rows = np.array([r for m in found.positions["messages"].values() for r in m], dtype=int)
        picked = times.iloc[rows].tolist() if len(rows) else []
        self.times = dict(zip(
            zip(run[rows].tolist(), events["event_id"].to_numpy()[rows].tolist(), strict=True),
            picked, strict=True))  # fmt: skip

    def head(self, code: int) -> dict[str, Any]:
        """The run's first event: its namespace, run id, workflow id and type."""
        return {name: values[code] for name, values in self.heads.items()}

    def last(self, code: int) -> dict[str, Any]:
        """The run's last event: its type and failure message."""
        return {name: values[code] for name, values in self.lasts.items()}

    def turn_of(self, unrecognised: set[Any]) -> dict[int, dict[int, tuple[int, str]]]:
        """Per run (of a recognised source): scheduled event id -> (turn, role)."""
        spans, out = self.found.spans, {}
        for code, source, event_id, turn, role in zip(
            self.found.positions["run"].tolist(), spans["source"].tolist(),
            spans["event_id"].tolist(), spans["turn"].tolist(), spans["role"].tolist(),
            strict=True,
        ):  # fmt: skip
            if _key(source) not in unrecognised:
                out.setdefault(code, {})[int(event_id)] = (int(turn), str(role))
        return out

    def activities(self, content: bool) -> dict[int, list[dict[str, Any]]]:
        """Per run: its activities (:func:`toolkit.activities` records) by scheduled event id."""
        # Payloads stay undecoded cells unless their contents go into the spans.
        facts = activity_facts(self.events, payloads=content)
        names = list(facts)
        code_of = {(_key(s), int(h)): code for code, (s, h) in enumerate(self.found.runs)}
        out: dict[int, list[dict[str, Any]]] = {}
        for values in zip(*facts.values(), strict=True):
            act = dict(zip(names, values, strict=True))
            code = code_of.get((_key(act["source"]), int(act["history"])))
            if code is not None:
                out.setdefault(code, []).append(act)
        return out


class _Run:
    """The spans of one history."""

    def __init__(self, head: Mapping[str, Any], source: Any, history: int,
                 namespace: str | None, first_time: pd.Timestamp | None,
                 last_time: pd.Timestamp | None) -> None:  # fmt: skip
        self.source, self.history = source, history
        self.namespace = namespace if namespace is not None else (_text(head["namespace"]) or "")
        self.run_id = _text(head["run_id"])
        self.workflow_id = _text(head["workflow_id"])
        self.workflow_type = _text(head["workflow_type"]) or "workflow"
        self.key = self.run_id or self.workflow_id or f"{source}#{history}"
        self.first_time, self.last_time = first_time, last_time
        self.trace_id, self.root_id = span_ids(self.namespace, self.key, 1, "workflow")
        self.pending_tools: list[str] = []  # requested by the last model call, not yet run
        self.base = {"temporalWorkflowID": self.workflow_id, "temporalRunID": self.run_id,
                     "temporal.namespace": self.namespace or None,
                     "temporal.workflow.type": self.workflow_type,
                     "session.id": self.workflow_id}  # fmt: skip
        self.base_set: dict[str, Any] = {}  # the base as every span carries it
        for key, value in self.base.items():
            _set(self.base_set, key, value)
        self.fixed = {*self.base, "openinference.span.kind", "temporal.event_id"}

    def _row(self, span_id: str, parent: str | None, name: str, kind: str, role: str,
             event_id: int, turn: int | None, start: Any, end: Any, status: str,
             message: str | None, attributes: Mapping[str, Any],
             events: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
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
        else:  # an attribute replaces a base one in its place (or drops it, when missing)
            attrs = {}
            for key, value in {**self.base, "openinference.span.kind": _OPENINFERENCE[role],
                               "temporal.event_id": event_id, **attributes}.items():  # fmt: skip
                _set(attrs, key, value)
        start = _time(start) or self.first_time
        end = _time(end) or self.last_time or start
        return {
            "source": self.source, "history": self.history, "run_id": self.run_id,
            "trace_id": self.trace_id, "span_id": span_id, "parent_span_id": parent,
            "name": name, "kind": kind, "role": role, "event_id": event_id, "turn": turn,
            "start": start, "end": max(end, start) if start is not None else end,
            "status": status, "status_message": message, "attributes": attrs,
            "events": events or [],
        }  # fmt: skip

    def root(self, last: Mapping[str, Any], failures: list[dict[str, Any]]) -> dict[str, Any]:
        """The run's span: its close (the ``last`` event), its workflow-task ``failures``."""
        status, word = _CLOSE_STATUS.get(str(last["event_type"]), ("UNSET", "running"))
        message = _text(last.get("failure_message")) if status == "ERROR" else None
        span_events = [
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
        attributes = {"temporal.workflow.status": word,
                      "temporal.workflow.task_failures": len(span_events)}  # fmt: skip
        return self._row(self.root_id, None, f"RunWorkflow:{self.workflow_type}", "SERVER",
                         "workflow", 1, None, self.first_time, self.last_time, status, message,
                         attributes, span_events)  # fmt: skip

    def turns(self, starts: list[tuple[int, str, bool, str | None]],
              acts: list[dict[str, Any]], turn_of: Mapping[int, tuple[int, str]],
              models: ModelAttributes, times: Mapping[tuple[int, int], Any],
              code: int) -> list[dict[str, Any]]:  # fmt: skip
        """One ``invoke_agent`` span per turn that has activities or got no answer (``times``:
        the user messages' by (run code, event id))."""
        ends: dict[int, Any] = {}
        agents: dict[int, str] = {}
        for act in acts:
            event_id = int(act["scheduled_event_id"])
            turn = turn_of.get(event_id, (0, ""))[0]
            candidates = [t for t in (_time(act["scheduled_time"]), _time(act["started_time"]),
                                      _time(act["closed_time"])) if t]  # fmt: skip
            if candidates:
                ends[turn] = max([ends[turn], *candidates] if turn in ends else candidates)
            if turn not in agents:
                agent = models.get((self.source, self.history, event_id), {}).get(
                    "gen_ai.agent.name")  # fmt: skip
                if agent:
                    agents[turn] = agent
        rows = []
        for number, (event_id, trigger, answered, failure) in enumerate(starts, 1):
            if number not in ends and answered:
                continue  # a control message (``finish``) that started no work is no turn
            agent = agents.get(number) or self.workflow_type
            span_id = _span_id(self.namespace, self.key, event_id, "turn")
            status, message = (
                ("UNSET", None) if answered else ("ERROR", failure or "no workflow task answered")
            )
            attributes = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "temporal.turn": number,
                "temporal.turn.trigger": trigger,
            }
            start = _time(times.get((code, event_id)))
            rows.append(self._row(span_id, self.root_id, f"invoke_agent {agent}", "INTERNAL",
                                  "turn", event_id, number, start, ends.get(number, start),
                                  status, message, attributes))  # fmt: skip
        self.turn_spans = {row["turn"]: row["span_id"] for row in rows}
        return rows

    def activity(self, act: Mapping[str, Any], turn_of: Mapping[int, tuple[int, str]],
                 models: ModelAttributes, content: bool) -> list[dict[str, Any]]:  # fmt: skip
        """The ``RunActivity`` span of one activity, and its GenAI span if it has one."""
        event_id = int(act["scheduled_event_id"])
        turn, role = turn_of.get(event_id, (0, "other"))
        parent = self.turn_spans.get(turn, self.root_id)
        outcome = act.get("outcome")
        status = _ACTIVITY_STATUS.get(outcome, "UNSET") if isinstance(outcome, str) else "UNSET"
        message = _text(act.get("failure_message")) if status == "ERROR" else None
        start = _time(act.get("started_time")) or _time(act.get("scheduled_time"))
        end = _time(act.get("closed_time")) or self.last_time
        attempt = act.get("attempt")
        attempt = int(attempt) if attempt is not None and not pd.isna(attempt) else None
        span_events = []
        if attempt and attempt > 1:
            span_events.append({"time": start, "name": "temporal.activity.retried", "attributes": {
                "temporal.activity.previous_attempts": attempt - 1,
                **({"exception.message": act["last_failure_message"]}
                   if _text(act.get("last_failure_message")) else {})}})  # fmt: skip
        queue = act.get("queue_duration")
        attributes = {
            "temporalActivityID": _text(act.get("activity_id")),
            "temporal.activity.type": _text(act.get("activity_type")),
            "temporal.activity.attempt": attempt,
            "temporal.activity.outcome": outcome if isinstance(outcome, str) else "open",
            "temporal.activity.task_queue": _text(act.get("task_queue")),
            "temporal.activity.scheduled_time": str(_time(act.get("scheduled_time")) or ""),
            "temporal.activity.queue_ms": None if queue is None or pd.isna(queue)
            else round(queue.total_seconds() * 1000, 3),
            "temporal.agent.role": role,
        }  # fmt: skip
        span_id = _span_id(self.namespace, self.key, event_id, "activity")
        name = f"RunActivity:{act.get('activity_type')}"
        rows = [self._row(span_id, parent, name, "SERVER", "activity", event_id, turn, start,
                          end, status, message, attributes, span_events)]  # fmt: skip
        if role not in ("model", "tool_call"):
            return rows
        genai = dict(models.get((self.source, self.history, event_id), {}))
        requested = genai.pop("_requested_tools", None)
        if role == "model":
            self.pending_tools = [str(name) for name in requested or []]
            model = genai.get("gen_ai.request.model") or genai.get("gen_ai.response.model")
            name, kind = (f"chat {model}" if model else "chat"), "CLIENT"
            genai.setdefault("gen_ai.operation.name", "chat")
        else:
            # The answer's tool requests run in order; handoffs and hosted tools run no activity,
            # so a name is taken only while requests remain (else the activity names the span).
            requested_name = self.pending_tools.pop(0) if self.pending_tools else None
            tool = requested_name or _text(act.get("activity_type"))
            genai.setdefault("gen_ai.tool.name", tool)
            genai.setdefault("tool.name", tool)
            name, kind = f"execute_tool {tool}", "INTERNAL"
            genai.setdefault("gen_ai.operation.name", "execute_tool")
        if content:
            for key, column in (("input.value", "input"), ("output.value", "result")):
                if act.get(column) is not None:
                    genai[key] = _content(act[column])
                    genai[key.replace(".value", ".mime_type")] = "application/json"
        genai_id = _span_id(self.namespace, self.key, event_id, role)
        rows.append(self._row(genai_id, span_id, name, kind, role, event_id, turn, start, end,
                              status, message, genai))  # fmt: skip
        return rows
