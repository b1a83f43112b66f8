"""tk.replay_check over the committed lab histories: results, groups, skips, workers, outputs.

The Go plugin twin's four variants live in this interpreter, so the check runs them as a team
would before shipping each: every twin history against every variant, the verdict and message
compared with the committed replay matrix (the real Replayer's, recorded by the lab).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.errors import ToolkitError
from toolkit.lab.go_twin.workflows import WORKFLOW_CLASSES
from toolkit.lab.replay_matrices import explained_off_the_replayer, replayings, reproduce, run_check
from toolkit.lab.sandbox import toolkit_sandbox_runner
from toolkit.replay.check_worker import THREAD_PREFIX, DaemonThreads
from toolkit.replay_check.result import RESULT_COLUMNS

DATA = Path(__file__).resolve().parents[1] / "data"
TWIN = DATA / "go_twin"
BEFORE_250, BEFORE_260, FIX_250, FIX_260 = WORKFLOW_CLASSES
FLAG_PAIRS = DATA / "flag_pairs"
PATCHED = FLAG_PAIRS / "UpsertSearchAttributeOnPatch" / "1.2.0" / "patched.json"


def _masked(text: object) -> str:
    return re.sub(r"\b\d+\b", "N", str(text))


@pytest.fixture(scope="module")
def twin_checks() -> dict[str, tuple[object, object]]:
    """Each twin variant's check over every twin history (the matrix's rows, in order)."""
    out = {}
    for replaying in replayings("go_twin", DATA):
        out[replaying.name] = (replaying, run_check(replaying, DATA))
    return out


@pytest.mark.parametrize("variant", list(WORKFLOW_CLASSES))
def test_each_variant_reproduces_its_column_of_the_twin_matrix(twin_checks, variant) -> None:
    replaying, check = twin_checks[variant]
    cells = reproduce(replaying, DATA, check=check)
    assert len(cells) == 44 and cells["agrees"].all(), cells[~cells["agrees"]]
    # The groups name exactly the divergences the matrix holds for this variant.
    failing = cells[cells["outcome"] != "ok"]
    assert {_masked(m) for m in check.groups["message"]} == {
        _masked(m) for m in failing["core_message"]}
    assert check.groups["histories"].sum() == len(failing)
    # Each failure explained by the model of the commands the code issued, in the Replayer's words.
    assert set(failing.index) <= set(check.divergences) and not explained_off_the_replayer(check)


def test_results_one_row_per_history_in_input_order(twin_checks) -> None:
    _, check = twin_checks[FIX_260]
    results = check.results
    assert list(results.columns) == RESULT_COLUMNS
    paths = sorted(p for p in TWIN.glob("*/*.json") if not p.name.endswith(".meta.json"))
    assert results["source"].tolist() == [str(p) for p in paths]
    assert results["history"].tolist() == list(range(len(paths)))
    # Every history names itself: its own workflow id, run id, type and the lab's label.
    for row, path in zip(results.itertuples(), paths, strict=True):
        meta = json.loads(path.with_suffix(".meta.json").read_text())
        assert (row.workflow_id, row.run_id) == (meta["workflow_id"], meta["run_id"])
        assert row.label == path.parent.name and row.workflow_id_from == "history"
    assert set(results["status"]) == {"completed"} and not results["open"].any()
    assert (results["trimmed"] == 0).all() and (results["tasks"] > 0).all()


def test_failures_are_explained_from_the_commands_the_code_issued(twin_checks) -> None:
    _, check = twin_checks[FIX_260]
    before = check.results[check.results["label"].str.startswith("before_fix")]
    assert set(before["outcome"]) == {"nondeterminism"}
    first = check.groups.iloc[0]
    assert (first["check"], first["expected"], first["actual"]) == (
        "activity_type", "ListMcpTools", "InvokeModel")
    assert first["labels"] == ["before_fix-adk_v2.5.0", "before_fix-adk_v2.6.0"]
    assert first["closed"] == first["histories"] and first["open"] == 0
    row = before.iloc[0]
    assert row["core_message"] in row["message"] and "[TMPRL1100]" in row["message"]
    assert f"At event {row['event_id']} (ActivityTaskScheduled" in row["explanation"]
    assert "ScheduleActivityTask(InvokeModel" in row["explanation"]
    assert check.exit_code == 1 and not check.ok
    assert "would break" in check.summary() and "do not deploy" in check.summary()


def test_own_histories_replay_and_the_check_passes() -> None:
    check = tk.replay_check(TWIN / FIX_260, [WORKFLOW_CLASSES[FIX_260]],
                            workflow_runner=toolkit_sandbox_runner())
    assert set(check.results["outcome"]) == {"ok"} and check.groups.empty
    assert check.exit_code == 0 and "safe to deploy" in check.summary()


def test_unknown_workflow_types_are_skipped_never_ok(tmp_path: Path) -> None:
    mixed = [TWIN / FIX_260 / "plain_turns.json", PATCHED]
    check = tk.replay_check(mixed, [WORKFLOW_CLASSES[FIX_260]],
                            workflow_runner=toolkit_sandbox_runner())
    assert check.results["outcome"].tolist() == ["ok", "skipped"]
    reason = check.results["reason"].iloc[1]
    assert reason.startswith("unknown workflow type") and "'FlagPairsPatched'" in reason
    assert check.exit_code == 0  # the other workflow type is listed, not a failure
    only_other = tk.replay_check([PATCHED], [WORKFLOW_CLASSES[FIX_260]])
    assert only_other.exit_code == 2 and "nothing was checked" in only_other.summary()


def test_an_unreadable_history_is_listed_and_fails_the_check(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"events": [{"eventId": "1", ')
    good = tmp_path / "good.json"
    shutil.copy(TWIN / FIX_260 / "plain_turns.json", good)
    check = tk.replay_check([good, broken], [WORKFLOW_CLASSES[FIX_260]],
                            workflow_runner=toolkit_sandbox_runner())
    assert check.results["outcome"].tolist() == ["ok", "skipped"]
    assert check.results["reason"].iloc[1].startswith("unreadable: ")
    assert str(broken) in check.results["reason"].iloc[1]
    assert check.exit_code == 1


def test_bad_code_is_a_clear_error() -> None:
    with pytest.raises(ToolkitError, match="no_such_module"):
        tk.replay_check(TWIN, ["no_such_module:Workflow"])
    with pytest.raises(ToolkitError, match=r"not a @workflow\.defn class"):
        tk.replay_check(TWIN, ["toolkit.lab.go_twin.workflows:TwinProgress"])
    with pytest.raises(ToolkitError, match="no workflow code"):
        tk.replay_check(TWIN, [])
    with pytest.raises(ToolkitError, match="expected a dict"):
        tk.replay_check(TWIN, [WORKFLOW_CLASSES[FIX_260]],
                        options="replay_check_workflows:not_options")
    with pytest.raises(ToolkitError, match="no such file or folder"):
        tk.replay_check(TWIN / "missing", [WORKFLOW_CLASSES[FIX_260]])
    # A worker process imports the code by name: a class it cannot import is refused up front.
    class Local:
        pass

    with pytest.raises(ToolkitError, match="inside a function"):
        tk.replay_check(TWIN, [Local], workers=2)
    with pytest.raises(ToolkitError, match="cannot reach worker processes"):
        tk.replay_check(TWIN, [WORKFLOW_CLASSES[FIX_260]], workers=2,
                        workflow_runner=toolkit_sandbox_runner())


def test_worker_processes_give_the_same_results_in_input_order(twin_checks) -> None:
    _, alone = twin_checks[BEFORE_260]
    paths = alone.results["source"].tolist()
    spec = f"toolkit.lab.go_twin.workflows:{WORKFLOW_CLASSES[BEFORE_260].__name__}"
    parallel = tk.replay_check(paths, [spec], options="toolkit.lab.sandbox:sandbox_options",
                               workers=2)
    assert parallel.code["workers"] == 2 and parallel.code["temporalio"] == "1.35.0"
    columns = ["source", "run_id", "outcome", "core_message", "event_id", "check", "group"]
    pd.testing.assert_frame_equal(parallel.results[columns], alone.results[columns])


def test_the_threads_that_ran_the_workflow_code_end_after_the_check(monkeypatch) -> None:
    # The Replayer never shuts down the executor it is given: idle threads end on their own.
    monkeypatch.setattr(DaemonThreads, "IDLE_SECONDS", 0.2)
    before = set(threading.enumerate())
    paths = sorted((TWIN / BEFORE_260).glob("*[!a].json"))[:2]
    check = tk.replay_check(paths, [WORKFLOW_CLASSES[FIX_260]],
                            workflow_runner=toolkit_sandbox_runner())  # fmt: skip
    assert set(check.results["outcome"]) == {"nondeterminism"}

    def ours() -> list[str]:
        return [t.name for t in set(threading.enumerate()) - before
                if t.name.startswith(THREAD_PREFIX)]  # fmt: skip

    deadline = time.monotonic() + 10.0
    while ours() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ours()


def test_a_history_over_its_time_limit_fails_and_the_rest_go_on() -> None:
    other = TWIN / FIX_260 / "plain_turns.json"
    check = tk.replay_check(
        [PATCHED, other], ["replay_check_workflows:Spinning",
                           f"toolkit.lab.go_twin.workflows:{WORKFLOW_CLASSES[FIX_260].__name__}"],
        options="replay_check_workflows:debug_options", workers=2, timeout=3,
    )
    first, second = check.results.itertuples()
    assert first.outcome == "failed" and first.error_type == "TimeoutError"
    assert "did not finish within 3 s" in first.message
    assert second.outcome == "ok"


# Both kinds of code that never let go of a replay, checked in this process (workers=1): debug
# mode's held loop, and an eviction that never ends (the first history of each check).
_NEVER_ENDING = """
import json, sys
sys.path.insert(0, sys.argv[1])
import toolkit as tk
out = {}
for code, options in (("Blocking", "debug_options"), ("SwallowsEviction", "unsandboxed_options")):
    check = tk.replay_check(sys.argv[3:], ["replay_check_workflows:" + code, sys.argv[2]],
                            options="replay_check_workflows:" + options, timeout=3)
    out[code] = check.results[["outcome", "error_type", "message"]].to_dict("records")
