"""Record twin scenarios on a Temporal server: one worker per variant, real MCP servers.

Output per scenario and variant: ``<out>/<variant>/<scenario>.json``, the history as proto-JSON
(``WorkflowHistory.to_json()``, written compactly), and ``<scenario>.meta.json`` (scenario,
variant, workflow and run id, commands and listings per turn, UUIDs drawn, confirmation ids, the
MCP server's tool requests, timings and versions).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.worker import Worker

from toolkit.errors import LabError
from toolkit.lab.go_twin.activities import ACTIVITIES
from toolkit.lab.go_twin.history import abbreviate, commands_per_turn
from toolkit.lab.go_twin.scenarios import Scenario
from toolkit.lab.go_twin.variants import TASK_QUEUE, WORKFLOW_NAME, Variant
from toolkit.lab.go_twin.workflows import TwinProgress, workflow_class, workflow_runner
from toolkit.lab.mcp_server import McpServer

__all__ = ["Recording", "record_scenarios"]

PROGRESS_POLL_SECONDS = 0.02
ACTION_TIMEOUT_SECONDS = 30.0


@dataclass
class Recording:
    """Where one recorded run was written, and its metadata."""

    scenario: str
    variant: str
    history_path: Path
    meta_path: Path
    meta: dict[str, Any]


async def _progress(handle: WorkflowHandle[Any, Any]) -> TwinProgress:
    return await handle.query("progress", result_type=TwinProgress)


async def _wait_handled(handle: WorkflowHandle[Any, Any], count: int, what: str) -> TwinProgress:
    """Poll the ``progress`` query until ``count`` signals have been handled."""
    deadline = time.monotonic() + ACTION_TIMEOUT_SECONDS
    polls = 0
    while time.monotonic() < deadline:
        progress = await _progress(handle)
        if progress.handled >= count:
            return progress
        polls += 1
        if polls % 25 == 0:  # a failed run would otherwise be polled until the deadline
            status = (await handle.describe()).status
            if status != WorkflowExecutionStatus.RUNNING:
                raise LabError(f"{handle.id}: the run ended ({status.name}) before {what} was "
                               "handled; see the worker log and the history")
        await asyncio.sleep(PROGRESS_POLL_SECONDS)
    raise LabError(f"{handle.id}: {what} not handled after {ACTION_TIMEOUT_SECONDS:.0f} s "
                   f"(handled {progress.handled} of {count})")


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("temporalio", "mcp"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    return versions


def _tool_requests(server: McpServer, first: int) -> list[str]:
    """``tools/list`` and ``tools/call`` requests the MCP server logged from record ``first`` on,
    in order, one string each (``tools/call get_weather toolset=lab``)."""
    rows = []
    for record in server.requests()[first:]:
        method = record.get("mcp_method")
        if method in ("tools/list", "tools/call"):
            parts = [method, record.get("tool") or "", record.get("query") or ""]
            rows.append(" ".join(p for p in parts if p))
    return rows


async def _drive(
    client: Client, scenario: Scenario, variant: Variant, server: McpServer
) -> tuple[WorkflowHandle[Any, Any], TwinProgress]:
    """Start the session, send the scenario's actions one at a time, finish it."""
    handle = await client.start_workflow(
        WORKFLOW_NAME, scenario.session(server.url),
        id=f"go-twin.{variant.name}.{scenario.name}", task_queue=TASK_QUEUE,
    )
    for handled, (kind, value) in enumerate(scenario.actions, start=1):
        if kind == "approve":
            pending = (await _progress(handle)).pending_confirmation
            if not pending:
                raise LabError(f"{handle.id}: action {handled} approves, but no confirmation "
                               "is pending (expected a tool call awaiting approval)")
            value = pending
        await handle.signal(kind, value)
        await _wait_handled(handle, handled, f"action {handled} ({kind})")
    await handle.signal("finish")
    await handle.result()
    # The query converts to the dataclass; the result would come back as a plain dict.
    return handle, await _progress(handle)


async def _record_one(
    client: Client, scenario: Scenario, variant: Variant, out_dir: Path, shared: McpServer
) -> Recording:
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        server = shared
        if scenario.hide_after_first_call:  # the server remembers calls: a fresh one is needed
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="go-twin-mcp-")))
            server = stack.enter_context(McpServer(
                hide_after_first_call=scenario.hide_after_first_call,
                request_log=tmp / "requests.jsonl"))
        first_request = len(server.requests())
        handle, result = await _drive(client, scenario, variant, server)
        history = await handle.fetch_history()
        tool_requests = _tool_requests(server, first_request)
    wall = time.perf_counter() - started
    turns = commands_per_turn(history)
    events = history.events
    meta = {
        "scenario": scenario.name,
        "description": scenario.description,
        "variant": variant.name,
        "plugin_state": variant.plugin_state,
        "adk_release": variant.adk_release,
        "workflow_type": WORKFLOW_NAME,
        "task_queue": TASK_QUEUE,
        "workflow_id": handle.id,
        "run_id": history.run_id,
        "actions": [list(a) for a in scenario.actions],
        "listings_per_turn": [t.count("ListMcpTools") for t in turns],
        "commands_per_turn": [abbreviate(t) for t in turns],
        "replies": result.replies,
        "confirmation_ids": result.confirmation_ids,
        "uuids": result.uuids,
        "uuid_draws": result.uuid_draws,
        "mcp_tool_requests": tool_requests,
        "events": len(events),
        "timings": {
            "wall_seconds": round(wall, 3),
            "workflow_seconds": round(
                events[-1].event_time.ToDatetime().timestamp()
                - events[0].event_time.ToDatetime().timestamp(), 3),
        },
        "versions": _versions(),
    }
    target = out_dir / variant.name
    target.mkdir(parents=True, exist_ok=True)
    history_path = target / f"{scenario.name}.json"
    meta_path = target / f"{scenario.name}.meta.json"
    # Proto-JSON as to_json() writes it, without the indentation (a third of the bytes).
    compact = json.dumps(json.loads(history.to_json()), separators=(",", ":"))
    history_path.write_text(compact + "\n", encoding="utf-8")
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return Recording(scenario.name, variant.name, history_path, meta_path, meta)


async def record_scenarios(
    client: Client, scenarios: list[Scenario], variants: list[Variant], out_dir: Path
) -> list[Recording]:
    """Record every scenario with every variant; one worker per variant, one at a time.

    Variants share the task queue (as they share the workflow type), so only one variant's
    worker may poll it at any moment: each worker stops before the next starts. Scenarios share
    one MCP server unless they hide tools after a call (the server remembers calls).
    """
    recordings = []
    with tempfile.TemporaryDirectory(prefix="go-twin-mcp-") as tmp, McpServer(
            request_log=Path(tmp) / "requests.jsonl") as shared:
        for variant in variants:
            worker = Worker(client, task_queue=TASK_QUEUE, workflows=[workflow_class(variant)],
                            activities=list(ACTIVITIES), workflow_runner=workflow_runner())
            async with worker:
                for scenario in scenarios:
                    recordings.append(
                        await _record_one(client, scenario, variant, out_dir, shared))
    return recordings

