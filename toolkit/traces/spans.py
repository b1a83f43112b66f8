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

from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.activity_turns import ActivityTurns, activity_turns, column_at
from toolkit.agents.roles import Roles
from toolkit.gc_pause import paused_gc
from toolkit.traces.activity_facts import activity_facts
from toolkit.traces.known_activities import known_facts
from toolkit.traces.span_columns import ROW_FIELDS, hashed, root_columns, span_columns
from toolkit.traces.span_rows import (
    _TASK_FAILURES,
    ACTIVITY_FIELDS,
    SPAN_COLUMNS,
    ModelAttributes,
    RunSpans,
    _nanos,
    span_ids,
)

__all__ = ["SPAN_COLUMNS", "span_ids", "trace_spans"]

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
    runs = RunSpans.many({name: values.tolist() for name, values in facts.heads.items()},
                         found.runs, namespace, facts.first_time, facts.last_time)  # fmt: skip
    # Every run's trace id and root span id in two passes (span_ids' texts).
    for run, trace, root in zip(runs, hashed([f"{run.namespace}\x1f{run.key}" for run in runs], 16),
                                hashed([f"{run.id_prefix}1\x1fworkflow" for run in runs]),
                                strict=True):  # fmt: skip
        run.trace_id, run.root_id = trace, root
    roots = root_columns(runs, facts.lasts["event_type"].tolist(),
                         facts.lasts["failure_message"].tolist(), facts.failures)  # fmt: skip
    starts_of = [[] if _key(source) in unrecognised else found.turns.get((source, history), [])
                 for source, history in found.runs]  # fmt: skip
    acts = facts.activities(content, unrecognised)
    turns, activities, genai, genai_of = span_columns(
        runs, acts, starts_of, facts.times, model_attributes or {}, content)  # fmt: skip
    # The roots' columns (ROW_FIELDS: the run's code, then the span's own fields).
    root_section = [list(range(len(runs))), *roots]
    # Each run's spans together, in the order of the run-by-run walk: its root, its turns,
    # then each activity followed by its GenAI span.
    big = 1 << 40
    count = len(activities[0])
    sub = np.concatenate([
        np.zeros(len(runs), dtype=np.int64),
        np.arange(1, len(turns[0]) + 1, dtype=np.int64),
        big + 2 * np.arange(count, dtype=np.int64),
        big + 1 + 2 * np.array(genai_of, dtype=np.int64),
    ])  # fmt: skip
    sections = (root_section, turns, activities, genai)
    codes = np.fromiter(chain.from_iterable(section[0] for section in sections), dtype=np.int64)
    order = np.lexsort((sub, codes))
    return _table(runs, codes[order], order,
                  [list(chain.from_iterable(section[i] for section in sections))
                   for i in range(1, len(ROW_FIELDS))])  # fmt: skip


def _table(runs: list[RunSpans], codes: np.ndarray, order: np.ndarray,
           columns: list[list[Any]]) -> pd.DataFrame:
    """The spans table: each run's columns from its ``codes`` (in table order), the spans'
    own ``columns`` (:data:`ROW_FIELDS` after ``code``, the runs' spans first, times in
    nanoseconds or None) taken in ``order``, each column made in its dtype at once."""
    data: dict[str, Any] = {}
    for name in ("source", "history", "run_id", "trace_id"):
        values = np.empty(len(runs), dtype=object)
        values[:] = [getattr(run, name) for run in runs]  # str or None: no nesting
        taken = values[codes]
        data[name] = (taken.astype(np.int64) if name == "history"
                      else pd.Series(taken, dtype=object, copy=False))  # fmt: skip
    for name, values in zip(SPAN_COLUMNS[4:], columns, strict=True):
        if name == "event_id":
            data[name] = np.array(values, dtype=np.int64)[order]
        elif name == "turn":  # None for the runs' spans (the first ones), ints after them
            ints = np.zeros(len(values), dtype=np.int64)
            ints[len(runs):] = values[len(runs):]
            data[name] = pd.arrays.IntegerArray(ints[order], order < len(runs))
        elif name in ("start", "end"):  # NaT where None
            nanos = np.array([_NAT if v is None else v for v in values], dtype=np.int64)[order]
            # localized as an index, then held as it is (no Series copied, localized, copied)
            data[name] = pd.Series(pd.DatetimeIndex(nanos.view("M8[ns]")).tz_localize("UTC"),
                                   copy=False)  # fmt: skip
        else:  # object, not pandas' string dtype: a missing parent stays None (NaN is no id)
            # the array taken is the table's own: held, not copied (pandas 3 copies by default)
            data[name] = pd.Series(np.fromiter(values, dtype=object, count=len(values))[order],
                                   dtype=object, copy=False)  # fmt: skip
    return pd.DataFrame(data, columns=SPAN_COLUMNS)


