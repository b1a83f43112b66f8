"""The turn, activity and GenAI spans of every run of a frame at once, as columns.

What each span is, :mod:`toolkit.traces.spans` states; this module makes them for all the
activities of all the runs in a few passes over their columns (what a pass needs of a run is a
list indexed by its code), the way a walk through each run's activities in order would (a
model call names the tool calls after it in its run; a turn ends at its activities' latest
time), with no Python call per span. The ids are hashed in one pass per kind of span at the end,
from the texts :func:`toolkit.traces.span_rows.span_ids` hashes, in C where
``toolkit.traces._spanids`` is built (which writes the scheduled times' texts too); so are the
attribute dicts, a kind of span at once (the run's base copied, then the span's keys), where
``toolkit.traces._spanattrs`` is (``tests/test_span_attributes.py``: the same dicts as the pure
path's, key order and value types included).
``tests/test_traces_columnwise.py`` holds the spans equal to the row-wise reference, attribute
order included.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from toolkit.traces.span_rows import (
    _ACTIVITY_STATUS,
    _CLOSE_STATUS,
    _OPENINFERENCE,
    ModelAttributes,
    RunSpans,
    _content,
    _seconds,
    _set_text,
    _stamp,
    _stamp_text,
    _text,
    failure_events,
)

try:  # ids and time texts written in C, all at once (setup.py builds it where a C compiler is)
    from toolkit.traces import _spanids
except ImportError:  # pragma: no cover - depends on the install
    _spanids = None
try:  # the spans' attribute dicts made in C, a kind of span at once (setup.py builds it too)
    from toolkit.traces import _spanattrs
except ImportError:  # pragma: no cover - depends on the install
    _spanattrs = None

__all__ = ["ROW_FIELDS", "Sections", "hashed", "queue_milliseconds", "root_columns", "span_columns",
           "stamp_texts", "turn_ends"]  # fmt: skip

#: The spans' own columns, as :class:`SpanColumns` holds them (the run's columns, ``source``,
#: ``history``, ``run_id`` and ``trace_id``, come from the run code).
ROW_FIELDS = ("code", "span_id", "parent", "name", "kind", "role", "event_id", "turn", "start",
              "end", "status", "message", "attributes", "events")  # fmt: skip

#: What :func:`span_columns` gives: the turns', activities' and GenAI spans' columns, and the
#: index of each GenAI span's activity.
Sections = tuple[list[list[Any]], list[list[Any]], list[list[Any]], list[int]]

#: An activity span's own attributes, after its run's base, its kind and its event id (in this
#: order), and what each holds in the common case, as ``_spanattrs.column_attributes`` reads
#: them: a str, the attempt's int, the outcome and the scheduled time's text (set as they are),
#: the queue time's float (no NaN).
_ACTIVITY_KEYS = ("temporalActivityID", "temporal.activity.type", "temporal.activity.attempt",
                  "temporal.activity.outcome", "temporal.activity.task_queue",
                  "temporal.activity.scheduled_time", "temporal.activity.queue_ms",
                  "temporal.agent.role")  # fmt: skip
_ACTIVITY_SPEC = "ssiosofs"
#: A turn span's own attributes, and what each holds in the common case (the operation's name,
#: the agent's and the trigger: str; the turn's number: int).
_TURN_KEYS = ("gen_ai.operation.name", "gen_ai.agent.name", "temporal.turn",
              "temporal.turn.trigger")  # fmt: skip
_TURN_SPEC = "ssis"
#: A run's span's own attributes: its status's word (a str), its task failures' count (an int).
_ROOT_KEYS = ("temporal.workflow.status", "temporal.workflow.task_failures")
_ROOT_SPEC = "si"
#: What a model call's attributes hold for the spans after it, none of its own.
_REQUESTED = "_requested_tools"
#: A model call's span's attribute set where its model attributes have none.
_CHAT = (("gen_ai.operation.name", "chat"),)
#: The keys every span sets after its run's base: its kind's, its event id's.
_KIND_KEY, _EVENT_KEY = "openinference.span.kind", "temporal.event_id"


def hashed(keys: list[str], size: int = 8) -> list[str]:
    """The ids of ``keys`` (the texts :func:`toolkit.traces.span_rows.span_ids` hashes; 16
    bytes for a trace id, else 8), by the compiled hasher where it is built."""
    if _spanids is not None:
        found = _spanids.digests(keys, size)
        if found is not None:  # else a key only the pure path hashes (or refuses)
            return found  # type: ignore[no-any-return]
    return hashed_python(keys, size)


def hashed_python(keys: list[str], size: int = 8) -> list[str]:
    """:func:`hashed` by :mod:`hashlib` (the reference of the compiled one)."""
    blake2b = hashlib.blake2b
    return [blake2b(key.encode(), digest_size=size).hexdigest() for key in keys]


def stamp_texts(times: list[Any]) -> list[str]:
    """``_stamp_text`` of each time in nanoseconds ("" for None), written in C where
    ``toolkit.traces._spanids`` is built."""
    if _spanids is not None:
        found = _spanids.stamp_texts(times)
        if found is not None:  # else a time only the pure path writes (or refuses)
            return found  # type: ignore[no-any-return]
    return ["" if t is None else _stamp_text(t) for t in times]


def queue_milliseconds(queues: list[Any]) -> list[float | None]:
    """``round(_seconds(q) * 1000, 3)`` of each queue time in nanoseconds (None stays None),
    the whole column at once where numpy's arithmetic gives Python's result.

    ``_seconds(q) * 1000`` is float arithmetic numpy does alike (the divmod's parts, a
    division, a sum, a product): ``x``, and ``y`` the double of ``x * 1000``. ``round(x, 3)``
    is the double nearest to ``n / 1000``, ``n`` the integer nearest to the exact ``x * 1000``
    (half to even); ``rint(y) / 1000`` is the same double wherever ``y`` is too far from a half
    for its own rounding error to cross it (and the division is correctly rounded). The rest,
    near a half or large, are rounded by Python. In C where ``toolkit.traces._spanattrs`` is
    built (the same steps, fused: every queue time an int64 or None; else numpy's).
    """
    if _spanattrs is not None:
        found = _spanattrs.queue_ms(queues, _rounded_ms)
        if found is not None:
            return found  # type: ignore[no-any-return]
    return queue_milliseconds_numpy(queues)


def _rounded_ms(queue: int) -> float:
    """A queue time in nanoseconds in milliseconds, rounded to 3 places by Python."""
    return round(_seconds(queue) * 1000, 3)


def queue_milliseconds_numpy(queues: list[Any]) -> list[float | None]:
    """:func:`queue_milliseconds` by numpy (the reference of the compiled one)."""
    present = [q is not None for q in queues]
    try:
        nanos = np.array([q if q is not None else 0 for q in queues], dtype=np.int64)
    except (OverflowError, TypeError, ValueError):  # no int64s: each one by Python
        return [None if q is None else round(_seconds(q) * 1000, 3) for q in queues]
    whole, rest = np.divmod(nanos, 1_000_000_000)
    scaled = (whole.astype(np.float64) + rest / 1e9) * 1000 * 1000  # milliseconds, then x 1000
    # Beyond 2**31, or within 2**-22 of a half (its rounding error is at most 2**-23 there).
    slack = np.abs(scaled - np.floor(scaled) - 0.5)
    plain = (np.abs(scaled) < 2.0**31) & (slack > 2.0**-22)
    out = (np.rint(scaled) / 1000).tolist()
    for index in np.flatnonzero(~plain).tolist():
        out[index] = round(_seconds(queues[index]) * 1000, 3)
    return [ms if there else None for ms, there in zip(out, present, strict=True)]


def span_columns(runs: Sequence[RunSpans], acts: Mapping[str, list[Any]],
                 starts_of: Sequence[Sequence[tuple[int, str, bool, str | None]]],
                 times: Mapping[tuple[int, int], Any], models: ModelAttributes,
                 content: bool) -> Sections:  # fmt: skip
    """The turn spans, the activity spans and the GenAI spans of every run, as three sets of
    columns (:data:`ROW_FIELDS` order; turns in run order, activities in run order then as
    ``acts`` has them, GenAI spans as their activities), and the index of each GenAI span's
    activity.

    ``acts``: the columns of :func:`toolkit.traces.activity_facts.activity_facts` (nanoseconds)
    of the activities of the runs in code order, with ``code`` (the run's), ``turn`` and
    ``role``; ``starts_of``: each run's turns (:attr:`ActivityTurns.turns`, empty for a source
    no framework is recognised in); ``times``: the user messages' times by (code, event id).
    """
    codes, turns = acts["code"], acts["turn"]
    scheduled, started, closed = acts["scheduled_time"], acts["started_time"], acts["closed_time"]

    # Each turn's end: the latest scheduled, started or closed time of its activities.
    ends = turn_ends(codes, turns, scheduled, started, closed)

    # The turns that are spans (work started, or no answer), and their ids: the activities'
    # parents.
    kept: list[tuple[int, int, int, str, bool, str | None]] = []
    turn_keys: list[str] = []
    for code, starts in enumerate(starts_of):
        prefix = runs[code].id_prefix
        for number, (event_id, trigger, answered, failure) in enumerate(starts, 1):
            if answered and (code, number) not in ends:
                continue  # a control message (``finish``) that started no work is no turn
            kept.append((code, number, event_id, trigger, answered, failure))
            turn_keys.append(f"{prefix}{event_id}\x1fturn")
    turn_ids = hashed(turn_keys)
    turn_spans = {(code, number): span_id
                  for (code, number, *_), span_id in zip(kept, turn_ids, strict=True)}  # fmt: skip

    activities, genai, genai_of, agents = _activities(runs, acts, turn_spans, models, content)

    out: list[list[Any]] = [[] for _ in ROW_FIELDS]
    (o_code, o_id, o_parent, o_name, o_kind, o_role, o_event, o_turn, o_start, o_end,
     o_status, o_message, o_attrs, o_events) = out  # fmt: skip
    o_agent: list[Any] = []  # the turns' agents and triggers: their attributes made after
    o_trigger: list[Any] = []
    for (code, number, event_id, trigger, answered, failure), span_id in zip(
            kept, turn_ids, strict=True):  # fmt: skip
        run = runs[code]
        agent = agents.get((code, number)) or run.workflow_type
        start = times.get((code, event_id))
        end = ends.get((code, number), start)
        if start is None:
            start = run.first_time
        if end is None:
            end = run.last_time if run.last_time is not None else start
        if start is not None and end < start:
            end = start
        o_code.append(code)
        o_id.append(span_id)
        o_parent.append(run.root_id)
        o_name.append(f"invoke_agent {agent}")
        o_kind.append("INTERNAL")
        o_role.append("turn")
        o_event.append(event_id)
        o_turn.append(number)
        o_start.append(start)
        o_end.append(end)
        if answered:
            o_status.append("UNSET")
            o_message.append(None)
        else:
            o_status.append("ERROR")
            o_message.append(failure or "no workflow task answered")
        o_agent.append(agent)
        o_trigger.append(trigger)
        o_events.append([])
    o_attrs.extend(own_attributes(runs, "turn", _TURN_KEYS, _TURN_SPEC, o_code, o_event, [
        ["invoke_agent"] * len(o_code), o_agent, o_turn, o_trigger]))  # fmt: skip
    return out, activities, genai, genai_of


def root_columns(runs: Sequence[RunSpans], last_types: list[Any], last_failures: list[Any],
                 failures: Mapping[int, list[dict[str, Any]]]) -> list[list[Any]]:  # fmt: skip
    """The runs' spans, one per run in code order, as columns (:data:`ROW_FIELDS` after
    ``code``): each from its run's first to its last time, its status by its ``last_types``
    (its last event's type; ``last_failures``: that event's failure message), its workflow-task
    ``failures`` (rows as dicts, by run code) its span events."""
    count = len(runs)
    status: list[str] = []
    message: list[str | None] = []
    words: list[str] = []
    events: list[list[dict[str, Any]]] = []
    failed: list[int] = []
    for code, (event_type, failure) in enumerate(zip(last_types, last_failures, strict=True)):
        state, word = _CLOSE_STATUS.get(str(event_type), ("UNSET", "running"))
        status.append(state)
        message.append(_text(failure) if state == "ERROR" else None)
        words.append(word)
        found = failures.get(code)
        events.append(failure_events(found) if found else [])
        failed.append(len(found) if found else 0)
    start = [run.first_time for run in runs]
    end = []
    for run, s in zip(runs, start, strict=True):  # a span's times (span_columns' rules)
        e = run.last_time if run.last_time is not None else s
        if s is not None and e < s:
            e = s
        end.append(e)
    attrs = own_attributes(runs, "workflow", _ROOT_KEYS, _ROOT_SPEC, list(range(count)),
                           [1] * count, [words, failed])  # fmt: skip
    return [[run.root_id for run in runs], [None] * count,
            [f"RunWorkflow:{run.workflow_type}" for run in runs], ["SERVER"] * count,
            ["workflow"] * count, [1] * count, [None] * count, start, end, status, message,
            attrs, events]  # fmt: skip


def own_attributes(runs: Sequence[RunSpans], role: str, keys: tuple[str, ...], spec: str,
                   codes: list[int], event_ids: list[int],
                   columns: list[list[Any]]) -> list[dict[str, Any]]:  # fmt: skip
    """Each span's attributes: ``RunSpans._attributes`` of its run (``runs[code]``), its
    ``role``, its event id and ``keys`` set to ``columns``' values; in C where
    ``toolkit.traces._spanattrs`` is built, each value as ``spec`` says the common case holds
    it (the spans it leaves, a value of another type, by the pure path)."""
    if _spanattrs is None or not all(run.fixed.isdisjoint(keys) for run in runs):
        return own_attributes_python(runs, role, keys, codes, event_ids, columns)
    made, missing = _spanattrs.column_attributes(
        [run.base_set for run in runs], codes, (_KIND_KEY, _OPENINFERENCE[role], _EVENT_KEY),
        event_ids, keys, spec, columns)  # fmt: skip
    _fill(made, missing, lambda picked: own_attributes_python(
        runs, role, keys, *_taken(picked, codes, event_ids), _taken(picked, *columns)))
    return made  # type: ignore[no-any-return]


def own_attributes_python(runs: Sequence[RunSpans], role: str, keys: tuple[str, ...],
                          codes: list[int], event_ids: list[int],
                          columns: list[list[Any]]) -> list[dict[str, Any]]:  # fmt: skip
    """:func:`own_attributes` in Python (the reference of the compiled one)."""
    return [runs[code]._attributes(role, event_id, dict(zip(keys, values, strict=True)))
            for code, event_id, *values in zip(codes, event_ids, *columns, strict=True)]


def _taken(picked: list[int], *columns: list[Any]) -> list[list[Any]]:
    """The values of each of ``columns`` at the positions ``picked``."""
    return [[column[i] for i in picked] for column in columns]


def _fill(made: list[Any], missing: list[int], make: Any) -> None:
    """The spans the compiled builder left (``missing``: their places in ``made``), put in
    their places as ``make`` (the pure path, of the positions) makes them."""
    if missing:
        for index, attrs in zip(missing, make(missing), strict=True):
            made[index] = attrs


def turn_ends(codes: list[int], turns: list[int], scheduled: list[int | None],
              started: list[int | None], closed: list[int | None]) -> dict[tuple[int, int], int]:
    """Each (run code, turn)'s latest scheduled, started or closed time of its activities (the
    activities' columns; a turn none of whose activities has a time has none); in C where
    ``toolkit.traces._spanattrs`` is built (the same steps)."""
    if _spanattrs is not None:
        return _spanattrs.turn_ends(codes, turns, scheduled, started, closed)  # type: ignore[no-any-return]
    return turn_ends_python(codes, turns, scheduled, started, closed)


def turn_ends_python(codes: list[int], turns: list[int], scheduled: list[int | None],
                     started: list[int | None],
                     closed: list[int | None]) -> dict[tuple[int, int], int]:  # fmt: skip
    """:func:`turn_ends` in Python (the reference of the compiled one)."""
    ends: dict[tuple[int, int], int] = {}
    # A turn's activities mostly come one after another: its latest is kept while they do, and
    # put in ends (the latest of it and what ends holds) when another turn's comes.
    held_code, held_turn, held = -1, None, None
    for code, turn, s, b, c in zip(codes, turns, scheduled, started, closed, strict=True):
        latest = c
        if s is not None and (latest is None or s > latest):
            latest = s
        if b is not None and (latest is None or b > latest):
            latest = b
        if latest is None:
            continue
        if code == held_code and turn == held_turn:
            if latest > held:
                held = latest
            continue
        if held is not None:
            key = (held_code, held_turn)
            before = ends.get(key)
            if before is None or held > before:
                ends[key] = held
        held_code, held_turn, held = code, turn, latest
    if held is not None:
        key = (held_code, held_turn)
        before = ends.get(key)
        if before is None or held > before:
            ends[key] = held
    return ends


def _activities(runs: Sequence[RunSpans], acts: Mapping[str, list[Any]],
                turn_spans: Mapping[tuple[int, int], str], models: ModelAttributes,
                content: bool) -> tuple[list[list[Any]], list[list[Any]], list[int],
                                        dict[tuple[int, int], Any]]:  # fmt: skip
    """The activity spans' columns, the GenAI spans' and the index of each one's activity, and
    each turn's agent: the first one a model call of its activities names."""
    codes, event_ids, turns, roles = acts["code"], acts["scheduled_event_id"], acts["turn"], \
        acts["role"]
    count = len(codes)
    base = [run.base_set for run in runs]
    root = [run.root_id for run in runs]
    last_time = [run.last_time for run in runs]
    first_time = [run.first_time for run in runs]
    prefixes = [run.id_prefix for run in runs]

    # Column-wise first: what each activity span holds that depends on its activity alone.
    types = acts["activity_type"]
    (status, errors, raw_start, start, end, attempts, outcome_text, parent, names, keys,
     retried) = activity_columns(
        codes, event_ids, turns, acts["outcome"], acts["scheduled_time"], acts["started_time"],
        acts["closed_time"], acts["attempt"], types, prefixes, first_time, last_time, root,
        turn_spans)  # fmt: skip
    message: list[str | None] = [None] * count
    failure_messages = acts["failure_message"]
    for index in errors:
        message[index] = _text(failure_messages[index])
    scheduled_text = stamp_texts(acts["scheduled_time"])
    queue_ms = queue_milliseconds(acts["queue_duration"])
    attrs = activity_attributes(base, codes, event_ids, [
        acts["activity_id"], types, attempts, outcome_text, acts["task_queue"], scheduled_text,
        queue_ms, roles])  # fmt: skip
    events: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    last_failures = acts["last_failure_message"]
    for index in retried:
        last_failure = last_failures[index]
        events[index] = [{"time": _stamp(raw_start[index]), "name": "temporal.activity.retried",
                          "attributes": {
            "temporal.activity.previous_attempts": attempts[index] - 1,
            **({"exception.message": last_failure} if _text(last_failure) else {})}}]

    # The GenAI spans, in order: a model call names the tool calls that follow it in its run.
    at, gen_names, gen_kinds, gen_roles, owns, gen_defaults, genai_keys, agents = genai_spans(
        codes, event_ids, turns, roles, types, [run.source for run in runs],
        [run.history for run in runs], prefixes, models)  # fmt: skip
    if content:  # the payloads' values among the own attributes (copied: not the model's)
        inputs, results = acts.get("input"), acts.get("result")
        for place, index in enumerate(at):
            own = own_of(owns[place], gen_defaults[place])
            for key, value in (("input.value", inputs[index]),  # type: ignore[index]
                               ("output.value", results[index])):  # type: ignore[index]
                if value is not None:
                    own[key] = _content(value)
                    own[key.replace(".value", ".mime_type")] = "application/json"
            owns[place], gen_defaults[place] = own, ()

    span_ids = hashed(keys)
    gen_codes, gen_events = _at(codes, at), _at(event_ids, at)
    gen_attrs = genai_attributes(runs, gen_codes, gen_roles, gen_events, owns, gen_defaults)
    activities = [codes, span_ids, parent, names, ["SERVER"] * count, ["activity"] * count,
                  event_ids, turns, start, end, status, message, attrs, events]
    gen = [gen_codes, hashed(genai_keys), _at(span_ids, at), gen_names, gen_kinds, gen_roles,
           gen_events, _at(turns, at), _at(start, at), _at(end, at), _at(status, at),
           _at(message, at), gen_attrs, [[] for _ in at]]  # fmt: skip
    return activities, gen, at, agents


