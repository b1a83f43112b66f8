"""A writer killed outright (SIGKILL, as the OOM killer does) takes its decoding pool with it:
the workers notice the parent is gone and end, instead of waiting on its queue forever."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from dataset_writers import make_runs

TESTS = Path(__file__).resolve().parent
WRITE = (
    "import sys, threading, time, toolkit as tk\n"
    "if sys.argv[3] == 'forkserver':  # a thread of the caller's own: no fork of this process\n"
    "    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    "tk.write_dataset(sys.argv[1], sys.argv[2], batch_files=10, workers=2, progress=False)\n"
)


@pytest.mark.parametrize(("start", "processes"), [("fork", 2), ("forkserver", 3)])
def test_pool_workers_end_when_the_writer_is_killed(
    tmp_path: Path, start: str, processes: int
) -> None:
    make_runs(tmp_path / "in", 600)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITE, str(tmp_path / "in"), str(tmp_path / "ds"), start],
        env=env, start_new_session=True,  # its own group: the fallback cleanup below
    )  # fmt: skip
    try:
        # Wait for the pool: two workers under the writer (forked from it, or from a fork
        # server under it).
        deadline = time.monotonic() + 120
        started: list[psutil.Process] = []
        while time.monotonic() < deadline and writer.poll() is None:
            started = psutil.Process(writer.pid).children(recursive=True)
            if len(started) >= processes:
                break
            time.sleep(0.05)
        assert len(started) >= processes, "the writer ended or never started its pool"
        os.kill(writer.pid, signal.SIGKILL)  # the writer alone: no cleanup of any kind
        writer.wait()
        gone, alive = psutil.wait_procs(started, timeout=15)
        assert not alive, f"{len(alive)} pool process(es) still running 15 s after the writer died"
        assert len(gone) == len(started)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(writer.pid, signal.SIGKILL)
        writer.wait()