_NAT = np.iinfo(np.int64).min  # NaT's nanoseconds
_NO_RUN = object()  # no activity's source


_UTC_NS = pd.DatetimeTZDtype("ns", "UTC")


def _run_times(times: pd.Series, run: np.ndarray,
               first_row: np.ndarray) -> tuple[list[int | None], list[int | None]]:  # fmt: skip
    """Each run's earliest and latest time in nanoseconds (None where it has none), runs in
    code order: off the loader's UTC nanoseconds by segment where each run's rows come
    together in code order (as the loader reads them), else by a groupby of the times."""
    if len(run) and times.dtype == _UTC_NS and bool((run[1:] >= run[:-1]).all()):
        nanos = pd.DatetimeIndex(times).asi8  # NaT: the int64 minimum
        valid = nanos != _NAT
        # The earliest of each run's valid times (NaT put past every time), the latest (NaT
        # is below every time); a run without one has neither, as the groupby gives NaT.
        earliest = np.minimum.reduceat(np.where(valid, nanos, np.iinfo(np.int64).max), first_row)
        latest = np.maximum.reduceat(nanos, first_row)
        timed = np.add.reduceat(valid.astype(np.int64), first_row) > 0
        return ([int(t) if ok else None for t, ok in zip(earliest.tolist(), timed.tolist(),
                                                         strict=True)],
                [int(t) if ok else None for t, ok in zip(latest.tolist(), timed.tolist(),
                                                         strict=True)])  # fmt: skip
    grouped = times.groupby(run, sort=True)
    return ([_nanos(t) for t in grouped.min().tolist()],
            [_nanos(t) for t in grouped.max().tolist()])  # fmt: skip


