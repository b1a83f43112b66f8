"""What the benchmark scripts share: the best of several timed runs (machines are noisy)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def best(
    function: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, Any]:
    """The shortest of ``repeat`` runs of ``function`` (a collection before each) and the value
    of the last one. ``clock=time.process_time`` counts this process's CPU time alone, which
    other work on a shared machine disturbs far less than the wall clock (not for code whose
    time is spent in other processes)."""
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        start = clock()
        result = function()
        times.append(clock() - start)
    return min(times), result
