"""The activity spans' columns made in C (``_spanattrs.activity_columns``) equal the pure path's
(:func:`toolkit.traces.span_columns.activity_columns_python`): the same values of the same types
(and the same objects where the pure path passes one through), on the recorded histories' spans
and on columns outside the common case, where the compiled one leaves them all to Python; and
the queue times' milliseconds made in C (``_spanattrs.queue_ms``) equal numpy's and Python's;
and the GenAI spans' walk made in C (``_spanattrs.genai_spans``) equals the pure one; and runs
made at once (``RunSpans.many``) equal those made one by one."""

from __future__ import annotations

import random
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import toolkit as tk
from toolkit.agents.tokens import genai_attributes as model_attributes_of
from toolkit.traces import span_columns
from toolkit.traces.span_columns import (
    activity_columns,
    activity_columns_python,
    genai_spans_python,
    queue_milliseconds,
    queue_milliseconds_numpy,
)
from toolkit.traces.span_rows import RunSpans, _seconds
from toolkit.traces.spans import trace_spans

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "histories"

compiled = pytest.mark.skipif(span_columns._spanattrs is None,
                              reason="the C attribute builder is not built")  # fmt: skip


def _typed(columns: tuple[list[Any], ...]) -> list[list[tuple[type, str]]]:
    """Each column's values with their types (and by repr: NaN equals itself)."""
    return [[(type(value), repr(value)) for value in column] for column in columns]


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, ...]]]:
    """The arguments of every activity_columns call while spans are made."""
    calls: list[tuple[Any, ...]] = []

    def spy(*args: Any) -> Any:
        calls.append(args)
        return activity_columns(*args)

    monkeypatch.setattr(span_columns, "activity_columns", spy)
    yield calls



def _trace_recorded(folder: Path) -> None:
    """The spans of every history in ``folder``, with model attributes, contents and a
    namespace, then with none of them (the captured calls then hold both kinds)."""
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (the shared corpus is not laid out here)")
    events = tk.read_histories(folder, progress=False).events
    attributes = model_attributes_of(tk.model_calls(events))
    trace_spans(events, model_attributes=attributes, content=True, namespace="prod")
    trace_spans(events)

@compiled
@pytest.mark.parametrize("folder", [ROOT / "data", CORPUS], ids=lambda p: p.name)
def test_the_compiled_columns_are_the_pure_ones_on_recorded_spans(
        folder: Path, captured: list[tuple[Any, ...]]) -> None:  # fmt: skip
    _trace_recorded(folder)
    assert captured and all(len(args[0]) for args in captured)
    for args in captured:
        made = span_columns._spanattrs.activity_columns(
            *args, span_columns._ACTIVITY_STATUS, span_columns._ACTIVITY_WORDS)
        assert made is not None  # the recorded spans are the common case
        expected = activity_columns_python(*args)
        assert _typed(made) == _typed(expected)
        # the values passed through are the pure path's objects (no copies, no ints remade)
        for k in (2, 3, 4, 5, 6, 7):
            assert all(a is b for a, b in zip(made[k], expected[k], strict=True)), k


class _Text(str):
    """A str of another type, formatted its own way (an f-string calls its ``__format__``)."""

    def __format__(self, spec: str) -> str:
        return f"<{self!s}>"


#: Odd values of each column, beside the common case's (outcomes, types and prefixes str,
#: event ids ints, attempts ints or None): the compiled path formats them as the pure one does,
#: but for the codes and attempts, which it leaves to Python.
_ODD_OUTCOMES = [None, 3, np.str_("failed"), float("nan"), _Text("canceled"), _Text("x")]
_ODD_TYPES = [None, 7, np.str_("call"), b"x", _Text("t"), 2.5]
_ODD_ATTEMPTS = [True, np.int64(3), 2.0, float("nan"), pd.NA]
_ODD_EVENT_IDS = [np.int64(7), True, None, "7"]


