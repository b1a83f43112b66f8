"""replay(): temporalio's real Replayer over every input form, one row per history."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Worker
from test_divergence_dev import any_activity, plan_workflow

from toolkit.errors import HistoryFormatError
from toolkit.histories.reading.batch import read_histories
from toolkit.histories.reading.read import read_history
from toolkit.replay.replayer import replay

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def recorded(dev_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of a plan [A, B] recorded on the dev server."""

    async def run() -> str:
        client = await Client.connect(dev_server.address)
        queue = f"replayer-{uuid.uuid4()}"
        worker = Worker(
            client, task_queue=queue, workflows=[plan_workflow(["A", "B"])],
            activities=[any_activity],
        )  # fmt: skip
        async with worker:
            handle = await client.start_workflow("Plan", id=f"r-{uuid.uuid4()}", task_queue=queue)
            await handle.result()
            return (await handle.fetch_history()).to_json()

    path = tmp_path_factory.mktemp("replayer") / "plan.json"
    path.write_text(asyncio.run(run()))
    return path


def test_every_input_form(recorded: Path) -> None:
    same, changed = plan_workflow(["A", "B"]), plan_workflow(["A", "C"])
    history = WorkflowHistory.from_json("wf", recorded.read_text())
    forms = [recorded, recorded.read_bytes(), read_history(recorded), history]
    table = replay(forms, [same])
    assert len(table) == 4 and (table.outcome == "ok").all()
    assert table.workflow_type.unique().tolist() == ["Plan"]
    failed = replay(recorded, [changed]).iloc[0]
    assert failed.outcome == "nondeterminism" and failed.error_type == "NondeterminismError"
    assert (failed.expected, failed.actual) == ("B", "C")
    assert "does not match activity type of activity command 'C'" in failed.message


def test_frame_of_several_files(recorded: Path, tmp_path: Path) -> None:
    copies = [tmp_path / "a.json", tmp_path / "b.json"]
    for copy in copies:
        copy.write_bytes(recorded.read_bytes())
    events = read_histories(copies, dedupe=False).events
    assert events["history"].unique().tolist() == [0]  # only source tells the runs apart
    table = replay(events, [plan_workflow(["A", "B"])])
    assert table.source.tolist() == [str(c) for c in copies]
    assert (table.outcome == "ok").all()


def test_inside_a_running_loop(recorded: Path) -> None:
    async def from_a_notebook_cell() -> str:
        return replay(recorded, [plan_workflow(["A", "B"])]).outcome.iloc[0]

    assert asyncio.run(from_a_notebook_cell()) == "ok"


def test_bad_input(tmp_path: Path) -> None:
    with pytest.raises(HistoryFormatError, match="no such file"):
        replay(tmp_path / "absent.json", [plan_workflow(["A"])])
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(HistoryFormatError, match="not JSON"):
        replay(tmp_path / "bad.json", [plan_workflow(["A"])])
