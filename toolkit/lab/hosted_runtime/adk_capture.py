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
import json
import uuid
from pathlib import Path
from typing import Any

__all__ = ["CAPTURED_SCENARIOS", "capture_python_duplicate_tools"]

CAPTURED_SCENARIOS = ("two_toolsets", "list_twice")
WORKER_MODULE = "toolkit.lab.hosted_runtime.adk_worker"
"""The worker entry point with a timestamped log (:mod:`.adk_worker`)."""


async def _run(client: Any, address: str, task_queue: str, name: str, out_dir: Path
               ) -> dict[str, Any]:
    from toolkit.lab.adk_python import driver
    from toolkit.lab.adk_python.recorder import (
        activity_sequence,
        agent_spec,
        scenario_mcp_server,
        send_turns,
    )
    from toolkit.lab.adk_python.scenarios import scenario

    recipe = scenario(name)
    workflow_id = f"dup-tool-{name}-{uuid.uuid4().hex[:8]}"
    with scenario_mcp_server(recipe, out_dir / f"{name}.mcp.jsonl") as mcp:
        handle = await driver.start_agent(client, agent_spec(recipe, mcp.url),
                                          workflow_id=workflow_id, task_queue=task_queue)
        turns = await send_turns(handle, recipe.turns)
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

    from toolkit.lab.adk_python.envs import MAIN_ENV
    from toolkit.lab.adk_python.processes import WorkerProcess

    task_queue = f"dup-tool-{uuid.uuid4().hex[:8]}"
    client = await Client.connect(address)
    with WorkerProcess(MAIN_ENV, address, task_queue, out_dir / "worker.log",
                       module=WORKER_MODULE, identity="duplicate-tool-capture") as worker:
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