#: The texts :func:`genai_spans` reads and writes, in ``_spanattrs.genai_spans``' order: the
#: agent's key, the two roles, the requested tools' key, the models' keys, a chat span's name
#: head and name without a model, its kind and defaults, a tool call's name head and kind,
#: its defaults' keys and operation, the id key's separator.
_GENAI_WORDS = ("gen_ai.agent.name", "model", "tool_call", _REQUESTED, "gen_ai.request.model",
                "gen_ai.response.model", "chat ", "chat", "CLIENT", _CHAT, "execute_tool ",
                "INTERNAL", "gen_ai.tool.name", "tool.name",
                ("gen_ai.operation.name", "execute_tool"), "\x1f")  # fmt: skip

#: What :func:`genai_spans` gives: each GenAI span's activity index, name, kind, role, own
#: attributes (the model's, else an empty dict) and defaults, its id key; each turn's agent by
#: (code, turn).
GenaiSpans = tuple[list[int], list[str], list[str], list[Any], list[Mapping[str, Any]],
                   list[tuple[tuple[str, Any], ...]], list[str], dict[tuple[int, int], Any]]


def genai_spans(codes: list[int], event_ids: list[int], turns: list[Any], roles: list[Any],
                types: list[Any], sources: list[Any], histories: list[Any],
                prefixes: list[str], models: ModelAttributes) -> GenaiSpans:
    """The GenAI spans of the activities (their columns ``codes`` ... ``types``), in order: a
    model call names the tool calls that follow it in its run; and each turn's agent, the
    first one a model call of its activities names (``sources``, ``histories``,
    ``prefixes``: the runs', by code; ``models``: the model attributes). In C where
    ``toolkit.traces._spanattrs`` is built (``models`` a dict of dicts, the codes ints; else
    the pure path)."""
    if _spanattrs is not None:
        found = _spanattrs.genai_spans(codes, event_ids, turns, roles, types, sources, histories,
                                       prefixes, models, _GENAI_WORDS)  # fmt: skip
        if found is not None:
            return found  # type: ignore[no-any-return]
    return genai_spans_python(codes, event_ids, turns, roles, types, sources, histories,
                              prefixes, models)  # fmt: skip


