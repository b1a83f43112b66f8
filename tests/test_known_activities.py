"""The activity facts read at the rows the activity turns found (``known_facts``, the spans'
fast path) equal :func:`activity_facts` put into the spans' order, value for value and type for
type, wherever they are read so; frames where the two groupings could differ are left to the
table's way (None)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from rowwise_reference import trace_spans as rowwise_trace_spans

import toolkit as tk
from toolkit.agents.activity_turns import activity_turns
from toolkit.traces import spans as spans_module
from toolkit.traces.activity_facts import activity_facts
from toolkit.traces.known_activities import known_facts
from toolkit.traces.spans import _RunFacts, trace_spans, with_run_columns

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "agent_histories"
#: Folders whose runs are all recognised: the fast path is taken there.
KNOWN = ["adk", "duplicate_tool", "go_twin", "openai_agents", "pydantic_ai"]


def _frame(folder: Path) -> pd.DataFrame:
    events, _ = tk.read_histories(folder, progress=False)
    return with_run_columns(events)


def _by_spans(events: pd.DataFrame, found: Any, content: bool) -> dict[str, list[Any]]:
    """activity_facts in the order of ``found.spans`` (run code, then scheduled event id)."""
    facts = activity_facts(events, payloads=content, nanos=True)
    code_of = {key: code for code, key in enumerate(found.runs)}
    keys = [(code_of[(s, int(h))], int(e)) for s, h, e in zip(
        facts["source"], facts["history"], facts["scheduled_event_id"], strict=True)]  # fmt: skip
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return {name: [values[i] for i in order] for name, values in facts.items()}


def _typed(values: list[Any]) -> list[tuple[type, Any]]:
    return [(type(v), v) for v in values]


@pytest.mark.parametrize("folder", [*(ROOT / "data" / n for n in KNOWN), FIXTURES],
                         ids=lambda p: p.name)  # fmt: skip
@pytest.mark.parametrize("content", [False, True])
def test_known_facts_equal_activity_facts(folder: Path, content: bool) -> None:
    events = _frame(folder)
    found = activity_turns(events, "auto")
    known = known_facts(events, found, payloads=content, nanos=True)
    assert known is not None, "the fast path is taken on these folders"
    expected = _by_spans(events, found, content)
    assert list(known) == list(expected)
    for name, values in known.items():
        assert _typed(values) == _typed(expected[name]), name
    assert [int(e) for e in known["scheduled_event_id"]] == found.spans["event_id"].tolist()


def test_the_spans_activities_equal_the_tables_way(monkeypatch: pytest.MonkeyPatch) -> None:
    events = _frame(ROOT / "data" / "go_twin")
    found = activity_turns(events, "auto")
    facts = _RunFacts(events, found)
    fast = facts.activities(True, set())
    monkeypatch.setattr(spans_module, "known_facts", lambda *args, **kwargs: None)
    slow = facts.activities(True, set())
    assert list(fast) == list(slow)
    for name, values in fast.items():
        assert _typed(values) == _typed(slow[name]), name


def _changed(events: pd.DataFrame, how: str) -> pd.DataFrame:
    events = events.copy()
    scheduled = np.flatnonzero(events["event_type"].to_numpy() == "ActivityTaskScheduled")
    linked = np.flatnonzero(events["event_type"].isin(
        ["ActivityTaskStarted", "ActivityTaskCompleted"]).to_numpy())  # fmt: skip
    if how == "orphan":  # a started event whose scheduled event is gone
        return events.drop(index=events.index[scheduled[0]]).reset_index(drop=True)
    if how == "shuffled":  # not in event order
        return events.iloc[::-1].reset_index(drop=True)
    if how == "no link":  # the link only in the attributes
        events.loc[events.index[linked[0]], "scheduled_event_id"] = pd.NA
        return events
    if how == "no type":  # the type neither in the column nor in the attributes
        events.loc[events.index[scheduled[0]], ["activity_type", "attributes"]] = None
        return events
    if how == "later link":  # names a scheduled event after it
        events.loc[events.index[linked[0]], "scheduled_event_id"] = int(
            events["event_id"].max())  # fmt: skip
        return events
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["orphan", "shuffled", "no link", "no type", "later link"])
def test_frames_the_groupings_could_differ_on_take_the_tables_way(how: str) -> None:
    events = _changed(_frame(ROOT / "data" / "go_twin"), how)
    found = activity_turns(events, "auto")
    assert known_facts(events, found, nanos=True) is None
    # and the spans, read the table's way, are the row-wise walk's
    pd.testing.assert_frame_equal(trace_spans(events), rowwise_trace_spans(events))


def test_unrecognised_runs_take_the_tables_way() -> None:
    events = _frame(ROOT / "data" / "history_budget")
    found = activity_turns(events, "auto")
    assert found.errors and known_facts(events, found) is None
