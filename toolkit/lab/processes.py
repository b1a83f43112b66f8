"""The lab's child processes (dev server, MCP server, workers): environment, stop by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

__all__ = ["REPO_ROOT", "process_env", "stop_process_group"]

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The project's root directory (the one holding ``toolkit/``)."""


def process_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables for a lab child process: the project on ``PYTHONPATH``."""
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **(extra or {})}


def stop_process_group(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM the process group of ``process`` (started with ``start_new_session=True``), then
    SIGKILL it if it is still running after ``grace`` seconds; returns once it has exited."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
