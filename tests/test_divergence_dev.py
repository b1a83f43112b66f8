"""first_divergence against temporalio's real Replayer on pairs of workflow versions.

Each case is two versions of one workflow ("plans" of steps), both run on the real dev server
with the same inputs; the first version's history is replayed with the second version's code by
``temporalio.worker.Replayer`` and the verdict and exact message are compared with
``first_divergence``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RawValue
from temporalio.worker import Worker

from toolkit.histories.read import read_history
from toolkit.replay.divergence import first_divergence
from toolkit.replay.replayer import replay

pytestmark = pytest.mark.server

Step = Any  # "A" (activity A), ("par", "A", "B"), ("timer", seconds), ("la", "X"), ("patch", "p")


@activity.defn(dynamic=True)
async def any_activity(args: Sequence[RawValue]) -> str:
    """Every activity type: returns its own type name."""
    return activity.info().activity_type


async def _run_step(step: Step) -> None:
    options: dict[str, Any] = {"start_to_close_timeout": timedelta(seconds=10)}
    if isinstance(step, str):
        await workflow.execute_activity(step, **options)
    elif step[0] == "par":
        await asyncio.gather(*(workflow.execute_activity(name, **options) for name in step[1:]))
    elif step[0] == "timer":
        await workflow.sleep(step[1])
    elif step[0] == "la":
        await workflow.execute_local_activity(step[1], **options)
    elif step[0] == "patch":
        workflow.patched(step[1])


def plan_workflow(steps: Sequence[Step]) -> type:
    """A workflow class named ``Plan`` that runs ``steps`` in order."""
    # temporalio refuses classes defined inside functions (it resolves them by qualified name),
    # so the class is built with type() under a module-level-looking name.
    name = f"Plan_{len(_PLANS)}"

    async def run(self: Any) -> str:
        for step in steps:
            await _run_step(step)
        return "done"

    run.__qualname__ = f"{name}.run"
    cls = type(name, (), {"run": workflow.run(run), "__module__": __name__})
    _PLANS.append(cls)
    return workflow.defn(name="Plan", sandboxed=False)(cls)


_PLANS: list[type] = []


CASES: dict[str, tuple[list[Step], list[Step]]] = {
    "same": (["A", "B"], ["A", "B"]),
    "extra_first": (["A"], ["L", "A"]),
    "extra_middle": (["L", "M", "C"], ["L", "M", "L", "C"]),
    "timer_instead": (["A", "B"], ["A", ("timer", 0.05), "B"]),
    "extra_trailing": (["A"], ["A", "B"]),
    "parallel_more": ([("par", "A", "B")], [("par", "A", "B", "C")]),
    "timer_duration": ([("timer", 0.05), "A"], [("timer", 0.2), "A"]),
    "patch_added": (["A"], [("patch", "p1"), "A"]),
    "local_renamed": ([("la", "X"), "A"], [("la", "Y"), "A"]),
    "go_twin_like": (["L", "L", "M", "L", "C", "L", "M"], ["L", "M", "C", "L", "M"]),
}


async def _record(client: Client, steps: Sequence[Step], out: Path) -> Path:
    queue = f"plan-{uuid.uuid4()}"
    async with Worker(
        client, task_queue=queue, workflows=[plan_workflow(steps)], activities=[any_activity]
    ):
        handle = await client.start_workflow("Plan", id=f"plan-{uuid.uuid4()}", task_queue=queue)
        await handle.result()
        history = await handle.fetch_history()
    out.write_text(history.to_json())
    return out


@pytest.fixture(scope="module")
def recorded_pairs(
    dev_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, Path]]:
    """Both versions of every case, recorded on the dev server."""
    folder = tmp_path_factory.mktemp("plans")

    async def record_all() -> dict[str, tuple[Path, Path]]:
        client = await Client.connect(dev_server.address)
        jobs = []
        for name, (old, new) in CASES.items():
            jobs.append(_record(client, old, folder / f"{name}.old.json"))
            jobs.append(_record(client, new, folder / f"{name}.new.json"))
        paths = await asyncio.gather(*jobs)
        return {name: (paths[2 * i], paths[2 * i + 1]) for i, name in enumerate(CASES)}

    return asyncio.run(record_all())


@pytest.mark.parametrize("direction", ["forward", "backward"])
@pytest.mark.parametrize("case", list(CASES))
def test_first_divergence_matches_replayer(
    recorded_pairs: dict[str, tuple[Path, Path]], case: str, direction: str
) -> None:
    old_path, new_path = recorded_pairs[case]
    old_steps, new_steps = CASES[case]
    if direction == "backward":
        old_path, new_path = new_path, old_path
        old_steps, new_steps = new_steps, old_steps
    real = replay(old_path, [plan_workflow(new_steps)]).iloc[0]
    modelled = first_divergence(read_history(old_path), read_history(new_path))
    if real["outcome"] == "ok":
        assert modelled is None, modelled.core_message
    else:
        assert real["outcome"] == "nondeterminism", real["message"]
        assert modelled is not None, real["message"]
        assert modelled.core_message in real["message"], (modelled.core_message, real["message"])
