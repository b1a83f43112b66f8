"""``run_chunks`` with a pool: this process runs the first chunk (and those after the pool's
while it starts), the workers the rest; every chunk once, the results in the chunks' order."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dataset_writers import DATA, make_runs

import toolkit as tk
from toolkit import forking
from toolkit.histories.reading import pool
from toolkit.histories.reading.batch import find_history_files
from toolkit.histories.reading.pool import run_chunks

TESTS = Path(__file__).resolve().parent


def _square(chunk: int, pause: float) -> tuple[int, int, int]:
    """(chunk, its square, the pid that ran it); ``pause`` seconds of work first."""
    time.sleep(pause)
    return chunk, chunk * chunk, os.getpid()


@pytest.mark.parametrize("count", [2, 3, 12])
def test_results_in_order_each_chunk_once(count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "may_fork", lambda: False)  # a fork server's workers
    results = list(run_chunks(_square, iter(range(count)), (0.05,), 2))
    assert [(c, s) for c, s, _ in results] == [(c, c * c) for c in range(count)]
    pids = [pid for *_, pid in results]
    assert pids[0] == os.getpid()  # the first chunk is run here, while the pool starts
    if count == 12:  # the pool took some of them
        assert any(pid != os.getpid() for pid in pids)


def test_lazy_chunks_and_early_stop() -> None:
    """Chunks are taken as needed (at most the workers' plus a few ahead), and a consumer that
    stops early closes the pool without waiting for chunks never asked for."""
    taken: list[int] = []

    def chunks() -> object:
        for chunk in range(1000):
            taken.append(chunk)
            yield chunk

    results = run_chunks(_square, chunks(), (0.02,), 2)  # forked or served, as this process may
    assert next(results)[:2] == (0, 0)
    assert next(results)[:2] == (1, 1)
    results.close()
    assert len(taken) < 12


def test_one_worker_or_one_chunk_runs_here() -> None:
    for workers, count in ((1, 5), (2, 1)):
        results = list(run_chunks(_square, range(count), (0.0,), workers))
        assert [r[:2] for r in results] == [(c, c * c) for c in range(count)]
        assert {pid for *_, pid in results} == {os.getpid()}


def test_forked_workers_in_a_process_without_threads() -> None:
    """In a process running no other thread the workers are forked from it (their parent is
    that process), and the results are the same, in order."""
    code = (
        "import os, sys\n"
        "from test_pool_run_chunks import _square\n"
        "from toolkit.histories.reading.pool import run_chunks\n"
        "from toolkit.forking import may_fork\n"
        "assert may_fork()\n"
        "out = list(run_chunks(_square, range(9), (0.05,), 2))\n"
        "assert [r[:2] for r in out] == [(c, c * c) for c in range(9)], out\n"
        "import psutil\n"
        "workers = {pid for *_, pid in out} - {os.getpid()}\n"
        "print(len(workers))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("1", "2")  # every chunk in a worker, none here


def test_thread_marked_fork_safe_allows_fork_others_do_not() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert not forking.may_fork()  # a thread nobody marked
        forking.fork_safe(other)
        main = threading.main_thread()
        alone = all(t in (main, other) for t in threading.enumerate())  # (pytest-xdist's: no)
        on_main = threading.current_thread() is main
        assert forking.may_fork() == (alone and on_main and sys.platform.startswith("linux"))
    finally:
        stop.set()
        other.join()


def _tables(dataset: Path) -> dict[str, pa.Table]:
    """Each table's rows in commit order, without the batch ids (a new id per write)."""
    out = {}
    for table in ("events", "activities", "workflow_tasks", "runs"):
        parts = sorted((dataset / table).glob("part-*.parquet"),
                       key=lambda p: int(p.stem.split("-")[-2]))  # fmt: skip
        whole = pa.concat_tables([pq.read_table(p) for p in parts])
        out[table] = whole.drop_columns(["batch"]) if "batch" in whole.column_names else whole
    return out


def test_datasets_equal_in_process_forked_and_from_a_fork_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same files written by one process, by forked workers (a child process that runs no
    thread) and by a fork server's workers with the caller running chunks too: equal tables."""
    make_runs(tmp_path / "in", 150)
    files = [*sorted((tmp_path / "in").glob("*.json")), *find_history_files(DATA / "go_twin")]
    listing = tmp_path / "files.txt"
    listing.write_text("\n".join(map(str, files)))
    written = {}
    write = "tk.write_dataset(files, sys.argv[2], batch_files=12, workers={}, progress=False)"
    code = ("import sys, toolkit as tk\n"
            "files = open(sys.argv[1]).read().split('\\n')\n"
            f"{write.format(2)}\n")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    command = [sys.executable, "-c", code, str(listing), str(tmp_path / "forked")]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    written["forked"] = _tables(tmp_path / "forked")
    tk.write_dataset(files, tmp_path / "one", batch_files=12, workers=1, progress=False)
    written["one"] = _tables(tmp_path / "one")
    monkeypatch.setattr(pool, "may_fork", lambda: False)
    tk.write_dataset(files, tmp_path / "served", batch_files=12, workers=2, progress=False)
    written["served"] = _tables(tmp_path / "served")
    for table, expected in written["one"].items():
        assert expected.num_rows > 0, table
        for how in ("forked", "served"):
            assert written[how][table].equals(expected), (how, table)
