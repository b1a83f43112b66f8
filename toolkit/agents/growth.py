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

import bisect
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pandas as pd
from temporalio.api.history.v1 import HistoryEvent

from toolkit.agents.roles import Roles, detect_roles, resolve_roles
from toolkit.errors import ToolkitError
from toolkit.gc_pause import paused_gc
from toolkit.histories.columns.lazy import LazyProto
from toolkit.histories.payload_cells import framed, measure_payload_cell
from toolkit.histories.proto_size import NotCanonical, message_size
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
           "event_type", "activity_type", "scheduled_event_id", "input", "result", "attributes",
           "extra", "cause", "failure_message", "signal_name", "update_name",
           "update_id", "history_size_bytes", "suggest_continue_as_new")  # fmt: skip
_CLOSED_ACTIVITY = {"ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut",
                    "ActivityTaskCanceled"}  # fmt: skip


_PAYLOAD_CELLS = ("input", "result", "details")
#: Event types measured even where a measured event of their kind exists: their size is in
#: text no payload cell holds (a termination's reason, a failure's message and stack).
_ALWAYS_MEASURED = frozenset({"WorkflowExecutionTerminated", "WorkflowExecutionFailed",
                              "WorkflowTaskFailed", "ActivityTaskFailed"})
#: Bytes two estimates of the same boundary may differ by (ids one digit longer, times).
_SLACK = 32


@dataclass
class RunSizes:
    """One run's events as lists, and its sizes measured on demand.

    ``size_before(p)`` is the history size before the event at position ``p`` (0-based, in
    event order): the last server checkpoint at or before ``p`` plus the events since. Those
    events are estimated from one measured event of the same kind (type and activity type)
    and their own payload sizes, which are exact and cheap (no event is parsed); an event
    carrying a failure is measured. ``total_bytes`` measures the events after the last
    checkpoint exactly.
    """

    columns: dict[str, list[Any]]
    roles: Roles | None
    roles_note: str | None = None
    #: Measured events by kind, shared by the runs of one analysis: runs of one workflow type
    #: write events of one kind with the same fields, a few bytes of ids apart.
    _samples: dict[tuple[Any, ...], tuple[int, int]] = field(default_factory=dict)
    #: The frame the run's rows come from and where they start, for the rare event measured
    #: from its whole row (an old dialect's, normalized first).
    _frame: pd.DataFrame | None = None
    _offset: int = 0
    _measured: dict[int, tuple[int, bool]] = field(default_factory=dict)
    #: Payload cells whose bytes are not the server's (decoded or stripped by an exporter).
    inexact_payloads: int = 0
    _payloads: dict[int, int] = field(default_factory=dict)
    _json: dict[int, tuple[Any, bool] | None] = field(default_factory=dict)
    _checkpoints: list[tuple[int, int]] | None = None
    exact: bool = True

    def __len__(self) -> int:
        return len(self.columns["event_id"])

    def value(self, column: str, position: int) -> Any:
        return self.columns[column][position]

    def payload_bytes(self, position: int, column: str | None = None) -> int:
        """Encoded size of the event's payload cells (``input``, ``result``, ``details``), or
        of one of them; cached."""
        if column is None:
            return sum(self.payload_bytes(position, c) for c in _PAYLOAD_CELLS
                       if c in self.columns and self.columns[c][position] is not None)  # fmt: skip
        cell = self.columns[column][position] if column in self.columns else None
        if cell is None:
            return 0
        key = position * 4 + _PAYLOAD_CELLS.index(column)
        found = self._payloads.get(key)
        if found is None:
            measured, self._json[key] = measure_payload_cell(cell)
            found = self._payloads[key] = measured[0] if measured else 0
            if measured and not measured[1]:
                self.inexact_payloads += 1
        return found

    def payload_json(self, position: int, column: str) -> tuple[Any, bool] | None:
        """:func:`~toolkit.histories.payload_cells.payload_json` of the event's cell, from the
        decoding that measured it."""
        self.payload_bytes(position, column)
        return self._json.get(position * 4 + _PAYLOAD_CELLS.index(column))

    def event_bytes(self, position: int, *, estimate: bool = False) -> int:
        """The event's size framed in a ``History``: measured (once), or with ``estimate``
        from a measured event of its kind plus the difference of their payloads."""
        found = self._measured.get(position)
        if found is not None:
            return found[0]
        c = self.columns
        kind = (c["workflow_type"][position] if "workflow_type" in c else None,
                c["event_type"][position],
                c["activity_type"][position] if "activity_type" in c else None)  # fmt: skip
        failure = self.columns.get("failure_message", [None] * len(self))[position]
        sample = self._samples.get(kind)
        if isinstance(c["extra"][position], LazyProto):
            sample = None  # a binary history's events are measured by protobuf itself: cheap
        if (estimate and sample is not None and not isinstance(failure, str)
                and kind[1] not in _ALWAYS_MEASURED):  # fmt: skip
            size, payloads = sample
            return size + self.payload_bytes(position) - payloads
        found = _measure(self, position)
        self._measured[position] = found
        self.exact = self.exact and found[1]
        if (kind not in self._samples and not isinstance(failure, str)
                and not isinstance(c["extra"][position], LazyProto)):  # fmt: skip
            self._samples[kind] = (found[0], self.payload_bytes(position))
        return found[0]

    @property
    def loaded_sizes(self) -> bool:
        """Whether the loader's ``history_size_bytes`` column holds this run's recorded sizes.
        Where it holds none (a frame or dataset rows from before the column, an old server)
        they are read off the tasks' attributes instead."""
        sizes = self.columns.get("history_size_bytes")
        return sizes is not None and any(s is not None and s is not pd.NA for s in sizes)

    @property
    def checkpoints(self) -> list[tuple[int, int]]:
        """``(position, server bytes)`` of the workflow tasks started with a recorded size."""
        if self._checkpoints is None and self.loaded_sizes:
            # read by the loader (the events' own historySizeBytes): nothing decoded here
            sizes = self.columns["history_size_bytes"]
            self._checkpoints = [(p, int(size)) for p, size in enumerate(sizes)
                                 if size is not None and size is not pd.NA and size > 0]
        if self._checkpoints is None:
            found = []
            for p, kind in enumerate(self.columns["event_type"]):
                if kind == "WorkflowTaskStarted":
                    size = _history_size_bytes(self.columns["attributes"][p])
                    if size:
                        found.append((p, size))
            self._checkpoints = found
        return self._checkpoints

    def size_before(self, position: int, *, estimate: bool = True) -> int:
        """History size before the event at ``position`` (``len(self)``: the whole history)."""
        points = self.checkpoints
        # The last checkpoint at or before ``position`` (bisected: runs have thousands).
        at = bisect.bisect_right(points, (position, math.inf)) - 1
        base, start = (points[at][1], points[at][0]) if at >= 0 else (0, 0)
        return base + sum(self.event_bytes(p, estimate=estimate) for p in range(start, position))

    def total_bytes(self) -> int:
        """The whole history's size: the last checkpoint plus the events after it (estimated
        as :meth:`event_bytes` does: a few bytes from the encoded size, each).

        The last checkpoint is first checked against the one before it: a workflow task the
        server started in the same write as the events before it records the size before
        them, and those events are then counted from where that size ends."""
        points = self.checkpoints
        if not points:
            return sum(self.event_bytes(p) for p in range(len(self)))
        start, base = points[-1]
        if len(points) >= 2:
            p0, s0 = points[-2]
            running, boundary, best = s0, None, _SLACK + 1
            for p in range(p0, start + 1):
                if abs(running - base) < best:
                    boundary, best = p, abs(running - base)
                running += self.event_bytes(p, estimate=True)
            if boundary is not None and boundary < start:
                start = boundary
        return base + sum(self.event_bytes(p, estimate=True) for p in range(start, len(self)))


