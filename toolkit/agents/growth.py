"""How an agent's history grows, model call by model call: the measurements the budget rests on.

Each model call of a durable agent is an activity whose input is the whole conversation so far,
so its history grows by that input (and a little more) at every call. :func:`model_call_sizes`
gives, per model call, the history size right after the call was scheduled (the moment the
server persists the scheduling, and so the moment a size limit can be crossed), the call's input
and output sizes, and the bytes each role has added so far.

Sizes come from the server where the history says them (each ``WorkflowTaskStarted`` records
``historySizeBytes``) and from the events themselves in between
(:mod:`toolkit.histories.sizes`), so a run of thousands of events is measured exactly without
encoding every one of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pandas as pd
from temporalio.api.history.v1 import HistoryEvent

from toolkit.agents.roles import Roles, detect_roles, resolve_roles
from toolkit.errors import ToolkitError
from toolkit.histories.columns.lazy import LazyProto
from toolkit.histories.proto_size import NotCanonical, message_size
from toolkit.histories.sizes import framed, payloads_field_size
from toolkit.histories.write import event_message
from toolkit.replay.commands import events_frame

__all__ = ["MODEL_CALL_COLUMNS", "ROLE_KEYS", "RunSizes", "as_events", "calls_of",
           "model_call_sizes", "runs_of", "user_turns"]

#: Keys of ``bytes_by_role``, in chart order (``other``: everything else in the history).
ROLE_KEYS = ("model_input", "model_output", "tool_input", "tool_result", "listing", "other")

MODEL_CALL_COLUMNS = [
    "source", "history", "run_id", "call", "event_id", "activity_type", "completed",
    "history_bytes", "events", "input_bytes", "output_bytes", *[f"{k}_bytes" for k in ROLE_KEYS],
]  # fmt: skip

_NEEDED = ("source", "history", "run_id", "workflow_id", "workflow_type", "event_id",
           "event_type", "event_time", "activity_type", "scheduled_event_id", "input", "result",
           "attributes", "extra", "cause", "failure_message", "is_command", "signal_name",
           "update_name", "update_id")  # fmt: skip
_CLOSED_ACTIVITY = {"ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut",
                    "ActivityTaskCanceled"}  # fmt: skip


@dataclass
class RunSizes:
    """One run's events as lists, and its sizes measured on demand.

    ``size_before(p)`` is the history size before the event at position ``p`` (0-based, in
    event order): the last server checkpoint at or before ``p`` plus the events measured since.
    """

    columns: dict[str, list[Any]]
    roles: Roles | None
    roles_note: str | None = None
    _measured: dict[int, tuple[int, bool]] = field(default_factory=dict)
    _checkpoints: list[tuple[int, int]] | None = None
    exact: bool = True

    def __len__(self) -> int:
        return len(self.columns["event_id"])

    def value(self, column: str, position: int) -> Any:
        return self.columns[column][position]

    def event_bytes(self, position: int) -> int:
        """The event's size framed in a ``History`` (measured once)."""
        found = self._measured.get(position)
        if found is None:
            found = _measure(self, position)
            self._measured[position] = found
            self.exact = self.exact and found[1]
        return found[0]

    @property
    def checkpoints(self) -> list[tuple[int, int]]:
        """``(position, server bytes)`` of the workflow tasks started with a recorded size."""
        if self._checkpoints is None:
            found = []
            for p, kind in enumerate(self.columns["event_type"]):
                if kind == "WorkflowTaskStarted":
                    size = _history_size_bytes(self.columns["attributes"][p])
                    if size:
                        found.append((p, size))
            self._checkpoints = found
        return self._checkpoints

    def size_before(self, position: int) -> int:
        """History size before the event at ``position`` (``len(self)``: the whole history)."""
        base, start = 0, 0
        for p, size in reversed(self.checkpoints):
            if p <= position:
                base, start = size, p
                break
        return base + sum(self.event_bytes(p) for p in range(start, position))

    def total_bytes(self) -> int:
        """The whole history's size. The last checkpoint is checked against the one before it:
        a workflow task started in the same write as the events before it records the size
        before them, and the events it leaves out are counted again from the right place."""
        points = self.checkpoints
        if len(points) >= 2:
            (p0, s0), (p1, s1) = points[-2], points[-1]
            running = s0
            for p in range(p0, p1 + 1):
                if running == s1:
                    return s1 + sum(self.event_bytes(q) for q in range(p, len(self)))
                running += self.event_bytes(p)
        return self.size_before(len(self))


