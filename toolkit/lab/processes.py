"""Stopping the lab's child processes (dev server, MCP server, workers) by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

__all__ = ["stop_process_group"]


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
