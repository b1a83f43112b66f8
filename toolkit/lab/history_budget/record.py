"""Record the history-budget runs: each on a dev server with lowered limits, until it ends.

One dev server per group of runs with the same limits (:data:`.scenarios.LIMITS`, passed as
``--dynamic-config-value``); one worker process and one MCP server (with ``read_page``) per run,
so that each run's worker log holds its own sdk-core lines. The driver signals each turn and
waits for its reply, for the run to close, or for the budget's time; a run still open then (a
framework retrying a payload the server refuses) is terminated by the recorder, which its
metadata says. Every run of a continue-as-new chain is exported.

Outputs under ``<out>/<env>/``: ``<name>.json.gz`` (the history as ``temporal workflow show
--output json`` prints it, gzipped; a chain's runs are ``<name>_run<i>``), ``<name>.meta.json``
and ``logs/<name>.worker.log``; ``<out>/recordings.csv`` has one row per run (:data:`COLUMNS`).
"""

from __future__ import annotations

import asyncio
import csv
import gzip
import json
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowHandle, WorkflowHistory

from toolkit.errors import LabError
from toolkit.lab.adk_python import driver
from toolkit.lab.adk_python.processes import WorkerProcess
from toolkit.lab.adk_python.recorder import _request_summary
from toolkit.lab.history_budget.frameworks import FRAMEWORKS, BudgetFramework
from toolkit.lab.history_budget.scenarios import BUDGETS, Budget
from toolkit.lab.mcp_server import McpServer
from toolkit.lab.record import scrub_machine_paths, scrub_text
from toolkit.lab.server import DevServer, find_temporal_binary

__all__ = ["COLUMNS", "end_of", "events_bytes", "model_calls", "record_all", "record_group",
           "record_run", "write_table"]

COLUMNS: tuple[str, ...] = (
    "history", "framework", "env", "scenario", "run_index", "workflow_id", "run_id", "status",
    "limits", "conversation_bytes", "tool_output_bytes", "max_model_calls",
    "model_calls_completed", "history_size_bytes", "history_length", "limit_bytes",
    "limit_events", "payload_limit_bytes", "end_event", "end_reason", "stopped_by_lab",
)
"""Columns of ``recordings.csv``."""

_CLOSING_EVENTS = {
    "workflowExecutionTerminatedEventAttributes": "WorkflowExecutionTerminated",
    "workflowExecutionFailedEventAttributes": "WorkflowExecutionFailed",
    "workflowExecutionCompletedEventAttributes": "WorkflowExecutionCompleted",
    "workflowExecutionContinuedAsNewEventAttributes": "WorkflowExecutionContinuedAsNew",
    "workflowExecutionTimedOutEventAttributes": "WorkflowExecutionTimedOut",
}


