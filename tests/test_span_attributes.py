"""The spans' attribute dicts made in C (``toolkit.traces._spanattrs``) equal the pure path's:
the same keys in the same order (the OTLP bytes follow it), the same values of the same types,
on the recorded histories and on rows outside the common case (a missing attempt, a NaN queue
time, fields of other types, a base key among a span's own), and the spans made without it are
the same (the spans' equality to the row-wise reference is in ``test_traces_columnwise``)."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import toolkit as tk
from toolkit.agents.tokens import genai_attributes as model_attributes_of
from toolkit.traces import span_columns
from toolkit.traces.span_columns import (
    activity_attributes,
    activity_attributes_python,
    genai_attributes,
    genai_attributes_python,
    own_attributes,
    own_attributes_python,
)
from toolkit.traces.span_rows import RunSpans
from toolkit.traces.spans import trace_spans

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "histories"

compiled = pytest.mark.skipif(span_columns._spanattrs is None,
                              reason="the C attribute builder is not built")  # fmt: skip

#: Each builder and its pure reference.
BUILDERS = {
    "activity_attributes": activity_attributes_python,
    "own_attributes": own_attributes_python,
    "genai_attributes": genai_attributes_python,
}


def _typed(made: list[dict[str, Any]]) -> list[list[tuple[str, type, str]]]:
    """Each dict's items in order, each value with its type (and by repr: NaN equals itself)."""
    return [[(key, type(value), repr(value)) for key, value in attrs.items()] for attrs in made]


def _spans_typed(spans: pd.DataFrame) -> list[list[tuple[str, type, str]]]:
    return _typed(spans["attributes"].tolist())


@pytest.fixture(scope="module", params=[ROOT / "data", CORPUS], ids=lambda p: p.name)
def recorded(request: pytest.FixtureRequest) -> pd.DataFrame:
    if not request.param.is_dir():
        pytest.skip(f"{request.param} is absent (the shared corpus is not laid out here)")
    return tk.read_histories(request.param, progress=False).events


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[tuple[Any, ...]]]]:
    """The arguments of every call of the three builders while spans are made."""
    calls: dict[str, list[tuple[Any, ...]]] = {name: [] for name in BUILDERS}
    for name in BUILDERS:
        original = getattr(span_columns, name)

        def spy(*args: Any, _name: str = name, _original: Callable[..., Any] = original) -> Any:
            calls[_name].append(args)
            return _original(*args)

        monkeypatch.setattr(span_columns, name, spy)
    yield calls


@compiled
def test_the_compiled_attributes_are_the_pure_ones_on_recorded_spans(
        recorded: pd.DataFrame, captured: dict[str, list[tuple[Any, ...]]]) -> None:  # fmt: skip
    attributes = model_attributes_of(tk.model_calls(recorded))
    for content in (False, True):
        trace_spans(recorded, model_attributes=attributes, content=content, namespace="prod")
    trace_spans(recorded)  # no model attributes: the tool calls named by their activities
    compiled_builders = {"activity_attributes": activity_attributes,
                         "own_attributes": own_attributes,
                         "genai_attributes": genai_attributes}  # fmt: skip
    for name, calls in captured.items():
        assert calls and all(len(args[4 if name == "own_attributes" else 1]) for args in calls)
        for args in calls:
            expected = BUILDERS[name](*(args[:3] + args[4:] if name == "own_attributes"
                                        else args))  # its spec is the compiled one's alone
            assert _typed(compiled_builders[name](*args)) == _typed(expected), name
    # the runs' spans and the turns'
    assert {args[1] for args in captured["own_attributes"]} == {"workflow", "turn"}


