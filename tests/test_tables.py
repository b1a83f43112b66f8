"""Derived tables on histories recorded on the dev server and on the public corpus."""

from __future__ import annotations

from pathlib import Path

import fixtures_samples
import pandas as pd
import pytest
import temporalio
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History

from toolkit.errors import HistoryFormatError
from toolkit.histories import read_history
from toolkit.histories.tables import (
    ACTIVITY_COLUMNS,
    CHILD_WORKFLOW_COLUMNS,
    MARKER_COLUMNS,
    SIGNAL_COLUMNS,
    TIMER_COLUMNS,
    UPDATE_COLUMNS,
    WORKFLOW_TASK_COLUMNS,
    activities,
    child_workflows,
    markers,
    signals,
    timers,
    updates,
    workflow_tasks,
)

samples = fixtures_samples.samples  # the session fixture, until conftest imports it

TABLES = {
    activities: ACTIVITY_COLUMNS,
    workflow_tasks: WORKFLOW_TASK_COLUMNS,
    timers: TIMER_COLUMNS,
    signals: SIGNAL_COLUMNS,
    updates: UPDATE_COLUMNS,
    child_workflows: CHILD_WORKFLOW_COLUMNS,
    markers: MARKER_COLUMNS,
}

# Event types each table accounts for, and the table columns that hold their event ids.
COVERAGE = {
    activities: (
        {"ActivityTaskScheduled", "ActivityTaskStarted", "ActivityTaskCompleted",
         "ActivityTaskFailed", "ActivityTaskTimedOut", "ActivityTaskCanceled"},
        ("scheduled_event_id", "started_event_id", "closed_event_id"),
    ),
    workflow_tasks: (
        {f"{p}{s}" for p in ("WorkflowTask", "DecisionTask")
         for s in ("Scheduled", "Started", "Completed", "Failed", "TimedOut")},
        ("scheduled_event_id", "started_event_id", "closed_event_id"),
    ),
    timers: ({"TimerStarted", "TimerFired", "TimerCanceled"},
             ("started_event_id", "closed_event_id")),
    signals: (
        {"WorkflowExecutionSignaled", "SignalExternalWorkflowExecutionInitiated",
         "ExternalWorkflowExecutionSignaled", "SignalExternalWorkflowExecutionFailed"},
        ("event_id", "closed_event_id"),
    ),
    updates: (
        {"WorkflowExecutionUpdateAdmitted", "WorkflowExecutionUpdateAccepted",
         "WorkflowExecutionUpdateRejected", "WorkflowExecutionUpdateCompleted"},
        ("admitted_event_id", "accepted_event_id", "rejected_event_id", "completed_event_id"),
    ),
    child_workflows: (
        {"StartChildWorkflowExecutionInitiated", "StartChildWorkflowExecutionFailed",
         "ChildWorkflowExecutionStarted", "ChildWorkflowExecutionCompleted",
         "ChildWorkflowExecutionFailed", "ChildWorkflowExecutionCanceled",
         "ChildWorkflowExecutionTimedOut", "ChildWorkflowExecutionTerminated"},
        ("initiated_event_id", "started_event_id", "closed_event_id"),
    ),
    markers: ({"MarkerRecorded"}, ("event_id",)),
}


def assert_nothing_lost(events: pd.DataFrame) -> None:
    """Every event a table reads is referenced by exactly one cell of its rows."""
    for table, (types, id_columns) in COVERAGE.items():
        rows = table(events)
        assert list(rows.columns) == list(TABLES[table]), table.__name__
        relevant = events["event_type"].isin(types)
        expected = sorted(
            (str(s), int(h), int(e))
            for s, h, e in events.loc[relevant, ["source", "history", "event_id"]]
            .itertuples(index=False, name=None)
        )
        referenced = sorted(
            (str(s), int(h), int(e))
            for column in id_columns
            for s, h, e in rows[["source", "history", column]].itertuples(index=False, name=None)
            if not pd.isna(e)
        )
        # Orphan rows (a partial history) name an opening event that is not in the history.
        unknown = sorted(set(referenced) - set(expected))
        opening = {
            (str(s), int(h), int(e))
            for s, h, e in rows[["source", "history", id_columns[0]]]
            .itertuples(index=False, name=None) if not pd.isna(e)
        }
        assert set(unknown) <= opening, (table.__name__, unknown[:5])
        assert [r for r in referenced if r not in set(unknown)] == expected, table.__name__


