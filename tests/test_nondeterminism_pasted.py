"""nondeterminism_errors() on real pasted logs: bare Java exceptions, Go messages over lines.

Fixtures under tests/fixtures/nondeterminism/ are excerpts of public text, byte for byte:

- java_forum_8279.log: the Java SDK worker log pasted in the Temporal community forum thread
  https://community.temporal.io/t/non-determinism-error/8279 (logback-shortened frames, a
  ``Wrapped by:`` section naming the run).
- go_postmortem_quoted.log: a Go SDK message quoted over three lines, cut short with "…", in a
  public incident postmortem (markdown in a public GitHub repository, found through the code
  search index under "[TMPRL1100] nondeterministic workflow: history event is
  ActivityTaskScheduled:" / "PreflightDaemonCheck").
- go_saga_quoted.log: a Go SDK panic quoted in a public saga proof-of-concept report (markdown in
  a public GitHub repository, same index), activity types abbreviated to bare names.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from toolkit.logs.read import read_logs
from toolkit.replay.errors_table import nondeterminism_errors
from toolkit.replay.messages import parse_nondeterminism

FIXTURES = Path(__file__).parent / "fixtures" / "nondeterminism"


def _errors(name: str):
    return nondeterminism_errors(read_logs(FIXTURES / name))


def test_bare_java_exception_with_wrapped_by_section() -> None:
    errors = _errors("java_forum_8279.log")
    assert len(errors) == 1
    row = errors.iloc[0]
    assert (row.sdk, row.kind) == ("java", "command_type_mismatch")
    assert (row.event_id, row.event_type, row.command_type) == (
        922, "TimerStarted", "RequestCancelActivityTask",
    )
    assert row.check["kind"] == "timer"
    # The run is named only in the "Wrapped by:" section 14 lines further down.
    assert row.run_id == "bd923ea7-0e11-452f-8a76-aef33052995a"
    assert row.workflow_id.startswith("scheduled-release-workflow-2023-05-16")
    assert (row.line, row.line_end) == (1, 20)


def test_go_message_quoted_over_three_lines_and_cut_short() -> None:
    errors = _errors("go_postmortem_quoted.log")
    assert len(errors) == 1
    row = errors.iloc[0]
    assert (row.sdk, row.kind) == ("go", "event_command_mismatch")
    assert (row.event_type, row.command_type) == ("ActivityTaskScheduled", "ScheduleActivityTask")
    assert (row.expected, row.actual) == ("PreflightDaemonCheck", "WorkflowStatus")
    assert row.check["activity_id"] == "11" and row.check["field"] == "activity_type"
    assert (row.line, row.line_end) == (1, 3)


def test_go_message_with_bare_names_over_indented_lines() -> None:
    errors = _errors("go_saga_quoted.log")
    assert len(errors) == 1
    row = errors.iloc[0]
    assert (row.expected, row.actual) == ("ServiceA.reserveStock", "ServiceB.chargeCredit")
    assert (row.line, row.line_end) == (1, 3)


def test_go_inline_names_in_parentheses() -> None:
    # The same shape as quoted inline in a public runbook (names in parentheses, no colon).
    text = (
        "`[TMPRL1100] nondeterministic workflow: history event is ActivityTaskScheduled "
        "(Converge), replay command is ScheduleActivityTask (ProjectBuzzRoster)`"
    )
    parsed = parse_nondeterminism(text)
    assert parsed is not None
    assert (parsed["expected"], parsed["actual"]) == ("Converge", "ProjectBuzzRoster")


def test_wrapped_message_does_not_swallow_the_next_failure() -> None:
    # Both Go quotes one line per record, as a plain reader gives them: each failure keeps
    # its own line span and the second head is never joined into the first message.
    text = (FIXTURES / "go_postmortem_quoted.log").read_text(encoding="utf-8")
    text += (FIXTURES / "go_saga_quoted.log").read_text(encoding="utf-8")
    lines = text.splitlines()
    logs = pd.DataFrame(
        {"message": lines, "line": range(1, len(lines) + 1), "lines": 1, "ts": None}
    )
    errors = nondeterminism_errors(logs)
    assert errors.line.tolist() == [1, 4] and errors.line_end.tolist() == [3, 6]
    assert errors.actual.tolist() == ["WorkflowStatus", "ServiceB.chargeCredit"]