def _columns(rng: random.Random, odd: str | None) -> tuple[Any, ...]:
    """Random activities of three runs (one with no times), one value of ``odd``'s column
    outside the common case."""
    runs = 3
    count = rng.randrange(1, 40)
    prefixes = ["ns\x1frun-1\x1f", "\x1frün-2\x1f", "ns\x1f\U0001f600\x1f"]
    first_times = [10, None, -5]
    last_times = [500, None, 2**70]
    roots = ["r0", "r1", "r2"]
    turn_spans = {(0, 1): "t01", (0, 2): "t02", (2, 1): "t21", (1, 0): "t10"}
    codes = sorted(rng.randrange(runs) for _ in range(count))
    event_ids = [rng.randrange(1, 10**rng.choice((2, 6, 19))) for _ in range(count)]
    turns = [rng.choice((0, 1, 2, 3)) for _ in range(count)]
    outcomes = [rng.choice(("completed", "failed", "timed_out", "canceled", "pending", "open",
                            "")) for _ in range(count)]  # fmt: skip
    def time() -> Any:
        return rng.choice((None, rng.randrange(0, 1000), rng.randrange(-10, 10), 2**66))
    scheduled = [time() for _ in range(count)]
    started = [time() for _ in range(count)]
    closed = [time() for _ in range(count)]
    attempts = [rng.choice((None, 0, 1, 2, 5, -1, 2**65)) for _ in range(count)]
    types = [rng.choice(("call_model", "tool", "é", "")) for _ in range(count)]
    at = rng.randrange(count)
    if odd == "outcome":
        outcomes[at] = rng.choice(_ODD_OUTCOMES)
    elif odd == "type":
        types[at] = rng.choice(_ODD_TYPES)
    elif odd == "attempt":
        attempts[at] = rng.choice(_ODD_ATTEMPTS)
    elif odd == "event_id":
        event_ids[at] = rng.choice(_ODD_EVENT_IDS)
    elif odd == "code":
        codes[at] = rng.choice((np.int64(1), True))
    elif odd == "prefix":
        prefixes[codes[at]] = rng.choice((None, 4, _Text("p")))  # type: ignore[call-overload]
    return (codes, event_ids, turns, outcomes, scheduled, started, closed, attempts, types,
            prefixes, first_times, last_times, roots, turn_spans)  # fmt: skip


@pytest.mark.parametrize("odd", [None, "outcome", "type", "attempt", "event_id", "code",
                                 "prefix"])  # fmt: skip
def test_activity_columns_equal_the_pure_ones(odd: str | None) -> None:
    rng = random.Random(f"activity-columns-{odd}")
    for _ in range(200):
        args = _columns(rng, odd)
        assert _typed(activity_columns(*args)) == _typed(activity_columns_python(*args))


@compiled
def test_the_compiled_columns_leave_the_odd_ones_to_python() -> None:
    rng = random.Random("activity-columns-odd")
    for odd in ("attempt", "code"):
        args = _columns(rng, odd)
        assert span_columns._spanattrs.activity_columns(
            *args, span_columns._ACTIVITY_STATUS, span_columns._ACTIVITY_WORDS) is None, odd


@compiled
def test_the_compiled_columns_refuse_malformed_arguments() -> None:
    args = list(_columns(random.Random("malformed"), None))
    build = span_columns._spanattrs.activity_columns
    with pytest.raises(ValueError):
        build(*args[:1], args[1][:-1], *args[2:], span_columns._ACTIVITY_STATUS,
              span_columns._ACTIVITY_WORDS)  # fmt: skip
    with pytest.raises(ValueError):
        build(*args[:10], args[10][:-1], *args[11:], span_columns._ACTIVITY_STATUS,
              span_columns._ACTIVITY_WORDS)  # fmt: skip
    with pytest.raises(ValueError):
        build(*args, span_columns._ACTIVITY_STATUS, ("UNSET",))
    with pytest.raises(TypeError):
        build(*args[:13], [], span_columns._ACTIVITY_STATUS, span_columns._ACTIVITY_WORDS)
    unhashable = list(args)
    unhashable[2] = [[]] * len(args[0])  # a turn no key can hold: dict.get's own error
    with pytest.raises(TypeError):
        build(*unhashable, span_columns._ACTIVITY_STATUS, span_columns._ACTIVITY_WORDS)
    with pytest.raises(TypeError):
        activity_columns_python(*unhashable)


