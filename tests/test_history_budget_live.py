"""A history-budget loop recorded live: the project's own google-adk on a dev server whose
history-size limit is lowered, until the server terminates the run (the committed recordings
are tests/test_history_budget_lab.py)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.lab.history_budget import record_live
from toolkit.lab.history_budget.record import events_bytes
from toolkit.lab.history_budget.scenarios import LIVE
from toolkit.lab.server import DevServer


@pytest.fixture(scope="module")
def budget_server() -> Iterator[DevServer]:
    """A dev server with the live run's lowered history-size limit, stopped by PID."""
    with DevServer(dynamic_config=LIVE.dynamic_config, log_level="warn") as server:
        yield server


@pytest.mark.server
def test_a_live_loop_is_terminated_by_the_server(budget_server: DevServer,
                                                 tmp_path: Path) -> None:
    (path,) = record_live(budget_server.address, tmp_path, server_log=budget_server.log_path)
    history = json.loads(gzip.decompress(path.read_bytes()))
    meta = json.loads(path.with_name(path.name.replace(".json.gz", ".meta.json")).read_text())
    assert history["events"][-1]["workflowExecutionTerminatedEventAttributes"] == {
        "reason": "Workflow history size exceeds limit.", "identity": "history-service"}
    server = meta["budget"]["server"]  # DescribeWorkflowExecution's numbers
    assert server["status"] == "TERMINATED" and server["history_length"] == len(
        history["events"])
    assert events_bytes(json.dumps(history)) == server["history_size_bytes"] > (
        LIVE.dynamic_config["limit.historySize.error"])
    assert 2 <= meta["budget"]["model_calls_completed"] < 20
    log = (path.parent / "logs" / f"{LIVE.name}.server.log").read_text()
    assert f"wf-id={meta['workflow_id']} " in log and "history size exceeds error limit." in log
