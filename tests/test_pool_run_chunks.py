"""``run_chunks`` with a pool: this process runs the first chunk (and those after the pool's
while it starts), the workers the rest; every chunk once, the results in the chunks' order."""

from __future__ import annotations

import os
import time

import pytest

from toolkit.histories.reading.pool import run_chunks


def _square(chunk: int, pause: float) -> tuple[int, int, int]:
    """(chunk, its square, the pid that ran it); ``pause`` seconds of work first."""
    time.sleep(pause)
    return chunk, chunk * chunk, os.getpid()


@pytest.mark.parametrize("count", [2, 3, 12])
def test_results_in_order_each_chunk_once(count: int) -> None:
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

    results = run_chunks(_square, chunks(), (0.02,), 2)
    assert next(results)[:2] == (0, 0)
    assert next(results)[:2] == (1, 1)
    results.close()
    assert len(taken) < 12


def test_one_worker_or_one_chunk_runs_here() -> None:
    for workers, count in ((1, 5), (2, 1)):
        results = list(run_chunks(_square, range(count), (0.0,), workers))
        assert [r[:2] for r in results] == [(c, c * c) for c in range(count)]
        assert {pid for *_, pid in results} == {os.getpid()}