def test_spans_without_the_compiled_builder_are_the_same(recorded: pd.DataFrame,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    attributes = model_attributes_of(tk.model_calls(recorded))
    expected = trace_spans(recorded, model_attributes=attributes, content=True)
    monkeypatch.setattr(span_columns, "_spanattrs", None)
    found = trace_spans(recorded, model_attributes=attributes, content=True)
    pd.testing.assert_frame_equal(found, expected)
    assert _spans_typed(found) == _spans_typed(expected)


def _runs() -> list[RunSpans]:
    """Runs whose bases differ: every key set, a run id and a namespace missing."""
    heads = [{"namespace": "default", "run_id": "run-1", "workflow_id": "wf-1",
              "workflow_type": "Agent"},
             {"namespace": "", "run_id": None, "workflow_id": "wf-2", "workflow_type": None},
             {"namespace": "ns", "run_id": "run-3", "workflow_id": None,
              "workflow_type": "Other"}]  # fmt: skip
    return [RunSpans(head, "source.json", code, None, 0, 10, hashed=False)
            for code, head in enumerate(heads)]  # fmt: skip


class _Text(str):
    """A str of another type (the pure path sets it by ``_set``, the C one leaves it)."""


#: Activity fields outside the common case, one at a time, then together (the common case's
#: values: id, type, attempt, outcome, queue, scheduled time's text, queue ms, role).
_PLAIN = ["act-1", "call_model", 1, "completed", "queue", "2026-01-01 00:00:00+00:00", 1.5,
          "model"]  # fmt: skip
_ODD = {
    0: [None, 7, _Text("t"), np.str_("n"), float("nan")],
    1: [None, 3, _Text("t"), b"bytes"],
    2: [None, 2, True, np.int64(4), 2**70, -1],
    3: ["open", _Text("x"), ""],
    4: [None, pd.NA, 1.0, _Text("q")],
    5: ["", _Text("when")],
    6: [None, float("nan"), 0.0, -0.0, float("inf"), 3, np.float64(2.5), np.float64("nan"),
        True, 1e300],
    7: [None, "other", _Text("tool_call"), 5],
}


def _activity_rows() -> tuple[list[int], list[Any], list[list[Any]]]:
    codes: list[int] = []
    event_ids: list[Any] = []
    rows: list[list[Any]] = []
    for field, values in _ODD.items():
        for value in values:
            for code in range(3):
                row = list(_PLAIN)
                row[field] = value
                rows.append(row)
                codes.append(code)
                event_ids.append(len(rows) * 3)
    for code in range(3):  # everything odd at once, and the common case itself
        rows.append([None, None, None, "open", None, "", None, None])
        rows.append(list(_PLAIN))
        codes += [code, code]
        event_ids += [np.int64(5), 6]  # an event id of numpy's, one of Python's
    return codes, event_ids, [list(column) for column in zip(*rows, strict=True)]


@compiled
def test_activity_attributes_outside_the_common_case() -> None:
    bases = [run.base_set for run in _runs()]
    codes, event_ids, columns = _activity_rows()
    expected = activity_attributes_python(bases, codes, event_ids, columns)
    assert _typed(activity_attributes(bases, codes, event_ids, columns)) == _typed(expected)
    made, missing = span_columns._spanattrs.column_attributes(
        bases, codes, ("openinference.span.kind", "CHAIN", "temporal.event_id"), event_ids,
        span_columns._ACTIVITY_KEYS, span_columns._ACTIVITY_SPEC, columns)  # fmt: skip
    # the compiled builder made the common case and left the others, each in its place
    assert 0 < len(missing) < len(codes)
    assert all((attrs is None) == (index in missing) for index, attrs in enumerate(made))
    common = [i for i in range(len(codes)) if i not in missing]
    assert _typed([made[i] for i in common]) == _typed([expected[i] for i in common])
    # and the common case is every field set (then each dict holds them all)
    assert all(len(made[i]) == len(bases[codes[i]]) + 10 for i in common)


def test_a_runs_fixed_keys_are_its_base_and_every_spans() -> None:
    for run in _runs():
        assert run.fixed == {*run.base, "openinference.span.kind", "temporal.event_id"}


@compiled
@pytest.mark.parametrize("role", ["turn", "workflow"])
def test_own_attributes_outside_the_common_case(role: str) -> None:
    runs = _runs()
    agents = ["Agent", None, 3, _Text("a"), np.str_("b"), ""]
    numbers = [1, np.int64(2), True, 2**80]
    triggers = ["start", None, _Text("signal"), 0]
    codes, event_ids, columns = [], [], [[], [], [], []]
    for agent in agents:
        for number in numbers:
            for trigger in triggers:
                for code in range(3):
                    codes.append(code)
                    event_ids.append(len(codes) if len(codes) % 7 else np.int64(len(codes)))
                    for column, value in zip(columns, ("invoke_agent", agent, number, trigger),
                                             strict=True):  # fmt: skip
                        column.append(value)
    keys = span_columns._TURN_KEYS
    expected = own_attributes_python(runs, role, keys, codes, event_ids, columns)
    assert _typed(own_attributes(runs, role, keys, span_columns._TURN_SPEC, codes, event_ids,
                                 columns)) == _typed(expected)  # fmt: skip
    # keys among the base's: the pure path's (which puts them in the base's place)
    keys = ("temporalRunID", "x", "session.id", "y")
    expected = own_attributes_python(runs, role, keys, codes, event_ids, columns)
    assert _typed(own_attributes(runs, role, keys, "ssis", codes, event_ids,
                                 columns)) == _typed(expected)  # fmt: skip


@compiled
def test_genai_attributes_outside_the_common_case() -> None:
    runs = _runs()
    owns: list[Any] = [
        {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 12, "llm.ok": True},
        {},
        {"a": None, "b": float("nan"), "c": 1.25, "d": [1, "x"], "e": {"k": 1}, "f": -0.0},
        {"a": np.float64(1.5)},
        {"a": np.int64(3), "b": "x"},
        {"a": pd.NA},
        {"a": _Text("t")},
        {"temporalRunID": "replaced"},  # a base key: replaces the base's value in its place
        {"session.id": None},  # ... or drops it
        {"openinference.span.kind": "OTHER"},
        {"temporal.event_id": 99},
        {"temporal.namespace": "set again", "x": 1},
        types.MappingProxyType({"a": 1}),  # a mapping that is no dict
        {"z": 1, "a": 2, "m": float("inf")},  # keys in no sorted order: kept as they come
        {"_requested_tools": ["get_weather"], "a": 1, "gen_ai.operation.name": None},
        {"a": 1, "_requested_tools": None, "tool.name": "held"},
        {1: "a key that is no str"},
        {_Text("_requested_tools"): 1, "b": 2},  # popped as dict.pop finds it
    ]
    pairs: list[tuple[tuple[Any, Any], ...]] = [
        (),
        (("gen_ai.operation.name", "chat"),),
        (("gen_ai.tool.name", "t"), ("tool.name", "t"), ("gen_ai.operation.name", "x")),
        (("gen_ai.tool.name", None), ("tool.name", float("nan")), ("c", np.float64(2.0))),
        (("a", "default"), ("_requested_tools", "a default for the popped key")),
        (("temporalRunID", "a base key"),),
        (("x", 1), ("x", 2)),  # one key twice: the first kept
        ((_Text("x"), 1),),
        [("x", 1)],  # no tuple  # type: ignore[list-item]
    ]
    codes, roles, event_ids, attributes, defaults = [], [], [], [], []
    for own in owns:
        for default in pairs:
            for code in range(3):
                for role in ("model", "tool_call"):
                    codes.append(code)
                    roles.append(role)
                    event_ids.append(len(codes) if len(codes) % 5 else np.int64(len(codes)))
                    attributes.append(own)
                    defaults.append(default)
    expected = genai_attributes_python(runs, codes, roles, event_ids, attributes, defaults)
    assert _typed(genai_attributes(runs, codes, roles, event_ids, attributes,
                                   defaults)) == _typed(expected)  # fmt: skip
    # the model attributes are left as they were (the builders copy them)
    assert owns[14] == {"_requested_tools": ["get_weather"], "a": 1,
                        "gen_ai.operation.name": None}  # fmt: skip


@compiled
def test_the_compiled_builder_refuses_malformed_arguments() -> None:
    build = span_columns._spanattrs.column_attributes
    head = ("openinference.span.kind", "CHAIN", "temporal.event_id")
    with pytest.raises(ValueError):  # a column short of a value
        build([{}], [0, 0], head, [1, 2], ("a",), "s", [["x"]])
    with pytest.raises(ValueError):  # a spec of another size
        build([{}], [0], head, [1], ("a",), "ss", [["x"]])
    with pytest.raises(ValueError):  # an unknown spec
        build([{}], [0], head, [1], ("a",), "q", [["x"]])
    with pytest.raises(TypeError):  # a key that is no str
        build([{}], [0], head, [1], (1,), "s", [["x"]])
    # a code naming no run: left to the pure path (which raises its IndexError)
    assert build([{}], [5], head, [1], ("a",), "s", [["x"]]) == ([None], [0])
    assert build([{}], [0], head, [1], ("a",), "s", [["x"]]) == (
        [{"openinference.span.kind": "CHAIN", "temporal.event_id": 1, "a": "x"}], [])
    with pytest.raises(ValueError):  # fixed: one set per run
        span_columns._spanattrs.merged_attributes([{}], [0], ("k", "e"), ["LLM"], [1], [{}],
                                                  [()], None, [])  # fmt: skip
