"""The Python reality: real google-adk with two toolsets on one MCP endpoint, log captured.

Runs Recorder A's ``two_toolsets`` scenario (the plain URL and the same URL with ``?token=``) and
its ``list_twice`` scenario (one server listing every tool twice: the plugin's call-tool activity
fails and retries) with the project's own google-adk, on a worker whose log carries timestamps
(:mod:`.adk_worker`). One worker serves both runs, so its one log interleaves them, as a real
worker's does.

Outputs under ``out_dir``: ``worker.log``, ``<scenario>.json`` (the history as
``temporal workflow show --output json`` prints it), ``<scenario>.mcp.jsonl`` (the MCP server's
request log) and ``capture.meta.json`` (versions, workflow and run ids, activity types, replies).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from toolkit.errors import LabError

__all__ = ["CAPTURED_SCENARIOS", "capture_python_duplicate_tools"]

CAPTURED_SCENARIOS = ("two_toolsets", "list_twice")
_ROOT = Path(__file__).resolve().parents[3]


class _Worker:
    """``python -m toolkit.lab.hosted_runtime.adk_worker`` with stderr to ``log_path``."""

    def __init__(self, address: str, task_queue: str, log_path: Path) -> None:
        self.args = [sys.executable, "-m", "toolkit.lab.hosted_runtime.adk_worker",
                     "--address", address, "--task-queue", task_queue]
        self.log_path = log_path
        self.info: dict[str, Any] = {}
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> _Worker:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p)}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("w", encoding="utf-8") as log:
            self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=log,
                                            stdin=subprocess.DEVNULL, text=True, env=env,
                                            start_new_session=True)
        deadline = time.monotonic() + 120
        assert self.process.stdout is not None
        while time.monotonic() < deadline and self.process.poll() is None:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.2)
            line = self.process.stdout.readline() if ready else ""
            if line.startswith("{") and json.loads(line).get("ready"):
                self.info = json.loads(line)
                return self
        self.__exit__()
        raise LabError(f"capture worker did not become ready; log {self.log_path}: "
                       f"{self.log_path.read_text(errors='replace')[-2000:]}")

    def __exit__(self, *exc: object) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


async def _run(client: Any, address: str, task_queue: str, name: str, out_dir: Path
               ) -> dict[str, Any]:
    from toolkit.lab.adk_python import driver
    from toolkit.lab.adk_python.recorder import activity_sequence
    from toolkit.lab.adk_python.scenarios import scenario
    from toolkit.lab.mcp_server import McpServer
    from toolkit.lab.model import SCRIPTED_MODEL_NAME

    recipe = scenario(name)
    workflow_id = f"dup-tool-{name}-{uuid.uuid4().hex[:8]}"
    with McpServer(list_twice=recipe.list_twice, request_log=out_dir / f"{name}.mcp.jsonl") as mcp:
        spec = {"toolsets": recipe.toolset_specs(mcp.url), "model": SCRIPTED_MODEL_NAME,
                "tool_max_attempts": recipe.tool_max_attempts}
        handle = await driver.start_agent(client, spec, workflow_id=workflow_id,
                                          task_queue=task_queue)
        turns = []
        for index, text in enumerate(recipe.turns):
            turns.append(await driver.send_turn(handle, text, replies_before=index))
            if turns[-1]["reply"] is None:
                break
        status = await driver.finish(handle)
        url = mcp.url
    stderr = out_dir / f"{name}.mcp.stderr.log"
    if stderr.exists() and not stderr.stat().st_size:
        stderr.unlink()
    history = driver.export_history(address, workflow_id, handle.result_run_id or "")
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")
    return {"scenario": name, "description": recipe.description, "workflow_id": workflow_id,
            "run_id": handle.result_run_id, "status": status, "mcp_url": url,
            "toolsets": recipe.toolset_specs(url), "turns": turns,
            "activities": activity_sequence(history), "history": path.name,
            "mcp_request_log": f"{name}.mcp.jsonl"}


async def _capture(address: str, out_dir: Path) -> list[Path]:
    from temporalio.client import Client

    task_queue = f"dup-tool-{uuid.uuid4().hex[:8]}"
    client = await Client.connect(address)
    with _Worker(address, task_queue, out_dir / "worker.log") as worker:
        runs = [await _run(client, address, task_queue, name, out_dir)
                for name in CAPTURED_SCENARIOS]
    meta = {"what": "google-adk two toolsets on one MCP endpoint, and a server listing tools "
                    "twice; one worker, one log", "task_queue": task_queue,
            "versions": {k: v for k, v in worker.info.items() if k not in ("ready", "identity")},
            "log_format": "Python logging '%(asctime)s - %(name)s - %(levelname)s - "
                          "%(message)s' in UTC; SDK core lines forwarded as temporalio.core",
            "runs": runs}
    meta_path = out_dir / "capture.meta.json"
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return [out_dir / run["history"] for run in runs] + [out_dir / "worker.log", meta_path]


def capture_python_duplicate_tools(server_address: str, out_dir: Path) -> list[Path]:
    """Record the Python two-toolsets and list-twice runs with a timestamped worker log.

    Parameters
    ----------
    server_address
        Temporal frontend ``host:port`` (e.g. ``DevServer().address``).
    out_dir
        Directory receiving the files listed in the module docstring (created if needed).

    Returns
    -------
    list of Path
        The histories, the worker log and the metadata file.

    Raises
    ------
    LabError
        The worker does not start, or a run neither replies nor closes.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return asyncio.run(_capture(server_address, out_dir))
