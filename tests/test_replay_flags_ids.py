"""Recorded SDK flags and ids built from the workflow id, against temporalio's real Replayer.

- Pairs on either side of a flag: the lab's google-adk recordings made with temporalio 1.33
  (sdk-core flags 1-3) and 1.35 (flags 1-4: ``NexusOperationDeterminismChecks`` is new), replayed
  both ways by the real Replayer when the lab recorded them (data/adk/replay_matrix.csv); a
  Python pair recorded here with and without the language flag
  ``PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH`` (with and without a start signal, which
  puts two groups of jobs in one activation); public histories whose recorded flags
  are taken away (an older SDK's record of the same run).
- Ids built from the workflow id: one workflow recorded on the dev server under different
  workflow ids (and a version building its child id differently), replayed both ways.
"""

from __future__ import annotations

import asyncio
import json
import uuid
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, Worker

from toolkit.histories.reading.read import read_history
from toolkit.replay.divergence import first_divergence
from toolkit.replay.flags import history_flags
from toolkit.replay.tasks import split_history
from toolkit.replay.verdict import InexactVerdictWarning, replay_verdict

DATA = Path(__file__).resolve().parents[1] / "data"


def _flags(path: Path) -> dict[str, Any]:
    return history_flags(split_history(0, read_history(path)))


def test_lab_pairs_across_the_introduction_of_core_flag_4() -> None:
    matrix = pd.read_csv(DATA / "adk" / "replay_matrix.csv", dtype=str, keep_default_na=False)
    replayer = next(c for c in matrix.columns if c.startswith("replayer_"))
    checked = 0
    for row in matrix.to_dict("records"):
        recorded = DATA / "adk" / row["history"]
        replayed = DATA / "adk" / row[replayer] / recorded.name
        if not replayed.is_file():
            continue
        old, new = _flags(recorded), _flags(replayed)
        if (4 in old["core"]) == (4 in new["core"]):
            continue
        checked += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InexactVerdictWarning)
            verdict = replay_verdict(read_history(recorded), read_history(replayed))
        assert verdict.outcome == row["outcome"], (row["history"], row[replayer])
        assert not any("flag 4" in note for note in verdict.assumptions), verdict.assumptions
    assert checked >= 20  # 1.33-era and 1.35-era recordings, both directions


def _without_flags(document: dict[str, Any], core: set[int], lang: set[int]) -> dict[str, Any]:
    copy = json.loads(json.dumps(document))
    for event in copy["events"]:
        metadata = (event.get("workflowTaskCompletedEventAttributes") or {}).get("sdkMetadata")
        if metadata:
            metadata["coreUsedFlags"] = [f for f in metadata.get("coreUsedFlags", [])
                                         if int(f) not in core]  # fmt: skip
            metadata["langUsedFlags"] = [f for f in metadata.get("langUsedFlags", [])
                                         if int(f) not in lang]  # fmt: skip
    return copy


@pytest.mark.parametrize(
    ("name", "core", "lang", "flag_name", "exact"),
    [
        # The closing task holds only the failure: nothing for flag 3 to move.
        ("temporalio__sdk-dotnet/multi-complete-fail-before.post-core-flag.json", {3}, set(),
         "MoveTerminalCommands", (True, True)),
        # The flag was recorded at an activation with a signal alone: one batch either way.
        ("temporalio__sdk-typescript/otel_v2_smorgasbord_1_18_1.json", set(), {2},
         "ProcessWorkflowActivationJobsAsSingleBatch", (True, True)),
        # The new run raised on a cancelled, completed activity: replaying without the flag, the
        # await returns instead. The other way, the new run (an SDK without the flag) did not
        # raise and replay with the flag available reads it at the same point: no raise either.
        ("temporalio__sdk-python/test_replayer_swallowed_activity_cancellation.json", set(), {1},
         "RAISE_ON_CANCELLING_COMPLETED_ACTIVITY", (False, True)),
    ],
)  # fmt: skip
def test_public_histories_with_and_without_their_flags(
    corpus: Path, name: str, core: set[int], lang: set[int], flag_name: str,
    exact: tuple[bool, bool],
) -> None:  # fmt: skip
    document = json.loads((corpus / "histories" / name).read_bytes())
    older = _without_flags(document, core, lang)
    # The SDKs' own tests replay such histories with one current code: never nondeterminism;
    # where the flag can matter the verdict names it, else it is exact.
    pairs = ((older, document), (document, older))
    for (recorded, replayed), expected in zip(pairs, exact, strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InexactVerdictWarning)
            verdict = replay_verdict(read_history(recorded), read_history(replayed))
        named = any(flag_name in note for note in verdict.assumptions)
        assert verdict.outcome == "ok", verdict.assumptions
        assert verdict.exact is expected and named is not expected, verdict.assumptions
    same = replay_verdict(read_history(document), read_history(document))
    assert same.outcome == "ok" and same.exact


