"""Replay histories with temporalio's real ``Replayer`` and tabulate the outcome, one row each.

Examples
--------
>>> from toolkit.replay.replayer import replay
>>> replay("run.json", [MyWorkflow])                                  # doctest: +SKIP
   history  source  run_id  workflow_type  outcome  error_type  message  sdk  kind ...
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
from google.protobuf import json_format
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from toolkit.errors import HistoryFormatError
from toolkit.event_loop import run_sync
from toolkit.histories.write import to_workflow_history
from toolkit.replay.messages import parse_nondeterminism

__all__ = ["REPLAY_COLUMNS", "replay", "replay_async", "to_workflow_histories"]

REPLAY_COLUMNS = [
    "history",
    "source",
    "workflow_id",
    "run_id",
    "workflow_type",
    "outcome",
    "error_type",
    "message",
    "event_id",
    "event_type",
    "expected",
    "actual",
    "check",
]


def _from_json_text(text: bytes, name: str) -> list[WorkflowHistory]:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise HistoryFormatError(
            name, f"not JSON ({error})", expected="a proto-JSON history"
        ) from error
    histories = (
        data
        if isinstance(data, list) and data and isinstance(data[0], dict) and "events" in data[0]
        else [data]
    )
    out = []
    for index, one in enumerate(histories):
        if isinstance(one, dict) and "history" in one and "events" not in one:
            one = one["history"]
        if not isinstance(one, dict) or "events" not in one:
            raise HistoryFormatError(
                name, "no events", position=f"history {index}", expected='{"events": [...]}'
            )
        workflow_id = _recorded_workflow_id(one) or Path(name).stem
        out.append(WorkflowHistory(workflow_id, list(_parsed(one).events)))
    return out


def _parsed(history: dict[str, Any]) -> History:
    """A proto-JSON history document as a ``History`` message.

    Canonical proto-JSON is parsed as it is; ``WorkflowHistory.from_json`` (which copies the
    whole document to rewrite the older CLI's PascalCase enum values first) is used only for
    what that refuses. Same message either way, in two thirds of the time for large histories.
    """
    try:
        return json_format.ParseDict(history, History(), ignore_unknown_fields=True)
    except json_format.ParseError:
        return History(events=WorkflowHistory.from_json("", history).events)


def _recorded_workflow_id(history: dict[str, Any]) -> str | None:
    """The started event's ``workflowId`` (servers write it since 2024): the Replayer then runs
    the code under the id the run had, as ids the code builds from it need."""
    events = history.get("events")
    first = events[0] if isinstance(events, list) and events else None
    attributes = first.get("workflowExecutionStartedEventAttributes") if isinstance(
        first, dict
    ) else None
    value = attributes.get("workflowId") if isinstance(attributes, dict) else None
    return value if isinstance(value, str) and value else None


def _frame_histories(frame: pd.DataFrame) -> list[tuple[str, WorkflowHistory]]:
    """Rebuild temporalio histories from an events frame, one per (``source``, ``history``)."""
    keys = [key for key in ("source", "history") if key in frame]
    groups = frame.groupby(keys, sort=True, dropna=False) if keys else [((), frame)]
    out: list[tuple[str, WorkflowHistory]] = []
    for _, one in groups:
        known = one["workflow_id"].dropna()
        started = one["attributes"].iloc[0] if "attributes" in one and len(one) else None
        recorded = started.get("workflowId") if isinstance(started, Mapping) else None
        workflow_id = str(known.iloc[0]) if len(known) else (recorded or "replay")
        name = str(one["source"].iloc[0]) if "source" in one else "<frame>"
        out.append((name, to_workflow_history(one, workflow_id=workflow_id)))
    return out


def to_workflow_histories(source: Any) -> list[tuple[str, WorkflowHistory]]:
    """Turn a path, bytes, events frame, ``WorkflowHistory`` or a list of them into histories.

    Returns ``(source description, WorkflowHistory)`` pairs, in order.
    """
    if isinstance(source, WorkflowHistory):
        return [("<WorkflowHistory>", source)]
    if isinstance(source, pd.DataFrame):
        return _frame_histories(source)
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise HistoryFormatError(str(source), "no such file", expected="a history file")
        return [(str(path), h) for h in _from_json_text(path.read_bytes(), str(path))]
    if isinstance(source, (bytes, bytearray)):
        return [("<bytes>", h) for h in _from_json_text(bytes(source), "<bytes>")]
    if isinstance(source, Iterable):
        return [pair for item in source for pair in to_workflow_histories(item)]
    raise HistoryFormatError(
        repr(type(source)),
        "cannot replay this",
        expected="a path, bytes, events frame or WorkflowHistory",
    )


def _workflow_type(history: WorkflowHistory) -> str | None:
    first = history.events[0] if history.events else None
    if first is None or not first.HasField("workflow_execution_started_event_attributes"):
        return None
    return first.workflow_execution_started_event_attributes.workflow_type.name


def _run_id(history: WorkflowHistory) -> str | None:
    first = history.events[0] if history.events else None
    if first is None or not first.HasField("workflow_execution_started_event_attributes"):
        return None
    return first.workflow_execution_started_event_attributes.original_execution_run_id or None


async def replay_async(
    histories: Any, workflows: Sequence[type], **replayer_options: Any
) -> pd.DataFrame:
    """Async form of :func:`replay` (use it inside a running event loop)."""
    pairs = to_workflow_histories(histories)
    replayer = Replayer(workflows=list(workflows), **replayer_options)
    rows = []
    for index, (name, history) in enumerate(pairs):
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        failure = result.replay_failure
        row: dict[str, Any] = {
            "history": index,
            "source": name,
            "workflow_id": history.workflow_id,
            "run_id": _run_id(history),
            "workflow_type": _workflow_type(history),
            "outcome": "ok",
            "error_type": None,
            "message": None,
        }
        if failure is not None:
            row["outcome"] = (
                "nondeterminism" if isinstance(failure, NondeterminismError) else "other"
            )
            row["error_type"] = type(failure).__name__
            row["message"] = str(failure)
            parsed = parse_nondeterminism(str(failure)) or {}
            row.update({k: parsed.get(k) for k in ("event_id", "event_type", "expected", "actual")})
            row["check"] = parsed.get("check")
        rows.append(row)
    out = pd.DataFrame(rows, columns=REPLAY_COLUMNS)
    out["event_id"] = out["event_id"].astype("Int64")
    return out


def replay(histories: Any, workflows: Sequence[type], **replayer_options: Any) -> pd.DataFrame:
    """Replay each history with temporalio's ``Replayer`` and report the outcome.

    Parameters
    ----------
    histories
        A history file path, JSON bytes, an events frame (one or several histories), a
        ``temporalio.client.WorkflowHistory``, or a list of these.
    workflows
        The workflow classes to replay with.
    **replayer_options
        Passed to ``temporalio.worker.Replayer`` (``workflow_runner``, ``data_converter``,
        ``interceptors``, ``plugins``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per history: ``history``, ``source``, ``workflow_id``, ``run_id``,
        ``workflow_type``, ``outcome`` (``ok``, ``nondeterminism``, ``other``), ``error_type``,
        ``message`` (exact text), and the fields parsed from it by
        :func:`toolkit.replay.messages.parse_nondeterminism`: ``event_id``, ``event_type``,
        ``expected``, ``actual``, ``check``.
    """
    coroutine = replay_async(histories, workflows, **replayer_options)
    return run_sync(coroutine)