# --------------------------------------------------------------------------- recorded samples

@pytest.fixture(scope="module")
def sample_events(samples: dict[str, Path]) -> dict[str, pd.DataFrame]:
    return {name: read_history(path) for name, path in samples.items()}


@pytest.mark.server
def test_activity_retries_failures_timeouts_and_cancellation(
    sample_events: dict[str, pd.DataFrame],
) -> None:
    table = activities(sample_events["activities"]).set_index("activity_type")
    assert len(table) == 4
    flaky = table.loc["flaky"]
    assert (flaky.outcome, flaky.attempt) == ("completed", 3)
    assert flaky.last_failure_message == "flaky failure on attempt 2"
    assert flaky.result == ["ok on attempt 3"] and flaky.input == [2]
    exhausted = table.loc["always_fails"]
    assert (exhausted.outcome, exhausted.attempt, exhausted.maximum_attempts) == ("failed", 2, 2)
    assert exhausted.retry_state == "RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED"
    assert exhausted.failure_type == "PermanentError"
    assert exhausted.failure_message == "always fails (attempt 2)"
    slow = table.loc["slow"]
    assert (slow.outcome, slow.timeout_type) == ("timed_out", "TIMEOUT_TYPE_START_TO_CLOSE")
    assert slow.start_to_close_timeout == pd.Timedelta(milliseconds=500)
    canceled = table.loc["heartbeat_until_canceled"]
    assert (canceled.outcome, bool(canceled.cancel_requested)) == ("canceled", True)
    assert not table.loc[["flaky", "slow"], "cancel_requested"].any()
    assert (table["total_duration"] == table["queue_duration"] + table["run_duration"]).all()
    assert (table["queue_duration"] >= pd.Timedelta(0)).all()
    assert set(table["identity"]) == {"samples-worker"}
    # Three scheduled in the first task; the canceled one in a later task, after the three
    # closed (how many tasks their completions take depends on timing: 3 or 4 here).
    gathered = table.loc[["flaky", "always_fails", "slow"]]
    assert gathered["workflow_task"].tolist() == [1, 1, 1]
    assert canceled.workflow_task > 1
    assert canceled.scheduled_event_id > gathered["closed_event_id"].max()


@pytest.mark.server
def test_nondeterminism_sample_has_a_failed_task_then_a_pending_retry(
    sample_events: dict[str, pd.DataFrame],
) -> None:
    tasks = workflow_tasks(sample_events["nondeterminism"])
    assert tasks["outcome"].tolist() == ["completed", "completed", "failed", "pending"]
    failed = tasks.iloc[2]
    assert failed.cause == "WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR"
    assert failed.failure_message.startswith("[TMPRL1100] Nondeterminism error")
    assert "'extra_step'" in failed.failure_message and failed.commands == []
    retry = tasks.iloc[3]  # the task retried after the failure, open when exported
    assert retry.attempt >= 2 and pd.isna(retry.closed_event_id)
    first = tasks.iloc[0]
    assert first.commands == ["ActivityTaskScheduled"] and first.command_count == 1
    assert (first.sdk_name, first.sdk_version) == ("temporal-python", temporalio.__version__)
    assert 1 in first.core_used_flags  # the flag that turns on Core's id/type checks
    assert tasks["identity"].iloc[:3].tolist() == ["samples-worker"] * 3
    assert tasks["scheduled_event_id"].iloc[3] == failed.closed_event_id + 1


