"""The derived tables' shared helpers: enum spellings, attribute fallbacks, orphans, plain cells."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from temporalio.api.enums.v1 import (
    ParentClosePolicy,
    RetryState,
    SignalExternalWorkflowExecutionFailedCause,
    StartChildWorkflowExecutionFailedCause,
    TaskQueueKind,
    TimeoutType,
    WorkflowTaskFailedCause,
)

from toolkit.errors import HistoryFormatError
from toolkit.histories import read_histories, read_history, tables
from toolkit.histories.columns.lazy import LazyAttributes, LazyPayloads
from toolkit.histories.enums import canonical_enum
from toolkit.histories.tables.build import canonical_of
from toolkit.histories.tables.common import HISTORY_SCHEMA, canonical, event_rows

ENUMS = (
    ParentClosePolicy, RetryState, SignalExternalWorkflowExecutionFailedCause,
    StartChildWorkflowExecutionFailedCause, TaskQueueKind, TimeoutType, WorkflowTaskFailedCause,
)  # fmt: skip


def pascal(screaming: str) -> str:
    return "".join(part.capitalize() for part in screaming.split("_"))


@pytest.mark.parametrize("enum", ENUMS, ids=lambda e: e.DESCRIPTOR.name)
def test_every_spelling_of_every_value_gives_its_proto_name(enum) -> None:
    prefix = enum.DESCRIPTOR.values[0].name.removesuffix("UNSPECIFIED")
    to_name = canonical_of(enum)
    for name, number in enum.items():
        suffix = name.removeprefix(prefix)
        spellings = (name, number, str(number), f"0{number}", pascal(suffix), pascal(name), suffix)
        for spelling in spellings:
            assert to_name(spelling) == name, spelling
            assert canonical(enum, spelling) == name, spelling
            assert canonical_enum(enum.DESCRIPTOR, spelling) == name, spelling


def test_empty_unknown_and_non_enum_values() -> None:
    to_name = canonical_of(RetryState)
    assert to_name(None) is None and to_name("") is None
    assert to_name("RETRY_STATE_FROM_THE_FUTURE") == "RETRY_STATE_FROM_THE_FUTURE"
    assert to_name(999) == "999" and to_name("999") == "999"
    # Not enum spellings: kept as text, never read as the number they equal.
    assert to_name(2.0) == "2.0" and to_name(True) == "True"


def test_bare_suffixes_in_old_exports_are_canonical_in_the_tables(corpus: Path) -> None:
    # Java's reset history writes "TERMINATE", the pre-1.0 archive "SCHEDULE_TO_START".
    java = read_history(corpus / "histories/temporalio__sdk-java/resetWorkflowHistory.json")
    policies = set(tables.child_workflows(java)["parent_close_policy"])
    assert policies == {"PARENT_CLOSE_POLICY_TERMINATE"}
    archive = read_history(
        corpus / "histories/temporalio__temporal/archive_history_workflow_history_v1.json"
    )
    timed_out = tables.workflow_tasks(archive).query("outcome == 'timed_out'")
    assert set(timed_out["timeout_type"]) == {"TIMEOUT_TYPE_SCHEDULE_TO_START"}


def test_every_schema_starts_with_the_history_columns() -> None:
    schemas = [getattr(tables, name) for name in tables.__all__ if name.endswith("_COLUMNS")]
    assert len(schemas) == 7
    for schema in schemas:
        assert list(schema.items())[:4] == list(HISTORY_SCHEMA.items())


@pytest.fixture(scope="module")
def corpus_events(corpus: Path) -> pd.DataFrame:
    return read_histories(corpus / "histories", progress=False).events


# Frame columns the loader fills from the attributes; the tables read the attributes when they
# are empty (frames built by other means), links and names included.
FILLED_BY_THE_LOADER = (
    "scheduled_event_id", "started_event_id", "initiated_event_id", "activity_id",
    "activity_type", "child_workflow_id", "child_workflow_type", "timer_id", "signal_name",
    "update_id", "update_name", "marker_name", "task_queue", "identity", "attempt", "retry_state",
)  # fmt: skip


@pytest.mark.parametrize(
    "table", [getattr(tables, name) for name in tables.__all__ if name.islower()],
    ids=lambda t: t.__name__,
)
def test_tables_read_the_attributes_where_the_frame_columns_are_empty(
    corpus_events: pd.DataFrame, table,
) -> None:
    blank = corpus_events.copy()
    for column in FILLED_BY_THE_LOADER:
        blank[column] = None if blank[column].dtype == object else pd.NA
    expected = table(corpus_events)
    assert len(expected) > 10
    pd.testing.assert_frame_equal(table(blank), expected)


def test_orphan_task_events_keep_their_task_without_the_scheduled_event(
    corpus_events: pd.DataFrame,
) -> None:
    scheduled = corpus_events["event_type"].isin(["WorkflowTaskScheduled", "DecisionTaskScheduled"])
    full = tables.workflow_tasks(corpus_events)
    orphans = tables.workflow_tasks(corpus_events[~scheduled])
    # Every task but those still only scheduled has a later event that keeps it as an orphan.
    seen = full[full["started_event_id"].notna() | full["closed_event_id"].notna()]
    seen = seen.reset_index(drop=True)
    assert len(orphans) == len(seen) > 300 and orphans["scheduled_time"].isna().all()
    for column in ("scheduled_event_id", "workflow_task", "outcome", "closed_event_id",
                   "commands"):
        assert orphans[column].tolist() == seen[column].tolist(), column


def test_event_rows_and_tables_hand_out_plain_values(corpus: Path) -> None:
    events = read_history(corpus / "histories/temporalio__sdk-python/mcp-history-stateful.json")
    assert isinstance(events["attributes"].iloc[0], LazyAttributes)
    assert any(isinstance(cell, LazyPayloads) for cell in events["input"])
    rows = list(event_rows(events, ("ActivityTaskScheduled",), ("attributes", "input")))
    assert len(rows) == 9 and all(type(row.attributes) is dict for row in rows)
    assert [type(row.input) for row in rows].count(list) == 5
    assert all(row.input is None or type(row.input) is list for row in rows)
    acts = tables.activities(events)
    cells = [*acts["input"], *acts["result"]]
    assert any(cells) and all(cell is None or type(cell) is list for cell in cells)


def test_a_frame_missing_a_required_column_names_it(corpus_events: pd.DataFrame) -> None:
    with pytest.raises(HistoryFormatError, match=r"timers\(\) .*\['timer_id'\]"):
        tables.timers(corpus_events.drop(columns=["timer_id"]))