def genai_spans_python(codes: list[int], event_ids: list[int], turns: list[Any],
                       roles: list[Any], types: list[Any], sources: list[Any],
                       histories: list[Any], prefixes: list[str],
                       models: ModelAttributes) -> GenaiSpans:  # fmt: skip
    """:func:`genai_spans` in Python (the reference of the compiled one)."""
    agents: dict[tuple[int, int], Any] = {}
    at: list[int] = []
    names: list[str] = []
    kinds: list[str] = []
    span_roles: list[Any] = []
    owns: list[Mapping[str, Any]] = []
    defaults_of: list[tuple[tuple[str, Any], ...]] = []
    keys: list[str] = []
    pending: list[str] = []
    pending_code = -1
    for index, (code, event_id, turn, role) in enumerate(zip(codes, event_ids, turns, roles,
                                                              strict=True)):  # fmt: skip
        found = models.get((sources[code], histories[code], event_id))
        if found is not None and (code, turn) not in agents:
            agent = found.get("gen_ai.agent.name")
            if agent:
                agents[(code, turn)] = agent
        if role != "model" and role != "tool_call":
            continue
        if code != pending_code:  # a new run: no tool requested yet
            pending, pending_code = [], code
        # The span's own attributes: the model attributes but _REQUESTED, then the defaults
        # where they have none (own_of: not copied here, the builder does it).
        own = found or {}
        requested = own.get(_REQUESTED)
        defaults: tuple[tuple[str, Any], ...]
        if role == "model":
            pending = [str(name) for name in requested or []]
            model = own.get("gen_ai.request.model") or own.get("gen_ai.response.model")
            name, kind = (f"chat {model}" if model else "chat"), "CLIENT"
            defaults = _CHAT
        else:
            # The answer's tool requests run in order; handoffs and hosted tools run no
            # activity, so a name is taken only while requests remain (else the activity's).
            requested_name = pending.pop(0) if pending else None
            tool = requested_name or _text(types[index])
            name, kind = f"execute_tool {tool}", "INTERNAL"
            defaults = (("gen_ai.tool.name", tool), ("tool.name", tool),
                        ("gen_ai.operation.name", "execute_tool"))  # fmt: skip
        at.append(index)
        names.append(name)
        kinds.append(kind)
        span_roles.append(role)
        owns.append(own)
        defaults_of.append(defaults)
        keys.append(f"{prefixes[code]}{event_id}\x1f{role}")
    return at, names, kinds, span_roles, owns, defaults_of, keys, agents


