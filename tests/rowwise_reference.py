"""The row-wise model_calls, activity spans and trace_spans as they were at 2ddb491 (a pandas
slice per source and per history), kept as the oracle the column-wise implementation must equal
(tests/test_traces_columnwise.py). Slow on purpose: nothing here is optimised.

Import with ``from rowwise_reference import ...`` (``tests/`` is on the path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from toolkit.agents.model_io import model_call_of_events
from toolkit.agents.roles import Roles, resolve_roles
from toolkit.agents.tokens import MODEL_CALL_COLUMNS, TOKEN_FIELDS
from toolkit.agents.turns import _labels_of, turn_starts
from toolkit.errors import ToolkitError
from toolkit.histories.tables import activities
from toolkit.histories.versions import version_labels
from toolkit.replay.commands import events_frame, iter_histories
from toolkit.traces.span_rows import (
    _ACTIVITY_STATUS,
    _CLOSE_STATUS,
    _OPENINFERENCE,
    _TASK_FAILURES,
    SPAN_COLUMNS,
    ModelAttributes,
    _content,
    _set,
    _time,
    span_ids,
)

_LETTER = {"model": "M", "listing": "L", "tool_call": "C", "other": "o"}
_CLOSED = {"ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut",
           "ActivityTaskCanceled"}  # fmt: skip
_CLOSED_OUTCOME = {"ActivityTaskCompleted": "completed", "ActivityTaskFailed": "failed",
                   "ActivityTaskTimedOut": "timed_out",
                   "ActivityTaskCanceled": "canceled"}  # fmt: skip
_RECORD_COLUMNS = ("event_id", "event_type", "event_time", "signal_name", "update_name",
                   "update_id", "scheduled_event_id", "failure_message", "cause")  # fmt: skip
_RECORD = ("event_id", "event_type", "event_time", "activity_type", "scheduled_event_id",
           "attempt", "input", "result", "attributes", "extra")  # fmt: skip


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _task_failure(records: list[dict[str, Any]], after: int) -> str | None:
    text = None
    for event in records:
        if event["event_id"] > after and event["event_type"] in _TASK_FAILURES:
            message, cause = event.get("failure_message"), event.get("cause")
            text = _text(message) or _text(cause) or event["event_type"]
    return text


def spans_turns_roles(
    events: Any, roles: str | Roles
) -> tuple[pd.DataFrame, dict[int, list[Any]], dict[int, Roles]]:
    """The row-wise ``_spans_turns_roles``: one slice per history."""
    frame = events_frame(events)
    rows: list[dict[str, Any]] = []
    turns: dict[int, list[Any]] = {}
    every: dict[int, Roles] = {}
    for history, one in iter_histories(frame):
        source = _text(one["source"].iloc[0]) if "source" in one and len(one) else None
        scheduled = one[one["event_type"] == "ActivityTaskScheduled"]
        resolved = resolve_roles(roles, scheduled["activity_type"], source or "<events>", one)
        every[history] = resolved
        # Only the columns read below: a record of every column costs more than the analysis.
        records = one[[c for c in _RECORD_COLUMNS if c in one.columns]].to_dict("records")
        starts = turn_starts(one, resolved, scheduled, records)
        completed = one.loc[one["event_type"] == "WorkflowTaskCompleted", "event_id"]
        last_completed = int(completed.max()) if len(completed) else 0
        turns[history] = [
            (
                event_id,
                trigger,
                event_id < last_completed,
                None if event_id < last_completed else _task_failure(records, event_id),
            )
            for event_id, trigger in starts
        ]
        closes: dict[int, Mapping[str, Any]] = {}
        started: dict[int, Any] = {}
        for event in records:
            link = event.get("scheduled_event_id")
            if link is None or pd.isna(link):
                continue
            if event["event_type"] in _CLOSED:
                closes[int(link)] = event
            elif event["event_type"] == "ActivityTaskStarted":
                started[int(link)] = event.get("event_time")
        wanted = [c for c in ("event_id", "activity_type", "activity_id", "run_id", "event_time")
                  if c in scheduled.columns]  # fmt: skip
        for event in scheduled[wanted].to_dict("records"):
            event_id = int(event["event_id"])
            before = [s for s in starts if s[0] < event_id]
            turn, trigger = (len(before), before[-1][1]) if before else (0, None)
            role = resolved.role_of(_text(event.get("activity_type")))
            close = closes.get(event_id)
            rows.append(
                {
                    "history": history,
                    "run_id": event.get("run_id"),
                    "turn": turn,
                    "trigger": trigger,
                    "event_id": event_id,
                    "activity_type": event.get("activity_type"),
                    "activity_id": event.get("activity_id"),
                    "role": role,
                    "letter": _LETTER[role],
                    "scheduled": event.get("event_time"),
                    "started": started.get(event_id),
                    "closed": None if close is None else close.get("event_time"),
                    "outcome": None if close is None else close["event_type"],
                }
            )
    out = pd.DataFrame(
        rows,
        columns=[
            "history", "run_id", "turn", "trigger", "event_id", "activity_type", "activity_id",
            "role", "letter", "scheduled", "started", "closed", "outcome",
        ],
    )  # fmt: skip
    for column in ("scheduled", "started", "closed"):
        out[column] = pd.to_datetime(out[column], utc=True)
    return out, turns, every



def _one_source(frame: pd.DataFrame, roles: str | Roles,
                labels: pd.DataFrame) -> list[dict[str, Any]]:  # fmt: skip
    """The model-call rows of one source's histories (none when no framework is recognised);
    ``labels`` are the source's rows of ``version_labels``, indexed by history."""
    try:
        spans, _ = spans_turns_roles(frame, roles)[:2]
    except ToolkitError:
        return []
    models = spans[spans["role"] == "model"]
    if models.empty:
        return []
    rows = []
    for history, one in iter_histories(frame):
        mine = models[models["history"] == history].sort_values("event_id")
        if mine.empty:
            continue
        wanted = one[one["event_type"].isin(["ActivityTaskScheduled", "ActivityTaskStarted",
                                             *_CLOSED_OUTCOME])]  # fmt: skip
        records = wanted[[c for c in _RECORD if c in wanted.columns]].to_dict("records")
        by_id = {int(r["event_id"]): r for r in records}
        closing: dict[int, dict[str, Any]] = {}
        started: dict[int, dict[str, Any]] = {}
        for record in records:
            link = record.get("scheduled_event_id")
            if link is None or pd.isna(link):
                continue
            target = closing if record["event_type"] in _CLOSED else started
            target[int(link)] = record
        head = one.iloc[0]
        source = head.get("source")
        label = _labels_of(labels, int(history), source if isinstance(source, str) else None)
        steps: dict[int, int] = {}
        for event_id, turn in zip(mine["event_id"], mine["turn"], strict=True):
            scheduled = by_id[int(event_id)]
            closed, start = closing.get(int(event_id)), started.get(int(event_id))
            call = model_call_of_events(scheduled, closed)
            steps[int(turn)] = steps.get(int(turn), 0) + 1
            attempt = (start or {}).get("attempt")
            rows.append({
                "source": source, "history": int(history), "run_id": head.get("run_id"),
                "workflow_id": head.get("workflow_id"), "label": label["label"],
                "turn": int(turn), "step": steps[int(turn)], "event_id": int(event_id),
                "activity_type": scheduled.get("activity_type"), "framework": call.framework,
                "agent": call.agent, "model": call.model,
                "scheduled": scheduled.get("event_time"),
                "started": None if start is None else start.get("event_time"),
                "closed": None if closed is None else closed.get("event_time"),
                "attempt": None if attempt is None or pd.isna(attempt) else int(attempt),
                "outcome": None if closed is None else _CLOSED_OUTCOME[closed["event_type"]],
                **{name: getattr(call.usage, name) for name in TOKEN_FIELDS},
                "usage_note": "; ".join(filter(None, [call.usage.note, *call.notes])) or None,
                "requested_tools": call.requested_tools,
                "input_bytes": call.input_bytes, "output_bytes": call.output_bytes,
            })  # fmt: skip
    return rows