print(json.dumps(out))
"""


@pytest.mark.slow
def test_in_this_process_a_replay_that_never_ends_times_out_and_the_check_returns() -> None:
    # In a process of its own, stopped if it hangs (as the check did, in Runner.close, before
    # its replays had a loop of their own): the threads the code holds are let go at its exit.
    other = TWIN / FIX_260 / "plain_turns.json"
    spec = f"toolkit.lab.go_twin.workflows:{WORKFLOW_CLASSES[FIX_260].__name__}"
    tests = str(Path(__file__).resolve().parent)
    try:
        command = [sys.executable, "-c", _NEVER_ENDING, tests, spec, str(PATCHED), str(other)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"the check hung: {hung.stderr!s:.3000}") from None
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    for code, (first, second) in out.items():
        assert first["outcome"] == "failed" and first["error_type"] == "TimeoutError", code
        assert "did not finish within 3 s" in first["message"], code
        assert second["outcome"] == "ok", (code, second)
    assert "held the thread" in out["Blocking"][0]["message"]


def test_frames_workflow_histories_and_datasets_are_sources(tmp_path: Path) -> None:
    paths = sorted((TWIN / BEFORE_250).glob("*[!a].json"))[:3]
    code = [WORKFLOW_CLASSES[FIX_250]]
    expected = tk.replay_check(paths, code, workflow_runner=toolkit_sandbox_runner())
    events, _ = tk.read_histories(paths)
    from_frame = tk.replay_check(events, code, workflow_runner=toolkit_sandbox_runner())
    assert from_frame.results["core_message"].tolist() == expected.results["core_message"].tolist()
    history = tk.to_workflow_history(tk.read_history(paths[0]))
    one = tk.replay_check(history, code, workflow_runner=toolkit_sandbox_runner())
    assert one.results["core_message"].tolist() == expected.results["core_message"].tolist()[:1]
    dataset = tmp_path / "hist.parquet"
    tk.write_dataset(paths, dataset, workers=1)
    stored = tk.replay_check(dataset, code, workflow_runner=toolkit_sandbox_runner())
    assert sorted(stored.results["core_message"]) == sorted(expected.results["core_message"])
    picked = tk.replay_check(dataset, code, query=f"run_id = '{expected.results.run_id[0]}'",
                             workflow_runner=toolkit_sandbox_runner())
    assert picked.results["run_id"].tolist() == [expected.results.run_id[0]]
    with pytest.raises(ToolkitError, match="does not run over the dataset"):
        tk.replay_check(dataset, code, query="no_such_column = 1")


def test_junit_lists_every_history(twin_checks, tmp_path: Path) -> None:
    _, check = twin_checks[FIX_250]
    text = check.to_junit(tmp_path / "out" / "replay.xml")
    suites = ET.fromstring(text)
    assert ET.parse(tmp_path / "out" / "replay.xml").getroot().tag == "testsuites"
    cases = suites.findall(".//testcase")
    assert len(cases) == len(check.results)
    failures = suites.findall(".//failure")
    assert len(failures) == int((check.results["outcome"] == "nondeterminism").sum()) > 0
    assert "[TMPRL1100]" in failures[0].text and failures[0].get("message").startswith("At event")
    suite = suites.find("testsuite")
    assert suite.get("tests") == str(len(cases)) and suite.get("failures") == str(len(failures))


def test_the_page_is_the_investigation_report_with_a_finding_per_group(twin_checks, tmp_path):
    from toolkit.replay_check.report import investigation

    _, check = twin_checks[FIX_260]
    report = investigation(check)
    assert report.findings["kind"].tolist() == ["replay_nondeterminism"] * len(check.groups)
    first = report.findings.iloc[0]
    assert first["severity"] == "high"  # closed runs only: nothing open would break
    assert first["title"].startswith(f"{check.groups['histories'].iloc[0]} closed runs would")
    assert first["title"].endswith("would break on replay: activity_type 'ListMcpTools' in the "
                                   "history, 'InvokeModel' from the new code "
                                   "(ActivityTaskScheduled)")
    assert sorted(first["runs"]) == sorted(check.groups["runs"].iloc[0])
    assert set(report.evidence) == {"replay_check", "replay_groups", "replay_chains", "runs",
                                    "replay_divergences"}
    page = check.to_html(tmp_path / "check.html")
    assert (tmp_path / "check.html").read_text(encoding="utf-8") == page
    assert first["title"] in page.replace("&#x27;", "'")
    # Each card shows the commands the code issued in the replay, beside the recorded ones.
    assert page.count("the commands the new code issued replaying it") == len(check.groups)
