"""``tk.replay_check`` against a bare ``Replayer.replay_workflows`` loop over the same histories
(target: at least 0.9x with ``workers=1``; the speedup with ``workers=2`` is printed).

Builds, in a temporary folder, N histories (default 176: the Go plugin twin's 44 recordings,
each copy given new run ids so that none is skipped as a duplicate), then, best of
``--repeat``, replays them with the twin's fixed plugin on ADK v2.6.0 (half of them fail, half
replay) and the lab's sandbox:

- baseline: one ``Replayer`` and one ``replay_workflows`` over the files, each read with
  ``WorkflowHistory.from_json`` under the workflow id its started event names (what a careful
  hand-written check does), the same quiet runtime;
- ``tk.replay_check(folder, ...)`` in this process (``workers=1``): reading, labels, trimming,
  replay, explanations of every failure, groups;
- ``tk.replay_check(..., workers=2)``: two worker processes, their start-up included.

Wall and CPU time are both printed: on a machine other processes share, CPU time (all threads
of this process) moves less than wall time from run to run.

Usage: ``python benchmarks/bench_replay_check.py [--histories N] [--repeat R]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import toolkit as tk

ROOT = Path(__file__).resolve().parents[1]
TWIN = ROOT / "data" / "go_twin"
CODE = "toolkit.lab.go_twin.workflows:WithFixAdk260"
OPTIONS = "toolkit.lab.sandbox:sandbox_options"


def _write(out: Path, count: int) -> list[Path]:
    templates = sorted(p for p in TWIN.glob("*/*.json") if not p.name.endswith(".meta.json"))
    paths = []
    for index in range(count):
        text = templates[index % len(templates)].read_text(encoding="utf-8")
        started = json.loads(text)["events"][0]["workflowExecutionStartedEventAttributes"]
        for key in ("originalExecutionRunId", "firstExecutionRunId"):
            text = text.replace(started[key], str(uuid.UUID(int=index + 1)))
        path = out / f"history-{index:05d}.json"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


async def _bare(paths: list[Path]) -> int:
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    from toolkit.lab.go_twin.workflows import WithFixAdk260
    from toolkit.lab.sandbox import toolkit_sandbox_runner
    from toolkit.replay.check_worker import quiet_runtime

    replayer = Replayer(workflows=[WithFixAdk260], workflow_runner=toolkit_sandbox_runner(),
                        runtime=quiet_runtime())

    async def histories() -> Any:
        for path in paths:
            data = json.loads(path.read_text(encoding="utf-8"))
            workflow_id = data["events"][0]["workflowExecutionStartedEventAttributes"][
                "workflowId"]
            yield WorkflowHistory.from_json(workflow_id, data)

    results = await replayer.replay_workflows(histories(), raise_on_replay_failure=False)
    return len(results.replay_failures)


def _best(repeat: int, run: Callable[[], Any]) -> tuple[float, float, Any]:
    """Best wall time, best CPU time of this process (all its threads) and the last value."""
    wall = cpu = float("inf")
    value = None
    for _ in range(repeat):
        started, used = time.perf_counter(), time.process_time()
        value = run()
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - used)
    return wall, cpu, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=176)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-replay-check-") as tmp:
        paths = _write(Path(tmp), args.histories)
        asyncio.run(_bare(paths[:4]))  # warm the sandbox's imports for both sides
        bare_s, bare_cpu, failures = _best(args.repeat, lambda: asyncio.run(_bare(paths)))
        one_s, one_cpu, one = _best(args.repeat, lambda: tk.replay_check(tmp, [CODE],
                                                                         options=OPTIONS))
        two_s, _, two = _best(args.repeat, lambda: tk.replay_check(tmp, [CODE], options=OPTIONS,
                                                                   workers=2))
    n = len(paths)
    broken = int((one.results["outcome"] != "ok").sum())
    assert broken == failures == int((two.results["outcome"] != "ok").sum()), (broken, failures)
    print(f"{n} histories ({broken} fail replay), best of {args.repeat}")
    print(f"  bare Replayer.replay_workflows loop: {bare_s:6.2f} s  {n / bare_s:6.1f} histories/s")
    print(f"  tk.replay_check, workers=1:         {one_s:6.2f} s  {n / one_s:6.1f} histories/s"
          f"  ratio {bare_s / one_s:.2f}x (target >= 0.9)")
    print(f"  CPU time of this process: bare {bare_cpu:.2f} s, workers=1 {one_cpu:.2f} s, ratio "
          f"{bare_cpu / one_cpu:.2f}x (steadier than wall time on a shared machine)")
    print(f"  tk.replay_check, workers=2:         {two_s:6.2f} s  {n / two_s:6.1f} histories/s"
          f"  ratio {bare_s / two_s:.2f}x, speedup over workers=1 {one_s / two_s:.2f}x")


if __name__ == "__main__":
    main()
