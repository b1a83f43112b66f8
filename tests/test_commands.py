"""commands(): the command events in order, with the identity replay compares."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from toolkit.errors import HistoryFormatError
from toolkit.histories.enums import COMMAND_EVENT_TYPES
from toolkit.histories.reading.read import read_history
from toolkit.replay.commands import COMMAND_KIND, commands


def test_openai_agents_mcp_history(corpus: Path) -> None:
    events = read_history(corpus / "histories/temporalio__sdk-python/mcp-history-stateful.json")
    cmds = commands(events)
    assert len(cmds) == int(events.event_type.isin(list(COMMAND_KIND)).sum()) == 11
    assert cmds.kind.tolist()[-2:] == ["RequestCancelActivityTask", "CompleteWorkflowExecution"]
    assert cmds.activity_type.tolist()[:4] == [
        "HelloServer-stateful-server-session",
        "HelloServer-stateful-list-tools",
        "invoke_model_activity",
        "HelloServer-stateful-call-tool",
    ]
    assert cmds.activity_id.tolist()[:3] == ["1", "2", "3"]
    first = cmds.iloc[0]
    assert (first.task, first.task_completed_event_id, first.position_in_task) == (1, 4, 1)
    assert cmds.iloc[1].position_in_task == 2
    assert cmds.position.tolist() == list(range(1, 12))
    assert cmds.iloc[9].scheduled_event_id == 5


def test_core_local_activity_marker_identity(corpus: Path) -> None:
    cmds = commands(read_history(corpus / "histories/temporalio__ui/workflow-import-events.json"))
    marker = cmds[cmds.kind == "RecordMarker"].iloc[0]
    assert marker.marker_name == "core_local_activity"
    assert (marker.local_activity_type, marker.local_activity_id) == ("sleeper", "5")
    assert marker.local_activity_seq == 5
    assert cmds[cmds.kind == "StartTimer"].timer_id.tolist() == ["1"]


def test_go_version_and_local_activity_markers(corpus: Path) -> None:
    version = commands(read_history(corpus / "histories/temporalio__sdk-go/bad-history-2.json"))
    assert version[version.marker_name == "Version"].patch_id.notna().all()
    la = commands(read_history(corpus / "histories/temporalio__sdk-go/la-same-time-as-cancel.json"))
    marker = la[la.marker_name == "LocalActivity"].iloc[0]
    assert (marker.local_activity_type, marker.local_activity_id) == ("failNTimes", "1")


def test_java_local_activity_marker(corpus: Path) -> None:
    path = corpus / "histories/temporalio__sdk-java/testLocalActivityAfterCancelTest.json"
    marker = commands(read_history(path)).query("marker_name == 'LocalActivity'").iloc[0]
    assert marker.local_activity_type == "customActivity1"


def test_every_corpus_history_keeps_every_command(corpus: Path) -> None:
    checked = 0
    for path in sorted((corpus / "histories").glob("*/*.json")):
        try:
            events = read_history(path)
        except HistoryFormatError:
            continue  # the loader's business; commands() only needs a frame
        cmds = commands(events)
        expected = int(events.event_type.isin(list(COMMAND_KIND)).sum())
        assert len(cmds) == expected, path
        for _, one in cmds.groupby("history"):
            assert one.position.tolist() == list(range(1, len(one) + 1)), path
        checked += 1
    assert checked > 40


def test_not_an_events_frame() -> None:
    with pytest.raises(HistoryFormatError, match="event_type"):
        commands(pd.DataFrame({"event_id": [1]}))


def test_command_kinds_cover_exactly_the_command_events() -> None:
    # The loader's is_command flag and commands() must name the same events.
    assert set(COMMAND_KIND) == set(COMMAND_EVENT_TYPES)
