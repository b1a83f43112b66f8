"""``toolkit replay-check`` on the committed lab histories: what would break first, open runs
before closed ones, JUnit and HTML written, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TWIN = ROOT / "data" / "go_twin"
SCRIPT = Path(sys.executable).parent / "toolkit"
FIXED = ["--workflows", "toolkit.lab.go_twin.workflows:WithFixAdk260",
         "--options", "toolkit.lab.sandbox:sandbox_options"]


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "toolkit.cli"]
    return subprocess.run([*command, "replay-check", *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)  # fmt: skip


def test_what_would_break_is_printed_with_its_groups_and_files(tmp_path: Path) -> None:
    junit, page = tmp_path / "replay.xml", tmp_path / "replay.html"
    result = run(TWIN / "before_fix-adk_v2.5.0", TWIN / "with_fix-adk_v2.6.0", *FIXED,
                 "--junit", junit, "--html", page, "--width", "120")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("22 histories: 11 replay with the new code, 11 would break")
    assert lines[0].endswith("Verdict: do not deploy as it is.")
    table = lines[2:15]
    assert table[0].split() == ["open", "workflow_id", "run_id", "label", "outcome", "event_id",
                                "group"]
    assert len([line for line in table if "nondeterminism" in line]) == 11
    assert "group 1: 10 histories (0 open, 10 closed; recorded by before_fix-adk_v2.5.0)" in (
        result.stdout)
    assert ("the Replayer: [TMPRL1100] Nondeterminism error: Activity type of scheduled event "
            "'ListMcpTools' does not match activity type of activity command 'InvokeModel'"
            ) in result.stdout
    suites = ET.parse(junit).getroot()
    assert len(suites.findall(".//testcase")) == 22 and len(suites.findall(".//failure")) == 11
    assert "would break on replay" in page.read_text(encoding="utf-8")


def test_json_lists_the_breaking_histories_first_and_passing_code_exits_0() -> None:
    result = run(TWIN / "with_fix-adk_v2.6.0", TWIN / "before_fix-adk_v2.6.0", *FIXED, "--json")
    assert result.returncode == 1, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    outcomes = [row["outcome"] for row in rows]
    assert outcomes == sorted(outcomes, key=lambda o: o == "ok") and len(rows) == 22
    assert all(row["workflow_id_from"] == "history" for row in rows)
    passing = run(TWIN / "with_fix-adk_v2.6.0", *FIXED)
    assert passing.returncode == 0, passing.stderr
    assert "Verdict: safe to deploy for these runs." in passing.stdout


def test_bad_input_exits_2_with_the_reason() -> None:
    missing = run(TWIN / "nowhere", *FIXED)
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr
    bad_code = run(TWIN, "--workflows", "no_such_module:Workflow")
    assert bad_code.returncode == 2 and "no_such_module" in bad_code.stderr
    assert "Traceback" not in bad_code.stderr
    nothing = run(ROOT / "data" / "flag_pairs" / "derived_ids", *FIXED)
    assert nothing.returncode == 2 and "nothing was checked" in nothing.stdout
    assert "not checked (" in nothing.stderr and "unknown workflow type" in nothing.stderr
    unreachable = run("--address", "127.0.0.1:1", "--query", "WorkflowType = 'x'", *FIXED)
    assert unreachable.returncode == 2 and "cannot connect" in unreachable.stderr


def test_the_readme_ci_recipe_is_valid_yaml_whose_commands_parse() -> None:
    import shlex

    import yaml

    from toolkit.cli import build_parser

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Check a deploy before it ships", 1)[1].split("\n## ", 1)[0]
    recipe = yaml.safe_load(section.split("```yaml", 1)[1].split("```", 1)[0])
    steps = recipe["jobs"]["replay-check"]["steps"]
    commands = [s["run"] for s in steps if "toolkit replay-check" in s.get("run", "")]
    assert len(commands) == 2
    for command in commands:
        words = shlex.split(command.replace('"$TEMPORAL_ADDRESS"', "staging:7233"))
        args = build_parser().parse_args(words[1:])
        assert args.command == "replay-check" and args.workflows and args.junit
