"""Whether this process may fork worker processes from itself, and the threads that allow it.

A fork copies only the thread that calls it: a lock another thread held at that moment stays
held in the child forever, so a child that takes it hangs. The worker pools of
:mod:`toolkit.histories.reading.pool` therefore fork only where every other Python thread is
one registered here with :func:`fork_safe`: a thread of the toolkit that, while it runs, holds
no lock a worker takes (the dataset writer's lease heartbeat waits on its own event and touches
a file). Elsewhere (a Jupyter kernel's threads, a caller's own) the pools use a fork server.
"""

from __future__ import annotations

import sys
import threading
import weakref

__all__ = ["fork_safe", "may_fork"]

_SAFE: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def fork_safe(thread: threading.Thread) -> threading.Thread:
    """Mark ``thread`` as one a fork may leave behind (see the module); return it."""
    _SAFE.add(thread)
    return thread


def may_fork() -> bool:
    """Whether worker processes may be forked from this process now: on Linux (elsewhere the
    system's own libraries are not safe across a fork), from the main thread, with no other
    Python thread but those marked :func:`fork_safe`. The libraries' native threads (Arrow's
    and OpenBLAS's pools, jemalloc's) are re-made after a fork by their own at-fork handlers."""
    main = threading.main_thread()
    return (
        sys.platform.startswith("linux")
        and threading.current_thread() is main
        and all(thread is main or thread in _SAFE for thread in threading.enumerate())
    )