def _first_last_rows(run: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run code's first and last position in ``run`` (codes ascending, as
    ``np.unique(run, return_index=True)`` gives the first): where the code changes, where each
    run's rows come together in code order (as the loader reads them: no sort), else by
    ``np.unique`` of ``run`` and of it reversed."""
    count = len(run)
    if count and bool((run[1:] >= run[:-1]).all()):
        change = np.empty(count, dtype=bool)
        change[0] = True
        np.not_equal(run[1:], run[:-1], out=change[1:])
        first = np.flatnonzero(change)
        return first, np.append(first[1:] - 1, count - 1)
    return (np.unique(run, return_index=True)[1],
            count - 1 - np.unique(run[::-1], return_index=True)[1])  # fmt: skip


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
        # A run's first and last events in frame order (the row-wise walk's iloc[0], iloc[-1]).
        self.first_row, self.last_row = _first_last_rows(run)
        self.heads = {name: column_at(events, name, self.first_row) for name in self._HEAD}
        self.lasts = {name: column_at(events, name, self.last_row)
                      for name in ("event_type", "failure_message")}  # fmt: skip
        times = events["event_time"]
        # Times in nanoseconds (RunSpans takes them so), None where missing.
        self.first_time, self.last_time = _run_times(times, run, self.first_row)
        # The task failures' rows off the event types' codes (found.positions: a table of the
        # codes taken, no object array compared with each text).
        type_codes, type_names = found.positions["types"]
        failure_codes = np.zeros(len(type_names) + 1, dtype=bool)
        failure_codes[:-1] = [name in _TASK_FAILURES for name in type_names]
        failed = np.flatnonzero(failure_codes[type_codes])
        wanted = [c for c in self._FAILURE if c in events.columns]
        self.failures: dict[int, list[dict[str, Any]]] = {}
        # Those rows of those columns alone, each column taken as objects (no records frame:
        # root reads each value through str, int, _text and _time, which take them as
        # to_dict gives them).
        picked = [column_at(events, c, failed).tolist() for c in wanted]
        for code, *values in zip(run[failed].tolist(), *picked, strict=True):
            self.failures.setdefault(code, []).append(dict(zip(wanted, values, strict=True)))
        # The times of the turns' user messages, by (run, event id), in nanoseconds.
        rows = np.array([r for m in found.positions["messages"].values() for r in m], dtype=int)
        if times.dtype == _UTC_NS:  # the loader's: _nanos of each without its timestamp
            nanos = pd.DatetimeIndex(times).asi8[rows]
            stamps = [None if t == _NAT else t for t in nanos.tolist()]
        else:
            stamps = [_nanos(t) for t in times.iloc[rows].tolist()] if len(rows) else []
        self.times = dict(zip(
            zip(run[rows].tolist(), events["event_id"].to_numpy()[rows].tolist(), strict=True),
            stamps, strict=True))  # fmt: skip

    def head(self, code: int) -> dict[str, Any]:
        """The run's first event: its namespace, run id, workflow id and type."""
        return {name: values[code] for name, values in self.heads.items()}

    def activities(self, content: bool, unrecognised: set[Any]) -> dict[str, list[Any]]:
        """The activities of the runs (:func:`toolkit.activities`' rows, the columns of
        :func:`activity_facts`), in run code order then in the table's; with their ``code``,
        scheduled event ids as ints, and each one's ``turn`` and ``role`` (0 and ``other``
        where :attr:`ActivityTurns.spans` has none or its source is ``unrecognised``)."""
        # Payloads stay undecoded cells unless their contents go into the spans.
        known = known_facts(self.events, self.found, payloads=content, nanos=True)
        if known is not None:  # read at the rows found, in the spans' order
            columns = {name: values for name, values in known.items() if name in ACTIVITY_FIELDS}
            columns["code"] = self.found.positions["run"].tolist()
            spans = self.found.spans
            # The same ids as ints (known_facts reads them at the rows the spans hold), and the
            # int64 and text columns: their lists hold ints and strs already.
            columns["scheduled_event_id"] = spans["event_id"].to_numpy().tolist()
            columns["turn"] = spans["turn"].to_numpy().tolist()
            columns["role"] = spans["role"].tolist()
            return columns
        facts = activity_facts(self.events, payloads=content, nanos=True)
        code_of = {(_key(s), int(h)): code for code, (s, h) in enumerate(self.found.runs)}
        codes: list[int] = []
        # A run's activities come together: its code is looked up once for them, when the
        # source is the same object and the history the same int as the activity's before.
        source, history, code = _NO_RUN, None, -1
        for act_source, act_history in zip(facts["source"], facts["history"], strict=True):
            if act_source is not source or type(act_history) is not int or act_history != history:
                source, history = act_source, act_history
                code = code_of.get((_key(source), int(history)), -1)
            codes.append(code)
        # Those of no run dropped, the others by run (stable: the table's order within one).
        where = np.array(codes, dtype=np.int64)
        order = np.argsort(where, kind="stable")
        order = order[where[order] >= 0]
        columns = {name: values for name, values in facts.items()
                   if name in ACTIVITY_FIELDS}  # fmt: skip
        if len(order) != len(codes) or bool((order != np.arange(len(order))).any()):
            positions = order.tolist()
            columns = {name: [values[i] for i in positions] for name, values in columns.items()}
        columns["code"] = where[order].tolist()
        columns["scheduled_event_id"] = [int(e) for e in columns["scheduled_event_id"]]
        columns["turn"], columns["role"] = self._turns_roles(
            columns["code"], columns["scheduled_event_id"], unrecognised)  # fmt: skip
        return columns

    def _turns_roles(self, codes: list[int], event_ids: list[int],
                     unrecognised: set[Any]) -> tuple[list[int], list[str]]:  # fmt: skip
        """Each activity's (turn, role) by its run code and scheduled event id, from the
        activity turns of the recognised sources."""
        spans, run = self.found.spans, self.found.positions["run"]
        if not unrecognised and len(run) == len(codes):
            # As the two tables are read: the same activities in the same order (keys unique:
            # the activities table has one row per activity).
            ids = spans["event_id"].to_numpy()
            if bool((run == np.array(codes, dtype=np.int64)).all()) and bool(
                    (ids == np.array(event_ids, dtype=np.int64)).all()):  # fmt: skip
                return ([int(t) for t in spans["turn"].tolist()],
                        [str(r) for r in spans["role"].tolist()])  # fmt: skip
        found: dict[tuple[int, int], tuple[int, str]] = {}
        for code, source, event_id, turn, role in zip(
            run.tolist(), spans["source"].tolist(), spans["event_id"].tolist(),
            spans["turn"].tolist(), spans["role"].tolist(), strict=True,
        ):  # fmt: skip
            if _key(source) not in unrecognised:
                found[(code, int(event_id))] = (int(turn), str(role))
        pairs = [found.get(key, (0, "other")) for key in zip(codes, event_ids, strict=True)]
        return [turn for turn, _ in pairs], [role for _, role in pairs]