def model_calls(events: Any, roles: str | Roles = "auto") -> pd.DataFrame:
    """The row-wise ``tk.model_calls``: one slice per source, then per history."""
    frame = events_frame(events)
    rows: list[dict[str, Any]] = []
    if "source" in frame.columns and len(frame):
        labels = version_labels(frame)
        by_source = {key: part.set_index("history")
                     for key, part in labels.groupby("source", sort=False, dropna=False)}
        for source, one in frame.groupby("source", sort=False, dropna=False):
            none = labels.iloc[0:0].set_index("history")
            rows.extend(_one_source(one, roles, by_source.get(source, none)))
    elif len(frame):
        rows = _one_source(frame, roles, version_labels(frame).set_index("history"))
    out = pd.DataFrame(rows, columns=MODEL_CALL_COLUMNS, dtype=object)
    for column in ("history", "event_id"):
        out[column] = out[column].astype("int64")
    for column in ("turn", "step", "attempt", *TOKEN_FIELDS, "input_bytes", "output_bytes"):
        out[column] = out[column].astype("Int64")
    for column in ("scheduled", "started", "closed"):
        out[column] = pd.to_datetime(out[column], utc=True)
    return out


def trace_spans(
    events: pd.DataFrame,
    *,
    namespace: str | None = None,
    roles: str | Roles = "auto",
    content: bool = False,
    model_attributes: ModelAttributes | None = None,
) -> pd.DataFrame:
    """The row-wise ``trace_spans``: one slice per source, then per history."""
    columns = set(events.columns)
    if "source" not in columns:
        events = events.assign(source=None)
    if "history" not in columns:
        events = events.assign(history=0)
    acts = activities(events).sort_values(["source", "history", "scheduled_event_id"])
    models = model_attributes or {}
    rows: list[dict[str, Any]] = []
    by_history = {key: one for key, one in acts.groupby(["source", "history"], dropna=False,
                                                         sort=False)}  # fmt: skip
    for source, frame in events.groupby("source", sort=False, dropna=False):
        try:
            spans, turns = spans_turns_roles(frame, roles)[:2]
        except ToolkitError:
            spans, turns = None, {}  # not an agent: run and activity spans only
        for history, one in frame.groupby("history", sort=True):
            run = _Run(one, source, int(history), namespace)
            rows.append(run.root())
            turn_of: dict[int, tuple[int, str]] = {}
            if spans is not None:
                mine = spans[spans["history"] == history]
                turn_of = {
                    int(e): (int(t), str(r))
                    for e, t, r in zip(mine["event_id"], mine["turn"], mine["role"], strict=True)
                }
            acts_of = by_history.get((source, int(history)))
            turn_rows = run.turns(turns.get(int(history), []), acts_of, turn_of, models)
            rows.extend(turn_rows)
            if acts_of is not None:
                for act in acts_of.to_dict("records"):
                    rows.extend(run.activity(act, turn_of, models, content))
    # object, not pandas' string dtype: a missing parent stays None (NaN would read as an id)
    out = pd.DataFrame(rows, columns=SPAN_COLUMNS, dtype=object)
    out["history"] = out["history"].astype("int64")
    out["event_id"] = out["event_id"].astype("int64")
    out["turn"] = out["turn"].astype("Int64")
    for column in ("start", "end"):
        out[column] = pd.to_datetime(out[column], utc=True)
    return out