def _queues(rng: random.Random) -> list[Any]:
    """Queue times in nanoseconds: None, small, large, negative, and near a half millisecond's
    thousandth (where the fused rounding defers to Python)."""
    values: list[Any] = []
    for _ in range(400):
        kind = rng.randrange(6)
        if kind == 0:
            values.append(None)
        elif kind == 1:
            values.append(rng.randrange(0, 10**rng.choice((3, 6, 9, 12))))
        elif kind == 2:
            values.append(-rng.randrange(0, 10**rng.choice((3, 9, 12))))
        elif kind == 3:  # a multiple of 500 ns: the thousandth of a millisecond at a half
            values.append(rng.randrange(0, 10**9) * 500 + rng.choice((0, 1, -1)))
        elif kind == 4:  # beyond 2**31 thousandths of a millisecond
            values.append(rng.randrange(2**31 * 1000, 2**62))
        else:
            values.append(rng.choice((0, 1, -1, 2**63 - 1, -(2**63), 499, 500, 1500, 2500)))
    return values


@pytest.mark.parametrize("seed", range(20))
def test_queue_milliseconds_equal_the_numpy_and_python_ones(seed: int) -> None:
    queues = _queues(random.Random(seed))
    expected = [None if q is None else round(_seconds(q) * 1000, 3) for q in queues]
    found = queue_milliseconds(queues)
    assert [repr(ms) for ms in found] == [repr(ms) for ms in expected]
    assert [repr(ms) for ms in queue_milliseconds_numpy(queues)] == [repr(ms) for ms in expected]
    assert all(type(ms) is float for ms in found if ms is not None)


@compiled
def test_compiled_queue_milliseconds_leave_odd_values_to_numpy() -> None:
    for odd in (2**63, -(2**63) - 1, 1.5, np.int64(3), True, "1"):
        assert span_columns._spanattrs.queue_ms([1, odd, None], span_columns._rounded_ms) is None
    assert queue_milliseconds([2**70, None]) == [round(_seconds(2**70) * 1000, 3), None]
    assert span_columns._spanattrs.queue_ms([], span_columns._rounded_ms) == []
    with pytest.raises(ZeroDivisionError):  # the slow rounding's own error, passed on
        span_columns._spanattrs.queue_ms([2**62], lambda q: 1 / 0)


def _genai_typed(found: tuple[Any, ...]) -> list[Any]:
    """genai_spans' output compared by value and type (the own dicts by their items, the agents
    in their order)."""
    at, names, kinds, roles, owns, defaults, keys, agents = found
    return [at, _typed((names, kinds, roles, keys)), [list(own.items()) for own in owns],
            [[(key, type(value), repr(value)) for key, value in pairs] for pairs in defaults],
            list(agents.items())]  # fmt: skip


@pytest.fixture
def captured_genai(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, ...]]]:
    """The arguments of every genai_spans call while spans are made."""
    calls: list[tuple[Any, ...]] = []

    def spy(*args: Any) -> Any:
        calls.append(args)
        return span_columns.genai_spans.__wrapped__(*args)  # type: ignore[attr-defined]

    spy.__wrapped__ = span_columns.genai_spans  # type: ignore[attr-defined]
    monkeypatch.setattr(span_columns, "genai_spans", spy)
    yield calls


