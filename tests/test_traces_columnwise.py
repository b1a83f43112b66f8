"""The token ledger and the spans, computed column-wise over a whole frame, equal the row-wise
implementation they replaced (tests/rowwise_reference.py) on every lab recording and the public
agent histories: every column, every dtype, every row in order."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from rowwise_reference import model_calls as rowwise_model_calls
from rowwise_reference import spans_turns_roles as rowwise_spans_turns_roles
from rowwise_reference import trace_spans as rowwise_trace_spans

import toolkit as tk
from toolkit.agents.tokens import genai_attributes, model_calls
from toolkit.agents.turns import _spans_turns_roles
from toolkit.errors import ToolkitError
from toolkit.histories.versions import version_labels
from toolkit.traces.spans import trace_spans

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "venvs")
FIXTURES = ROOT / "tests" / "fixtures" / "agent_histories"


CORPUS = ROOT.parent / "shared" / "corpus" / "histories"


@pytest.fixture(scope="module", params=[*FOLDERS, FIXTURES, CORPUS], ids=lambda p: p.name)
def recorded(request: pytest.FixtureRequest) -> pd.DataFrame:
    if not request.param.is_dir():
        pytest.skip(f"{request.param} is absent (the shared corpus is not laid out here)")
    events, errors = tk.read_histories(request.param, progress=False)
    # the folders' other JSON files (cases, registries) are no histories: named, not read; the
    # corpus holds an empty history on purpose
    expected = "holds no events" if request.param == CORPUS else "is not a history"
    assert len(events) and errors["message"].str.contains(expected).all()
    return events


def test_model_calls_equal_the_rowwise_ledger(recorded: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(model_calls(recorded), rowwise_model_calls(recorded))


def test_trace_spans_equal_the_rowwise_spans(recorded: pd.DataFrame) -> None:
    attributes = genai_attributes(rowwise_model_calls(recorded))
    expected = rowwise_trace_spans(recorded, model_attributes=attributes)
    pd.testing.assert_frame_equal(trace_spans(recorded, model_attributes=attributes), expected)
    pd.testing.assert_frame_equal(
        trace_spans(recorded, model_attributes=attributes, content=True, namespace="prod"),
        rowwise_trace_spans(recorded, model_attributes=attributes, content=True,
                            namespace="prod"),
    )  # fmt: skip
    # assert_frame_equal compares the attributes as dicts; the OTLP bytes write them in order
    assert _in_order(trace_spans(recorded, model_attributes=attributes)) == _in_order(expected)
    export = tk.to_otel(recorded)
    pd.testing.assert_frame_equal(export.spans, expected)
    pd.testing.assert_frame_equal(export.model_calls, rowwise_model_calls(recorded))


def _in_order(spans: pd.DataFrame) -> list[list[tuple[str, object]]]:
    """Each span's attributes and events as items in order (what dict equality leaves out)."""
    return [[*attributes.items(), *(repr(event) for event in events)]
            for attributes, events in zip(spans["attributes"], spans["events"], strict=True)]


def test_turns_and_roles_of_each_source_equal_the_rowwise_ones(recorded: pd.DataFrame) -> None:
    for _, one in recorded.groupby("source", sort=False):
        try:
            expected = rowwise_spans_turns_roles(one, "auto")
        except ToolkitError as error:
            with pytest.raises(ToolkitError, match="no agent framework recognised") as caught:
                _spans_turns_roles(one, "auto")
            assert str(caught.value) == str(error)
            continue
        spans, turns, roles = _spans_turns_roles(one, "auto")
        pd.testing.assert_frame_equal(spans, expected[0])
        assert (turns, roles) == expected[1:]


def test_a_frame_without_source_or_history_columns() -> None:
    path = ROOT / "data" / "openai_agents" / "oa-0.22.3" / "two_turns.json"
    events = tk.read_history(path)
    bare = events.drop(columns=["source", "history"])
    attributes = genai_attributes(model_calls(events).assign(source=None))
    # The row-wise spans of such a frame were its run's span alone (its NA source found no
    # activities or turns); they are those of the same history with its source, less the source.
    named = rowwise_trace_spans(events, model_attributes=genai_attributes(model_calls(events)))
    assert len(named) == 14 and named["source"].notna().all()
    pd.testing.assert_frame_equal(trace_spans(bare, model_attributes=attributes),
                                  named.assign(source=None))
    # The row-wise ledger labelled such a frame with a Series per cell (or raised without a
    # history column); the run is one history of an unnamed source, labelled by its own
    # history (no file to find the lab's sidecar label next to).
    own = version_labels(events)["label"].iloc[0]
    expected = model_calls(events).assign(source=None)
    expected.loc[:, "label"] = own
    pd.testing.assert_frame_equal(model_calls(events.drop(columns=["source"])), expected)
    pd.testing.assert_frame_equal(model_calls(bare), expected)