#: The texts :func:`activity_columns` writes: the status where the outcome has none, the error
#: status, the outcome's text where it is no str, a span name's head, the id key's tail.
_ACTIVITY_WORDS = ("UNSET", "ERROR", "open", "RunActivity:", "\x1factivity")

#: What :func:`activity_columns` gives: status, the indices whose status is ``ERROR``, the raw
#: start (started, else scheduled), start, end, attempt, outcome text, parent, name, id key, the
#: indices retried (attempt above 1).
ActivityColumns = tuple[list[Any], list[int], list[Any], list[Any], list[Any], list[Any],
                        list[Any], list[Any], list[str], list[str], list[int]]  # fmt: skip


def activity_columns(codes: list[int], event_ids: list[int], turns: list[Any],
                     outcomes: list[Any], scheduled: list[Any], started: list[Any],
                     closed: list[Any], attempts: list[Any], types: list[Any],
                     prefixes: list[str], first_times: list[Any], last_times: list[Any],
                     roots: list[Any], turn_spans: Mapping[tuple[int, int], str]
                     ) -> ActivityColumns:  # fmt: skip
    """The activity spans' columns that depend on each activity alone (:data:`ActivityColumns`),
    from the activities' columns (``codes``: their runs', whose ``prefixes`` (the span ids'
    key heads), ``first_times``, ``last_times`` and ``roots`` (span ids) are lists by code)
    and the turns' span ids by (code, turn); in C where ``toolkit.traces._spanattrs`` is built
    (the codes ints, the attempts ints or None, as the common case holds them; else the pure
    path)."""
    if _spanattrs is not None:
        found = _spanattrs.activity_columns(
            codes, event_ids, turns, outcomes, scheduled, started, closed, attempts, types,
            prefixes, first_times, last_times, roots, turn_spans, _ACTIVITY_STATUS,
            _ACTIVITY_WORDS)  # fmt: skip
        if found is not None:
            return found  # type: ignore[no-any-return]
    return activity_columns_python(codes, event_ids, turns, outcomes, scheduled, started, closed,
                                   attempts, types, prefixes, first_times, last_times, roots,
                                   turn_spans)  # fmt: skip


