"""The pytest entry: a project adds the replay check to its own suite, by options, by its
configuration, or with the ``replay_check`` fixture (run in a separate pytest process)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TWIN = Path(__file__).resolve().parents[1] / "data" / "go_twin"
CODE = ["--replay-check-workflows", "toolkit.lab.go_twin.workflows:WithFixAdk260",
        "--replay-check-options", "toolkit.lab.sandbox:sandbox_options"]


@pytest.fixture
def histories(pytester: pytest.Pytester) -> Path:
    """Two histories the fixed code replays, one it does not, one of another workflow type."""
    folder = pytester.path / "histories"
    folder.mkdir()
    for name in ("plain_turns.json", "catalog_unchanged.json"):
        shutil.copy(TWIN / "with_fix-adk_v2.6.0" / name, folder / f"fixed_{name}")
    shutil.copy(TWIN / "before_fix-adk_v2.5.0" / "plain_turns.json", folder / "old.json")
    derived = TWIN.parent / "flag_pairs" / "derived_ids" / "1.35.0" / "derived_ids_a.json"
    shutil.copy(derived, folder / "other_type.json")
    return folder


def test_options_make_one_test_per_history_file(pytester, histories) -> None:
    result = pytester.runpytest_subprocess("--replay-check", str(histories), *CODE, "-rs")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*replay-check*old.json*",
        "*closed run go-twin.before_fix-adk_v2.5.0.plain_turns*nondeterminism*",
        "*At event * the history has ScheduleActivityTask(ListMcpTools*",
        "*the Replayer: [[]TMPRL1100] Nondeterminism error: Activity type of scheduled event "
        "'ListMcpTools' does not match activity type of activity command 'InvokeModel'*",
        "*SKIPPED*unknown workflow type*",
    ])  # fmt: skip


def test_the_project_configuration_adds_the_check_to_every_run(pytester, histories) -> None:
    (histories / "old.json").unlink()
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'replay_check = ["histories"]\n'
        'replay_check_workflows = ["toolkit.lab.go_twin.workflows:WithFixAdk260"]\n'
        'replay_check_options = "toolkit.lab.sandbox:sandbox_options"\n'
    )
    pytester.makepyfile(test_app="def test_app():\n    assert True\n")
    pytester.runpytest_subprocess().assert_outcomes(passed=3, skipped=1)


def test_without_settings_the_plugin_adds_nothing_and_the_fixture_checks(pytester) -> None:
    pytester.makepyfile(test_deploy=f'''
import pytest

CODE = ["toolkit.lab.go_twin.workflows:WithFixAdk260"]
OPTIONS = "toolkit.lab.sandbox:sandbox_options"

def test_fixed_histories_replay(replay_check):
    replay_check("{TWIN / "with_fix-adk_v2.6.0"}", CODE, options=OPTIONS).assert_replays()

def test_old_histories_break(replay_check):
    with pytest.raises(AssertionError, match="would break") as failed:
        replay_check("{TWIN / "before_fix-adk_v2.5.0"}", CODE, options=OPTIONS).assert_replays()
    assert "0 open / 10 closed runs (before_fix-adk_v2.5.0)" in str(failed.value)
''')
    pytester.runpytest_subprocess().assert_outcomes(passed=2)