@pytest.mark.server
def test_commands_of_completed_tasks_are_every_command_event(
    sample_events: dict[str, pd.DataFrame],
) -> None:
    for name, events in sample_events.items():
        tasks = workflow_tasks(events)
        commands = events[events["is_command"]]
        assert tasks["command_count"].sum() == len(commands), name
        assert [c for cs in tasks["commands"] for c in cs] == commands["event_type"].tolist()


@pytest.mark.server
def test_timers_fired_and_canceled(sample_events: dict[str, pd.DataFrame]) -> None:
    table = timers(sample_events["timers"])
    assert table["outcome"].tolist() == ["fired", "fired", "canceled", "fired"]
    assert table["start_to_fire_timeout"].tolist() == [
        pd.Timedelta(seconds=s) for s in (0.2, 0.1, 60, 0.1)
    ]
    canceled = table.iloc[2]
    assert canceled.canceled_by == "samples-worker" and pd.isna(canceled.fire_delay)
    assert (table.loc[table.outcome == "fired", "fire_delay"] >= pd.Timedelta(0)).all()


@pytest.mark.server
def test_signals_and_updates(sample_events: dict[str, pd.DataFrame]) -> None:
    events = sample_events["signals_updates"]
    received = signals(events)
    assert received["signal_name"].tolist() == ["add", "add", "finish"]
    assert received["input"].tolist() == [["first"], ["second"], None]
    assert set(received["direction"]) == {"received"}
    assert set(received["identity"]) == {"samples-client"}
    table = updates(events)
    # The validator's rejection never reaches the history: only the accepted update is there.
    assert table["update_id"].tolist() == ["update-accepted"]
    row = table.iloc[0]
    assert (row.update_name, row.outcome, row.input, row.result) == (
        "set_value", "completed", [5], [0],
    )
    assert row.duration >= pd.Timedelta(0) and row.identity == "samples-client"


@pytest.mark.server
def test_children_completed_and_failed_link_to_their_own_histories(
    sample_events: dict[str, pd.DataFrame],
) -> None:
    table = child_workflows(sample_events["child_workflows"])
    assert table["outcome"].tolist() == ["completed", "failed"]
    done, failed = table.iloc[0], table.iloc[1]
    assert done.result == ["child done"] and done.input == [False]
    assert failed.failure_message.endswith("child asked to fail")
    assert failed.retry_state == "RETRY_STATE_RETRY_POLICY_NOT_SET"
    assert failed.child_workflow_id.endswith("-child-fail")
    assert failed.child_run_id == sample_events["child_failed"]["run_id"].iloc[0]
    assert set(table["parent_close_policy"]) == {"PARENT_CLOSE_POLICY_TERMINATE"}


@pytest.mark.server
def test_patch_and_local_activity_markers(
    sample_events: dict[str, pd.DataFrame], samples: dict[str, Path],
) -> None:
    patches = markers(sample_events["side_effects"])
    assert dict(zip(patches["patch_id"], patches["deprecated"], strict=True)) == {
        "sample-patch": False, "retired-patch": True,
    }
    assert set(patches["kind"]) == {"patch"}
    local = markers(sample_events["local_activities"])
    assert local["local_activity_type"].tolist() == ["greet", "flaky"]
    assert local["attempt"].tolist() == [1, 2]
    # Without decoded payloads in the frame, markers decode their own details.
    raw = markers(read_history(samples["side_effects"], decode_payloads=False))
    assert raw["patch_id"].tolist() == patches["patch_id"].tolist()


@pytest.mark.server
def test_many_histories_in_one_frame_give_the_rows_of_each(
    sample_events: dict[str, pd.DataFrame],
) -> None:
    combined = pd.concat(sample_events.values(), ignore_index=True)
    for table in TABLES:
        together = table(combined)
        separately = [table(events) for events in sample_events.values()]
        assert len(together) == sum(len(part) for part in separately), table.__name__
        assert together.groupby("source").size().to_dict() == {
            part["source"].iloc[0]: len(part) for part in separately if len(part)
        }
    assert_nothing_lost(combined)


