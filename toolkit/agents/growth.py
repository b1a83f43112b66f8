"""How an agent's history grows, model call by model call: the measurements the budget rests on.

Each model call of a durable agent is an activity whose input is the whole conversation so far,
so its history grows by that input (and a little more) at every call. :func:`model_call_sizes`
gives, per model call, the history size right after the call was scheduled (the moment the
server persists the scheduling, and so the moment a size limit can be crossed), the call's input
and output sizes, and the bytes each role has added so far.

Sizes come from the server where the history says them (each ``WorkflowTaskStarted`` records
``historySizeBytes``) and from the events themselves in between
(:mod:`toolkit.agents.frame_sizes`, which measures every run of a frame at once), so a run of
thousands of events is measured exactly without encoding every one of them.
"""

from __future__ import annotations

import collections
import functools
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.frame_sizes import (
    ROLE_KEYS,
    EventTypes,
    FrameSizes,
    KindSamples,
    measure_frame,
)
from toolkit.agents.roles import Roles, detect_roles, resolve_roles
from toolkit.errors import ToolkitError
from toolkit.gc_pause import paused_gc
from toolkit.histories.reading.batch import history_spans
from toolkit.replay.commands import events_frame

__all__ = ["MODEL_CALL_COLUMNS", "ROLE_KEYS", "RunSizes", "as_events", "calls_of",
           "model_call_sizes", "runs_of", "user_turns"]

MODEL_CALL_COLUMNS = [
    "source", "history", "run_id", "call", "event_id", "activity_type", "completed",
    "history_bytes", "events", "input_bytes", "output_bytes", *[f"{k}_bytes" for k in ROLE_KEYS],
]  # fmt: skip

_NEEDED = ("source", "history", "run_id", "workflow_id", "workflow_type", "event_id",
           "event_type", "activity_type", "scheduled_event_id", "input", "result", "attributes",
           "extra", "cause", "failure_message", "signal_name", "update_name",
           "update_id", "history_size_bytes", "suggest_continue_as_new")  # fmt: skip


@dataclass(slots=True)
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
    role_bytes: tuple[int, ...] = ()  # per key of ROLE_KEYS, in order

    @property
    def by_role(self) -> dict[str, int]:
        """The payload bytes every role had added when the call was scheduled."""
        return dict(zip(ROLE_KEYS, self.role_bytes, strict=True))


@dataclass
class RunSizes:
    """One run's events as lists, with what :func:`~toolkit.agents.frame_sizes.measure_frame`
    measured of it: its model calls, its payload cells' bytes, its whole size."""

    columns: _RunColumns
    roles: Roles | None
    roles_note: str | None
    _sizes: FrameSizes
    _run: int
    _calls: list[Call] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        starts, ends = self._sizes.run_bounds
        return ends[self._run] - starts[self._run]

    def value(self, column: str, position: int, default: Any = None) -> Any:
        """The run's ``column`` at ``position`` (negative: from the end), ``default`` where the
        frame has no such column; read off the frame's list, without the run's slice."""
        if column not in self.columns:
            return default
        if position == 0 or position == -1:  # a run's first or last event: read for all runs
            return self.columns.edges(column, position)[self._run]
        start = self.start if position >= 0 else self.start + len(self)
        return self.columns.frame_list(column)[start + position]

    @property
    def start(self) -> int:
        """Where the run's events start in the frame measured."""
        return self._sizes.run_bounds[0][self._run]

    def positions(self, *types: str) -> list[int]:
        """Where the run's events of ``types`` are (0-based, in order)."""
        return self._sizes.positions(self._run, types)

    def input_texts(self, calls: list[Call]) -> list[tuple[Any, bool] | None]:
        """:meth:`payload_json` of each call's input; of the run's own calls (those
        :func:`calls_of` made), a slice of the frame's, looked up once for all."""
        if calls is not self._calls:
            return [self.payload_json(call.position) for call in calls]
        low, high = self._sizes.calls_of_run(self._run)
        return self._sizes.call_inputs[low:high]

    def scanned_resent(self, calls: list[Call]) -> tuple[int, int] | None:
        """``(re-sent bytes, bytes)`` of the run's own calls' inputs as the frame's payload scan
        found them (:attr:`~toolkit.agents.frame_sizes.FrameSizes.run_resent`); None where it
        left them to :func:`toolkit.agents.resent.resent_of_run`'s own reading."""
        found = self._sizes.run_resent
        return None if found is None or calls is not self._calls else found[self._run]

    def payload_json(self, position: int, column: str = "input") -> tuple[Any, bool] | None:
        """:func:`~toolkit.histories.payload_cells.payload_json` of the event's ``input`` (the
        only cells kept as text)."""
        if column != "input":
            raise ValueError("only the inputs' texts are kept")
        return self._sizes.input_texts[self.start + position]

    @property
    def exact(self) -> bool:
        """Whether every event measured was measured as the server stores it (not after
        normalizing an old dialect)."""
        return bool(self._sizes.run_exact[self._run])

    @property
    def inexact_payloads(self) -> int:
        """Payload cells (inputs and results) whose bytes are not the server's (decoded or
        stripped by an exporter)."""
        return int(self._sizes.run_inexact_payloads[self._run])

    @property
    def inputs_inexact(self) -> bool:
        """Whether any model call's input is a payload whose bytes are not the server's
        (stripped or decoded by an exporter): the inputs' sizes cannot be fitted on."""
        low, high = self._sizes.calls_of_run(self._run)
        return bool(self._sizes.call_input_inexact[low:high].any())

    @property
    def loaded_sizes(self) -> bool:
        """Whether the loader's ``history_size_bytes`` column holds this run's recorded sizes.
        Where it holds none (a frame or dataset rows from before the column, an old server)
        they are read off the tasks' attributes instead."""
        return bool(self._sizes.run_loaded[self._run])

    def total_bytes(self) -> int:
        """The whole history's size: the last checkpoint plus the events after it."""
        total = int(self._sizes.run_total[self._run])
        if total < 0:
            raise ValueError("the runs were measured without their totals")
        return total


