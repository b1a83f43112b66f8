"""tk.replay_check against a live dev server: the visibility query, the sample, open runs, a task
held by a worker, a continue-as-new chain, ids built from the run's own ids.

One module fixture records an order workflow (``tests/replay_check_workflows.py``) with its first
version: completed runs, runs waiting for payment, one run whose workflow task a worker has taken
and not answered, and a chain that continued as new once. The checks then replay them with the
first version (everything replays), with the step after payment renamed (only runs that got
there break: the open ones are safe) and with the first step renamed (every run breaks, the
open ones too).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from replay_check_workflows import (
    ORDER,
    OrderChargeRenamed,
    OrderReserveRenamed,
    OrderV1,
    any_activity,
)
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import PollWorkflowTaskQueueRequest
from temporalio.client import Client
from temporalio.worker import Worker

import toolkit as tk
from toolkit.errors import ServerError, ToolkitError
from toolkit.lab.server import wait_listed
from toolkit.replay_check.report import investigation

pytestmark = pytest.mark.server


async def _record(address: str, folder: Path) -> dict[str, Any]:
    client = await Client.connect(address)
    queue = f"replay-check-{uuid.uuid4().hex[:8]}"
    ids: dict[str, list[str]] = {"completed": [], "open": []}
    # No workflow cache: every task goes through the task queue (the held one included).
    async with Worker(client, task_queue=queue, workflows=[OrderV1], activities=[any_activity],
                      max_cached_workflows=0):
        for index in range(3):
            handle = await client.start_workflow(OrderV1.run, 1, id=f"order-done-{index}-{queue}",
                                                 task_queue=queue)
            await handle.signal(OrderV1.pay)
            assert await handle.result() == "done"
            ids["completed"].append(handle.id)
        for index in range(2):
            handle = await client.start_workflow(OrderV1.run, 1, id=f"order-open-{index}-{queue}",
                                                 task_queue=queue)
            ids["open"].append(handle.id)
        chained = await client.start_workflow(OrderV1.run, 2, id=f"order-chain-{queue}",
                                              task_queue=queue)
        held = await client.start_workflow(OrderV1.run, 1, id=f"order-held-{queue}",
                                           task_queue=queue)
        waiting = [*ids["open"], chained.id, held.id]
        # Until each waits for payment (its latest run's note activity completed).
        for handle in (client.get_workflow_handle(workflow_id) for workflow_id in waiting):
            for _ in range(200):
                events = (await handle.fetch_history()).events
                started = events[0].workflow_execution_started_event_attributes
                second_run = handle.id != chained.id or started.continued_execution_run_id
                if second_run and sum(e.event_type == 12 for e in events) >= 2:
                    break  # two ActivityTaskCompleted
                await asyncio.sleep(0.1)
    # The worker is gone. Payment arrives for the held run and a worker takes its task (a poll
    # that is never answered): its history ends with WorkflowTaskStarted.
    await held.signal(OrderV1.pay)
    polled = await client.workflow_service.poll_workflow_task_queue(PollWorkflowTaskQueueRequest(
        namespace="default", task_queue=TaskQueue(name=queue), identity="holder"))
    assert polled.workflow_execution.workflow_id == held.id
    history = await held.fetch_history()
    held_file = folder / "held-export.json"  # a file name that is not the workflow id
    held_file.write_text(json.dumps(history.to_json_dict()))
    query = f"WorkflowType = '{ORDER}' AND TaskQueue = '{queue}'"
    await wait_listed(client, query, 8)  # 3 completed, 2 open, 2 chained runs, 1 held
    return {"query": query, "held": held_file, "held_id": held.id, "chain_id": chained.id,
            "held_events": len(history.events), **ids}


@pytest.fixture(scope="module")
def recorded(dev_server: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("replay-check-live")
    return {"address": dev_server.address, **asyncio.run(_record(dev_server.address, folder))}


def test_every_run_replays_with_its_own_code(recorded: dict[str, Any]) -> None:
    check = tk.replay_check(recorded["address"], [OrderV1], query=recorded["query"])
    results = check.results
    assert len(results) == 8 and set(results["outcome"]) == {"ok"}, results
    assert check.exit_code == 0
    # Under their own ids (the code builds activity ids from the workflow id and the run id).
    assert set(results["workflow_id_from"]) == {"history"}
    assert results["source"].str.startswith("temporal://default/").all()
    assert set(results.loc[results["open"], "workflow_id"]) == {
        *recorded["open"], recorded["held_id"], recorded["chain_id"]}
    # Open runs are cut after their last completed workflow task; closed ones are whole.
    assert (results.loc[~results["open"], "trimmed"] == 0).all()
    held = results[results["workflow_id"] == recorded["held_id"]].iloc[0]
    assert held["trimmed"] >= 3  # signal, WorkflowTaskScheduled, WorkflowTaskStarted


def test_a_history_cut_while_a_task_is_held_replays_with_its_own_code(recorded) -> None:
    held = recorded["held"]
    events = json.loads(held.read_text())["events"]
    assert events[-1]["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_STARTED"
    check = tk.replay_check(held, [OrderV1])
    row = check.results.iloc[0]
    assert (row.outcome, row.open, row.workflow_id) == ("ok", True, recorded["held_id"])
    assert row.workflow_id_from == "history" and row.trimmed == 3
    assert row.replayed_events + row.trimmed == row.events == recorded["held_events"]
    untrimmed = tk.replay_check(held, [OrderV1], trim=False).results.iloc[0]
    assert untrimmed.outcome == "ok" and untrimmed.trimmed == 0


def test_ids_built_from_the_workflow_id_need_the_runs_own_id(recorded, tmp_path) -> None:
    document = json.loads(recorded["held"].read_text())
    del document["events"][0]["workflowExecutionStartedEventAttributes"]["workflowId"]
    unnamed = tmp_path / "held-export.json"  # an export of an older server: no workflowId
    unnamed.write_text(json.dumps(document))
    guessed = tk.replay_check(unnamed, [OrderV1]).results.iloc[0]
    assert (guessed.workflow_id, guessed.workflow_id_from) == ("held-export", "file name")
    assert guessed.outcome == "nondeterminism" and guessed.check == "activity_id"
    assert guessed.expected == f"{recorded['held_id']}-reserve"
    named = tk.replay_check(unnamed, [OrderV1], read_options={
        "workflow_id_from": lambda path: recorded["held_id"]}).results.iloc[0]
    assert (named.outcome, named.workflow_id_from) == ("ok", "source")


def test_a_change_after_the_wait_breaks_only_the_runs_past_it(recorded) -> None:
    check = tk.replay_check(recorded["address"], [OrderChargeRenamed], query=recorded["query"])
    results = check.results
    broken = results[results["outcome"] == "nondeterminism"]
    assert set(broken["workflow_id"]) == set(recorded["completed"])
    assert set(results.loc[results["open"], "outcome"]) == {"ok"}
    (group,) = check.groups.itertuples()
    assert (group.check, group.expected, group.actual) == ("activity_type", "charge",
                                                           "charge_card")
    assert (group.open, group.closed) == (0, 3)
    assert investigation(check).findings["severity"].tolist() == ["high"]


def test_a_change_before_the_wait_breaks_the_open_runs_too(recorded) -> None:
    check = tk.replay_check(recorded["address"], [OrderReserveRenamed], query=recorded["query"])
    # sdk-core compares the activity id first: the code builds it from the activity's name and
    # the run's own workflow id, which the group masks (one group for every run).
    (group,) = check.groups.itertuples()
    assert (group.check, group.expected, group.actual) == (
        "activity_id", "<workflow_id>-reserve", "<workflow_id>-reserve_stock")
    assert "<workflow_id>-reserve" in group.message
    assert (group.open, group.closed) == (4, 4)  # the first run of the chain is closed
    assert set(group.open_runs) == set(
        check.results.loc[check.results["open"], "run_id"])
    finding = investigation(check).findings.iloc[0]
    assert finding["severity"] == "critical" and finding["title"].startswith("4 open runs and")
    # The chain: two runs, both broken, the first of them first.
    chain = check.chains[check.chains["workflow_id"] == recorded["chain_id"]].iloc[0]
    assert (chain.runs, chain.open, chain.failed_runs) == (2, True, 2)
    first = check.results[check.results["run_id"] == chain.first_failed_run].iloc[0]
    assert first.chain_position == 0 and first.status == "continued_as_new"
    text = check.to_junit()
    assert text.count("<failure") == 8 and text.count("open run At event") == 4


def test_the_sample_keeps_every_open_run_and_the_newest_closed_ones(recorded) -> None:
    check = tk.replay_check(recorded["address"], [OrderV1], query=recorded["query"], sample=1)
    results = check.results
    assert results["open"].sum() == 4 and (~results["open"]).sum() == 1
    # One closed run per workflow type and build: the newest, the chain's first run.
    closed = results[~results["open"]].iloc[0]
    assert (closed.workflow_id, closed.status) == (recorded["chain_id"], "continued_as_new")
    capped = tk.replay_check(recorded["address"], [OrderV1], query=recorded["query"],
                             sample=0, max_open=2)
    assert len(capped.results) == 2 and capped.results["open"].all()


def test_server_problems_are_clear_errors(recorded) -> None:
    with pytest.raises(ToolkitError, match="no histories found"):
        tk.replay_check(recorded["address"], [OrderV1], query=f"WorkflowType = 'NoSuch{ORDER}'")
    with pytest.raises(ServerError, match="rejected the visibility query"):
        tk.replay_check(recorded["address"], [OrderV1], query="NoSuchAttribute = 'x'")
    with pytest.raises(ServerError, match="cannot connect"):
        tk.replay_check("127.0.0.1:1", [OrderV1], query="WorkflowType = 'x'")