# --------------------------------------------------------------------------- public corpus

def corpus_events(corpus: Path, relative: str) -> pd.DataFrame:
    return read_history(corpus / "histories" / relative)


def test_every_corpus_history_is_fully_accounted_for(corpus: Path) -> None:
    paths = sorted(p for p in (corpus / "histories").glob("*/*") if p.is_file())
    frames = []
    for path in paths:
        try:
            frames.append(read_history(path))
        except HistoryFormatError:
            continue  # the loader's own tests cover unreadable files (e.g. the empty one)
    assert len(frames) >= 60
    assert_nothing_lost(pd.concat(frames, ignore_index=True))


def test_cadence_era_decision_tasks_and_open_history(corpus: Path) -> None:
    # basic.json: DecisionTask* events, ids as numbers, ends with a scheduled decision task.
    events = corpus_events(corpus, "temporalio__sdk-go/basic.json")
    tasks = workflow_tasks(events)
    assert tasks["scheduled_event_id"].tolist() == [2, 9, 15, 21]
    assert tasks["outcome"].tolist() == ["completed", "completed", "completed", "pending"]
    assert tasks["commands"].tolist()[:3] == [
        ["MarkerRecorded", "ActivityTaskScheduled"], ["ActivityTaskScheduled"],
        ["ActivityTaskScheduled"],
    ]
    assert set(tasks["binary_checksum"].iloc[:3]) == {"06e5b3f52bd27301078e9ddd8fe9df35"}
    acts = activities(events)
    assert (len(acts), set(acts["outcome"])) == (3, {"completed"})
    version = markers(events).iloc[0]
    assert (version.kind, version.patch_id, version.version) == ("version", "1", 5)


def test_workflow_task_failed_and_timed_out(corpus: Path) -> None:
    events = corpus_events(corpus, "temporalio__sdk-go/unhandled_cmd_timer_cancel.json")
    tasks = workflow_tasks(events)
    assert tasks["outcome"].tolist() == ["completed", "failed", "timed_out", "completed"]
    assert tasks["cause"].iloc[1] == "WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND"
    table = timers(events)
    assert table["outcome"].tolist() == ["fired", "pending"]


def test_canceled_updates_activities_and_timers(corpus: Path) -> None:
    events = corpus_events(corpus, "temporalio__sdk-go/multiple-updates-canceled.json")
    table = updates(events)
    assert len(table) == 10 and set(table["outcome"]) == {"failed"}
    assert set(table["failure_message"]) == {"canceled"}
    assert table["update_name"].value_counts().to_dict() == {"echo": 4, "sleep": 3, "empty": 3}
    acts = activities(events)
    assert (len(acts), set(acts["outcome"])) == (4, {"pending"})
    assert acts["cancel_requested"].all() and acts["attempt"].isna().all()
    assert timers(events)["outcome"].tolist() == ["canceled"] * 3


def test_admitted_accepted_completed_update_joins_into_one_row(corpus: Path) -> None:
    table = updates(corpus_events(corpus, "temporalio__sdk-go/update-reset-accepted.json"))
    assert len(table) == 1
    row = table.iloc[0]
    assert (row.admitted_event_id, row.accepted_event_id, row.completed_event_id) == (5, 9, 15)
    assert (row.update_name, row.outcome) == ("fetch_and_add", "completed")


def test_binary_core_history_sdk_metadata_updates_and_local_activity(corpus: Path) -> None:
    events = corpus_events(
        corpus, "temporalio__sdk-core/long_local_activity_with_update-2_history.bin",
    )
    first = workflow_tasks(events).iloc[0]
    assert (first.sdk_name, first.sdk_version, first.build_id) == (
        "temporal-core", "0.1.0", "test_build_id",
    )
    assert len(updates(events)) == 2
    marker = markers(events).iloc[0]
    assert (marker.kind, marker.local_activity_type, marker.attempt) == (
        "local_activity", "delay", 1,
    )