@compiled
@pytest.mark.parametrize("folder", [ROOT / "data", CORPUS], ids=lambda p: p.name)
def test_the_compiled_genai_spans_are_the_pure_ones_on_recorded_spans(
        folder: Path, captured_genai: list[tuple[Any, ...]]) -> None:  # fmt: skip
    _trace_recorded(folder)
    assert len(captured_genai) == 2 and all(len(args[0]) for args in captured_genai)
    assert any(captured_genai[0][8])  # the first with model attributes, the second without
    for args in captured_genai:
        made = span_columns._spanattrs.genai_spans(*args, span_columns._GENAI_WORDS)
        assert made is not None
        expected = genai_spans_python(*args)
        assert _genai_typed(made) == _genai_typed(expected)
        # the model attributes are passed on as they are (the builder copies them)
        assert all(a is b for a, b in zip(made[4], expected[4], strict=True) if a)


def _genai_columns(rng: random.Random, odd: bool) -> tuple[Any, ...]:
    """Random activities of three runs and model attributes for some of them, with odd values
    where ``odd``: requested names of other types, models of other types, falsy ones."""
    count = rng.randrange(1, 40)
    codes = sorted(rng.randrange(3) for _ in range(count))
    event_ids = [rng.randrange(1, 60) for _ in range(count)]
    turns = [rng.choice((0, 1, 2)) for _ in range(count)]
    roles = [rng.choice(("model", "tool_call", "other", "handoff", "model", "tool_call"))
             for _ in range(count)]  # fmt: skip
    types = [rng.choice(("call_model", "run_tool", "é")) for _ in range(count)]
    sources = ["a.json", "b.json", None]
    histories = [0, 3, 1]
    prefixes = ["ns\x1frun-1\x1f", "\x1frün\x1f", "p\x1f"]
    names = ["search", "fetch", "", "hand"]
    models_of = ["gpt", "", None, "claude"]
    if odd:
        names += [7, None, _Text("t"), 2.5]
        models_of += [0, 5, _Text("m"), ["x"]]
        type_pool = [*types, None, 3, _Text("k")]
        role_pool = [*roles, _Text("model"), None]
    models: dict[Any, Any] = {}
    for index in range(count):
        if rng.random() < 0.6:
            attrs: dict[str, Any] = {}
            for key, values in (("gen_ai.request.model", models_of),
                                ("gen_ai.response.model", models_of),
                                ("gen_ai.agent.name", ["Triage", "", None, "Helper"])):
                if rng.random() < 0.7:
                    attrs[key] = rng.choice(values)
            if rng.random() < 0.7:
                attrs["_requested_tools"] = rng.choice((
                    [rng.choice(names) for _ in range(rng.randrange(4))], (), None,
                    tuple(rng.choice(names) for _ in range(2))))
            if rng.random() < 0.2:
                attrs["llm.token_count.prompt"] = rng.randrange(100)
            code = codes[index]
            models[(sources[code], histories[code], event_ids[index])] = (
                attrs if rng.random() < 0.95 else None)
    if odd:
        for index in range(count):
            roles[index] = rng.choice(role_pool)
            types[index] = rng.choice(type_pool)
    return codes, event_ids, turns, roles, types, sources, histories, prefixes, models


@pytest.mark.parametrize("odd", [False, True])
def test_genai_spans_equal_the_pure_ones(odd: bool) -> None:
    rng = random.Random(f"genai-spans-{odd}")
    for _ in range(300):
        args = _genai_columns(rng, odd)
        assert _genai_typed(span_columns.genai_spans(*args)) == _genai_typed(
            genai_spans_python(*args))


@compiled
def test_the_compiled_genai_spans_leave_other_mappings_to_python() -> None:
    args = list(_genai_columns(random.Random("genai-odd"), False))
    build = span_columns._spanattrs.genai_spans
    words = span_columns._GENAI_WORDS
    assert build(*args[:8], types.MappingProxyType(args[8]), words) is None
    odd_value = dict(args[8])
    key = (args[5][args[0][0]], args[6][args[0][0]], args[1][0])
    odd_value[key] = types.MappingProxyType({"gen_ai.request.model": "m"})
    assert build(*args[:8], odd_value, words) is None
    assert build([np.int64(0), *args[0][1:]], *args[1:], words) is None
    assert build([3, *args[0][1:]], *args[1:], words) is None  # no such run
    with pytest.raises(ValueError):
        build(*args, words[:-1])
    with pytest.raises(ValueError):
        build(args[0], args[1][:-1], *args[2:], words)
    # a requested tools' value that is no iterable: the pure path's own error, passed on
    bad = {key: {"_requested_tools": 3}}
    roles = ["model"] * len(args[0])
    with pytest.raises(TypeError):
        genai_spans_python(*args[:3], roles, *args[4:8], bad)
    with pytest.raises(TypeError):
        build(*args[:3], roles, *args[4:8], bad, words)


