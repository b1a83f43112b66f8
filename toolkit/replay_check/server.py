"""Histories from a live Temporal server: list the runs a visibility query matches, choose the
sample (every open run, the most recent closed runs per workflow type and build id), fetch them.

Sampling happens on the listing, before any history is fetched: a namespace holds far more
history than a check needs, and the open runs are the ones a deploy breaks first. The build id
of a listed run is read from its ``BuildIds`` search attribute (``unversioned:<id>``,
``assigned:<id>``, ...; the server keeps it for every build that completed one of the run's
workflow tasks), or from ``TemporalWorkerDeploymentVersion`` under worker versioning.
"""

from __future__ import annotations

import asyncio
from typing import Any

from toolkit.errors import ServerError
from toolkit.event_loop import run_sync
from toolkit.replay_check.items import Item, items_from_histories
from toolkit.replay_check.sampling import sample_items

__all__ = ["LIST_LIMIT", "build_label", "items_from_server", "listed_runs"]

#: The most executions listed for one check (the most recent first, as visibility lists them).
LIST_LIMIT = 100_000
#: Histories fetched at once.
FETCHES = 8


def _values(attributes: Any, name: str) -> list[Any]:
    value = attributes.get(name) if isinstance(attributes, dict) else None
    return list(value) if isinstance(value, (list, tuple)) else ([value] if value else [])


def build_label(search_attributes: Any) -> str | None:
    """The version a listed run was last worked on by: its deployment version, else the last
    build id in ``BuildIds`` (without the ``unversioned:``/``assigned:`` prefix), else None."""
    deployment = _values(search_attributes, "TemporalWorkerDeploymentVersion")
    if deployment:
        return f"deployment {deployment[-1]}"
    builds = [
        str(v).split(":", 1)[1] for v in _values(search_attributes, "BuildIds") if ":" in str(v)
    ]
    return f"build {builds[-1]}" if builds else None


async def _listed(client: Any, query: str | None) -> list[dict[str, Any]]:
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError

    rows = []
    try:
        async for execution in client.list_workflows(query, limit=LIST_LIMIT):
            rows.append({
                "workflow_id": execution.id, "run_id": execution.run_id,
                "workflow_type": execution.workflow_type,
                "open": execution.status == WorkflowExecutionStatus.RUNNING,
                "start": execution.start_time,
                "label": build_label(getattr(execution, "search_attributes", {})),
            })  # fmt: skip
    except RPCError as error:
        raise ServerError(
            f"the server rejected the visibility query {query!r} in namespace "
            f"{client.namespace!r}: {error}"
        ) from None
    return rows


def listed_runs(client_or_address: Any, query: str | None, *, namespace: str = "default") -> list:
    """The runs a visibility query matches, one dict each (``workflow_id``, ``run_id``,
    ``workflow_type``, ``open``, ``start``, ``label``), the most recent first."""

    async def listing() -> list[dict[str, Any]]:
        from toolkit.histories.reading.fetch import _client

        return await _listed(await _client(client_or_address, namespace), query)

    return run_sync(listing())


async def _fetch_all(
    client_or_address: Any, query: str | None, namespace: str, sample: int | None,
    max_open: int | None,
) -> list[tuple[str, Any]]:  # fmt: skip
    from temporalio.service import RPCError

    from toolkit.histories.reading.fetch import _client

    client = await _client(client_or_address, namespace)
    chosen = sample_items(await _listed(client, query), sample, max_open)
    gate = asyncio.Semaphore(FETCHES)

    async def one(row: dict[str, Any]) -> tuple[str, Any]:
        name = f"temporal://{client.namespace}/{row['workflow_id']}/{row['run_id']}"
        async with gate:
            handle = client.get_workflow_handle(row["workflow_id"], run_id=row["run_id"])
            try:
                return name, await handle.fetch_history()
            except RPCError as error:
                return name, error

    return list(await asyncio.gather(*(one(row) for row in chosen)))


def items_from_server(
    client_or_address: Any, query: str | None, *, namespace: str = "default",
    sample: int | None = None, max_open: int | None = None,
) -> list[Item]:  # fmt: skip
    """Items for the runs a visibility query matches (sampled as :func:`sample_items` says),
    in listing order (the most recent first); a history that cannot be fetched is an item with
    its error.

    Raises
    ------
    toolkit.errors.ServerError
        When the server cannot be reached or rejects the query.
    """
    fetched = run_sync(_fetch_all(client_or_address, query, namespace, sample, max_open))
    items: list[Item] = []
    for name, history in fetched:
        if isinstance(history, Exception):
            items.append(Item(name, 0, error=f"cannot fetch: {history}"))
            continue
        items += items_from_histories([(name, history)])
        items[-1].namespace = items[-1].namespace or name.split("/")[2]
    return items
