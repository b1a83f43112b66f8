"""Run a coroutine from synchronous code, also where an event loop is already running.

The toolkit's synchronous functions (``fetch_history``, ``replay_histories``, ``record_gallery``,
codec decoding, ...) wrap async temporalio calls. In a plain script ``asyncio.run`` does; inside a
Jupyter kernel a loop is already running, so the coroutine runs on a private loop in a worker
thread instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion and return its result."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
