"""The ``toolkit`` console script on recorded data: tables, JSON, exit codes, clear errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolkit as tk

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
LOGS = ROOT / "tests" / "fixtures" / "logs"
TWIN = DATA / "go_twin" / "before_fix-adk_v2.6.0"
SCRIPT = Path(sys.executable).parent / "toolkit"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the installed console script (``python -m toolkit.cli`` when it is not installed)."""
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "toolkit.cli"]
    return subprocess.run(
        [*command, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def _gallery_case() -> Path:
    """A gallery case whose change breaks replay (the gallery's own record says so)."""
    for case in sorted((DATA / "gallery").glob("*/case.json")):
        facts = json.loads(case.read_text())
        if facts["name"] == "activity-renamed":
            return case.parent
    pytest.skip("the gallery case activity-renamed is not recorded in data/gallery")


def _table(stdout: str) -> list[str]:
    """The events table of ``toolkit show`` (after the summary and its blank line)."""
    return stdout.split("\n\n", 1)[1].splitlines()


def json_lines(stdout: str) -> list[dict]:
    """``--json`` output: JSON Lines, one object per line."""
    rows = [json.loads(line) for line in stdout.splitlines()]
    assert all(isinstance(row, dict) for row in rows)
    return rows


def test_show_prints_every_event_in_a_table_that_fits() -> None:
    path = TWIN / "plain_turns.json"
    result = run("show", path, "--width", "90")
    assert result.returncode == 0, result.stderr
    lines = _table(result.stdout)
    assert lines[0].split() == ["event_id", "event_time", "event_type", "workflow_task", "name",
                                "attempt", "failure_message"]  # headers whole
    assert len(lines) == 2 + len(tk.read_history(path))
    assert max(len(line) for line in result.stdout.splitlines()) <= 90


def _summary(stdout: str) -> dict[str, str]:
    """The summary block above the table: ``key  value`` lines, long values wrapped onto
    indented continuation lines."""
    summary: dict[str, str] = {}
    key = ""
    for line in stdout.split("\n\n")[0].splitlines():
        if line[:1].isspace():
            summary[key] += " " + line.strip()
        else:
            key, value = line.split(None, 1)
            summary[key] = value
    return summary


def test_show_summary_says_type_status_result_and_duration() -> None:
    path = DATA / "gallery" / "activity-renamed" / "v1.json"
    events = tk.read_history(path)
    result = run("show", path, "--width", "100")
    summary = _summary(result.stdout)
    assert summary["workflow"].startswith(events["workflow_type"].iloc[0])
    assert summary["status"] == "Completed"
    assert summary["result"] == events["result"].iloc[-1][0]
    seconds = (events["event_time"].max() - events["event_time"].min()).total_seconds()
    assert summary["duration"] == f"{seconds:.2f}s"
    assert summary["events"] == str(len(events))


def test_show_summarises_each_history_of_a_file(tmp_path: Path) -> None:
    case = DATA / "gallery" / "activity-renamed"
    both = tmp_path / "two.json"  # an array of histories, as some exports write them
    both.write_text("[" + (case / "v1.json").read_text() + "," + (case / "v2.json").read_text()
                    + "]")  # fmt: skip
    result = run("show", both, "--width", "100")
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("\n\n")
    assert blocks[0].startswith("history   0\n") and blocks[1].startswith("history   1\n")
    runs = [tk.read_history(case / name)["run_id"].iloc[0] for name in ("v1.json", "v2.json")]
    assert runs[0] in blocks[0] and runs[1] in blocks[1]


def test_show_wraps_the_failure_message_instead_of_cutting_it() -> None:
    path = DATA / "adk" / "adk-1.28.1" / "rolling_upgrade_to_adk-1.29.0.json"
    message = tk.nondeterminism_errors(tk.read_history(path))["message"].item()
    result = run("show", path, "--width", "100", "--type", "WorkflowTaskFailed")
    assert result.returncode == 0, result.stderr
    head, table = result.stdout.split("\n\n", 1)
    assert _summary(head)["status"] == "Running (1 workflow task failed)"
    # The summary gives the failure one line with its length; the table below gives it whole.
    failure = _summary(head)["failure"]
    assert failure.endswith(f"… [{len(message)} characters, --full]")
    assert message.startswith(failure.split("…")[0]) and len(failure) <= 90
    full = run("show", path, "--width", "100", "--type", "WorkflowTaskFailed", "--full")
    assert _summary(full.stdout)["failure"] == message  # wrapped whole
    lines = table.splitlines()
    assert max(len(line) for line in result.stdout.splitlines()) <= 100
    column = lines[0].index("failure_message")
    wrapped = " ".join(line[column:].strip() for line in lines[2:])
    assert wrapped == message, "the message is wrapped whole, not cut"
    assert "…" not in wrapped


def test_show_puts_a_long_result_on_one_line_unless_full(corpus: Path) -> None:
    path = corpus / "histories" / "temporalio__sdk-java" / (
        "testMultipleLargeGetVersionInSignalsUpsertSAHistory.json")
    result = tk.read_history(path)["result"].iloc[-1][0]  # a list of long strings
    whole = " ".join(result)
    assert len(whole) > 2000
    for width in ("100", "0"):  # a terminal's width, or none (piped): one line either way
        summary = _summary(run("show", path, "--width", width, "--limit", "0").stdout)
        line = summary["result"]
        assert line.endswith(f"… [{len(whole):,} characters, --full]"), line
        assert len(line) <= (90 if width == "100" else 120)
        assert whole.startswith(line.split("…")[0])
    full = _summary(run("show", path, "--width", "100", "--full", "--limit", "0").stdout)
    assert full["result"].replace(" ", "") == whole.replace(" ", "")  # wrapped onto lines


def test_show_fetches_by_workflow_id(dev_server, samples: dict[str, Path]) -> None:
    recorded = tk.read_history(samples["activities"])
    run_id = recorded["run_id"].iloc[0]
    workflow_id = tk.fetch_histories(dev_server.address, f"RunId = '{run_id}'")[
        "workflow_id"].iloc[0]  # fmt: skip
    result = run("show", "-w", workflow_id, "--address", dev_server.address, "--width", "0")
    assert result.returncode == 0, result.stderr
    workflow_type = recorded["workflow_type"].iloc[0]
    assert f"workflow  {workflow_type}  (workflow {workflow_id}" in result.stdout
    assert len(_table(result.stdout)) == 2 + len(recorded)
    rows = json_lines(run("show", "-w", workflow_id, "--address", dev_server.address,
                          "--json").stdout)  # fmt: skip
    assert [r["event_type"] for r in rows] == recorded["event_type"].tolist()
    missing = run("show", "-w", "no-such-workflow", "--address", dev_server.address)
    assert missing.returncode == 2 and "no-such-workflow" in missing.stderr
    both = run("show", samples["activities"], "-w", workflow_id)
    assert both.returncode == 2 and "not both" in both.stderr


def test_json_output_is_the_library_frame(tmp_path: Path) -> None:
    path = TWIN / "one_call_then_plain.json"
    result = run("activities", path, "--json")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(tk.activities(tk.read_history(path)))
    rows = json_lines(result.stdout)
    expected = tk.activities(tk.read_history(path))
    assert [r["activity_type"] for r in rows] == expected["activity_type"].tolist()
    assert [r["attempt"] for r in rows] == expected["attempt"].tolist()
    assert set(rows[0]) == set(expected.columns)
    turns = json_lines(run("turns", path, "--json").stdout)
    steps = tk.agent_steps(tk.read_history(path))
    assert [t["sequence"] for t in turns] == steps["sequence"].tolist()


def test_turns_shows_what_each_step_was_offered_and_asked_for() -> None:
    path = ROOT / "tests/fixtures/agent_histories/customer-service-workflow-history.json"
    result = run("turns", path, "--width", "220")
    assert result.returncode == 0, result.stderr
    header = result.stdout.splitlines()[0].split()
    assert {"agent", "declared", "requested", "handoff"} <= set(header)
    assert "transfer_to_seat_booking_agent" in result.stdout and "M H" in result.stdout
    rows = json_lines(run("turns", path, "--json").stdout)
    assert [r["declared"] for r in rows] == [2] * 6
    assert [r["handoff"] for r in rows][1] == "Seat Booking Agent"
    assert rows[4]["requested"] == "update_seat" and rows[4]["tool_call_kinds"] == ["workflow"]


def test_diff_explains_the_divergence_and_exits_1() -> None:
    case = _gallery_case()
    recorded = json.loads((case / "case.json").read_text())["replays"]["v1_on_v2"]["message"]
    result = run("diff", case / "v1.json", case / "v2.json")
    assert result.returncode == 1, result.stderr
    assert recorded in result.stdout  # the replayer's exact words
    assert "Go:" in result.stdout and "Java:" in result.stdout
    assert "reserve_stock" in result.stdout.split("side by side")[1]
    same = run("diff", case / "v1.json", case / "v1.json", "--json")
    assert same.returncode == 0 and json_lines(same.stdout) == [{"divergence": None}]


def test_logs_filters_by_level_and_pattern() -> None:
    path = LOGS / "duplicate_tool_incident.log"
    logs = tk.read_logs(path)
    result = run("logs", path, "--level", "error", "--grep", "DUPLICATE TOOL", "-i", "--json")
    assert result.returncode == 0, result.stderr
    rows = json_lines(result.stdout)
    wanted = logs[(logs["level"].isin(["error", "critical"]))
                  & logs["raw"].str.contains("duplicate tool", case=False)]  # fmt: skip
    assert [r["line"] for r in rows] == wanted["line"].tolist() and len(rows) > 0


def test_export_then_sql_and_idempotence(tmp_path: Path) -> None:
    source = tmp_path / "histories"
    shutil.copytree(TWIN, source)
    (source / "broken.json").write_text('{"events": [')
    dataset = tmp_path / "ds"
    first = run("export", source, "--to", dataset)
    assert first.returncode == 1  # a finding: one file is unreadable, and says where
    assert "broken.json" in first.stderr and "unreadable" in first.stderr
    runs = len([p for p in TWIN.glob("*.json") if not p.name.endswith(".meta.json")])
    assert f"{runs} runs written" in first.stdout
    again = run("export", source, "--to", dataset, "--json")
    assert json_lines(again.stdout)[0]["runs_written"] == 0
    query = "select count(*) as n, count(distinct run_id) as runs from events"
    counted = json_lines(run("sql", query, dataset, "--json").stdout)
    events = tk.read_histories(TWIN, progress=False).events
    assert counted == [{"n": len(events), "runs": runs}]
    # The same SQL straight over the history files gives the same answer.
    direct = json_lines(run("sql", query, TWIN, "--json").stdout)
    assert direct == counted


def test_bad_input_exits_2_with_the_library_message(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("")
    result = run("show", empty)
    assert result.returncode == 2
    assert result.stderr.startswith("toolkit show: error: ") and str(empty) in result.stderr
    assert "Traceback" not in result.stderr
    bad_sql = run("sql", "select * from nowhere", TWIN)
    assert bad_sql.returncode == 2 and "nowhere" in bad_sql.stderr
    assert "Traceback" not in bad_sql.stderr
    assert run("show").returncode == 2  # usage: a file is required
    assert run("logs", LOGS / "absent.log").returncode == 2


def test_an_output_that_cannot_be_written_exits_2_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "no such folder" / "traces.json"
    result = run("traces", DATA / "openai_agents", "--out", out)
    assert result.returncode == 2
    said = result.stderr.strip().splitlines()[-1]
    assert said == f"toolkit traces: error: {out}: No such file or directory"
    assert "Traceback" not in result.stderr


@pytest.mark.server
def test_activities_of_a_recorded_sample_show_retries(samples: dict[str, Path]) -> None:
    result = run("activities", samples["activities"], "--columns",
                 "activity_type,attempt,outcome", "--width", "0")  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[2:]}
    assert rows["flaky"] == ["3", "completed"]
    assert rows["always_fails"][1] == "failed"


def test_logs_detect_prints_findings_and_exits_1() -> None:
    before = DATA / "duplicate_tool" / "go" / "before.log"
    result = run("logs", before, "--detect", "duplicate_tools", "--json")
    assert result.returncode == 1, result.stderr
    rows = json_lines(result.stdout)
    assert [r["attempt"] for r in rows] == [1, 2, 3, 4, 5]
    assert {r["framework"] for r in rows} == {"adk_go"} and rows[-1]["dead_letter_line"] == 14
    table = run("logs", before, "--detect", "dead_letters", "--width", "0")
    assert table.returncode == 1 and "terminal:unclassified" in table.stdout
    assert "1 dead_letters findings in 14 of 14 records" in table.stderr
    after = run("logs", DATA / "duplicate_tool" / "go" / "after.log", "--detect",
                "duplicate_tools")
    assert after.returncode == 0 and "0 duplicate_tools findings" in after.stderr
    for name in ("retries", "mcp_client_failures", "nondeterminism"):
        assert run("logs", LOGS / "temporal_core.log", "--detect", name).returncode in (0, 1)
    assert run("logs", before, "--detect", "nothing").returncode == 2


def test_logs_detect_choices_are_the_library_detectors() -> None:
    from toolkit.cli import DETECTORS
    from toolkit.cli.commands import DETECT_COLUMNS
    from toolkit.logs.detectors import LOG_DETECTORS

    assert set(DETECTORS) == set(LOG_DETECTORS) == set(DETECT_COLUMNS)


def test_logs_grep_searches_fields_and_says_where() -> None:
    """In JSON lines the quotes inside the error field are escaped in the raw line: only the
    decoded field matches, and the table shows the field, not just "agent run failed"."""
    before = DATA / "duplicate_tool" / "go" / "before.jsonl"
    result = run("logs", before, "--grep", 'duplicate tool: "get_weather"', "--json")
    assert result.returncode == 0, result.stderr
    rows = json_lines(result.stdout)
    assert len(rows) == 11
    assert {r["matched"] for r in rows} == {'error: agent run: duplicate tool: "get_weather"'}
    table = run("logs", before, "--grep", "deadlettered", "--width", "0")
    assert "message: command deadlettered (terminal:unclassified)" in table.stdout


def test_budget_prints_a_row_per_run_and_the_same_rows_from_worker_processes() -> None:
    """``toolkit budget`` on the lab's terminated agent loops: one JSON line per run, exit 1
    (runs met a size limit); with ``--workers 2`` the same rows (a folder of that size is
    measured in this process either way below 400 files, so the rows are compared as they
    come); a negative count is a usage error."""
    folder = DATA / "history_budget" / "oa-0.22.3"
    alone = run("budget", folder, "--json")
    assert alone.returncode == 1, alone.stderr
    rows = [json.loads(line) for line in alone.stdout.splitlines()]
    assert len(rows) == len(list(folder.glob("*.json.gz")))
    assert all(r["history_bytes"] for r in rows)
    assert any(r["limit_hit"] == "history_bytes" for r in rows)
    pooled = run("budget", folder, "--json", "--workers", "2")
    assert pooled.returncode == 1
    assert [json.loads(line) for line in pooled.stdout.splitlines()] == rows
    bad = run("budget", folder, "--workers", "-1")
    assert bad.returncode == 2 and "--workers -1" in bad.stderr


def test_budget_exits_1_for_an_unreadable_file_and_names_a_run_without_an_id_by_its_file(
    tmp_path: Path,
) -> None:
    """A folder of runs that completed, a truncated gzip and a history of one typeless event:
    the readable ones get rows, the unreadable one is named on stderr and makes the exit 1 (the
    epilog's "unreadable files"), and a note on a run without a run id names its file."""
    import gzip
    import shutil

    good = next(iter(sorted((DATA / "adk").rglob("*.json"))))
    shutil.copy(good, tmp_path / "good.json")
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(good.read_bytes())[:300])
    (tmp_path / "bare.json").write_text('{"events": [{"eventId": "1"}]}')
    done = run("budget", tmp_path)
    assert done.returncode == 1, done.stderr
    assert "unreadable:" in done.stderr and "cut.json.gz" in done.stderr
    assert "note: run None" not in done.stderr and str(tmp_path / "bare.json") in done.stderr