# --- recorded on the dev server -------------------------------------------------------------


@activity.defn(name="echo")
async def echo(text: str) -> str:
    return text


@workflow.defn(name="IdsChild", sandboxed=False)
class IdsChild:
    @workflow.run
    async def run(self) -> str:
        return "child"


@workflow.defn(name="IdsFromWorkflowId", sandboxed=False)
class IdsFromWorkflowIdV1:
    @workflow.run
    async def run(self) -> str:
        own = workflow.info().workflow_id
        await workflow.execute_activity(
            echo, "a", activity_id=f"{own}-act", start_to_close_timeout=timedelta(seconds=10)
        )
        await workflow.execute_child_workflow(IdsChild.run, id=f"{own}-child")
        return "done"


@workflow.defn(name="IdsFromWorkflowId", sandboxed=False)
class IdsFromWorkflowIdV2:
    @workflow.run
    async def run(self) -> str:
        own = workflow.info().workflow_id
        await workflow.execute_activity(
            echo, "a", activity_id=f"{own}-act", start_to_close_timeout=timedelta(seconds=10)
        )
        await workflow.execute_child_workflow(IdsChild.run, id=f"{own}-kid")
        return "done"


async def _record(
    client: Client, code: type, workflow_id: str, single_batch: bool = False, signal: bool = False
) -> str:
    queue = f"ids-{uuid.uuid4()}"
    worker = Worker(client, task_queue=queue, workflows=[code, IdsChild], activities=[echo])
    if single_batch:
        from temporalio.worker._workflow_instance import _WorkflowLogicFlag

        # The SDK's own switch for rolling this flag out (off by default in temporalio 1.35).
        worker._set_default_workflow_logic_flag(
            _WorkflowLogicFlag.PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH, enabled=True
        )
    async with worker:
        # A start signal puts the start and a signal in one activation: two groups of jobs.
        handle = await client.start_workflow(
            code.run, id=workflow_id, task_queue=queue, start_signal="ping" if signal else None
        )
        await handle.result()
        return (await handle.fetch_history()).to_json()


async def _real(text: str, workflow_id: str, code: type) -> tuple[str, str]:
    replayer = Replayer(workflows=[code, IdsChild])
    history = WorkflowHistory.from_json(workflow_id, text)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    failure = result.replay_failure
    if failure is None:
        return "ok", ""
    kind = "nondeterminism" if "Nondeterminism" in type(failure).__name__ else "error"
    return kind, str(failure)


@pytest.fixture(scope="module")
def recorded(dev_server: Any) -> dict[str, tuple[str, str]]:
    """Label -> (workflow id, history JSON)."""
    tag = uuid.uuid4().hex[:8]
    plan = {
        "a": (IdsFromWorkflowIdV1, f"ids-a-{tag}", False, False),
        "b": (IdsFromWorkflowIdV1, f"ids-b-{tag}", False, False),
        "c": (IdsFromWorkflowIdV2, f"ids-c-{tag}", False, False),
        "batch": (IdsFromWorkflowIdV1, f"ids-batch-{tag}", True, False),
        "signal": (IdsFromWorkflowIdV1, f"ids-signal-{tag}", False, True),
        "signal-batch": (IdsFromWorkflowIdV1, f"ids-signal-batch-{tag}", True, True),
    }

    async def record_all() -> dict[str, tuple[str, str]]:
        client = await Client.connect(dev_server.address)
        texts = await asyncio.gather(*(_record(client, *args) for args in plan.values()))
        return {label: (plan[label][1], text) for label, text in zip(plan, texts, strict=True)}

    return asyncio.run(record_all())


CODE = {label: IdsFromWorkflowIdV2 if label == "c" else IdsFromWorkflowIdV1
        for label in ("a", "b", "c", "batch", "signal", "signal-batch")}  # fmt: skip


