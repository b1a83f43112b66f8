"""Record and replay workflows that issue commands next to their completion (sdk-core flag 3).

Versions of one workflow type, ``TerminalCommands``:

- ``before``: schedules activity ``a`` then returns;
- ``after``: starts a task that schedules ``a``, then returns, so ``a`` is issued after the
  completion in the same activation;
- ``mixed``: schedules ``a``, starts a task that schedules ``b``, then returns;
- ``late_before`` / ``late_after``: run activity ``a`` first, then do as ``before`` / ``after``
  with ``b`` in the second workflow task.

sdk-core with ``MoveTerminalCommands`` (temporalio >= 1.7) sends what comes after the completion
before it; older cores (temporalio 1.6) drop it. Run this file (not the package: it needs nothing
but ``temporalio``) with each temporalio version's interpreter::

    python toolkit/lab/terminal_pairs.py record ADDRESS data/terminal_commands
    python toolkit/lab/terminal_pairs.py replay data/terminal_commands

``record`` writes ``temporalio-<version>/<code>.json``; ``replay`` replays every recorded history
against every code with this interpreter's real ``Replayer`` and writes
``replay_temporalio-<version>.csv`` (history, code, outcome, message).
"""

from __future__ import annotations

import asyncio
import csv
import sys
import uuid
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, Worker

WORKFLOW_TYPE = "TerminalCommands"
_TIMEOUT = timedelta(seconds=10)


@activity.defn(name="a")
async def activity_a() -> str:
    return "a"


@activity.defn(name="b")
async def activity_b() -> str:
    return "b"


@workflow.defn(name=WORKFLOW_TYPE, sandboxed=False)
class Before:
    @workflow.run
    async def run(self) -> str:
        workflow.start_activity(activity_a, start_to_close_timeout=_TIMEOUT)
        return "done"


async def _schedule(fn: object) -> None:
    # Runs in the loop turn after the one that returned from ``run``: after the completion.
    workflow.start_activity(fn, start_to_close_timeout=_TIMEOUT)  # type: ignore[call-overload]


@workflow.defn(name=WORKFLOW_TYPE, sandboxed=False)
class After:
    @workflow.run
    async def run(self) -> str:
        self.later = asyncio.ensure_future(_schedule(activity_a))
        return "done"


@workflow.defn(name=WORKFLOW_TYPE, sandboxed=False)
class Mixed:
    @workflow.run
    async def run(self) -> str:
        workflow.start_activity(activity_a, start_to_close_timeout=_TIMEOUT)
        self.later = asyncio.ensure_future(_schedule(activity_b))
        return "done"


@workflow.defn(name=WORKFLOW_TYPE, sandboxed=False)
class LateBefore:
    @workflow.run
    async def run(self) -> str:
        await workflow.execute_activity(activity_a, start_to_close_timeout=_TIMEOUT)
        workflow.start_activity(activity_b, start_to_close_timeout=_TIMEOUT)
        return "done"


@workflow.defn(name=WORKFLOW_TYPE, sandboxed=False)
class LateAfter:
    @workflow.run
    async def run(self) -> str:
        await workflow.execute_activity(activity_a, start_to_close_timeout=_TIMEOUT)
        self.later = asyncio.ensure_future(_schedule(activity_b))
        return "done"


CODES: dict[str, type] = {
    "before": Before, "after": After, "mixed": Mixed,
    "late_before": LateBefore, "late_after": LateAfter,
}  # fmt: skip


def _label() -> str:
    return f"temporalio-{version('temporalio')}"


async def record(address: str, out_dir: Path) -> list[Path]:
    """Run each code once on the server at ``address``; write its history as JSON."""
    client = await Client.connect(address)
    target = out_dir / _label()
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, code in CODES.items():
        queue = f"terminal-{uuid.uuid4()}"
        async with Worker(
            client, task_queue=queue, workflows=[code], activities=[activity_a, activity_b]
        ):
            handle = await client.start_workflow(
                code.run, id=f"terminal-{name}-{uuid.uuid4().hex[:8]}", task_queue=queue
            )
            await handle.result()
            path = target / f"{name}.json"
            path.write_text((await handle.fetch_history()).to_json())
            paths.append(path)
    return paths


async def replay_all(data_dir: Path) -> Path:
    """Replay every recorded history against every code; write the outcomes as CSV."""
    rows = []
    for path in sorted(data_dir.glob("temporalio-*/*.json")):
        history = WorkflowHistory.from_json(f"terminal-{path.stem}", path.read_text())
        for name, code in CODES.items():
            result = await Replayer(workflows=[code]).replay_workflow(
                history, raise_on_replay_failure=False
            )
            failure = result.replay_failure
            outcome = (
                "ok"
                if failure is None
                else ("nondeterminism" if "Nondeterminism" in type(failure).__name__ else "error")
            )
            rows.append(
                {
                    "history": f"{path.parent.name}/{path.name}",
                    "code": name,
                    "outcome": outcome,
                    "message": "" if failure is None else str(failure)[:300],
                }
            )
    out = data_dir / f"replay_{_label()}.csv"
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["history", "code", "outcome", "message"])
        writer.writeheader()
        writer.writerows(rows)
    return out


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "record":
        print(*asyncio.run(record(args[0], Path(args[1]))), sep="\n")
    else:
        print(asyncio.run(replay_all(Path(args[0]))))