_SIZE_KEY = b'"historySizeBytes":'


def _history_size_bytes(attributes: Any) -> int:
    if isinstance(attributes, LazyProto):
        return int(getattr(attributes.message, "history_size_bytes", 0) or 0)
    raw = getattr(attributes, "raw", None)
    if raw is not None:  # read off the event's text: no decoding of the whole event
        text = bytes(raw)
        at = text.find(_SIZE_KEY)
        if at < 0:
            return 0
        digits = re.match(rb'\s*"?(\d+)', text[at + len(_SIZE_KEY): at + len(_SIZE_KEY) + 32])
        return int(digits.group(1)) if digits else 0
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
    if run._frame is not None:
        row = run._frame.iloc[run._offset + position].to_dict()
    else:
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
    if frame.empty:
        return
    source = frame["source"].fillna("") if "source" in frame else pd.Series("", index=frame.index)
    history = frame["history"].to_numpy() if "history" in frame else np.zeros(len(frame), int)
    codes = pd.factorize(source, sort=False)[0]
    ids = frame["event_id"].to_numpy()
    # A frame from the loaders is in run order, events by id: sort only one that is not.
    new_run = (codes[1:] != codes[:-1]) | (history[1:] != history[:-1])
    if ((ids[1:] > ids[:-1]) | new_run).all() and _runs_are_contiguous(codes, history, new_run):
        order = None
    else:
        order = np.lexsort((ids, history, codes))
        frame = frame.iloc[order]
        codes, history = codes[order], history[order]
        new_run = (codes[1:] != codes[:-1]) | (history[1:] != history[:-1])
    bounds = [0, *(np.flatnonzero(new_run) + 1).tolist(), len(frame)]
    data = {c: frame[c].tolist() for c in present}
    samples: dict[tuple[Any, ...], tuple[int, int]] = {}
    for start, end in itertools.pairwise(bounds):
        columns = {c: values[start:end] for c, values in data.items()}
        resolved, note = _roles_for(columns, roles)
        yield RunSizes(columns, resolved, note, samples, frame, start)


def _runs_are_contiguous(codes: np.ndarray, history: np.ndarray, new_run: np.ndarray) -> bool:
    """Whether no run's events are split into two stretches of the frame."""
    starts = np.concatenate([[0], np.flatnonzero(new_run) + 1])
    keys = codes[starts].astype(np.int64) * (int(history.max()) + 1) + history[starts]
    return len(np.unique(keys)) == len(keys)


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
            size = run.payload_bytes(p, "input")
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
            size = run.payload_bytes(p, "result")
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
    with paused_gc():  # as history_budget: many small objects, no cycles
        rows = _call_rows(as_events(events)[0], roles)
    out = pd.DataFrame(rows, columns=MODEL_CALL_COLUMNS)
    out["output_bytes"] = out["output_bytes"].astype("Int64")
    return out


def _call_rows(events: pd.DataFrame, roles: str | Roles) -> list[list[Any]]:
    rows = []
    for run in runs_of(events, roles):
        for number, call in enumerate(calls_of(run)[0], start=1):
            known = sum(v for k, v in call.by_role.items() if k != "other")
            by_role = {**call.by_role, "other": call.history_bytes - known}
            rows.append([run.value("source", 0) if "source" in run.columns else None,
                         run.value("history", 0) if "history" in run.columns else 0,
                         run.value("run_id", 0) if "run_id" in run.columns else None,
                         number, call.event_id, call.activity_type, call.completed,
                         call.history_bytes, call.events, call.input_bytes, call.output_bytes,
                         *[by_role[k] for k in ROLE_KEYS]])  # fmt: skip
    return rows