def _history_size_bytes(attributes: Any) -> int:
    if isinstance(attributes, LazyProto):
        return int(getattr(attributes.message, "history_size_bytes", 0) or 0)
    try:
        value = attributes.get("historySizeBytes") if attributes is not None else None
    except (AttributeError, msgspec.DecodeError):
        return 0
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _measure(run: RunSizes, position: int) -> tuple[int, bool]:
    extra = run.columns["extra"][position]
    if isinstance(extra, LazyProto):
        return framed(extra.message.ByteSize()), True
    raw = getattr(extra, "raw", None)
    if raw is not None:
        try:
            event = msgspec.json.decode(bytes(raw))
            return framed(message_size(event, HistoryEvent.DESCRIPTOR)), True
        except NotCanonical:
            pass
    row = {name: values[position] for name, values in run.columns.items()}
    return framed(event_message(row).ByteSize()), False


def as_events(events: Any) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """An events frame as it is, or paths, folders and globs read with
    :func:`toolkit.read_histories` (their per-file errors second; None for a frame)."""
    if isinstance(events, pd.DataFrame):
        return events_frame(events), None
    from toolkit.histories.reading.batch import read_histories

    return read_histories(events, errors="collect")


def runs_of(events: pd.DataFrame, roles: str | Roles = "auto") -> Iterator[RunSizes]:
    """One :class:`RunSizes` per run (``source``, ``history``) of an events frame, in order."""
    frame = events_frame(events)
    present = [c for c in _NEEDED if c in frame.columns]
    source = frame["source"].fillna("") if "source" in frame else pd.Series("", index=frame.index)
    history = frame["history"] if "history" in frame else pd.Series(0, index=frame.index)
    keyed = pd.DataFrame({"s": source.to_numpy(), "h": history.to_numpy(),
                          "e": frame["event_id"].to_numpy()})  # fmt: skip
    order = keyed.sort_values(["s", "h", "e"], kind="stable").index.to_numpy()
    frame = frame.iloc[order]
    run_keys = list(zip(keyed["s"].to_numpy()[order], keyed["h"].to_numpy()[order], strict=True))
    data = {c: frame[c].tolist() for c in present}
    start = 0
    for end in range(1, len(run_keys) + 1):
        if end < len(run_keys) and run_keys[end] == run_keys[start]:
            continue
        columns = {c: values[start:end] for c, values in data.items()}
        resolved, note = _roles_for(columns, roles)
        yield RunSizes(columns, resolved, note)
        start = end


def _roles_for(
    columns: dict[str, list[Any]], roles: str | Roles
) -> tuple[Roles | None, str | None]:
    kinds = columns["event_type"]
    types = [t for t, kind in zip(columns.get("activity_type", []), kinds, strict=True)
             if kind == "ActivityTaskScheduled" and t]  # fmt: skip
    if isinstance(roles, Roles):
        return roles, None
    if roles == "auto":
        found = detect_roles(types)
        if found is None:
            shown = sorted(set(types))[:5]
            return None, ("no agent framework recognised (activity types "
                          f"{shown}); pass roles= to name the model activities")  # fmt: skip
        return found, None
    try:
        return resolve_roles(roles, types, str(columns.get("source", [""])[0] or "<events>")), None
    except ToolkitError as error:
        return None, str(error)


@dataclass
class Call:
    """One model call of a run: where it was scheduled and what it cost."""

    position: int
    event_id: int
    activity_type: str | None
    input_bytes: int
    output_bytes: int | None = None
    completed: bool = False
    history_bytes: int = 0
    events: int = 0
    by_role: dict[str, int] = field(default_factory=dict)


_INPUT_KEY = {"model": "model_input", "tool_call": "tool_input", "listing": "listing"}
_RESULT_KEY = {"model": "model_output", "tool_call": "tool_result", "listing": "listing"}


def calls_of(run: RunSizes) -> tuple[list[Call], dict[str, int] | None]:
    """The run's model calls in order, each with the history size right after its scheduling
    (its workflow task's recorded size plus the task's events up to the scheduled event) and
    the payload bytes every role had added by then; and those bytes for the whole run (None
    without roles). ``other`` is left 0: it is the history's size less the rest."""
    if run.roles is None:
        return [], None
    c = run.columns
    role_of: dict[int, str] = {}
    calls: list[Call] = []
    totals = dict.fromkeys(ROLE_KEYS, 0)
    for p, kind in enumerate(c["event_type"]):
        if kind == "ActivityTaskScheduled":
            role = run.roles.role_of(c["activity_type"][p])
            role_of[c["event_id"][p]] = role
            size = _payload_bytes(c["input"][p])
            key = _INPUT_KEY.get(role)
            if key:
                totals[key] += size
            if role == "model":
                call = Call(p, c["event_id"][p], c["activity_type"][p], size)
                call.history_bytes = run.size_before(p + 1)
                call.events = p + 1
                call.by_role = dict(totals)
                calls.append(call)
        elif kind in _CLOSED_ACTIVITY:
            link = c["scheduled_event_id"][p]
            role = role_of.get(int(link)) if link is not None and not pd.isna(link) else None
            size = _payload_bytes(c["result"][p])
            key = _RESULT_KEY.get(role or "")
            if key:
                totals[key] += size
            if role == "model":
                for call in reversed(calls):
                    if call.event_id == int(link):
                        call.output_bytes = size
                        call.completed = kind == "ActivityTaskCompleted"
                        break
    return calls, totals