def activity_columns_python(codes: list[int], event_ids: list[int], turns: list[Any],
                            outcomes: list[Any], scheduled: list[Any], started: list[Any],
                            closed: list[Any], attempts: list[Any], types: list[Any],
                            prefixes: list[str], first_times: list[Any], last_times: list[Any],
                            roots: list[Any], turn_spans: Mapping[tuple[int, int], str]
                            ) -> ActivityColumns:  # fmt: skip
    """:func:`activity_columns` in Python (the reference of the compiled one)."""
    status = [_ACTIVITY_STATUS.get(o, "UNSET") if isinstance(o, str) else "UNSET"
              for o in outcomes]  # fmt: skip
    errors = [index for index, s in enumerate(status) if s == "ERROR"]
    raw_start = [b if b is not None else s for b, s in zip(started, scheduled, strict=True)]
    raw_end = [c if c is not None else last_times[code]
               for c, code in zip(closed, codes, strict=True)]  # fmt: skip
    start, end = [], []
    # A span's times: a missing start is its run's first time, a missing end its run's last
    # (else the start), an end before the start is the start.
    for code, s, e in zip(codes, raw_start, raw_end, strict=True):
        if s is None:
            s = first_times[code]
        if e is None:
            e = last_times[code] if last_times[code] is not None else s
        if s is not None and e < s:
            e = s
        start.append(s)
        end.append(e)
    attempts = [a if type(a) is int or a is None else (None if pd.isna(a) else int(a))
                for a in attempts]  # fmt: skip
    outcome_text = [o if isinstance(o, str) else "open" for o in outcomes]
    parent = [turn_spans.get((code, turn), roots[code])
              for code, turn in zip(codes, turns, strict=True)]  # fmt: skip
    names = [f"RunActivity:{kind}" for kind in types]
    keys = [f"{prefixes[code]}{event_id}\x1factivity"
            for code, event_id in zip(codes, event_ids, strict=True)]  # fmt: skip
    retried = [index for index, attempt in enumerate(attempts) if attempt and attempt > 1]
    return (status, errors, raw_start, start, end, attempts, outcome_text, parent, names, keys,
            retried)  # fmt: skip