def as_events(events: Any) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """An events frame as it is, or paths, folders and globs read with
    :func:`toolkit.read_histories` (their per-file errors second; None for a frame)."""
    if isinstance(events, pd.DataFrame):
        return events_frame(events), None
    from toolkit.histories.reading.batch import read_histories

    return read_histories(events, errors="collect")


def runs_of(
    events: pd.DataFrame, roles: str | Roles = "auto", *, totals: bool = True,
    samples: KindSamples | None = None,
) -> Iterator[RunSizes]:  # fmt: skip
    """One :class:`RunSizes` per run (``source``, ``history``) of an events frame, in order,
    all measured at once (``totals``: with each history's whole size; ``samples``: the event
    kinds' samples of the frames before this one, see :func:`measure_frame`)."""
    frame = events_frame(events)
    present = [c for c in _NEEDED if c in frame.columns]
    if frame.empty:
        return
    # A frame from the loaders is in run order, events by id: sort only one that is not.
    ids = frame["event_id"].to_numpy()
    spans = history_spans(frame)
    if spans is not None and _ids_rise_within(ids, spans[0]):
        bounds = [*spans[0].tolist(), len(frame)]
    else:
        source = (frame["source"].fillna("") if "source" in frame
                  else pd.Series("", index=frame.index))  # fmt: skip
        history = frame["history"].to_numpy() if "history" in frame else np.zeros(len(frame), int)
        codes = pd.factorize(source, sort=False)[0]
        order = np.lexsort((ids, history, codes))
        frame = frame.iloc[order]
        codes, history = codes[order], history[order]
        new_run = (codes[1:] != codes[:-1]) | (history[1:] != history[:-1])
        bounds = [0, *(np.flatnonzero(new_run) + 1).tolist(), len(frame)]
    starts, ends = np.array(bounds[:-1]), np.array(bounds[1:])
    lists = _FrameLists(frame, present, starts, ends)
    event_type = EventTypes(frame["event_type"].to_numpy(dtype=object))
    types = _scheduled_types(frame, event_type, starts, ends)
    source = lists["source"] if "source" in present else None
    found = [_roles_for(mine, roles, source[start] if source else None)
             for mine, start in zip(types, bounds[:-1], strict=True)]  # fmt: skip
    sizes = measure_frame(frame, starts, ends, [resolved for resolved, _ in found],
                          totals=totals, event_type=event_type, samples=samples)  # fmt: skip
    for number, (start, end) in enumerate(itertools.pairwise(bounds)):
        yield RunSizes(_RunColumns(lists, start, end), *found[number], sizes, number)


