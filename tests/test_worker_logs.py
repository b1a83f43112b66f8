"""Lab recordings and live replays log into a file, not onto the notebook or the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

import toolkit as tk
from toolkit.lab.gallery.builtin.activity_cases import ActivityRenamedV2
from toolkit.lab.sandbox import toolkit_sandbox_runner as sandbox_runner
from toolkit.lab.worker_logs import capture_worker_logs

CASE = Path(__file__).resolve().parents[1] / "data" / "gallery" / "activity-renamed"


def test_a_failed_replay_logs_to_the_file_only(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with capture_worker_logs(tmp_path / "worker.log") as path:
        result = tk.replay_histories(CASE / "v1.json", [ActivityRenamedV2],
                                     workflow_runner=sandbox_runner())  # fmt: skip
    assert result["outcome"].item() == "nondeterminism"
    records = tk.read_logs(path)
    assert (records["parse_error"].isna()).all() and records["format"].eq("python").all()
    core = records[records["logger"].str.startswith("temporalio.core", na=False)]
    assert len(core) >= 1 and core["level"].eq("warning").all()
    assert core["message"].str.contains("[TMPRL1100]", regex=False).any()
    captured = capfd.readouterr()
    assert "TMPRL1100" not in captured.err and "TMPRL1100" not in captured.out
    assert "WARN" not in captured.err
