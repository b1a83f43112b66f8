"""Worker subprocesses of Recorder A, started in a version environment and stopped by PID."""

from __future__ import annotations

import json
import os
import select
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from toolkit.errors import LabError
from toolkit.lab.adk_python.envs import (
    VersionEnvironment,
    ensure_environment,
    module_command,
    process_env,
)
from toolkit.lab.processes import stop_process_group

__all__ = ["WorkerProcess"]


WORKER_MODULE = "toolkit.lab.adk_python.worker"


class WorkerProcess:
    """``python -m <module>`` (the lab's worker by default) in ``env``'s interpreter.

    Parameters
    ----------
    env
        The version environment (its venv is built if missing).
    address
        Temporal frontend ``host:port``.
    task_queue
        Queue the worker polls.
    log_path
        File receiving the worker's stderr (ADK and SDK logs, warnings).
    startup_timeout
        Seconds to wait for the worker's ready line.
    module
        Entry point taking ``--address``, ``--task-queue`` and ``--identity`` and printing a JSON
        ready line (``{"ready": true, ...}``) on stdout.
    identity
        Worker identity; by default ``<env name>@<pid>-<ns>``.
    extra_env
        Environment variables added for the worker (e.g. where its MCP servers are, for a
        framework that builds its toolsets when the worker starts).

    Attributes
    ----------
    info : dict
        The ready line: identity and versions (google_adk, temporalio, plugin, mcp, python).
    started_seconds : float
        Wall time from spawn to ready.
    """

    def __init__(
        self,
        env: VersionEnvironment,
        address: str,
        task_queue: str,
        log_path: Path,
        *,
        venvs_dir: Path | None = None,
        startup_timeout: float = 120.0,
        module: str = WORKER_MODULE,
        identity: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.env = env
        self.address = address
        self.task_queue = task_queue
        self.log_path = log_path
        self.venvs_dir = venvs_dir
        self.startup_timeout = startup_timeout
        self.module = module
        self.identity = identity
        self.extra_env = extra_env
        self.info: dict[str, Any] = {}
        self.started_seconds = 0.0
        self._process: subprocess.Popen[str] | None = None
        self._drain: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> WorkerProcess:
        python = (ensure_environment(self.env, self.venvs_dir) if self.venvs_dir
                  else ensure_environment(self.env))
        identity = (self.identity
                    or f"{self.env.name}@{os.getpid()}-{time.monotonic_ns() % 10**9}")
        args = module_command(python, self.module, "--address", self.address,
                              "--task-queue", self.task_queue, "--identity", identity)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        # Both the child's stderr and the stdout drain append (O_APPEND) to one fresh file.
        self.log_path.write_text("", encoding="utf-8")
        with self.log_path.open("a", encoding="utf-8") as log:
            self._process = subprocess.Popen(
                args, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                env=process_env(self.extra_env), start_new_session=True,
            )
        self.info = self._read_ready_line()
        self.started_seconds = time.monotonic() - began
        # The SDK core logs (e.g. "Failing workflow task ... Nondeterminism") go to stdout: keep
        # them in the log, and keep the pipe drained so the worker never blocks on a full pipe.
        self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
        self._drain.start()
        return self

    def _drain_stdout(self) -> None:
        process = self._process
        if process is None or process.stdout is None:
            return
        with self.log_path.open("a", encoding="utf-8") as log:
            for line in process.stdout:
                log.write(line)
                log.flush()

    def _read_ready_line(self) -> dict[str, Any]:
        assert self._process is not None and self._process.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._process.stdout], [], [], 0.2)
            if ready:
                line = self._process.stdout.readline()
                if line.startswith("{"):
                    record = json.loads(line)
                    if record.get("ready"):
                        return dict(record)
            if self._process.poll() is not None:
                break
        code = self._process.poll()
        self.stop()
        tail = self.log_path.read_text(errors="replace")[-3000:]
        raise LabError(f"worker for {self.env.name} on {self.task_queue} did not become ready "
                       f"(exit code {code}); log {self.log_path}: {tail}")

    def stop(self) -> None:
        """SIGTERM by PID (a graceful worker shutdown), SIGKILL after 20 s."""
        process, self._process = self._process, None
        if process is None:
            return
        stop_process_group(process, grace=20)
        if self._drain is not None:
            self._drain.join(timeout=10)  # ends at EOF, once the worker has exited
            self._drain = None
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
