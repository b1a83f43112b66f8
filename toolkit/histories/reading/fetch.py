"""Histories from a live Temporal server, as the same events frame."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit.errors import ServerError
from toolkit.event_loop import run_sync
from toolkit.histories.events import empty_events_frame
from toolkit.histories.reading.read import read_history

__all__ = ["fetch_histories", "fetch_histories_async", "fetch_history", "fetch_history_async"]


async def _client(client_or_address: Any, namespace: str) -> Any:
    from temporalio.client import Client

    if isinstance(client_or_address, Client):
        return client_or_address
    try:
        return await Client.connect(str(client_or_address), namespace=namespace)
    except Exception as exc:  # connection failures come in several exception types
        raise ServerError(f"cannot connect to Temporal at {client_or_address}: {exc}") from None


async def fetch_history_async(
    client_or_address: Any,
    workflow_id: str,
    run_id: str | None = None,
    *,
    namespace: str = "default",
    **read_options: Any,
) -> pd.DataFrame:
    """Async form of :func:`fetch_history`."""
    from temporalio.service import RPCError

    client = await _client(client_or_address, namespace)
    try:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    except RPCError as exc:
        raise ServerError(
            f"cannot fetch history of workflow {workflow_id!r} (run {run_id or 'latest'}) "
            f"in namespace {client.namespace!r}: {exc}"
        ) from None
    frame = read_history(
        history, name=f"temporal://{client.namespace}/{workflow_id}", **read_options
    )
    frame["namespace"] = client.namespace
    return frame


def fetch_history(
    client_or_address: Any,
    workflow_id: str,
    run_id: str | None = None,
    *,
    namespace: str = "default",
    **read_options: Any,
) -> pd.DataFrame:
    """Fetch one workflow's history from a live server into the events frame.

    Parameters
    ----------
    client_or_address
        A connected ``temporalio.client.Client`` or an address such as ``"127.0.0.1:7233"``.
    workflow_id, run_id
        The execution; the latest run when ``run_id`` is omitted.
    namespace
        Namespace used when connecting by address.
    **read_options
        Passed to :func:`toolkit.read_history` (``codec``, ``decode_payloads``).
    """
    return run_sync(
        fetch_history_async(
            client_or_address, workflow_id, run_id, namespace=namespace, **read_options
        )
    )


async def fetch_histories_async(
    client_or_address: Any,
    query: str | None = None,
    *,
    namespace: str = "default",
    limit: int | None = None,
    **read_options: Any,
) -> pd.DataFrame:
    """Async form of :func:`fetch_histories`."""
    client = await _client(client_or_address, namespace)
    frames = []
    async for execution in client.list_workflows(query, limit=limit):
        frames.append(
            await fetch_history_async(
                client, execution.id, execution.run_id, namespace=namespace, **read_options
            )
        )
    if not frames:
        return empty_events_frame()
    return pd.concat(frames, ignore_index=True)


def fetch_histories(
    client_or_address: Any,
    query: str | None = None,
    *,
    namespace: str = "default",
    limit: int | None = None,
    **read_options: Any,
) -> pd.DataFrame:
    """Fetch the histories of every execution matching a visibility query.

    Parameters
    ----------
    query
        A visibility query, e.g.
        ``"WorkflowType = 'AgentWorkflow' AND ExecutionStatus = 'Running'"``;
        ``None`` lists every execution.
    limit
        At most this many executions.

    Returns
    -------
    pandas.DataFrame
        The events frame, with ``workflow_id``, ``run_id`` and ``namespace`` set on every row
        (an empty frame when nothing matches).
    """
    return run_sync(
        fetch_histories_async(
            client_or_address, query, namespace=namespace, limit=limit, **read_options
        )
    )
