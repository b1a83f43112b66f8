"""The activity facts the spans read equal the columns of ``tk.activities`` they replace, row for
row, on every lab folder, the public agent histories and the corpus (failed, timed-out,
retried and pending activities among them)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.traces.activity_facts import FAILED, activity_facts

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "venvs")


def _plain(value):
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, float) and value != value:
        return None
    return value


def _check(events: pd.DataFrame) -> pd.DataFrame:
    table = tk.activities(events).sort_values(
        ["source", "history", "scheduled_event_id"])  # fmt: skip
    facts = activity_facts(events, payloads=True)
    assert all(len(v) == len(table) for v in facts.values())
    for name, values in facts.items():
        expected = [_plain(v) for v in table[name].tolist()]
        if name == "failure_message":
            expected = [m if o in FAILED else None
                        for m, o in zip(expected, table["outcome"], strict=True)]  # fmt: skip
        if name == "last_failure_message":
            expected = [m if not pd.isna(a) and a > 1 else None
                        for m, a in zip(expected, table["attempt"], strict=True)]  # fmt: skip
        assert [_plain(v) for v in values] == expected, name
    # In nanoseconds (the spans' times): each time's Timestamp.value, each duration's.
    nanos = activity_facts(events, nanos=True)
    for name in ("scheduled_time", "started_time", "closed_time", "queue_duration"):
        assert nanos[name] == [None if v is None else v.value for v in facts[name]], name
        assert all(v is None or type(v) is int for v in nanos[name]), name
    assert {k: v for k, v in nanos.items() if "time" not in k and k != "queue_duration"} == {
        k: v for k, v in facts.items() if "time" not in k and k not in (
            "queue_duration", "input", "result")}  # fmt: skip
    return table


@pytest.mark.parametrize("folder", [*FOLDERS, ROOT / "tests" / "fixtures" / "agent_histories"],
                         ids=lambda p: p.name)  # fmt: skip
def test_activity_facts_equal_the_activities_table(folder: Path) -> None:
    events, _ = tk.read_histories(folder, progress=False)
    _check(events)


def test_activity_facts_on_the_corpus(corpus: Path) -> None:
    events, _ = tk.read_histories(corpus / "histories", progress=False)
    table = _check(events)
    outcomes = set(table["outcome"])
    assert {"completed", "failed", "timed_out", "pending"} <= outcomes, outcomes
    assert (table["attempt"] > 1).sum() and table["last_failure_message"].notna().sum()
    assert table.loc[table["outcome"].isin(FAILED), "failure_message"].notna().sum()


def test_activity_facts_of_sources_out_of_order() -> None:
    # Sources not in name order: the facts are put into the table's order (not kept as read).
    first, _ = tk.read_histories(ROOT / "data" / "adk", progress=False)
    second, _ = tk.read_histories(ROOT / "data" / "openai_agents", progress=False)
    events = pd.concat([second, first], ignore_index=True)
    table = _check(events)
    facts = activity_facts(events)
    assert facts["source"] == table["source"].tolist()
    assert facts["source"][0] == min(facts["source"]) != events["source"].iloc[0]  # reordered
