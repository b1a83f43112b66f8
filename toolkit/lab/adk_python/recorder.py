"""Record Recorder A's scenarios: one worker per version environment, one MCP server per run.

Outputs per run, under ``<out_dir>/<env name>/``: ``<scenario>.json`` (the history exactly as
``temporal workflow show --output json`` prints it) and ``<scenario>.meta.json`` (scenario,
versions, workflow/run id, task queue, timings, activity sequence, listings per turn, and a
summary of the MCP server's request log under ``mcp_requests``). With a ``log_dir``, the worker's
stderr (``worker.log``) and each MCP server's full request log (``<scenario>.mcp.jsonl``) are kept
there too.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from temporalio.client import Client

from toolkit.lab.adk_python import driver
from toolkit.lab.adk_python.envs import AdkEnvironment, environment
from toolkit.lab.adk_python.processes import WorkerProcess
from toolkit.lab.adk_python.scenarios import SCENARIOS, Scenario, Upgrade
from toolkit.lab.mcp_server import McpServer
from toolkit.lab.model import SCRIPTED_MODEL_NAME

__all__ = [
    "activity_sequence", "agent_spec", "listings_per_turn", "record_env", "record_upgrade",
    "scenario_mcp_server", "send_turns", "write_recording",
]


def activity_sequence(history: dict[str, Any]) -> list[str]:
    """Activity types of the history's ``ActivityTaskScheduled`` events, in order."""
    return [
        event["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for event in history["events"]
        if "activityTaskScheduledEventAttributes" in event
    ]


LISTING = r"(?s).*-list-tools"
"""ADK's listing activity types (``<toolset>-list-tools``), as a full-match expression."""


def listings_per_turn(history: dict[str, Any], listing: str = LISTING) -> list[int]:
    """Listing activities (type matching ``listing`` in full) scheduled after each ``user_turn``
    signal, before the next."""
    pattern = re.compile(listing)
    counts: list[int] = []
    for event in history["events"]:
        signal = event.get("workflowExecutionSignaledEventAttributes")
        if signal and signal.get("signalName") == "user_turn":
            counts.append(0)
        scheduled = event.get("activityTaskScheduledEventAttributes")
        if scheduled and counts and pattern.fullmatch(scheduled["activityType"]["name"]):
            counts[-1] += 1
    return counts


def _request_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Small summary of an MCP request log: counts per endpoint and the tools/* sequence."""
    counts = Counter((r["query"], r["method"], r["mcp_method"], r["tool"]) for r in records)
    return {
        "requests": len(records),
        "counts": [
            {"query": q, "http_method": m, "mcp_method": mm, "tool": t, "count": n}
            for (q, m, mm, t), n in sorted(counts.items(), key=lambda kv: str(kv[0]))
        ],
        "tools_sequence": [
            {"mcp_method": r["mcp_method"], "tool": r["tool"], "query": r["query"]}
            for r in records if str(r.get("mcp_method", "")).startswith("tools/")
        ],
    }


def write_recording(out: Path, history: dict[str, Any], meta: dict[str, Any],
                    listing: str = LISTING) -> Path:
    """The history as exported, and its metadata with the activity sequence and the listings
    per turn (activity types matching ``listing``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")
    meta = {**meta, "activities": activity_sequence(history),
            "listings_per_turn": listings_per_turn(history, listing),
            "events": len(history["events"])}
    out.with_suffix(".meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return out


def agent_spec(scenario: Scenario, url: str) -> dict[str, Any]:
    """The workflow input of ``scenario`` with its toolsets on the MCP server at ``url``."""
    return {"toolsets": scenario.toolset_specs(url), "model": SCRIPTED_MODEL_NAME,
            "tool_max_attempts": scenario.tool_max_attempts}


def scenario_mcp_server(scenario: Scenario, log: Path) -> McpServer:
    """The (unstarted) MCP server of ``scenario``, its request log written to ``log``."""
    return McpServer(list_twice=scenario.list_twice,
                     hide_after_first_call=scenario.hide_after_first_call, request_log=log)


async def send_turns(handle: Any, turns: tuple[str, ...]) -> list[dict[str, Any]]:
    """Send ``turns`` one after the other; stop after the first one that gets no reply."""
    sent: list[dict[str, Any]] = []
    for index, text in enumerate(turns):
        sent.append(await driver.send_turn(handle, text, replies_before=index))
        if sent[-1]["reply"] is None:
            break
    return sent


def _versions(info: dict[str, Any]) -> dict[str, Any]:
    keys = ("google_adk", "temporalio", "plugin_module", "plugin", "mcp", "python")
    return {key: info.get(key) for key in keys}


async def _run_scenario(
    client: Client, address: str, worker: WorkerProcess, scenario: Scenario, out_dir: Path,
    log_dir: Path,
) -> Path:
    env = worker.env
    workflow_id = f"lab-adk-{env.name}-{scenario.name}-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    with scenario_mcp_server(scenario, log_dir / f"{scenario.name}.mcp.jsonl") as mcp:
        handle = await driver.start_agent(client, agent_spec(scenario, mcp.url),
                                          workflow_id=workflow_id, task_queue=worker.task_queue)
        turns = await send_turns(handle, scenario.turns)
        status = await driver.finish(handle)
        requests = mcp.requests()
    run_seconds = time.monotonic() - began
    history = driver.export_history(address, workflow_id, handle.result_run_id or "")
    meta = {
        "scenario": scenario.name, "description": scenario.description, "env": env.name,
        **_versions(worker.info), "listing_policy": env.listing_policy,
        "workflow_id": workflow_id, "run_id": handle.result_run_id,
        "task_queue": worker.task_queue, "status": status, "turns": turns,
        "timings": {"worker_start_seconds": round(worker.started_seconds, 3),
                    "run_seconds": round(run_seconds, 3)},
        "mcp_requests": _request_summary(requests),
    }
    return write_recording(out_dir / env.name / f"{scenario.name}.json", history, meta)


async def record_env(
    env: AdkEnvironment, address: str, out_dir: Path, *,
    scenarios: tuple[Scenario, ...] = SCENARIOS, venvs_dir: Path | None = None,
    log_dir: Path | None = None,
) -> list[Path]:
    """Record ``scenarios`` with one worker of ``env``; return the history paths."""
    with tempfile.TemporaryDirectory(prefix="toolkit-adk-") as tmp:
        logs = log_dir or Path(tmp)
        task_queue = f"lab-adk-{env.name}-{uuid.uuid4().hex[:8]}"
        client = await Client.connect(address)
        with WorkerProcess(env, address, task_queue, logs / "worker.log",
                           venvs_dir=venvs_dir) as worker:
            return [await _run_scenario(client, address, worker, s, out_dir, logs)
                    for s in scenarios]


async def record_upgrade(
    upgrade: Upgrade, address: str, out_dir: Path, *, venvs_dir: Path | None = None,
    log_dir: Path | None = None,
) -> Path:
    """Turn 1 on a worker of ``upgrade.before``, turn 2 on a fresh worker of ``upgrade.after``.

    An incompatible pair leaves the run open with a ``WorkflowTaskFailed`` (non-deterministic
    error) event; its history is exported while open, then the run is terminated.
    """
    before, after = environment(upgrade.before), environment(upgrade.after)
    scenario = upgrade.scenario
    workflow_id = f"lab-adk-{before.name}-{upgrade.name}-{uuid.uuid4().hex[:8]}"
    task_queue = f"lab-adk-upgrade-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="toolkit-adk-") as tmp:
        logs = log_dir or Path(tmp)
        client = await Client.connect(address)
        began = time.monotonic()
        # Not Path.with_suffix: the upgrade name holds version dots.
        def log(kind: str) -> Path:
            return logs / f"{upgrade.name}.{kind}"

        with scenario_mcp_server(scenario, log("mcp.jsonl")) as mcp:
            with WorkerProcess(before, address, task_queue, log("before.worker.log"),
                               venvs_dir=venvs_dir) as old:
                handle = await driver.start_agent(client, agent_spec(scenario, mcp.url),
                                                  workflow_id=workflow_id, task_queue=task_queue)
                turns = [await driver.send_turn(handle, scenario.turns[0], replies_before=0)]
            with WorkerProcess(after, address, task_queue, log("after.worker.log"),
                               venvs_dir=venvs_dir) as new:
                turns.append(await driver.send_turn_or_task_failure(handle, scenario.turns[1], 1))
                if turns[-1]["reply"] is not None:
                    status = await driver.finish(handle)
                else:
                    status = "RUNNING"
                requests = mcp.requests()
                # Export while the run is still open (and the new worker still retrying).
                history = driver.export_history(address, workflow_id, handle.result_run_id or "")
            if status == "RUNNING":
                await handle.terminate("lab: rolling-upgrade recording done")
    meta = {
        "scenario": "rolling_upgrade", "description": f"turn 1 on {before.name}, turn 2 on a "
        f"fresh {after.name} worker", "env": before.name, "env_after": after.name,
        **_versions(old.info), "listing_policy": before.listing_policy,
        "versions_after": _versions(new.info), "listing_policy_after": after.listing_policy,
        "workflow_id": workflow_id, "run_id": handle.result_run_id, "task_queue": task_queue,
        "status": status, "turns": turns,
        "timings": {"worker_start_seconds": round(old.started_seconds, 3),
                    "worker_after_start_seconds": round(new.started_seconds, 3),
                    "run_seconds": round(time.monotonic() - began, 3)},
        "mcp_requests": _request_summary(requests),
    }
    return write_recording(out_dir / before.name / f"{upgrade.name}.json", history, meta)