class _Run:
    """The spans of one history."""

    def __init__(self, one: pd.DataFrame, source: Any, history: int, namespace: str | None):
        first = one.iloc[0]
        self.source, self.history = source, history
        own_namespace = _text(first.get("namespace")) if "namespace" in one else None
        self.namespace = namespace if namespace is not None else (own_namespace or "")
        self.run_id = _text(first.get("run_id"))
        self.workflow_id = _text(first.get("workflow_id"))
        self.workflow_type = _text(first.get("workflow_type")) or "workflow"
        self.key = self.run_id or self.workflow_id or f"{source}#{history}"
        self.events = one
        times = one["event_time"]
        self.first_time, self.last_time = _time(times.min()), _time(times.max())
        self.trace_id, self.root_id = span_ids(self.namespace, self.key, 1, "workflow")
        self.pending_tools: list[str] = []  # requested by the last model call, not yet run
        self.base = {"temporalWorkflowID": self.workflow_id, "temporalRunID": self.run_id,
                     "temporal.namespace": self.namespace or None,
                     "temporal.workflow.type": self.workflow_type,
                     "session.id": self.workflow_id}  # fmt: skip

    def _row(self, span_id: str, parent: str | None, name: str, kind: str, role: str,
             event_id: int, turn: int | None, start: Any, end: Any, status: str,
             message: str | None, attributes: Mapping[str, Any],
             events: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
        attrs: dict[str, Any] = {}
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

    def root(self) -> dict[str, Any]:
        last = self.events.iloc[-1]
        status, word = _CLOSE_STATUS.get(str(last["event_type"]), ("UNSET", "running"))
        message = _text(last.get("failure_message")) if status == "ERROR" else None
        failures = self.events[self.events["event_type"].isin(_TASK_FAILURES)]
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
            for event in failures.to_dict("records")
        ]  # fmt: skip
        attributes = {"temporal.workflow.status": word,
                      "temporal.workflow.task_failures": len(span_events)}  # fmt: skip
        return self._row(self.root_id, None, f"RunWorkflow:{self.workflow_type}", "SERVER",
                         "workflow", 1, None, self.first_time, self.last_time, status, message,
                         attributes, span_events)  # fmt: skip

    def turns(self, starts: list[tuple[int, str, bool, str | None]], acts: pd.DataFrame | None,
              turn_of: Mapping[int, tuple[int, str]],
              models: ModelAttributes) -> list[dict[str, Any]]:  # fmt: skip
        """One ``invoke_agent`` span per turn that has activities or got no answer."""
        times = dict(zip(self.events["event_id"], self.events["event_time"], strict=True))
        ends: dict[int, Any] = {}
        agents: dict[int, str] = {}
        if acts is not None:
            for event_id, scheduled, started, closed in zip(
                acts["scheduled_event_id"], acts["scheduled_time"], acts["started_time"],
                acts["closed_time"], strict=True,
            ):  # fmt: skip
                turn = turn_of.get(int(event_id), (0, ""))[0]
                candidates = [_time(t) for t in (scheduled, started, closed) if _time(t)]
                if candidates:
                    ends[turn] = max([ends[turn], *candidates] if turn in ends else candidates)
                agent = models.get((self.source, self.history, int(event_id)), {}).get(
                    "gen_ai.agent.name"
                )
                if agent and turn not in agents:
                    agents[turn] = agent
        rows = []
        for number, (event_id, trigger, answered, failure) in enumerate(starts, 1):
            if number not in ends and answered:
                continue  # a control message (``finish``) that started no work is no turn
            agent = agents.get(number) or self.workflow_type
            _, span_id = span_ids(self.namespace, self.key, event_id, "turn")
            status, message = (
                ("UNSET", None) if answered else ("ERROR", failure or "no workflow task answered")
            )
            attributes = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "temporal.turn": number,
                "temporal.turn.trigger": trigger,
            }
            start = _time(times.get(event_id))
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
        _, span_id = span_ids(self.namespace, self.key, event_id, "activity")
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
        _, genai_id = span_ids(self.namespace, self.key, event_id, role)
        rows.append(self._row(genai_id, span_id, name, kind, role, event_id, turn, start, end,
                              status, message, genai))  # fmt: skip
        return rows
