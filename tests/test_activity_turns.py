"""activity_turns equals its implementation before the fast paths
(tests/activity_turns_reference.py) on every lab folder, the fixtures and the corpus, read as
the loader reads them (each source's rows together, in event order) and in the orders the fast
paths do not take: rows reversed or shuffled, a source met twice apart, sources missing."""

from __future__ import annotations

from pathlib import Path

import activity_turns_reference as reference
import numpy as np
import pandas as pd
import pytest

import toolkit as tk
from toolkit.agents.activity_roles import _type_sets
from toolkit.agents.activity_turns import _source_codes, activity_turns
from toolkit.agents.roles import PRESETS, Roles

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "venvs")
FIXTURES = ROOT / "tests" / "fixtures" / "agent_histories"


def _assert_same(frame: pd.DataFrame, roles: object = "auto") -> None:
    found = activity_turns(frame, roles)  # type: ignore[arg-type]
    expected = reference.activity_turns(frame, roles)  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(found.spans, expected.spans)
    assert found.turns == expected.turns
    assert found.roles == expected.roles
    assert found.runs == expected.runs
    assert {k: (type(e), str(e)) for k, e in found.errors.items()} == {
        k: (type(e), str(e)) for k, e in expected.errors.items()}  # fmt: skip
    assert list(found.positions) == list(expected.positions)
    for name, values in found.positions.items():
        if name == "types":
            np.testing.assert_array_equal(values[0], expected.positions[name][0])
            assert values[1] == expected.positions[name][1]
        elif isinstance(values, dict):
            assert values == expected.positions[name], name
        else:
            np.testing.assert_array_equal(values, expected.positions[name], err_msg=name)
            assert values.dtype == expected.positions[name].dtype, name
    codes, names = found.positions["types"]
    assert [names[c] for c in codes.tolist()] == frame["event_type"].tolist()


def _read(folder: Path) -> pd.DataFrame:
    events, _ = tk.read_histories(folder, progress=False)
    return events


@pytest.mark.parametrize("folder", [*FOLDERS, FIXTURES], ids=lambda p: p.name)
def test_activity_turns_equal_the_reference(folder: Path) -> None:
    events = _read(folder)
    _assert_same(events)
    _assert_same(events.iloc[::-1].reset_index(drop=True))  # out of order: sorted
    shuffled = events.sample(frac=1.0, random_state=7).reset_index(drop=True)
    _assert_same(shuffled)


def test_activity_turns_equal_the_reference_on_the_corpus(corpus: Path) -> None:
    events = _read(corpus / "histories")
    _assert_same(events)
    _assert_same(events.sample(frac=1.0, random_state=3).reset_index(drop=True))


@pytest.mark.parametrize("roles", ["go_googleadk", "openai_agents", PRESETS["python_adk"]],
                         ids=str)  # fmt: skip
def test_activity_turns_equal_the_reference_with_roles(roles: object) -> None:
    _assert_same(_read(ROOT / "data"), roles)


def test_sources_met_twice_apart_or_missing() -> None:
    first, second = _read(ROOT / "data" / "adk"), _read(ROOT / "data" / "go_twin")
    # a source's rows in two places: the codes are those of first appearance, as factorize's
    twice = pd.concat([first, second, first.assign(history=1)], ignore_index=True)
    _assert_same(twice)
    # no source column, and sources that are None or NaN
    _assert_same(second.drop(columns=["source"]))
    missing = second.copy()
    missing["source"] = np.where(np.arange(len(missing)) % 2, None, np.nan)
    missing["source"] = missing["source"].astype(object)
    _assert_same(missing)


@pytest.mark.parametrize("values", [
    ["a", "a", "b", "b", "c"], ["a", "b", "a"], [None, None, "a"], [np.nan, np.nan, "a"],
    [None, np.nan, None], [], ["x"], ["a", "a", 1, 1],
], ids=str)  # fmt: skip
def test_source_codes_are_factorizes(values: list[object]) -> None:
    sources = np.array(values, dtype=object)
    expected = pd.factorize(sources, use_na_sentinel=False)[0]
    np.testing.assert_array_equal(_source_codes(sources), expected)


@pytest.mark.parametrize("change", ["us", "paris", "naive", "text columns", "float links",
                                    "text links", "no links"])  # fmt: skip
