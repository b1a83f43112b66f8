"""Helpers for the concurrency tests: many small real histories, writer and compactor processes.

The histories are the lab's gallery recordings (10-20 events each), copied with a fresh run id
per copy so that every copy is a distinct run. Writers run in their own processes (the
``forkserver`` start method: nothing shared with the test but the file system).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import re
import signal
import time
import uuid
from pathlib import Path

import orjson

from toolkit.datasets import compact_dataset, write_dataset
from toolkit.histories import tables  # noqa: F401  (imported once, in the fork server)

DATA = Path(__file__).resolve().parents[1] / "data"
# Three workflow types: few partitions, so few files per batch (the tests stay quick).
TEMPLATES = sorted(DATA.glob("gallery/*/v1.json"))[:3]
_RUN_ID = re.compile(r'"originalExecutionRunId": "([^"]+)"')
_PART = re.compile(r"^part-(.+)-\d+\.parquet$")
# A fork server that has imported the writer once: each writer is a fresh process forked from
# it (no threads, nothing shared with the test), without paying for the imports every time.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["dataset_writers"])


def make_runs(folder: Path, count: int, *, seed: int = 0) -> list[Path]:
    """Write ``count`` distinct runs (gallery histories with fresh run ids) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    paths = []
    for number in range(count):
        text = TEMPLATES[number % len(TEMPLATES)].read_text()
        old = _RUN_ID.search(text).group(1)  # type: ignore[union-attr]
        new = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        path = folder / f"run-{seed}-{number:05d}.json"
        path.write_text(text.replace(old, new))
        paths.append(path)
    return paths


def event_count(paths: list[Path]) -> int:
    """Events in ``paths``, counted from the JSON (independently of the loader)."""
    return sum(len(orjson.loads(p.read_bytes())["events"]) for p in paths)


def write_in_calls(
    paths: list[str], dataset: str, batch_files: int, calls: int, pause: float
) -> None:
    """Write ``paths`` in ``calls`` separate ``write_dataset`` calls, pausing between them."""
    # A process group of its own, led by this writer: its decoding pool (a fork server and its
    # workers) is in it too, so that a writer killed mid-batch takes them along at once
    # (kill_writer; on their own they end about a second later, test_pool_parent_killed.py).
    os.setsid()
    size = -(-len(paths) // calls)
    for start in range(0, len(paths), size):
        write_dataset(paths[start : start + size], dataset, batch_files=batch_files,
                      progress=False)  # fmt: skip
        time.sleep(pause)


def start_writer(
    paths: list[Path], dataset: Path, *, batch_files: int = 50, calls: int = 1, pause: float = 0
) -> multiprocessing.process.BaseProcess:
    """Start a writer process over ``paths`` (its own interpreter)."""
    process = _CONTEXT.Process(
        target=write_in_calls,
        args=([str(p) for p in paths], str(dataset), batch_files, calls, pause),
    )
    process.start()
    return process


def start_compactor(dataset: Path) -> multiprocessing.process.BaseProcess:
    """Start a process compacting ``dataset`` (its own interpreter)."""
    process = _CONTEXT.Process(target=compact_dataset, args=(str(dataset),))
    process.start()
    return process


def uncommitted_parts(dataset: Path) -> list[Path]:
    """Parquet parts whose batch has no committed manifest folder (yet)."""
    batches = dataset / "_toolkit" / "batches"
    committed = {p.name for p in batches.iterdir()} if batches.is_dir() else set()
    parts = []
    for part in dataset.glob("*/**/part-*.parquet"):
        match = _PART.match(part.name)
        if match and match.group(1) not in committed:
            parts.append(part)
    return parts


def stop_between_parts_and_commit(
    process: multiprocessing.process.BaseProcess, dataset: Path, timeout: float = 60
) -> list[Path]:
    """SIGSTOP ``process`` at a moment when it has written parts it has not committed.

    Returns the parts it left uncommitted (the process stays stopped). Polls the file system;
    a process caught just after its commit is resumed and caught again later.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.is_alive(), "the writer ended before it could be caught mid-batch"
        if uncommitted_parts(dataset):
            os.kill(process.pid, signal.SIGSTOP)  # type: ignore[arg-type]
            caught = uncommitted_parts(dataset)
            if caught:
                return caught
            os.kill(process.pid, signal.SIGCONT)  # type: ignore[arg-type]
        time.sleep(0.002)
    raise AssertionError("never caught the writer between writing parts and committing")


def kill_writer(process: multiprocessing.process.BaseProcess) -> None:
    """SIGKILL a writer and everything it started (no cleanup of any kind), by its PID: the
    writer leads its process group, whose id stays its own until the writer is reaped here."""
    if process.exitcode is None:  # not reaped yet (exitcode reaps a writer that has ended)
        with contextlib.suppress(ProcessLookupError):  # the group already ended
            os.killpg(process.pid, signal.SIGKILL)  # type: ignore[arg-type]
    process.join()


def finish(processes: list[multiprocessing.process.BaseProcess], timeout: float = 120) -> None:
    """Wait for writer processes; kill any still running after ``timeout`` (then fail)."""
    deadline = time.monotonic() + timeout
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    stuck = [p for p in processes if p.is_alive()]
    for process in stuck:
        kill_writer(process)
    assert not stuck, f"{len(stuck)} writer(s) still running after {timeout:g} s"
    assert [p.exitcode for p in processes] == [0] * len(processes)