def _attributes(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    key = next((k for k in event if k.endswith("EventAttributes")), "")
    return key, event.get(key) or {}


def end_of(history: dict[str, Any]) -> dict[str, Any]:
    """How the run ended, as its last event says: ``event`` (type name, or None while open),
    ``reason`` (the terminate reason or the failure message), ``identity``, ``new_run_id``."""
    key, attributes = _attributes(history["events"][-1]) if history["events"] else ("", {})
    event = _CLOSING_EVENTS.get(key)
    reason = attributes.get("reason") or (attributes.get("failure") or {}).get("message")
    return {"event": event, "reason": reason if event else None,
            "identity": attributes.get("identity") if event else None,
            "new_run_id": attributes.get("newExecutionRunId")}


def model_calls(history: dict[str, Any], model_activity: str) -> dict[str, int]:
    """Model-call activities ``scheduled`` and ``completed`` in the history."""
    scheduled: dict[str, str] = {}
    completed = 0
    for event in history["events"]:
        key, attributes = _attributes(event)
        if key == "activityTaskScheduledEventAttributes":
            scheduled[str(event["eventId"])] = attributes["activityType"]["name"]
        elif key == "activityTaskCompletedEventAttributes":
            completed += scheduled.get(str(attributes["scheduledEventId"])) == model_activity
    return {"scheduled": sum(name == model_activity for name in scheduled.values()),
            "completed": completed}


def _failures(history: dict[str, Any]) -> list[dict[str, Any]]:
    """Distinct failures inside the run (activity and workflow-task failures), with counts."""
    seen: Counter[tuple[str, str | None, str | None]] = Counter()
    for event in history["events"]:
        key, attributes = _attributes(event)
        if key in ("activityTaskFailedEventAttributes", "workflowTaskFailedEventAttributes"):
            failure = attributes.get("failure") or {}
            name = key.removesuffix("EventAttributes")
            seen[(name[0].upper() + name[1:], attributes.get("cause"),
                  failure.get("message"))] += 1
    return [{"event": e, "cause": c, "message": m, "count": n} for (e, c, m), n in seen.items()]


def events_bytes(history_json: str) -> int:
    """Protobuf size of the history's events framed as one ``History`` message (the server's
    ``historySizeBytes`` of a whole run)."""
    events = WorkflowHistory.from_json("size", history_json).events
    return len(History(events=events).SerializeToString())


async def _await_turn(handle: WorkflowHandle[Any, Any], text: str, index: int,
                      seconds: float) -> dict[str, Any]:
    """Signal one turn; wait for its reply, for the run (the chain's last run) to close, or for
    ``seconds``. ``status`` says which: ``RUNNING`` (replied), the closed status, ``TIMEOUT``."""
    began = time.monotonic()
    try:
        turn = await driver._turn(handle, text, index, seconds, stopped=driver._closed,
                                  query_timeout=5, interval=0.3, error="no reply")
    except LabError:  # still open: the recorder stops it
        turn = {"reply": None, "status": "TIMEOUT", "seconds": time.monotonic() - began}
    # The text itself is in the history; a 32 KiB message would be most of the metadata.
    return {"text_bytes": len(text.encode()), "text_start": text[:60], "reply": turn["reply"],
            "status": turn["status"], "seconds": round(turn["seconds"], 3)}


async def _pending_activities(handle: WorkflowHandle[Any, Any]) -> list[dict[str, Any]]:
    """The open run's pending activities as the server describes them (attempts and the last
    failure are not in the history until the activity closes)."""
    described = await handle.describe()
    pending = []
    for activity in described.raw_description.pending_activities:
        failure = activity.last_failure
        pending.append({
            "activity_id": activity.activity_id, "activity_type": activity.activity_type.name,
            "state": PendingActivityState.Name(activity.state), "attempt": activity.attempt,
            "last_failure": {"message": failure.message, "type": failure.WhichOneof(
                "failure_info"), "source": failure.source} if activity.HasField("last_failure")
            else None,
            "last_worker_identity": activity.last_worker_identity,
        })
    return pending


async def _chain_runs(client: Client, address: str, workflow_id: str,
                      first_run_id: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(run id, history, server numbers)`` of every run from the first, following
    continue-as-new."""
    runs = []
    run_id: str | None = first_run_id
    while run_id:
        history = driver.export_history(address, workflow_id, run_id)
        described = await client.get_workflow_handle(workflow_id, run_id=run_id).describe()
        info = described.raw_description.workflow_execution_info
        server = {"history_size_bytes": info.history_size_bytes,
                  "history_length": info.history_length,
                  "status": described.status.name if described.status else None}
        runs.append((run_id, history, server))
        run_id = end_of(history)["new_run_id"]
    return runs


def _server_version() -> str:
    """``temporal --version`` of the dev server's binary (the CLI's and the server's versions)."""
    done = subprocess.run([str(find_temporal_binary()), "--version"], capture_output=True,
                          text=True, timeout=30, check=False)
    return done.stdout.strip()


def _write_history(path: Path, history: dict[str, Any]) -> int:
    """Write the history gzipped, this machine's paths (in failures' stack traces) made
    relative; returns the protobuf bytes that took away from the server's count."""
    text = json.dumps(history, indent=1) + "\n"
    scrubbed = scrub_text(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(scrubbed.encode("utf-8"), mtime=0))
    return events_bytes(text) - events_bytes(scrubbed) if scrubbed != text else 0


async def record_run(fw: BudgetFramework, budget: Budget, address: str, out_dir: Path, *,
                     venvs_dir: Path | None = None, server_log: Path | None = None) -> list[Path]:
    """Record ``budget`` with ``fw`` on the dev server at ``address`` (started with
    ``budget.dynamic_config``); returns the history of each run of the chain.

    ``server_log``: the dev server's log (``DevServer.log_path``; ``log_level="warn"`` has the
    limit warnings), whose lines naming the workflow are kept as ``logs/<name>.server.log``.
    """
    env = fw.environment()
    env_dir = out_dir / env.name
    log_dir = env_dir / "logs"
    workflow_id = f"lab-budget-{fw.name}-{budget.name}-{uuid.uuid4().hex[:8]}"
    task_queue = f"lab-budget-{fw.name}-{uuid.uuid4().hex[:8]}"
    client = await Client.connect(address)
    began = time.monotonic()
    extra = {} if venvs_dir is None else {"venvs_dir": venvs_dir}
    with McpServer(pages=True, request_log=log_dir / f"{budget.name}.mcp.jsonl") as mcp, \
            WorkerProcess(env, address, task_queue, log_dir / f"{budget.name}.worker.log",
                          module=fw.worker_module, extra_env=fw.worker_env(mcp.url),
                          **extra) as worker:
        handle = await driver.start_agent(client, fw.spec(budget, mcp.url),
                                          workflow_id=workflow_id, task_queue=task_queue,
                                          workflow_type=fw.workflow_type)
        turns = []
        for index, text in enumerate(budget.messages()):
            turns.append(await _await_turn(handle, text, index, budget.seconds))
            if turns[-1]["reply"] is None:
                break
        stopped_by_lab = turns[-1]["status"] == "TIMEOUT"
        pending = await _pending_activities(handle)
        if stopped_by_lab:
            await handle.terminate(reason=f"lab: stopped after {budget.seconds:.0f} s without "
                                   "a reply (the run was still open)")
        elif turns[-1]["reply"] is not None:
            await driver.finish(handle)
        await asyncio.sleep(2)  # the worker's last lines (sdk-core's refused completions)
        runs = await _chain_runs(client, address, workflow_id, handle.first_execution_run_id
                                 or handle.result_run_id or "")
        requests = mcp.requests()
    (log_dir / f"{budget.name}.mcp.jsonl").unlink(missing_ok=True)  # summarised in the meta
    mcp_stderr = log_dir / f"{budget.name}.mcp.stderr.log"
    if mcp_stderr.exists() and not mcp_stderr.stat().st_size:
        mcp_stderr.unlink()
    if server_log is not None:
        lines = [line for line in server_log.read_text(errors="replace").splitlines(True)
                 if f"wf-id={workflow_id} " in line]
        (log_dir / f"{budget.name}.server.log").write_text("".join(lines), encoding="utf-8")
    # The worker's tracebacks name this machine's files: relative in the committed logs, however
    # the run was recorded (record() scrubs its whole output too, but one run can be re-recorded).
    scrub_machine_paths(log_dir)
    seconds = time.monotonic() - began
    versions = {key: worker.info.get(key) for key in fw.version_keys}
    server_version = _server_version()
    names = [budget.name] if len(runs) == 1 else [
        f"{budget.name}_run{i}" for i in range(1, len(runs) + 1)]
    for stale in [*env_dir.glob(f"{budget.name}.*"), *env_dir.glob(f"{budget.name}_run*.*")]:
        stale.unlink()  # an earlier recording's files (a chain may have had more runs)
    paths = []
    for index, (name, (run_id, history, server)) in enumerate(zip(names, runs, strict=True)):
        path = env_dir / f"{name}.json.gz"
        scrubbed = _write_history(path, history)
        end = end_of(history)
        calls = model_calls(history, fw.model_activity)
        meta = {
            "scenario": budget.name, "description": budget.description, "env": env.name,
            "framework": fw.name, **versions, "temporal": server_version,
            "workflow_id": workflow_id, "run_id": run_id,
            "task_queue": task_queue, "status": server["status"],
            "chain": {"index": index + 1, "runs": [r[0] for r in runs]} if len(runs) > 1
            else None,
            "turns": turns,
            "timings": {"worker_start_seconds": round(worker.started_seconds, 3),
                        "run_seconds": round(seconds, 3)},
            "budget": {
                **budget.parameters(), "dynamic_config": budget.dynamic_config,
                "server": server, "events_bytes": events_bytes(json.dumps(history)),
                "scrubbed_bytes": scrubbed,
                "end": end, "failures": _failures(history),
                "model_calls_completed": calls["completed"],
                "model_calls_scheduled": calls["scheduled"], "stopped_by_lab": stopped_by_lab,
                "pending_activities": pending if index == len(runs) - 1 else [],
            },
            "activities": dict(Counter(_activity_types(history))),
            "events": len(history["events"]),
            "mcp_requests": {k: v for k, v in _request_summary(requests).items()
                             if k != "tools_sequence"},
            "worker_log": f"logs/{budget.name}.worker.log",
            "server_log": f"logs/{budget.name}.server.log" if server_log else None,
        }
        path.with_name(f"{name}.meta.json").write_text(json.dumps(meta, indent=1) + "\n",
                                                       encoding="utf-8")
        paths.append(path)
    return paths


def _activity_types(history: dict[str, Any]) -> Iterable[str]:
    for event in history["events"]:
        key, attributes = _attributes(event)
        if key == "activityTaskScheduledEventAttributes":
            yield attributes["activityType"]["name"]


def _row(path: str, meta: dict[str, Any]) -> dict[str, Any]:
    budget, config = meta["budget"], meta["budget"]["dynamic_config"]
    return {
        "history": path, "framework": meta["framework"], "env": meta["env"],
        "scenario": meta["scenario"], "run_index": (meta["chain"] or {}).get("index", 1),
        "workflow_id": meta["workflow_id"], "run_id": meta["run_id"], "status": meta["status"],
        "limits": budget["limits"], "conversation_bytes": budget["conversation_bytes"],
        "tool_output_bytes": budget["tool_output_bytes"],
        "max_model_calls": budget["max_model_calls"],
        "model_calls_completed": budget["model_calls_completed"],
        "history_size_bytes": budget["server"]["history_size_bytes"],
        "history_length": budget["server"]["history_length"],
        "limit_bytes": config.get("limit.historySize.error"),
        "limit_events": config.get("limit.historyCount.error"),
        "payload_limit_bytes": config.get("limit.blobSize.error"),
        "end_event": budget["end"]["event"], "end_reason": budget["end"]["reason"],
        "stopped_by_lab": budget["stopped_by_lab"],
    }


def record_group(budgets: Sequence[Budget], frameworks: Sequence[BudgetFramework],
                 out_dir: Path, *, venvs_dir: Path | None = None) -> list[Path]:
    """Record each budget with each framework, one dev server per limits group; returns the
    histories."""
    paths: list[Path] = []
    for limits in dict.fromkeys(b.limits for b in budgets):
        chosen = [b for b in budgets if b.limits == limits]
        with DevServer(dynamic_config=chosen[0].dynamic_config, log_level="warn") as server:
            for fw in frameworks:
                for budget in chosen:
                    print(f"[history_budget] {fw.name} {budget.name} ...", flush=True)
                    paths += asyncio.run(record_run(fw, budget, server.address, out_dir,
                                                    venvs_dir=venvs_dir,
                                                    server_log=server.log_path))
    return paths


def write_table(out_dir: Path) -> Path:
    """``out_dir/recordings.csv``: one row (:data:`COLUMNS`) per recording found under
    ``out_dir`` (every ``*/<name>.meta.json``), so that a part re-recorded keeps the others."""
    rows = [_row(f"{meta_path.parent.name}/{meta_path.name.removesuffix('.meta.json')}.json.gz",
                 json.loads(meta_path.read_text(encoding="utf-8")))
            for meta_path in sorted(out_dir.glob("*/*.meta.json"))]
    path = out_dir / "recordings.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def record_all(data_dir: Path, frameworks: Sequence[str] | None = None,
               budgets: Sequence[str] | None = None) -> list[Path]:
    """Every budget (or those named) in every framework (or those named) under
    ``data_dir/history_budget``; returns the histories, then ``recordings.csv``."""
    chosen = [fw for fw in FRAMEWORKS if frameworks is None or fw.name in frameworks]
    runs = [b for b in BUDGETS if budgets is None or b.name in budgets]
    out_dir = Path(data_dir) / "history_budget"
    paths = record_group(runs, chosen, out_dir, venvs_dir=Path(data_dir) / "venvs")
    return [*paths, write_table(out_dir)]