class _FrameLists(dict[str, list[Any]]):
    """The frame's columns as lists, each made when first asked for."""

    def __init__(self, frame: pd.DataFrame, present: list[str], starts: np.ndarray,
                 ends: np.ndarray) -> None:  # fmt: skip
        super().__init__()
        self.frame, self.present = frame, present
        self.names = frozenset(present)
        self.starts, self.ends = starts, ends
        self._edges: dict[tuple[str, int], list[Any]] = {}

    def edges(self, column: str, position: int) -> list[Any]:
        """Each run's first (``position`` 0) or last (-1) value of ``column``, as the column's
        list holds them (:meth:`at` the runs' first or last events, once per column)."""
        found = self._edges.get((column, position))
        if found is None:
            found = self._edges[column, position] = self.at(
                column, self.starts if position == 0 else self.ends - 1)  # fmt: skip
        return found

    def at(self, column: str, positions: np.ndarray) -> list[Any]:
        """``column``'s values at frame ``positions``, as its list holds them: off the list where
        made already, else read at those positions alone (making a whole column a list touches
        every cell, and after the payload scan few of them are still in the caches)."""
        made = dict.get(self, column)
        if made is not None:
            return [made[i] for i in positions.tolist()]
        return self.frame[column].iloc[positions].tolist()  # type: ignore[no-any-return]

    def __missing__(self, column: str) -> list[Any]:
        if column not in self.names:
            raise KeyError(column)
        found = self[column] = self.frame[column].tolist()
        return found


class _RunColumns(Mapping[str, list[Any]]):
    """One run's slice of each column, as a list (made when first asked for)."""

    def __init__(self, lists: _FrameLists, start: int, end: int) -> None:
        self._lists, self._start, self._end = lists, start, end
        self._made: dict[str, list[Any]] = {}

    def __getitem__(self, column: str) -> list[Any]:
        found = self._made.get(column)
        if found is None:
            found = self._made[column] = self._lists[column][self._start : self._end]
        return found

    def __contains__(self, column: object) -> bool:
        return column in self._lists.names

    def frame_list(self, column: str) -> list[Any]:
        """The whole frame's ``column`` as a list."""
        return self._lists[column]

    def edges(self, column: str, position: int) -> list[Any]:
        """:meth:`_FrameLists.edges`: each run's first or last value of ``column``."""
        return self._lists.edges(column, position)

    def at(self, column: str, positions: np.ndarray) -> list[Any]:
        """:meth:`_FrameLists.at`: ``column``'s values at frame ``positions``."""
        return self._lists.at(column, positions)

    def __iter__(self) -> Iterator[str]:
        return iter(self._lists.present)

    def __len__(self) -> int:
        return len(self._lists.present)


def _scheduled_types(frame: pd.DataFrame, event_type: EventTypes, starts: np.ndarray,
                     ends: np.ndarray) -> list[list[Any]]:  # fmt: skip
    """Per run, the activity types of its scheduled activities, in order."""
    if "activity_type" not in frame.columns:
        return [[] for _ in starts]
    scheduled = np.flatnonzero(event_type.mask("ActivityTaskScheduled"))
    names = frame["activity_type"].to_numpy(dtype=object)[scheduled].tolist()
    low = np.searchsorted(scheduled, starts).tolist()
    high = np.searchsorted(scheduled, ends).tolist()
    return [[t for t in names[a:b] if t] for a, b in zip(low, high, strict=True)]


def _ids_rise_within(ids: np.ndarray, starts: np.ndarray) -> bool:
    """Whether event ids rise within each run (runs starting at ``starts``)."""
    rising = ids[1:] > ids[:-1]
    rising[starts[1:] - 1] = True  # a run's first event follows another run's last
    return bool(rising.all())


def _roles_for(
    types: list[str], roles: str | Roles, source: Any
) -> tuple[Roles | None, str | None]:
    if isinstance(roles, Roles):
        return roles, None
    if roles == "auto":
        return _detected(tuple(sorted(collections.Counter(types).items())))
    try:
        return resolve_roles(roles, types, str(source or "<events>")), None
    except ToolkitError as error:
        return None, str(error)


@functools.lru_cache(maxsize=1024)
def _detected(counted: tuple[tuple[str, int], ...]) -> tuple[Roles | None, str | None]:
    """The preset that recognises a run's activities (counted by name): runs of a fleet
    mostly share a handful of such counts."""
    found = detect_roles(itertools.chain.from_iterable(
        itertools.repeat(name, times) for name, times in counted))  # fmt: skip
    if found is None:
        shown = [name for name, _ in counted][:5]
        return None, (f"no agent framework recognised (activity types {shown}); pass roles= "
                      "to name the model activities")  # fmt: skip
    return found, None


def calls_of(run: RunSizes) -> tuple[list[Call], dict[str, int] | None]:
    """The run's model calls in order, each with the history size right after its scheduling
    (its workflow task's recorded size plus the task's events up to the scheduled event) and
    the payload bytes every role had added by then; and those bytes for the whole run (None
    without roles). ``other`` is left 0: it is the history's size less the rest."""
    if run.roles is None:
        return [], None
    sizes = run._sizes
    if run._calls is None:
        low, high = sizes.calls_of_run(run._run)
        run._calls = _frame_calls(sizes, run.columns)[low:high]
    return run._calls, {key: values[run._run] for key, values in sizes.run_by_role_lists.items()}


