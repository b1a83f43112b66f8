"""What the benchmark scripts share: the best of several timed runs (machines are noisy)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def best(
    function: Callable[..., Any],
    repeat: int,
    clock: Callable[[], float] = time.perf_counter,
    setup: Callable[[], Any] | None = None,
) -> tuple[float, Any]:
    """The shortest of ``repeat`` runs of ``function`` (a collection before each, the value of
    the run before it dropped) and the value of the last one. ``clock=time.process_time``
    counts this process's CPU time alone, which other work on a shared machine disturbs far
    less than the wall clock (not for code whose time is spent in other processes). With
    ``setup``, each run is ``function(setup())``, ``setup`` untimed."""
    times, result = [], None
    for _ in range(repeat):
        result = None  # the last run's value freed first: each run starts from the same memory
        argument = setup() if setup is not None else None
        gc.collect()
        start = clock()
        result = function() if setup is None else function(argument)
        times.append(clock() - start)
    return min(times), result


def best_cpu(
    function: Callable[..., Any], repeat: int, setup: Callable[[], Any] | None = None
) -> tuple[float, Any]:
    """:func:`best` in CPU time (``time.process_time``)."""
    return best(function, repeat, time.process_time, setup)


def alternating(
    first: Callable[[], Any], second: Callable[[], Any], rounds: int,
    clock: Callable[[], float] = time.process_time,
) -> list[tuple[float, float]]:
    """``rounds`` pairs of timings of ``first`` then ``second`` run one after the other (a
    collection before each): a ratio taken within a round sees the same machine and the same
    process state for both, which the best of each taken minutes apart does not."""
    pairs = []
    for _ in range(rounds):
        timed = []
        for function in (first, second):
            gc.collect()
            start = clock()
            function()
            timed.append(clock() - start)
        pairs.append((timed[0], timed[1]))
    return pairs