@pytest.mark.server
@pytest.mark.parametrize(("old", "new"), [("a", "b"), ("b", "a"), ("a", "c"), ("c", "a")])
def test_ids_built_from_the_workflow_id(recorded: dict, old: str, new: str) -> None:
    old_id, old_text = recorded[old]
    real, message = asyncio.run(_real(old_text, old_id, CODE[new]))
    new_events = read_history(recorded[new][1].encode())
    found = first_divergence(read_history(old_text.encode()), new_events)
    if real == "ok":
        assert found is None, found.core_message
        notes = replay_verdict(read_history(old_text.encode()), new_events).notes
        assert any("built from the workflow id" in note for note in notes), notes
    else:
        assert real == "nondeterminism", message
        assert found is not None and found.exact and found.check == "child_workflow_id"
        assert found.core_message in message, (found.core_message, message)
        assert old_id in found.core_message  # the ids as replay builds them: the recorded run's


@pytest.mark.server
@pytest.mark.parametrize(
    ("old", "new", "exact"),
    [("a", "batch", True), ("batch", "a", True),
     ("signal", "signal-batch", False), ("signal-batch", "signal", False)],
)  # fmt: skip
def test_python_language_flag_pair(recorded: dict, old: str, new: str, exact: bool) -> None:
    """``PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH`` on one side only: it changes nothing
    where every activation carries one group of jobs (``a``/``batch``: start, then one result at
    a time), and is an assumption where one carries two (a start signal next to the start)."""
    batch = new if new.endswith("batch") else old
    flagged = split_history(0, read_history(recorded[batch][1].encode()))
    assert 2 in history_flags(flagged)["lang"]  # the flag is recorded in that run
    old_id, old_text = recorded[old]
    real, message = asyncio.run(_real(old_text, old_id, CODE[new]))
    assert real == "ok", message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InexactVerdictWarning)
        new_events = read_history(recorded[new][1].encode())
        verdict = replay_verdict(read_history(old_text.encode()), new_events)
    assert verdict.outcome == "ok"
    assert verdict.exact is exact, verdict.assumptions
    named = [
        a for a in verdict.assumptions if "PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH" in a
    ]
    assert bool(named) is not exact, verdict.assumptions
    if named:
        assert "task(s) 1" in named[0]  # the start and the signal share the first activation


def _as_typescript(document: dict[str, Any], version: str, lang: dict[int, list[int]]) -> bytes:
    """The run as TypeScript ``version`` records it: its build id, lang flags per task."""
    copy = json.loads(json.dumps(document))
    tasks = [e["workflowTaskCompletedEventAttributes"] for e in copy["events"]
             if "workflowTaskCompletedEventAttributes" in e]  # fmt: skip
    for index, attributes in enumerate(tasks, start=1):
        attributes["workerVersion"] = {"buildId": f"@temporalio/worker@{version}+0123abcd"}
        metadata = attributes.setdefault("sdkMetadata", {})
        metadata["langUsedFlags"] = lang.get(index, [])
    return json.dumps(copy).encode()


def test_typescript_flags_and_the_new_code_sdk_version(corpus: Path) -> None:
    """TypeScript is named by its default build id (its older cores wrote no ``sdkName``), and a
    flag matters only to a TypeScript that knows it (flags.ts ``@since``); one that reads flags
    but not this one rejects the activation."""
    name = "temporalio__sdk-typescript/lang_flags_replay_correctly_1_9_3.json"
    document = json.loads((corpus / "histories" / name).read_bytes())
    assert _flags(corpus / "histories" / name)["sdk"] == "typescript"
    as_1_11_2 = read_history(_as_typescript(document, "1.11.2", {2: [1]}))

    def notes(recorded: Any, replayed: Any) -> tuple[str, ...]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InexactVerdictWarning)
            return replay_verdict(recorded, replayed).assumptions

    # 1.9.3 reads no flags: replaying 1.11.2's record, it does as in its own run.
    assert not any("typescript SDK flag" in n for n in notes(as_1_11_2, read_history(document)))
    # 1.11.2 reads flag 1 where its own run recorded it; the 1.9.3 record lacks it there.
    named = [n for n in notes(read_history(document), as_1_11_2) if "flag 1 (" in n]
    assert named and "from task 2" in named[0], named
    # A 1.11.2 run replaying a record with flag 6 (1.13.3) rejects the activation.
    as_1_13_3 = read_history(_as_typescript(document, "1.13.3", {1: [6]}))
    assert any("Unknown SDK flag" in n for n in notes(as_1_13_3, as_1_11_2))