def user_turns(run: RunSizes) -> int:
    """User messages the run received (its start, user signals, user updates counted once), as
    :func:`toolkit.agents.turns.agent_steps` counts turns."""
    if run.roles is None:
        return 0
    c, roles = run.columns, run.roles
    turns, updates = 0, set()
    first_activity = next((p for p, kind in enumerate(c["event_type"])
                           if kind == "ActivityTaskScheduled"), len(run))  # fmt: skip
    started = False
    for p, kind in enumerate(c["event_type"]):
        if kind == "WorkflowExecutionStarted" and roles.start_is_user:
            started = True
        elif kind == "WorkflowExecutionSignaled" and roles.is_user_signal(
                c.get("signal_name", [None] * len(run))[p]):  # fmt: skip
            turns += 1
        elif kind in ("WorkflowExecutionUpdateAdmitted", "WorkflowExecutionUpdateAccepted"):
            key = c.get("update_id", [None] * len(run))[p] or p
            if key not in updates and roles.is_user_update(c.get("update_name", [None])[p]
                                                           if "update_name" in c else None):
                updates.add(key)
                turns += 1
    # A start followed by a user message before any activity is no turn of its own.
    first_message = next((p for p, kind in enumerate(c["event_type"])
                          if kind in ("WorkflowExecutionSignaled",
                                      "WorkflowExecutionUpdateAdmitted",
                                      "WorkflowExecutionUpdateAccepted")), len(run))  # fmt: skip
    if started and not (turns and first_message < first_activity):
        turns += 1
    return turns


def _payload_bytes(cell: Any) -> int:
    measured = payloads_field_size(cell) if cell is not None else None
    return measured[0] if measured else 0


def model_call_sizes(events: Any, *, roles: str | Roles = "auto") -> pd.DataFrame:
    """One row per model call: how large the history was when it was scheduled, and why.

    Parameters
    ----------
    events
        An events frame (any number of runs), or paths, folders and globs of exports.
    roles
        ``"auto"`` (the agent presets), a preset name or a :class:`~toolkit.agents.roles.Roles`:
        which activities are model calls, tool calls and listings. Runs of no recognised
        framework have no rows.

    Returns
    -------
    pandas.DataFrame
        ==============================  ====================================================
        column                          meaning
        ==============================  ====================================================
        source, history, run_id         the run
        call                            1, 2, ... in scheduling order
        event_id, activity_type         the ``ActivityTaskScheduled`` event of the call
        completed                       the call's activity completed
        history_bytes                   the history's size right after the scheduling was
                                        written (server bytes)
        events                          events in the history by then
        input_bytes, output_bytes       the call's input ``Payloads`` and its result's (None
                                        until it closes)
        model_input_bytes ...           bytes each role had added by then: model input and
        other_bytes                     output, tool input and result, listings, and the rest
                                        (event envelopes, workflow tasks, other payloads)
        ==============================  ====================================================
    """
    rows = []
    for run in runs_of(as_events(events)[0], roles):
        for number, call in enumerate(calls_of(run)[0], start=1):
            known = sum(v for k, v in call.by_role.items() if k != "other")
            by_role = {**call.by_role, "other": call.history_bytes - known}
            rows.append([run.value("source", 0) if "source" in run.columns else None,
                         run.value("history", 0) if "history" in run.columns else 0,
                         run.value("run_id", 0) if "run_id" in run.columns else None,
                         number, call.event_id, call.activity_type, call.completed,
                         call.history_bytes, call.events, call.input_bytes, call.output_bytes,
                         *[by_role[k] for k in ROLE_KEYS]])  # fmt: skip
    out = pd.DataFrame(rows, columns=MODEL_CALL_COLUMNS)
    out["output_bytes"] = out["output_bytes"].astype("Int64")
    return out
