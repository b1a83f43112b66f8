"""Running the replays in worker processes of any Python interpreter (in this process:
:mod:`toolkit.replay_check.in_process`).

Worker processes (``workers`` > 1, or ``python=`` another interpreter: the replaying version's
virtual environment) each run ``python -m toolkit.replay.check_worker``; they import the
workflow classes and the options from ``"module:attribute"`` specs, take one history at a time
from a shared queue, and a history that exceeds its time limit costs its process (killed by its
PID, replaced) rather than the check. Results come back by position, so they are in input
order whatever finished first.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.errors import ToolkitError
from toolkit.replay.check_worker import Activation, Replayed

__all__ = ["Job", "WorkerPool", "nothing", "spec_of"]

#: Seconds a worker may take to import the workflow code and build its Replayer.
SETUP_SECONDS = 300.0
_TOOLKIT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Job:
    """One history to replay: its position in the check, workflow id and events."""

    index: int
    workflow_id: str
    events: Sequence[Any]


def spec_of(item: Any) -> str:
    """The ``"module:qualname"`` spec a worker process imports ``item`` (a class or a function)
    by; a spec given as a string is returned as it is.

    Raises
    ------
    ToolkitError
        For an object a worker process cannot import (defined in ``__main__``, a notebook, or
        inside a function).
    """
    if isinstance(item, str):
        return item
    module, name = getattr(item, "__module__", None), getattr(item, "__qualname__", "")
    if not module or module == "__main__" or "<locals>" in name:
        raise ToolkitError(
            f"{item!r} is defined in {module or 'no module'}"
            f"{' inside a function' * ('<locals>' in name)}; worker processes import the "
            "workflow code by name: move it to a module, or "
            "replay in this process (workers=1, no python=)"
        )
    return f"{module}:{name}"


def nothing(index: int) -> None:
    """No progress callback."""


def _worker_env(python: str) -> dict[str, str]:
    """The environment of a worker: the toolkit importable; for this interpreter, everything
    this process can import (a test's or a notebook's own modules); for another one, only the
    current directory besides (its site-packages are its own)."""
    same = os.path.realpath(python) == os.path.realpath(sys.executable)
    paths = [str(_TOOLKIT_ROOT)]
    paths += [p or os.getcwd() for p in sys.path] if same else [os.getcwd()]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    unique = list(dict.fromkeys(p for p in paths if p))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(unique), "PYTHONUNBUFFERED": "1"}


class _Worker:
    """One worker process and the pipe its results come back on."""

    def __init__(self, python: str, setup: dict[str, Any]) -> None:
        self.python = python
        # Closed in stop(): the process writes its logs here for as long as it lives.
        self.log = tempfile.TemporaryFile(  # noqa: SIM115
            mode="w+", encoding="utf-8", errors="replace"
        )
        read_end, write_end = os.pipe()
        command = [python, "-m", "toolkit.replay.check_worker", "--results-fd", str(write_end)]
        try:
            self.process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=self.log, stderr=self.log, text=True,
                pass_fds=(write_end,), env=_worker_env(python), start_new_session=True,
            )  # fmt: skip
        except OSError as error:
            os.close(read_end)
            os.close(write_end)
            raise ToolkitError(f"cannot start a replay worker with {python}: {error}") from None
        os.close(write_end)
        self.results = os.fdopen(read_end, encoding="utf-8")
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._send(setup)

    def _read(self) -> None:
        for line in self.results:
            self._lines.put(line)
        self._lines.put("")  # the process closed its end: it ended

    def _send(self, data: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(data) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it ended; the next receive says how

    def _receive(self, seconds: float | None) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=seconds)
        except queue.Empty:
            raise TimeoutError from None
        if not line:
            raise EOFError(self.output())
        return dict(json.loads(line))

    def output(self) -> str:
        """The last of what the process printed (its own logs, a traceback)."""
        with contextlib.suppress(OSError, ValueError):
            self.log.flush()
            self.log.seek(0)
            return self.log.read()[-3000:]
        return ""

    def replay(self, job: Job, timeout: float | None) -> Replayed:
        from temporalio.api.history.v1 import History

        history = History(events=list(job.events)).SerializeToString()
        self._send({"index": job.index, "workflow_id": job.workflow_id,
                    "history": base64.b64encode(history).decode("ascii")})  # fmt: skip
        data = self._receive(None if timeout is None else timeout + 5.0)
        activations = [Activation.from_json(a) for a in data.get("activations") or []]
        return Replayed(data["outcome"], data.get("error_type"), data.get("message"),
                        activations, float(data.get("seconds") or 0.0))  # fmt: skip

    def stop(self) -> None:
        """Close its input and wait; kill its process group (by PID) if it does not end."""
        with contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
        with contextlib.suppress(OSError):
            self.results.close()
        self.log.close()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


class WorkerPool:
    """``workers`` worker processes of interpreter ``python``, sharing one queue of jobs.

    Raises
    ------
    ToolkitError
        When a worker cannot start or cannot load the workflow code (the message carries its
        error: a module that does not import, a class that is no workflow, ...).
    """

    def __init__(
        self, workflows: Sequence[Any], options: Any, *, python: str | None = None,
        workers: int = 1,
    ) -> None:  # fmt: skip
        options_spec = None
        if options is not None and not isinstance(options, str):
            if options:
                raise ToolkitError(
                    "Replayer options given as objects cannot reach worker processes; pass "
                    "options='module:function' (a function returning them), or replay in this "
                    "process (workers=1, no python=)"
                )
        else:
            options_spec = options
        self.python = str(python or sys.executable)
        self.setup = {"workflows": [spec_of(w) for w in workflows], "options": options_spec}
        self.size = max(1, int(workers))
        self._workers = [self._start()]
        self.types = list(self._workers[0].ready["types"])
        self.dynamic = bool(self._workers[0].ready["dynamic"])
        self.temporalio = self._workers[0].ready.get("temporalio")

    def _start(self) -> _Worker:
        worker = _Worker(self.python, self.setup)
        try:
            ready = worker.ready = worker._receive(SETUP_SECONDS)
        except (TimeoutError, EOFError) as error:
            worker.kill()
            said = str(error) or f"no answer in {SETUP_SECONDS:g} s"
            raise ToolkitError(f"the replay worker ({self.python}) did not start: {said}") from None
        if "error" in ready:
            worker.stop()
            raise ToolkitError(f"cannot replay with the given code ({self.python}): "
                               f"{ready['error']}")
        return worker

    def _drive(
        self, slot: int, jobs: queue.Queue[Job], out: dict[int, Replayed],
        timeout: float | None, done: Callable[[int], None],
    ) -> None:  # fmt: skip
        while True:
            try:
                job = jobs.get_nowait()
            except queue.Empty:
                return
            worker = self._workers[slot]
            try:
                out[job.index] = worker.replay(job, timeout)
            except (TimeoutError, EOFError) as error:
                timed_out = isinstance(error, TimeoutError)
                text = (f"replay did not finish within {timeout:g} s (timeout; its worker "
                        "process was stopped)") if timed_out else (
                        "the replay worker process ended during this history: "
                        f"{worker.output()[-1500:]}")  # fmt: skip
                out[job.index] = Replayed(
                    "failed", "TimeoutError" if timed_out else "WorkerCrashed", text, [], 0.0
                )
                worker.kill()
                try:
                    self._workers[slot] = self._start()
                except ToolkitError as failure:
                    self._failures.append(failure)
                    return
            done(job.index)

    def run(
        self, jobs: Iterable[Job], timeout: float | None, done: Callable[[int], None] = nothing
    ) -> dict[int, Replayed]:
        """Replay every job; the results by job index.

        Raises
        ------
        ToolkitError
            When a worker that had to be replaced could not be started again.
        """
        pending: queue.Queue[Job] = queue.Queue()
        listed = list(jobs)
        for job in listed:
            pending.put(job)
        while len(self._workers) < min(self.size, len(listed)):
            self._workers.append(self._start())
        out: dict[int, Replayed] = {}
        self._failures: list[ToolkitError] = []
        threads = [
            threading.Thread(target=self._drive, args=(slot, pending, out, timeout, done))
            for slot in range(len(self._workers))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if self._failures:
            raise self._failures[0]
        return out

    def close(self) -> None:
        """Stop every worker process."""
        for worker in self._workers:
            worker.stop()
        self._workers = []