def _frame_calls(sizes: FrameSizes, columns: _RunColumns) -> list[Call]:
    """Every model call of the frame measured, in order (made once; each run takes its own)."""
    if sizes.calls is not None:
        return sizes.calls
    at = sizes.call_position
    types = (columns.at("activity_type", at) if "activity_type" in columns
             else [None] * len(at))  # fmt: skip
    # The calls' positions from their run's first event.
    relative = (at - sizes.starts[sizes.call_run]).tolist() if len(at) else []
    by_role = zip(*(sizes.call_by_role[key].tolist() for key in ROLE_KEYS), strict=True)
    sizes.calls = [
        Call(position, event_id, activity_type, size, None if output < 0 else output, done,
             history, position + 1, roles)
        for event_id, activity_type, position, size, output, done, history, roles in zip(
            columns.at("event_id", at), types, relative, sizes.call_input.tolist(),
            sizes.call_output.tolist(), sizes.call_completed.tolist(),
            sizes.call_history_bytes.tolist(), by_role, strict=True)
    ]  # fmt: skip
    return sizes.calls


def user_turns(run: RunSizes) -> int:
    """User messages the run received (its start, user signals, user updates counted once), as
    :func:`toolkit.agents.turns.agent_steps` counts turns."""
    sizes = run._sizes
    if sizes.turns is None:
        sizes.turns = _frame_turns(sizes, run.columns)
    return sizes.turns[run._run]


def _frame_turns(sizes: FrameSizes, columns: _RunColumns) -> list[int]:
    """:func:`user_turns` of every run of the frame measured, at once: a run's start is a turn
    (where its roles say so) unless a user message came before its first activity; each user
    signal is one, each user update one however many of its events there are."""
    starts, ends = sizes.starts, sizes.ends
    runs, length = len(starts), ends - starts
    roles = sizes.run_roles or [None] * runs
    event_type = sizes.event_type
    run_of = np.repeat(np.arange(runs), length)
    turns = np.zeros(runs, np.int64)

    def first(types: tuple[str, ...]) -> np.ndarray:  # each run's first of them (else its end)
        at, low, high = sizes.type_rows(types)
        return np.where(high > low, np.append(at, 0)[low] - starts, length)

    signals = np.flatnonzero(event_type.mask("WorkflowExecutionSignaled"))
    if len(signals):
        names = (columns.at("signal_name", signals) if "signal_name" in columns
                 else [None] * len(signals))  # fmt: skip
        users: dict[tuple[int, Any], bool] = {}  # a handful of names: each asked once
        counted = []
        for p, name in zip(signals.tolist(), names, strict=True):
            mine = roles[run_of[p]]
            key = (id(mine), name)
            if key not in users:
                users[key] = mine is not None and mine.is_user_signal(name)
            counted.append(users[key])
        np.add.at(turns, run_of[signals[np.array(counted, bool)]], 1)
    updates = np.flatnonzero(event_type.mask(*_MESSAGES[1:]))
    if len(updates):
        none = [None] * len(updates)
        ids = columns.at("update_id", updates) if "update_id" in columns else none
        update_names = columns.at("update_name", updates) if "update_name" in columns else none
        seen: set[tuple[int, Any]] = set()
        for p, update_id, name in zip(updates.tolist(), ids, update_names, strict=True):
            run = int(run_of[p])
            key = update_id or p  # no id: the event apart
            mine = roles[run]
            if (run, key) not in seen and mine is not None and mine.is_user_update(name):
                seen.add((run, key))
                turns[run] += 1
    started = first(("WorkflowExecutionStarted",)) < length
    start_is_user = np.array([r is not None and r.start_is_user for r in roles], bool)
    # A start followed by a user message before any activity is no turn of its own.
    before = (turns > 0) & (first(_MESSAGES) < first(("ActivityTaskScheduled",)))
    turns += started & start_is_user & ~before
    turns[np.array([r is None for r in roles], bool)] = 0
    return turns.tolist()


_MESSAGES = ("WorkflowExecutionSignaled", "WorkflowExecutionUpdateAdmitted",
             "WorkflowExecutionUpdateAccepted")  # fmt: skip


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
    for run in runs_of(events, roles, totals=False):
        for number, call in enumerate(calls_of(run)[0], start=1):
            known = sum(v for k, v in call.by_role.items() if k != "other")
            by_role = {**call.by_role, "other": call.history_bytes - known}
            rows.append([run.value("source", 0), run.value("history", 0, 0), run.value("run_id", 0),
                         number, call.event_id, call.activity_type, call.completed,
                         call.history_bytes, call.events, call.input_bytes, call.output_bytes,
                         *[by_role[k] for k in ROLE_KEYS]])  # fmt: skip
    return rows
