"""Small shared helpers of the lab: request-log reader, child-process environment, sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolkit.errors import LabError, LogFormatError
from toolkit.lab.mcp_server import read_request_log
from toolkit.lab.processes import REPO_ROOT, process_env


def test_read_request_log_keeps_records_and_skips_blank_lines(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    log.write_text('{"seq": 1}\n\n{"seq": 2, "tool": "add"}\n', encoding="utf-8")
    assert read_request_log(log) == [{"seq": 1}, {"seq": 2, "tool": "add"}]


@pytest.mark.parametrize(("line", "expected"), [("not json", "not JSON"),
                                                ("[1, 2]", "not a JSON object")])
def test_read_request_log_names_file_and_line(tmp_path: Path, line: str, expected: str) -> None:
    log = tmp_path / "requests.jsonl"
    log.write_text('{"seq": 1}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(LabError, match=rf"requests\.jsonl line 2: {expected}"):
        read_request_log(log)
    with pytest.raises(LogFormatError, match=rf"requests\.jsonl at line 2: {expected}"):
        read_request_log(str(log), error=LogFormatError)


def test_process_env_puts_the_project_first_on_pythonpath(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = process_env({"EXTRA": "1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/elsewhere"]
    assert (REPO_ROOT / "toolkit" / "lab" / "processes.py").is_file()
    assert env["EXTRA"] == "1" and env["PYTHONUNBUFFERED"] == "1"
    monkeypatch.delenv("PYTHONPATH")
    assert process_env()["PYTHONPATH"] == str(REPO_ROOT)


def test_the_lab_sandboxes_pass_toolkit_through() -> None:
    from toolkit.lab.gallery.drive import workflow_runner as gallery_runner
    from toolkit.lab.go_twin.workflows import workflow_runner as twin_runner
    from toolkit.lab.samples import sandbox_runner
    from toolkit.lab.sandbox import toolkit_sandbox_runner

    for factory in (gallery_runner, twin_runner, sandbox_runner):
        assert factory is toolkit_sandbox_runner
    runner = toolkit_sandbox_runner()
    assert "toolkit" in runner.restrictions.passthrough_modules
