"""Client side of a recording: start the agent workflow, deliver turns, read replies, export.

Runs in the project's own environment; it talks to workflows by type and handler names only, so
it never imports the workflow code (which runs in the worker's version environment).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle

from toolkit.errors import LabError
from toolkit.lab.adk_python.scenarios import WORKFLOW_TYPE
from toolkit.lab.server import find_temporal_binary

__all__ = [
    "export_history", "finish", "send_turn", "send_turn_or_stop", "send_turn_or_task_failure",
    "start_agent",
]

RUN_TIMEOUT = timedelta(minutes=5)
"""Safety net: no recorded run outlives this, whatever a scenario does."""

_OPEN = WorkflowExecutionStatus.RUNNING


async def start_agent(
    client: Client, spec: dict[str, Any], *, workflow_id: str, task_queue: str,
    workflow_type: str = WORKFLOW_TYPE,
) -> WorkflowHandle[Any, Any]:
    """Start the agent workflow with input ``spec`` (an ``AgentSpec`` as a dict).

    ``workflow_type``: the ADK agent by default; other frameworks' recorders name theirs (every
    lab agent workflow has the same ``user_turn`` / ``finish`` signals and ``replies`` query)."""
    return await client.start_workflow(
        workflow_type, spec, id=workflow_id, task_queue=task_queue,
        execution_timeout=RUN_TIMEOUT,
    )


async def _status(handle: WorkflowHandle[Any, Any]) -> WorkflowExecutionStatus | None:
    return (await handle.describe()).status


async def _turn(
    handle: WorkflowHandle[Any, Any], text: str, replies_before: int, timeout: float, *,
    stopped: Callable[[WorkflowHandle[Any, Any]], Awaitable[dict[str, Any] | None]],
    query_timeout: float | None, interval: float, error: str,
) -> dict[str, Any]:
    """Signal a turn, then poll until its reply or until ``stopped`` returns the fields to report
    (``status`` first) instead of a reply; ``LabError(error)`` after ``timeout`` seconds."""
    began = time.monotonic()
    await handle.signal("user_turn", text)
    while time.monotonic() - began < timeout:
        stop = await stopped(handle)
        if stop is not None:
            return {"text": text, "reply": None, "seconds": time.monotonic() - began, **stop}
        try:
            replies = await asyncio.wait_for(handle.query("replies", result_type=list[str]),
                                             query_timeout)
        except Exception:  # a query can fail while a workflow task retries or fails; poll again
            replies = []
        if len(replies) > replies_before:
            return {"text": text, "reply": replies[replies_before],
                    "seconds": time.monotonic() - began, "status": "RUNNING"}
        await asyncio.sleep(interval)
    raise LabError(error)


async def _closed(handle: WorkflowHandle[Any, Any]) -> dict[str, Any] | None:
    status = await _status(handle)
    return None if status == _OPEN else {"status": status.name if status else None}


async def _task_failed(handle: WorkflowHandle[Any, Any]) -> dict[str, Any] | None:
    history = json.loads((await handle.fetch_history()).to_json())
    failed = [e for e in history["events"] if "workflowTaskFailedEventAttributes" in e]
    if not failed:
        return None
    attributes = failed[0]["workflowTaskFailedEventAttributes"]
    return {"status": "WORKFLOW_TASK_FAILED", "cause": attributes.get("cause"),
            "failure": attributes.get("failure", {}).get("message")}


async def send_turn(
    handle: WorkflowHandle[Any, Any], text: str, *, replies_before: int, timeout: float = 90.0
) -> dict[str, Any]:
    """Signal one user turn and wait for its reply, or for the run to close.

    Returns ``{"text", "reply", "seconds", "status"}`` (reply None when the run closed first).

    Raises
    ------
    LabError
        When neither happens within ``timeout`` seconds.
    """
    return await _turn(
        handle, text, replies_before, timeout, stopped=_closed, query_timeout=None,
        interval=0.2,
        error=f"workflow {handle.id}: no reply to turn {text!r} within {timeout:.0f} s",
    )


async def finish(handle: WorkflowHandle[Any, Any], timeout: float = 60.0) -> str:
    """Send ``finish`` to an open run and wait for it to close; return the final status name."""
    if await _status(handle) == _OPEN:
        await handle.signal("finish")
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        status = await _status(handle)
        if status != _OPEN:
            return status.name if status else "UNKNOWN"
        await asyncio.sleep(0.2)
    raise LabError(f"workflow {handle.id} still open {timeout:.0f} s after finish")


async def send_turn_or_task_failure(
    handle: WorkflowHandle[Any, Any], text: str, replies_before: int, timeout: float = 120.0
) -> dict[str, Any]:
    """Signal a turn; wait for its reply or for a ``WorkflowTaskFailed`` event."""
    return await _turn(
        handle, text, replies_before, timeout, stopped=_task_failed, query_timeout=5,
        interval=0.5,
        error=f"workflow {handle.id}: neither a reply nor a WorkflowTaskFailed event "
              f"within {timeout:.0f} s after turn {text!r}",
    )


async def _closed_or_task_failed(handle: WorkflowHandle[Any, Any]) -> dict[str, Any] | None:
    return await _closed(handle) or await _task_failed(handle)


async def send_turn_or_stop(
    handle: WorkflowHandle[Any, Any], text: str, replies_before: int, timeout: float = 120.0
) -> dict[str, Any]:
    """Signal a turn; wait for its reply, for the run to close or for a ``WorkflowTaskFailed``
    event (``status`` says which: ``RUNNING``, the closed status, ``WORKFLOW_TASK_FAILED``)."""
    return await _turn(
        handle, text, replies_before, timeout, stopped=_closed_or_task_failed, query_timeout=5,
        interval=0.5,
        error=f"workflow {handle.id}: no reply, close or WorkflowTaskFailed event within "
              f"{timeout:.0f} s after turn {text!r}",
    )


def export_history(address: str, workflow_id: str, run_id: str) -> dict[str, Any]:
    """The run's history as the CLI exports it (``temporal workflow show --output json``).

    Raises
    ------
    LabError
        When the CLI fails or prints something that is not a JSON history.
    """
    command = [str(find_temporal_binary()), "workflow", "show", "--address", address,
               "--workflow-id", workflow_id, "--run-id", run_id, "--output", "json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise LabError(f"`temporal workflow show` for {workflow_id} failed: {done.stderr[-2000:]}")
    try:
        history = json.loads(done.stdout)
    except ValueError as error:
        raise LabError(f"`temporal workflow show` for {workflow_id}: output is not JSON "
                       f"({error}); expected a history object") from error
    if not isinstance(history, dict) or not isinstance(history.get("events"), list):
        raise LabError(f"`temporal workflow show` for {workflow_id}: expected an object with "
                       "an 'events' list")
    return history
