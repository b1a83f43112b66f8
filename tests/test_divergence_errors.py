"""nondeterminism_errors(): failures in histories and logs (live case: test_divergence_dev)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from toolkit.errors import ToolkitError
from toolkit.histories.reading.read import read_history
from toolkit.replay.errors_table import NONDETERMINISM_COLUMNS, nondeterminism_errors


def test_workflow_failure_that_is_not_nondeterminism(corpus: Path) -> None:
    # A Java run that failed during replay handling, but not with a nondeterminism task failure.
    path = corpus / "histories/temporalio__sdk-java/testGetVersionOutOfOrderFail.json"
    errors = nondeterminism_errors(read_history(path))
    assert errors.empty and list(errors.columns) == NONDETERMINISM_COLUMNS


def test_log_lines_in_every_sdk_shape() -> None:
    lines = [
        "2026-01-01T00:00:00Z WARN temporalio_sdk_core::worker::workflow: Failing workflow task "
        'run_id=0199-abc failure=Failure { failure: Some(Failure { message: "[TMPRL1100] '
        "Nondeterminism error: No command scheduled for event HistoryEvent(id: 42, "
        'ActivityTaskScheduled)", source: "" }) }',
        "unrelated line mentioning nondeterminism in passing",
        "2026/01/01 Workflow panic Error [TMPRL1100] nondeterministic workflow: history event is "
        "ActivityTaskScheduled: (ActivityId:5, ActivityType:(Name:ListMcpTools), "
        "TaskQueue:(Name:q)), replay command is ScheduleActivityTask: (ActivityId:5, "
        "ActivityType:(Name:InvokeModel))",
    ]
    logs = pd.DataFrame({"message": lines, "raw": lines, "line": [1, 2, 3], "ts": None})
    errors = nondeterminism_errors(logs)
    assert errors.line.tolist() == [1, 3]
    assert errors.sdk.tolist() == ["core", "go"]
    assert errors.event_id.iloc[0] == 42 and errors.run_id.iloc[0] == "0199-abc"


def test_frame_of_unknown_shape() -> None:
    with pytest.raises(ToolkitError, match="neither an events frame"):
        nondeterminism_errors(pd.DataFrame({"x": [1]}))


def test_run_id_that_read_logs_moved_into_fields() -> None:
    # sdk-core's "Failing workflow task run_id=... failure=..." line as the lab's real google-adk
    # worker printed it (ANSI colours included); read_logs puts run_id into `fields`.
    from toolkit.logs.read import read_logs

    log = Path(__file__).parent.parent / (
        "data/adk/adk-1.28.1/logs/rolling_upgrade_to_adk-1.29.0.after.worker.log"
    )
    logs = read_logs(log)
    failing = logs[logs.message == "Failing workflow task"]
    assert len(failing) == 1
    errors = nondeterminism_errors(logs)
    assert errors.line.tolist() == [int(failing.line.iloc[0])]
    assert errors.run_id.tolist() == [failing.fields.iloc[0]["run_id"]]
    assert errors.kind.tolist() == ["type_mismatch"]