def test_columns_of_other_dtypes(change: str) -> None:
    # the loader's dtypes take the fast readers (UTC nanoseconds, object columns); others not
    events = _read(ROOT / "data" / "go_twin")
    times = events["event_time"]
    if change == "us":
        events["event_time"] = times.astype("datetime64[us, UTC]")
    elif change == "paris":
        events["event_time"] = times.dt.tz_convert("Europe/Paris")
    elif change == "naive":
        events["event_time"] = times.dt.tz_localize(None)
    elif change == "float links":
        events["scheduled_event_id"] = events["scheduled_event_id"].astype(float)
    elif change == "text links":
        events["scheduled_event_id"] = events["scheduled_event_id"].astype(object).map(
            lambda v: None if pd.isna(v) else str(v))  # fmt: skip
    elif change == "no links":
        events = events.drop(columns=["scheduled_event_id"])
    else:
        for name in ("activity_type", "activity_id", "run_id", "signal_name", "source"):
            events[name] = events[name].astype("str")
    _assert_same(events)


def test_updates_counted_once_per_id() -> None:
    # the lab's signals made updates, two by two under one id (admitted, then accepted), some
    # with no id (each its own); and a run whose roles take no update
    events = _read(ROOT / "data" / "go_twin")
    rows = np.flatnonzero(events["event_type"].to_numpy() == "WorkflowExecutionSignaled")
    kinds = np.where(np.arange(len(rows)) % 2, "WorkflowExecutionUpdateAccepted",
                     "WorkflowExecutionUpdateAdmitted")  # fmt: skip
    events.loc[rows, "event_type"] = kinds
    events.loc[rows, "update_name"] = events.loc[rows, "signal_name"]
    ids = [None if k % 7 == 3 else f"u{k // 2}" for k in range(len(rows))]
    events.loc[rows, "update_id"] = pd.Series(ids, index=rows, dtype=object)
    _assert_same(events)
    found = activity_turns(events, "auto")
    assert any(t[1].startswith("update:") for turns in found.turns.values() for t in turns)
    _assert_same(events, Roles("no updates", "InvokeModel", "ListMcpTools", "CallMcpTool",
                               user_updates=None))  # fmt: skip


def test_signal_names_of_every_kind() -> None:
    # missing names (None, NaN) and names that are no text (1 and 1.0 are one value to a hash)
    events = _read(ROOT / "data" / "go_twin")
    rows = np.flatnonzero(events["event_type"].to_numpy() == "WorkflowExecutionSignaled")
    names = events["signal_name"].to_numpy(dtype=object, copy=True)
    for k, value in zip(range(0, len(rows), 5), [None, np.nan, 1, 1.0, "x", True] * 99,
                        strict=False):  # fmt: skip
        names[rows[k]] = value
    events["signal_name"] = pd.Series(names, index=events.index, dtype=object)
    _assert_same(events)
    _assert_same(events, Roles("some", "InvokeModel", "ListMcpTools", "CallMcpTool",
                               user_signals="x|1.*"))  # fmt: skip


def test_many_activity_types() -> None:
    # more types than a bit mask holds: the runs' type sets keyed by their codes' bytes
    events = _read(ROOT / "data" / "go_twin")
    rows = np.flatnonzero(events["activity_type"].to_numpy() == "CallMcpTool")
    renamed = events["activity_type"].to_numpy(dtype=object, copy=True)
    renamed[rows] = [f"Tool{k % 80}" for k in range(len(rows))]
    events["activity_type"] = pd.Series(renamed, index=events.index, dtype=object)
    assert events["activity_type"].nunique() > 62
    _assert_same(events, "go_googleadk")
    _assert_same(events)


def test_type_sets_by_mask_and_by_bytes() -> None:
    run = np.array([0, 0, 1, 2, 2, 2, 4], dtype=np.int64)
    code = np.array([3, -1, 0, 5, 5, 1, 2], dtype=np.int64)
    small, small_of = _type_sets(5, run, code, 6)
    large, large_of = _type_sets(5, run, code, 70)
    assert [small_of(c) for c in range(5)] == [large_of(c) for c in range(5)] == [
        [-1, 3], [0], [1, 5], [], [2]]  # fmt: skip
    assert len(set(small)) == len(set(large)) == 5