def _at(values: list[Any], positions: list[int]) -> list[Any]:
    """``values`` at ``positions`` (mapped by the list's own item lookup: no Python frame per
    item)."""
    return list(map(values.__getitem__, positions))


def activity_attributes(bases: list[dict[str, Any]], codes: list[int], event_ids: list[int],
                        columns: list[list[Any]]) -> list[dict[str, Any]]:  # fmt: skip
    """Each activity span's attributes: its run's base (``bases`` by run code), its kind and
    event id, then :data:`_ACTIVITY_KEYS` set to ``columns``' values; in C where
    ``toolkit.traces._spanattrs`` is built (the common case, every field set; the others by
    the pure path)."""
    if _spanattrs is None:
        return activity_attributes_python(bases, codes, event_ids, columns)
    made, missing = _spanattrs.column_attributes(
        bases, codes, (_KIND_KEY, "CHAIN", _EVENT_KEY), event_ids, _ACTIVITY_KEYS,
        _ACTIVITY_SPEC, columns)  # fmt: skip
    _fill(made, missing, lambda picked: activity_attributes_python(
        bases, *_taken(picked, codes, event_ids), _taken(picked, *columns)))  # fmt: skip
    return made  # type: ignore[no-any-return]


def activity_attributes_python(bases: list[dict[str, Any]], codes: list[int],
                               event_ids: list[int],
                               columns: list[list[Any]]) -> list[dict[str, Any]]:  # fmt: skip
    """:func:`activity_attributes` in Python (the reference of the compiled one)."""
    attrs = []
    append = attrs.append
    for code, event_id, aid, kind, attempt, outcome, queue, when, ms, role in zip(
            codes, event_ids, *columns, strict=True):  # fmt: skip
        if (type(aid) is str and type(kind) is str and type(queue) is str
                and attempt is not None and ms is not None and ms == ms and type(role) is str):
            # The common case, every field set: set key by key after the run's base (a copy
            # keeps its table: no dict grown from empty, as a {**base, ...} display is).
            found = bases[code].copy()
            found["openinference.span.kind"] = "CHAIN"
            found["temporal.event_id"] = event_id
            found["temporalActivityID"] = aid
            found["temporal.activity.type"] = kind
            found["temporal.activity.attempt"] = attempt
            found["temporal.activity.outcome"] = outcome
            found["temporal.activity.task_queue"] = queue
            found["temporal.activity.scheduled_time"] = when
            found["temporal.activity.queue_ms"] = ms
            found["temporal.agent.role"] = role
            append(found)
        else:
            append(_attributes(bases[code], event_id, aid, kind, attempt, outcome, queue, when,
                               ms, role))
    return attrs