def test_sdk_specific_markers(corpus: Path) -> None:
    java = markers(corpus_events(corpus, "temporalio__sdk-java/testGetVersionOutOfOrderFail.json"))
    assert java[["marker_name", "patch_id", "version"]].values.tolist() == [
        ["Version", "changeId", 1],
    ]
    side = markers(corpus_events(corpus, "temporalio__sdk-go/mutable-side-effect-legacy.json"))
    assert side["side_effect_id"].tolist()[:2] == ["side-effect-1_5", "side-effect-1_6"]
    assert set(side["kind"]) == {"mutable_side_effect"}
    # Pre-1.0 details: one base64 string of JSON, decoded for the activity identity.
    legacy = markers(corpus_events(
        corpus, "temporalio__temporal/archive_history_workflow_history_v1.json",
    ))
    assert legacy["local_activity_type"].dropna().tolist() == ["deleteHistoryActivity"] * 2
    go_la = markers(corpus_events(corpus, "temporalio__sdk-go/la-same-time-as-cancel.json"))
    assert go_la[["local_activity_type", "attempt"]].values.tolist() == [["failNTimes", 2]]


def test_child_failed_and_outgoing_signal(corpus: Path) -> None:
    child = child_workflows(corpus_events(
        corpus, "temporalio__sdk-go/reset-workflow-with-child-failed.json",
    )).iloc[0]
    assert (child.child_workflow_type, child.outcome) == ("TestChildWorkflow", "failed")
    sent = signals(corpus_events(
        corpus, "temporalio__sdk-typescript/otel_v2_smorgasbord_1_18_1.json",
    ))
    out = sent[sent["direction"] == "sent"].iloc[0]
    assert (out.signal_name, out.outcome, out.closed_event_id) == ("unblock", "signaled", 19)


def test_partial_history_keeps_orphan_closing_events(corpus: Path) -> None:
    # The UI's one-of-each-type fixture: closing events whose scheduled events are not there.
    events = corpus_events(corpus, "temporalio__ui/all-event-types.json")
    acts = activities(events)
    assert len(acts) == 2 and acts["scheduled_time"].isna().sum() == 1
    orphan = acts[acts["scheduled_time"].isna()].iloc[0]
    assert (orphan.scheduled_event_id, orphan.outcome) == (7, "completed")


# --------------------------------------------------------------------------- shapes and errors

def test_rejected_update_in_a_history_that_holds_one() -> None:
    # No server writes rejections today; older ones did. Built with the API's own types.
    history = History()
    started = history.events.add(
        event_id=1, event_type=EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
    )
    started.workflow_execution_started_event_attributes.workflow_type.name = "W"
    rejected = history.events.add(
        event_id=2, event_type=EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_REJECTED,
    )
    attributes = rejected.workflow_execution_update_rejected_event_attributes
    attributes.protocol_instance_id = "u-1"
    attributes.rejected_request.meta.update_id = "u-1"
    attributes.rejected_request.input.name = "set_value"
    attributes.failure.message = "value must not be negative"
    table = updates(read_history(history))
    assert table[["update_id", "update_name", "outcome", "failure_message"]].values.tolist() == [
        ["u-1", "set_value", "rejected", "value must not be negative"],
    ]


def test_empty_frame_gives_empty_tables_with_full_schema(corpus: Path) -> None:
    events = read_history(corpus / "histories/temporalio__ui/empty-event-history.json",
                          allow_empty=True)
    for table, schema in TABLES.items():
        rows = table(events)
        assert rows.empty and list(rows.columns) == list(schema), table.__name__


def test_bad_input_raises_history_format_error(corpus: Path) -> None:
    with pytest.raises(HistoryFormatError, match="needs an events frame"):
        activities([{"event_type": "ActivityTaskScheduled"}])  # type: ignore[arg-type]
    events = corpus_events(corpus, "temporalio__sdk-go/basic.json").drop(columns=["attributes"])
    with pytest.raises(HistoryFormatError, match=r"without columns \['attributes'\]"):
        workflow_tasks(events)
