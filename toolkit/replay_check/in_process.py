"""Replaying in the caller's process, with a time limit that always returns.

A replay in this process cannot be stopped, only abandoned, and workflow code can hold on in two
ways the check must outlive:

- it never yields: in debug mode (no deadlock detector) temporalio runs activations on the event
  loop's own thread, so the loop itself is held and no timer on it fires;
- it swallows its eviction (``except BaseException``) and waits again: temporalio retries the
  eviction forever, catching the cancellation too, so a loop that waits for its tasks to finish
  cancelling (``asyncio.run`` does when it closes) waits forever.

So the replays run on an event loop in a daemon thread of their own, and the caller waits for
each with a deadline. A replay past its time limit is ``failed``; when the loop does not answer
either, it is left behind (its thread still held by the code) and the next history gets a new
loop. Closing cancels what is left and waits a few seconds at most. The workflow code's own
threads are daemon threads (:class:`toolkit.replay.check_worker.DaemonThreads`), so what is
left behind does not keep the interpreter from exiting either. Code that might do this is
better replayed in worker processes (``workers=2``), which are stopped by their PID.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any

from toolkit.errors import ToolkitError
from toolkit.replay.check_worker import THREAD_PREFIX, Replayed, Session
from toolkit.replay_check.pool import Job, nothing

__all__ = ["InProcess"]

#: Seconds past a history's time limit before its loop counts as held by the code.
GRACE_SECONDS = 5.0
#: Seconds closing waits for cancelled replays to end.
CLOSE_SECONDS = 5.0
# Loops left behind with their tasks: kept referenced, so that the tasks are not collected
# (and logged as destroyed while pending) while the code still holds their thread.
_LEFT_BEHIND: list[asyncio.AbstractEventLoop] = []


class _Loop:
    """An event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name=f"{THREAD_PREFIX}-loop",
                                       daemon=True)  # fmt: skip
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def close(self, seconds: float) -> None:
        """Cancel its tasks, wait ``seconds`` at most for them, stop the loop; a loop that does
        not stop in time is left behind."""

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=seconds)

        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            self.submit(cancel_all()).result(seconds + 1.0)
        pending = bool(asyncio.all_tasks(self.loop))
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(1.0)
        if self.thread.is_alive() or pending:
            _LEFT_BEHIND.append(self.loop)
        else:
            self.loop.close()


class InProcess:
    """Replays in this process with one :class:`Session`, on a loop of its own (see the module
    docstring)."""

    def __init__(self, workflows: Sequence[Any], options: Any) -> None:
        try:
            self.session = Session(workflows, options)
        except (ImportError, TypeError) as error:
            raise ToolkitError(f"cannot replay with the given code: {error}") from None
        self.types, self.dynamic = self.session.types, self.session.dynamic
        self._loop: _Loop | None = None

    def run(
        self, jobs: Iterable[Job], timeout: float | None, done: Callable[[int], None] = nothing
    ) -> dict[int, Replayed]:
        out = {}
        for job in jobs:
            out[job.index] = self._replay(job, timeout)
            done(job.index)
        return out

    def _replay(self, job: Job, timeout: float | None) -> Replayed:
        if self._loop is None:
            self._loop = _Loop()
        started = time.perf_counter()
        future = self._loop.submit(self.session.replay(job.workflow_id, job.events, timeout))
        try:
            return future.result(None if timeout is None else timeout + GRACE_SECONDS)
        except concurrent.futures.TimeoutError:
            # The code holds the loop's thread: leave it (and the loop) behind.
            _LEFT_BEHIND.append(self._loop.loop)
            self._loop = None
            message = (f"replay did not finish within {timeout:g} s (timeout; the workflow code "
                       "held the thread replaying it, which was left behind)")  # fmt: skip
            return Replayed("failed", "TimeoutError", message, [], time.perf_counter() - started)

    def close(self) -> None:
        """Stop the loop, waiting for cancelled replays a few seconds at most."""
        if self._loop is not None:
            self._loop.close(CLOSE_SECONDS)
            self._loop = None