_RUN_FIELDS = ("source", "history", "namespace", "run_id", "workflow_id", "workflow_type", "key",
               "first_time", "last_time", "trace_id", "root_id", "base", "base_set", "fixed",
               "id_prefix")  # fmt: skip


def _run_typed(run: RunSpans) -> list[Any]:
    """A run's attributes, with their types (the dicts' items too)."""
    out = []
    for name in _RUN_FIELDS:
        value = getattr(run, name)
        shown = list(value.items()) if isinstance(value, dict) else value
        out.append((name, type(value), repr(shown),
                    [type(v) for v in value.values()] if isinstance(value, dict) else None))
    return out


def test_runs_made_at_once_equal_those_made_one_by_one() -> None:
    texts = ["default", "", None, np.str_("ns"), _Text("t"), 3, float("nan"), pd.NA, "wf-1",
             "run-é"]  # fmt: skip
    rng = random.Random("runs-many")
    for namespace in (None, "prod", ""):
        count = 300
        heads = {name: [rng.choice(texts) for _ in range(count)]
                 for name in ("namespace", "run_id", "workflow_id", "workflow_type")}  # fmt: skip
        runs = [(rng.choice(("a.json", None, "b")), rng.choice((0, 3, np.int64(2))))
                for _ in range(count)]  # fmt: skip
        firsts = [rng.choice((None, 5, 2**70)) for _ in range(count)]
        lasts = [rng.choice((None, 9)) for _ in range(count)]
        made = RunSpans.many(heads, runs, namespace, firsts, lasts)
        for code, run in enumerate(made):
            head = {name: values[code] for name, values in heads.items()}
            source, history = runs[code]
            expected = RunSpans(head, source, int(history), namespace, firsts[code], lasts[code],
                                hashed=False)  # fmt: skip
            assert _run_typed(run) == _run_typed(expected)


@pytest.mark.parametrize("seed", range(10))
def test_turn_ends_equal_the_pure_ones(seed: int) -> None:
    rng = random.Random(f"turn-ends-{seed}")
    for _ in range(100):
        count = rng.randrange(0, 60)
        codes = sorted(rng.randrange(4) for _ in range(count))
        if rng.random() < 0.3:  # out of order: a turn's activities apart
            rng.shuffle(codes)
        turns = [rng.choice((0, 1, 2, 3)) for _ in range(count)]

        def time() -> Any:
            return rng.choice((None, None, rng.randrange(0, 50), rng.randrange(0, 10) * 1.0,
                               2**70, float("nan"), np.int64(rng.randrange(50))))

        columns = [[time() for _ in range(count)] for _ in range(3)]
        found = span_columns.turn_ends(codes, turns, *columns)
        expected = span_columns.turn_ends_python(codes, turns, *columns)
        assert [(k, type(v), repr(v)) for k, v in found.items()] == [
            (k, type(v), repr(v)) for k, v in expected.items()]


def test_turn_ends_of_times_that_do_not_compare() -> None:
    args = ([0, 0], [1, 1], [None, "x"], [None, None], [5, 3])
    with pytest.raises(TypeError):
        span_columns.turn_ends_python(*args)
    with pytest.raises(TypeError):
        span_columns.turn_ends(*args)
    # an equal key by value (1 == 1.0, True): the pure path's dict keys
    assert span_columns.turn_ends([0, 0], [1, 1.0], [None, None], [None, None], [5, 7]) == {
        (0, 1): 7}
