"""What the benchmark scripts share: the best of several timed runs (machines are noisy)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def best(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The shortest of ``repeat`` runs of ``function`` (a collection before each) and the value
    of the last one."""
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result