def own_of(attributes: Mapping[str, Any], defaults: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """A GenAI span's own attributes: ``attributes`` (its model attributes) but
    :data:`_REQUESTED`, then each of ``defaults`` where they have no such key."""
    own = dict(attributes)
    own.pop(_REQUESTED, None)
    for key, value in defaults:
        own.setdefault(key, value)
    return own


def genai_attributes(runs: Sequence[RunSpans], codes: list[int], roles: list[str],
                     event_ids: list[int], attributes: list[Mapping[str, Any]],
                     defaults: list[tuple[tuple[str, Any], ...]]) -> list[dict[str, Any]]:
    """Each GenAI span's attributes: ``RunSpans._attributes`` of its run, role, event id and
    own attributes (:func:`own_of` its ``attributes`` and ``defaults``); in C where
    ``toolkit.traces._spanattrs`` is built, without the own attributes' dict (the spans it
    leaves, a key of the base among their own or a value of another type, by the pure path)."""
    if _spanattrs is None:
        return genai_attributes_python(runs, codes, roles, event_ids, attributes, defaults)
    made, missing = _spanattrs.merged_attributes(
        [run.base_set for run in runs], codes, (_KIND_KEY, _EVENT_KEY),
        [_OPENINFERENCE[role] for role in roles], event_ids, attributes, defaults, _REQUESTED,
        [run.fixed for run in runs])  # fmt: skip
    _fill(made, missing, lambda picked: genai_attributes_python(
        runs, *_taken(picked, codes, roles, event_ids, attributes, defaults)))  # fmt: skip
    return made  # type: ignore[no-any-return]


def genai_attributes_python(runs: Sequence[RunSpans], codes: list[int], roles: list[str],
                            event_ids: list[int], attributes: list[Mapping[str, Any]],
                            defaults: list[tuple[tuple[str, Any], ...]]) -> list[dict[str, Any]]:
    """:func:`genai_attributes` in Python (the reference of the compiled one)."""
    return [runs[code]._attributes(role, event_id, own_of(attrs, pairs))
            for code, role, event_id, attrs, pairs in zip(codes, roles, event_ids, attributes,
                                                          defaults, strict=True)]  # fmt: skip


def _attributes(base: dict[str, Any], event_id: int, activity_id: Any, kind: Any,
                attempt: int | None, outcome: str, queue: Any, scheduled: str,
                queue_ms: float | None, role: Any) -> dict[str, Any]:  # fmt: skip
    """An activity span's attributes where a field is missing or of another type: each one set
    only where it has a value (OTel attributes have no null), in the common case's order."""
    attrs = base.copy()
    attrs["openinference.span.kind"] = "CHAIN"
    attrs["temporal.event_id"] = event_id
    _set_text(attrs, "temporalActivityID", activity_id)
    _set_text(attrs, "temporal.activity.type", kind)
    if attempt is not None:
        attrs["temporal.activity.attempt"] = attempt
    _set_text(attrs, "temporal.activity.outcome", outcome)
    _set_text(attrs, "temporal.activity.task_queue", queue)
    attrs["temporal.activity.scheduled_time"] = scheduled
    if queue_ms is not None and queue_ms == queue_ms:  # a float: set unless NaN
        attrs["temporal.activity.queue_ms"] = queue_ms
    _set_text(attrs, "temporal.agent.role", role)
    return attrs
