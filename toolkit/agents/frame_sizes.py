"""Every run of an events frame measured at once: its model calls, the history size right after
each was scheduled, the bytes each role has added by then, and the whole history's size.

A history's size is known exactly at its checkpoints (each ``WorkflowTaskStarted`` records the
server's ``historySizeBytes``); in between, each event's size is estimated from one measured
event of its kind (workflow type, event type, activity type: their envelopes are a few bytes of
ids apart) plus the difference of their payload bytes, which are read off the payload cells
without decoding them (:func:`toolkit.histories.payload_cells.measure_payload_cells`). An event
carrying a failure, a termination, or one of a binary history (protobuf measures itself cheaply)
is measured, not estimated.

Which event of a kind is its sample is fixed by the order in which the runs are looked at: run by
run, each model call's stretch of events since its checkpoint, then the stretch the history's
size is read from (the events since the last checkpoint). The first event of each kind met in
that order, with no failure, is measured and stands for its kind in every later run of the frame;
a folder measured chunk by chunk carries its samples from chunk to chunk (:class:`KindSamples`),
so that each event is estimated as it would be in one frame of the whole folder.
:func:`measure_frame` does all of this with arrays over the whole frame; the per-event Python
that remains is the measuring of the samples.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pandas as pd
from temporalio.api.history.v1 import HistoryEvent

from toolkit.histories.columns.lazy import LazyProto, extra_of_attributes
from toolkit.histories.payload_cells import PayloadTexts, framed, measure_payload_cells
from toolkit.histories.proto_size import NotCanonical, message_size
from toolkit.histories.write import event_message

__all__ = ["ROLE_KEYS", "EventTypes", "FrameSizes", "KindSamples", "measure_frame"]

#: Keys of ``bytes_by_role``, in chart order (``other``: everything else in the history).
ROLE_KEYS = ("model_input", "model_output", "tool_input", "tool_result", "listing", "other")
#: Role codes of activities (``Roles.role_of``'s names).
_ROLE_CODE = {"other": 0, "model": 1, "listing": 2, "tool_call": 3}
_CLOSED_ACTIVITY = ("ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut",
                    "ActivityTaskCanceled")  # fmt: skip
#: Event types measured even where a measured event of their kind exists: their size is in
#: text no payload cell holds (a termination's reason, a failure's message and stack).
_ALWAYS_MEASURED = ("WorkflowExecutionTerminated", "WorkflowExecutionFailed",
                    "WorkflowTaskFailed", "ActivityTaskFailed")  # fmt: skip
#: Bytes two estimates of the same boundary may differ by (ids one digit longer, times).
_SLACK = 32


@dataclass
class KindSamples:
    """The samples of event kinds (module docstring) carried from one frame to the next.

    ``known``: each kind met in earlier frames, by its ``(workflow_type, event_type,
    activity_type)``, with its sample's envelope bytes (its size less its payload bytes); a
    frame measured with these takes a kind's sample from them rather than from its own events.
    ``added``: the kinds the last frame measured with them sampled itself, each with its
    envelope bytes and whether its sample's size is the server's (see ``FrameSizes.run_exact``).
    """

    known: dict[tuple[Any, Any, Any], int] = field(default_factory=dict)
    added: dict[tuple[Any, Any, Any], tuple[int, bool]] = field(default_factory=dict)


@dataclass
class FrameSizes:
    """What :func:`measure_frame` found, per event (arrays over the frame) and per run.

    Per model call (arrays in call order, runs in frame order): ``call_position`` (in the
    frame), ``call_run``, ``call_input``, ``call_output`` (-1 until the call closes),
    ``call_completed``, ``call_history_bytes`` and ``call_by_role`` (one array per key of
    :data:`ROLE_KEYS`, ``other`` left 0). Per run: ``run_total`` (the history's size, -1 where
    totals were not asked for), ``run_exact`` (every measured event measured as the server
    stores it), ``run_inexact_payloads`` and ``run_by_role``.
    """

    starts: np.ndarray
    ends: np.ndarray
    input_bytes: np.ndarray
    result_bytes: np.ndarray
    input_texts: _FrameTexts
    call_position: np.ndarray
    call_run: np.ndarray
    call_input: np.ndarray
    call_input_inexact: np.ndarray
    call_output: np.ndarray
    call_completed: np.ndarray
    call_history_bytes: np.ndarray
    call_by_role: dict[str, np.ndarray]
    run_total: np.ndarray
    run_exact: np.ndarray
    run_inexact_payloads: np.ndarray
    run_by_role: dict[str, np.ndarray]
    run_loaded: np.ndarray
    event_type: EventTypes
    #: Per run, its model inputs' ``(re-sent bytes, bytes)`` as the C scan read them (None for a
    #: run it left to :func:`toolkit.agents.resent.resent_of_run`, or without the scan).
    run_resent: list[tuple[int, int] | None] | None = None
    _found: dict[tuple[str, ...], tuple[list[int], list[int], list[int]]] = field(
        default_factory=dict)  # fmt: skip
    _call_bounds: tuple[list[int], list[int]] | None = None
    #: ``toolkit.agents.growth``'s records of every model call, made on first use.
    calls: list[Any] | None = None
    #: Each run's roles, as measured (None: no calls looked for).
    run_roles: list[Any] | None = None
    #: ``toolkit.agents.growth.user_turns`` of every run, made on first use.
    turns: list[int] | None = None
    #: What the budget reads for every run at once, made on first use (by name).
    derived: dict[str, Any] = field(default_factory=dict)

    # Lists read once per run, many times: made once for the frame.
    @functools.cached_property
    def run_bounds(self) -> tuple[list[int], list[int]]:
        """The runs' ``starts`` and ``ends`` as lists."""
        return self.starts.tolist(), self.ends.tolist()

    @functools.cached_property
    def run_by_role_lists(self) -> dict[str, list[int]]:
        """``run_by_role`` as lists."""
        return {key: values.tolist() for key, values in self.run_by_role.items()}

    @functools.cached_property
    def call_inputs(self) -> list[tuple[Any, bool] | None]:
        """Each call's input text (:class:`_FrameTexts`' entry), in call order."""
        return [self.input_texts[p] for p in self.call_position.tolist()]

    @functools.cached_property
    def _largest(self) -> tuple[list[int], ...]:
        """Every run's largest input and result cells, found at once: ``(input bytes, its
        position, result bytes, its position)`` as lists, positions from the run's first event,
        the first where several are as large."""
        found: list[list[int]] = []
        n = len(self.input_bytes)
        owner = np.repeat(np.arange(len(self.starts)), self.ends - self.starts)
        where = np.arange(n)
        for sizes in (self.input_bytes, self.result_bytes):
            peak = np.maximum.reduceat(sizes, self.starts) if n else sizes[:0]
            first = np.minimum.reduceat(np.where(sizes == peak[owner], where, n),
                                        self.starts) if n else sizes[:0]  # fmt: skip
            found += [peak.tolist(), (first - self.starts).tolist()]
        return tuple(found)

    def calls_of_run(self, run: int) -> tuple[int, int]:
        """Where run ``run``'s calls are in the call arrays (they are in run order)."""
        if self._call_bounds is None:
            runs = np.arange(len(self.starts))
            self._call_bounds = (np.searchsorted(self.call_run, runs, side="left").tolist(),
                                 np.searchsorted(self.call_run, runs, side="right").tolist())
        return self._call_bounds[0][run], self._call_bounds[1][run]

    def positions(self, run: int, types: tuple[str, ...]) -> list[int]:
        """Where in run ``run`` (from its first event) the events of ``types`` are, in order:
        found for the whole frame once per ``types``, so no run's events are looked through."""
        found = self._found.get(types)
        if found is None:
            at, low, high = self.type_rows(types)
            owner = np.repeat(np.arange(len(self.starts)), high - low)
            found = self._found[types] = ((at - self.starts[owner]).tolist(), low.tolist(),
                                          high.tolist())  # fmt: skip
        return found[0][found[1][run] : found[2][run]]

    def type_rows(self, types: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The frame positions of the events of ``types``, in order, and where each run's are
        among them (run ``r``'s: ``at[low[r]:high[r]]``)."""
        at = np.flatnonzero(self.event_type.mask(*types))
        return at, np.searchsorted(at, self.starts), np.searchsorted(at, self.ends)


class EventTypes:
    """The frame's event types as small integer codes, for masks without string compares."""

    def __init__(self, event_type: np.ndarray) -> None:
        self.codes, names = pd.factorize(event_type)
        self._code = {name: code for code, name in enumerate(names.tolist())}
        self.count = len(self._code)  # distinct types

    def mask(self, *types: str) -> np.ndarray:
        """Whether each event is of one of ``types``."""
        wanted = [self._code[t] for t in types if t in self._code]
        if len(wanted) == 1:
            return self.codes == wanted[0]
        return np.isin(self.codes, wanted)


def measure_frame(
    frame: pd.DataFrame, starts: np.ndarray, ends: np.ndarray, roles: list[Any], *,
    totals: bool = True, event_type: EventTypes | None = None, samples: KindSamples | None = None,
) -> FrameSizes:  # fmt: skip
    """Measure every run of ``frame`` (in run order: run ``r`` is rows ``starts[r]`` to
    ``ends[r]``, events by id), ``roles[r]`` naming its model, tool and listing activities
    (None: no calls are looked for). ``totals``: also read each history's whole size.
    ``event_type``: the frame's event types, where the caller has them already. ``samples``:
    the kinds' samples of the frames measured before this one (filled in with this frame's)."""
    n = len(frame)
    run_of = np.repeat(np.arange(len(starts)), ends - starts)
    if event_type is None:
        event_type = EventTypes(frame["event_type"].to_numpy(dtype=object))
    ids = frame["event_id"].to_numpy(dtype=np.int64)
    role, link_role, target_of = _roles_of_events(frame, event_type, ids, run_of, roles)
    scheduled = event_type.mask("ActivityTaskScheduled")
    calls = np.flatnonzero(scheduled & (role == 1))
    call_run = run_of[calls]
    # The model inputs' re-sent share is read as the inputs are scanned (each read once).
    groups = np.full(n, -1, np.int64)
    groups[calls] = call_run
    in_b, in_inexact, in_texts = _payload_column(frame, "input", groups)
    res_b, res_inexact, _ = _payload_column(frame, "result")
    closed = event_type.mask(*_CLOSED_ACTIVITY)
    contributions = {
        "model_input": np.where(scheduled & (role == 1), in_b, 0),
        "model_output": np.where(closed & (link_role == 1), res_b, 0),
        "tool_input": np.where(scheduled & (role == 3), in_b, 0),
        "tool_result": np.where(closed & (link_role == 3), res_b, 0),
        "listing": np.where(scheduled & (role == 2), in_b, 0)
        + np.where(closed & (link_role == 2), res_b, 0),
    }
    running = {key: np.cumsum(values) for key, values in contributions.items()}
    before_run = {key: np.concatenate([[0], values])[starts] for key, values in running.items()}
    call_by_role = {key: running[key][calls] - before_run[key][call_run] for key in running}
    call_by_role["other"] = np.zeros(len(calls), dtype=np.int64)
    run_by_role = {key: np.concatenate([[0], running[key]])[ends] - before_run[key]
                   for key in running}  # fmt: skip
    run_by_role["other"] = np.zeros(len(starts), dtype=np.int64)
    output, completed = _outputs(event_type, calls, res_b, link_role, target_of)

    sizes = _EventSizes(frame, event_type, run_of, starts, ends, in_b + res_b, samples)
    call_history = sizes.after_calls(calls, call_run, totals)
    return FrameSizes(
        starts=starts, ends=ends, input_bytes=in_b, result_bytes=res_b, input_texts=in_texts,
        call_position=calls, call_run=call_run, call_input=in_b[calls],
        call_input_inexact=in_inexact[calls], call_output=output,
        call_completed=completed, call_history_bytes=call_history, call_by_role=call_by_role,
        run_total=sizes.run_total, run_exact=sizes.run_exact,
        run_inexact_payloads=np.add.reduceat(in_inexact.astype(np.int64)
                                             + res_inexact, starts) if n else
        np.zeros(0, np.int64),
        run_by_role=run_by_role, run_loaded=sizes.loaded, event_type=event_type,
        run_resent=_run_shares(in_texts.texts.shares, call_run, len(starts)), run_roles=roles,
    )  # fmt: skip


def _run_shares(shares: np.ndarray | None, call_run: np.ndarray,
                runs: int) -> list[tuple[int, int] | None] | None:  # fmt: skip
    """Per run, ``(re-sent bytes, model input bytes)`` where the scan read every one of its model
    inputs (None: left to :func:`toolkit.agents.resent.resent_of_run`'s own reading)."""
    if shares is None:
        return None
    calls = np.bincount(call_run, minlength=runs)
    read = np.full(runs, -1, np.int64)  # runs after the last model input's: none read
    read[: shares.shape[1]] = shares[2]
    whole = (read == calls) & (calls > 0)
    out: list[tuple[int, int] | None] = [None] * runs
    for run in np.flatnonzero(whole).tolist():
        out[run] = (int(shares[0, run]), int(shares[1, run]))
    return out


def _payload_column(frame: pd.DataFrame, column: str, groups: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, Any]:  # fmt: skip
    """The encoded size of each event's cell of ``column``, whether inexact, and the texts of
    those holding one JSON payload (by frame position); only the cells present are looked at
    (a few events in five carry an input or a result). ``groups``: per event, the run whose
    model input it is (-1: none), for :func:`measure_payload_cells`."""
    sizes, inexact = np.zeros(len(frame), np.int64), np.zeros(len(frame), bool)
    if column not in frame.columns:
        return sizes, inexact, _FrameTexts(np.zeros(0, np.int64), PayloadTexts())
    present = np.flatnonzero(frame[column].notna().to_numpy())
    found, bad, texts = measure_payload_cells(
        frame[column].to_numpy(dtype=object)[present].tolist(),
        None if groups is None else groups[present])  # fmt: skip
    sizes[present], inexact[present] = found, bad
    return sizes, inexact, _FrameTexts(present, texts)


class _FrameTexts:
    """:class:`~toolkit.histories.payload_cells.PayloadTexts` of a column's present cells,
    looked up by frame position."""

    def __init__(self, present: np.ndarray, texts: PayloadTexts) -> None:
        self.texts = texts
        self._index: dict[int, int] | None = None
        self._present = present

    def __getitem__(self, position: int) -> tuple[Any, bool] | None:
        if self._index is None:
            self._index = {p: k for k, p in enumerate(self._present.tolist())}
        at = self._index.get(position)
        return None if at is None else self.texts[at]


def _roles_of_events(
    frame: pd.DataFrame, event_type: EventTypes, ids: np.ndarray, run_of: np.ndarray,
    roles: list[Any],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The role code of each scheduled activity, of the activity each closing event closes,
    and the position of that scheduling (an earlier one of the same run with the id the closing
    event links to; -1 for none)."""
    n = len(frame)
    role = np.zeros(n, dtype=np.int8)
    link_role = np.zeros(n, dtype=np.int8)
    target_of = np.full(n, -1, dtype=np.int64)
    if "activity_type" not in frame.columns or not n:
        return role, link_role, target_of
    scheduled = np.flatnonzero(event_type.mask("ActivityTaskScheduled"))
    codes, names = pd.factorize(frame["activity_type"].to_numpy(dtype=object)[scheduled])
    owners = run_of[scheduled]
    by_roles: dict[int, tuple[Any, list[int]]] = {}
    for run, found in enumerate(roles):
        if found is not None:
            by_roles.setdefault(id(found), (found, []))[1].append(run)
    for found, runs in by_roles.values():
        table = np.array([_ROLE_CODE[found.role_of(name)] for name in names] + [0], np.int8)
        mine = np.isin(owners, runs)
        role[scheduled[mine]] = table[codes[mine]]  # code -1 (no type): the last, "other"
    closed = np.flatnonzero(event_type.mask(*_CLOSED_ACTIVITY))
    if not len(closed) or not len(scheduled) or "scheduled_event_id" not in frame.columns:
        return role, link_role, target_of
    links = frame["scheduled_event_id"].to_numpy(dtype=np.float64, na_value=np.nan)[closed]
    width = int(ids.max()) + 2
    keys = owners.astype(np.int64) * width + ids[scheduled]
    order = np.argsort(keys, kind="stable")
    known = ~np.isnan(links)
    wanted = run_of[closed].astype(np.int64) * width + np.where(known, links, -1).astype(np.int64)
    at = np.clip(np.searchsorted(keys[order], wanted), 0, len(keys) - 1)
    target = scheduled[order[at]]
    hit = known & (keys[order[at]] == wanted) & (target < closed)
    link_role[closed[hit]] = role[target[hit]]
    target_of[closed[hit]] = target[hit]
    return role, link_role, target_of


def _outputs(
    event_type: EventTypes, calls: np.ndarray, res_b: np.ndarray, link_role: np.ndarray,
    target_of: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each model call's result bytes (-1 while open) and whether it completed: from the last
    event that closed it."""
    output = np.full(len(calls), -1, dtype=np.int64)
    completed = np.zeros(len(calls), dtype=bool)
    closing = np.flatnonzero(link_role == 1)
    if not len(closing) or not len(calls):
        return output, completed
    at = np.searchsorted(calls, target_of[closing])  # a model scheduling: one of the calls
    # The last closing event of a call decides (later ones overwrite, as events happen).
    last = np.unique(at[::-1], return_index=True)[1]
    picked = len(at) - 1 - last
    output[at[picked]] = res_b[closing[picked]]
    completed[at[picked]] = event_type.mask("ActivityTaskCompleted")[closing[picked]]
    return output, completed


class _EventSizes:
    """The size of each event looked at, and the history sizes built from them."""

    def __init__(self, frame: pd.DataFrame, event_type: EventTypes, run_of: np.ndarray,
                 starts: np.ndarray, ends: np.ndarray, payloads: np.ndarray,
                 samples: KindSamples | None = None) -> None:  # fmt: skip
        self.frame, self.event_type, self.run_of = frame, event_type, run_of
        self.samples = samples
        self.starts, self.ends, self.payloads = starts, ends, payloads
        self.has_extra = "extra" in frame.columns
        self.extra = (frame["extra"].to_numpy(dtype=object) if self.has_extra
                      else np.full(len(frame), None, dtype=object))  # fmt: skip
        self.points, self.point_bytes, self.loaded = _checkpoints(frame, event_type, run_of,
                                                                  starts)  # fmt: skip
        self.run_total = np.full(len(starts), -1, dtype=np.int64)
        self.run_exact = np.ones(len(starts), dtype=bool)
        # The attributes cells as an array, for _extra_of (a pandas lookup per event measured
        # costs more than the measuring)
        self._attributes = (frame["attributes"].to_numpy(dtype=object)
                            if "attributes" in frame.columns else None)  # fmt: skip

    def after_calls(self, calls: np.ndarray, call_run: np.ndarray, totals: bool) -> np.ndarray:
        """The history size right after each call's scheduling; with ``totals`` the runs'
        whole sizes too (``run_total``)."""
        # Each call's stretch: from the last checkpoint at or before the event after it.
        points = np.concatenate([[-1], self.points])  # -1: before every checkpoint
        point_bytes = np.concatenate([[0], self.point_bytes])
        at = np.searchsorted(points, calls + 1, side="right") - 1
        valid = (at > 0) & (self.run_of[np.maximum(points[at], 0)] == call_run)
        call_start = np.where(valid, points[at], self.starts[call_run])
        call_base = np.where(valid, point_bytes[at], 0)
        stretches = [(call_start, calls + 1, call_run, np.zeros(len(calls), np.int64))]
        if totals:
            stretches.append(self._total_stretches())
        self._measure_stretches(stretches)
        running = np.concatenate([[0], np.cumsum(self.sizes)])
        if totals:
            self._totals(running)
        return call_base + running[calls + 1] - running[call_start]

    def _total_stretches(self) -> tuple[np.ndarray, ...]:
        """The stretches the runs' sizes are read from: the events since the one but last
        checkpoint (where the last may have to move back), or the whole run without any."""
        runs = np.arange(len(self.starts))
        count = np.bincount(self.run_of[self.points], minlength=len(runs)) if len(
            self.points) else np.zeros(len(runs), np.int64)  # fmt: skip
        last = np.cumsum(count) - 1
        starts, stops, owners, phase = [], [], [], []
        has = count > 0
        two = count >= 2
        # phase 1: the one but last checkpoint up to and with the last; phase 2: the rest
        starts.append(self.points[last[two] - 1])
        stops.append(self.points[last[two]] + 1)
        owners.append(runs[two])
        phase.append(np.ones(two.sum(), np.int64))
        starts.append(np.where(has, self.points[np.maximum(last, 0)] if len(self.points)
                               else 0, self.starts))  # fmt: skip
        stops.append(self.ends)
        owners.append(runs)
        phase.append(np.where(has, 2, 3))  # 3: no checkpoint, every event measured
        self._last_point = np.where(has, last, -1)
        return tuple(np.concatenate(parts) for parts in (starts, stops, owners, phase))

    def _measure_stretches(self, stretches: list[tuple[np.ndarray, ...]]) -> None:
        """The sizes of every event of the stretches, in the order they are looked at: run by
        run, its calls' stretches first, then its total's."""
        start, stop, owner, phase = (np.concatenate(parts) for parts in zip(*stretches,
                                                                           strict=True))
        order = np.lexsort((phase, owner))  # stable: calls in order, then the total's
        start, stop, owner, phase = start[order], stop[order], owner[order], phase[order]
        lengths = np.maximum(stop - start, 0)
        looked = _ranges(start, lengths)
        seen_at = np.zeros(len(self.run_of), bool)  # np.unique's sorted positions, by a mask
        seen_at[looked] = True
        every = np.flatnonzero(seen_at)
        kinds = self._kinds(every)
        failure = self._failures()
        # A binary history's events are all protobuf messages: one look per run.
        proto = np.array([isinstance(x, LazyProto) for x in self.extra[self.starts]],
                         bool)[self.run_of] if len(self.starts) else np.zeros(0, bool)  # fmt: skip
        always = self.event_type.mask(*_ALWAYS_MEASURED)
        sampleable = ~failure & ~proto
        seen = looked[sampleable[looked]]
        _, first = np.unique(kinds[seen], return_index=True)
        samples = seen[first]
        envelope = np.zeros(int(kinds.max()) + 1 if len(kinds) else 1, np.int64)
        keys: list[tuple[Any, Any, Any]] = []
        if self.samples is not None and len(samples):
            # Kinds an earlier frame sampled keep that sample's envelope; the rest are sampled
            # here, as in one frame of both.
            keys = self._kind_keys(samples)
            earlier = [self.samples.known.get(key) for key in keys]
            before = np.array([bytes_ is not None for bytes_ in earlier], bool)
            envelope[kinds[samples[before]]] = [b for b in earlier if b is not None]
            keys = [key for key, old in zip(keys, before.tolist(), strict=True) if not old]
            samples = samples[~before]
        measured = np.union1d(looked[(failure | always | proto)[looked]], samples)
        everything = _ranges(start[phase == 3], lengths[phase == 3])
        to_measure = np.union1d(measured, everything)
        found = np.zeros(len(self.run_of), np.int64)
        exact = np.ones(len(self.run_of), bool)
        for position in to_measure.tolist():
            found[position], exact[position] = self._measure(position)
        envelope[kinds[samples]] = found[samples] - self.payloads[samples]
        if self.samples is not None:
            found_here = zip(envelope[kinds[samples]].tolist(), exact[samples].tolist(),
                             strict=True)  # fmt: skip
            self.samples.added = dict(zip(keys, found_here, strict=True))
        estimated = np.setdiff1d(every, measured, assume_unique=True)
        sizes = np.zeros(len(self.run_of), np.int64)
        sizes[estimated] = envelope[kinds[estimated]] + self.payloads[estimated]
        sizes[measured] = found[measured]
        self.sizes, self.measured_sizes = sizes, found
        bad = to_measure[~exact[to_measure]]
        self.run_exact[self.run_of[bad]] = False

    def _totals(self, running: np.ndarray) -> None:
        """Each run's size: its last checkpoint plus the events after it, the checkpoint first
        checked against the one before it (a workflow task the server started in the same write
        as the events before it records the size before them). Whole numbers throughout: every
        run at once, as arrays."""
        whole = np.concatenate([[0], np.cumsum(self.measured_sizes)])
        last = self._last_point
        none = last < 0
        self.run_total[none] = whole[self.ends[none]] - whole[self.starts[none]]
        runs = np.flatnonzero(~none)
        if not len(runs):
            return
        at = last[runs]
        start, base = self.points[at].copy(), self.point_bytes[at]
        before = np.maximum(at - 1, 0)
        paired = (at >= 1) & (self.run_of[self.points[before]] == runs)
        if paired.any():
            p0, s0 = self.points[before][paired], self.point_bytes[before][paired]
            stop, mine = start[paired], base[paired]
            lengths = stop + 1 - p0  # each run's stretch p0..start, both included
            where = _ranges(p0, lengths)
            segment = np.repeat(np.arange(len(p0)), lengths)
            away = np.abs(s0[segment] + running[where] - running[p0][segment] - mine[segment])
            offsets = np.cumsum(lengths) - lengths
            least = np.minimum.reduceat(away, offsets)
            # The first position of each stretch as close as its closest (argmin's choice).
            hits = np.flatnonzero(away == least[segment])
            _, first = np.unique(segment[hits], return_index=True)
            boundary = where[hits[first]] - p0
            moved = (least <= _SLACK) & (p0 + boundary < stop)
            start[np.flatnonzero(paired)[moved]] = (p0 + boundary)[moved]
        self.run_total[runs] = base + running[self.ends[runs]] - running[start]

    def _kinds(self, positions: np.ndarray) -> np.ndarray:
        """A code per event for its kind (workflow type, event type and activity type), at
        ``positions`` (-1 elsewhere)."""
        codes = np.zeros(len(positions), np.int64)
        for column in ("workflow_type", "event_type", "activity_type"):
            if column == "event_type":  # numbered already, over the frame
                found, count = self.event_type.codes[positions], self.event_type.count
            elif column in self.frame.columns:
                values = self.frame[column].to_numpy(dtype=object)[positions]
                found, names = pd.factorize(values)
                count = len(names)
            else:
                continue
            # Any numbering that tells the values apart gives the same kinds: they are
            # numbered again below, in the order first met.
            codes = codes * (count + 1) + found + 1
        kinds = np.full(len(self.run_of), -1, np.int64)
        kinds[positions] = pd.factorize(codes)[0]
        return kinds

    def _kind_keys(self, positions: np.ndarray) -> list[tuple[Any, Any, Any]]:
        """``(workflow_type, event_type, activity_type)`` of the events at ``positions``, what
        :meth:`_kinds` tells kinds apart by (None for a missing value, as it numbers them)."""
        columns = []
        for column in ("workflow_type", "event_type", "activity_type"):
            if column not in self.frame.columns:
                columns.append([None] * len(positions))
                continue
            values = self.frame[column].to_numpy(dtype=object)[positions]
            columns.append([None if pd.isna(v) else v for v in values.tolist()])
        return list(zip(*columns, strict=True))

    def _failures(self) -> np.ndarray:
        """Whether each event carries a failure's message."""
        if "failure_message" not in self.frame.columns:
            return np.zeros(len(self.run_of), bool)
        values = self.frame["failure_message"].to_numpy(dtype=object)
        failure = pd.notna(values)
        at = np.flatnonzero(failure)
        failure[at] = [isinstance(v, str) for v in values[at]]
        return failure

    def _measure(self, position: int) -> tuple[int, bool]:
        """An event's size framed in a ``History``, and whether it is the server's."""
        extra = self.extra[position]
        if isinstance(extra, LazyProto):
            return framed(extra.message.ByteSize()), True
        made = extra is None and self.has_extra  # read without its extra cell: made here
        if made:
            extra = self._extra_of(position)
        raw = getattr(extra, "raw", None)
        if raw is not None:
            try:
                event = msgspec.json.decode(bytes(raw))
                return framed(message_size(event, HistoryEvent.DESCRIPTOR)), True
            except NotCanonical:
                pass
        row = self.frame.iloc[position].to_dict()
        if made:
            row["extra"] = extra
        return framed(event_message(row).ByteSize()), False

    def _extra_of(self, position: int) -> Any:
        """The ``extra`` cell of a raw JSON event read without it (``without_extra_cells``):
        made from its attributes cell, which holds the same event; None for any other."""
        cells = self._attributes
        return extra_of_attributes(cells[position]) if cells is not None else None


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``start, start + 1, ...`` of each range, concatenated in order."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, np.int64)
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total) - offsets + np.repeat(starts, lengths)


def _checkpoints(frame: pd.DataFrame, event_type: EventTypes, run_of: np.ndarray,
                 starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Positions and server sizes of the workflow tasks started with a recorded size, in
    frame order: from the loader's ``history_size_bytes`` column, or, for a run whose column
    holds no value (a frame or dataset rows from before it, an old server), off the tasks'
    attributes; and per run whether the column held its sizes."""
    n = len(frame)
    sizes = np.zeros(n, np.int64)
    loaded = np.zeros(len(starts), bool)
    if "history_size_bytes" in frame.columns and n:
        column = frame["history_size_bytes"]
        present = column.notna().to_numpy()
        sizes = column.to_numpy(dtype=np.float64, na_value=0).astype(np.int64)
        loaded = np.add.reduceat(present.astype(np.int64), starts) > 0
    fallback = ~loaded[run_of] & event_type.mask("WorkflowTaskStarted") if n else (
        np.zeros(0, bool))  # fmt: skip
    if fallback.any():
        cells = frame["attributes"].to_numpy(dtype=object) if "attributes" in frame else None
        for position in np.flatnonzero(fallback).tolist():
            sizes[position] = _history_size_bytes(cells[position] if cells is not None else None)
    keep = (sizes > 0) & (loaded[run_of] | fallback) if n else np.zeros(0, bool)
    points = np.flatnonzero(keep)
    return points, sizes[points], loaded


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
