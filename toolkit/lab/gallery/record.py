"""Recording the gallery: run both versions of every case, replay each history with the other code.

Entry points: :func:`record_gallery` (synchronous, what ``make record`` calls) and
:func:`arecord_gallery` / :func:`record_case` (async, for code that already runs an event loop).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import temporalio
from temporalio.client import Client

from toolkit.errors import LabError
from toolkit.event_loop import run_sync
from toolkit.lab.gallery.case import Case, Query, Settle, Signal, Step, Update, get_case
from toolkit.lab.gallery.case import all_cases as registered_cases
from toolkit.lab.gallery.drive import (
    case_task_queue,
    case_workflow_id,
    ensure_search_attributes,
    run_version,
)
from toolkit.lab.gallery.replay import replay_with

__all__ = [
    "FORMAT",
    "TABLE_COLUMNS",
    "arecord_gallery",
    "case_row",
    "record_case",
    "record_gallery",
    "write_table",
]

#: Value of ``format`` in every ``case.json``; bumped on any incompatible change.
FORMAT = "toolkit.gallery/1"

#: Columns of ``cases.csv``, in order.
TABLE_COLUMNS = [
    "case", "kind", "where",
    "v1_on_v2_outcome", "v1_on_v2_message", "v2_on_v1_outcome", "v2_on_v1_message",
    "safe", "expected_safe", "matches_expectation", "message_stable", "description",
]

#: How many cases record at the same time (each runs two workers, one after the other).
CONCURRENCY = 6

#: Upper bound for one case (two runs, four replays); a healthy case takes a few seconds.
CASE_TIMEOUT_SECONDS = 180.0


def _step_json(step: Step) -> dict[str, Any]:
    if isinstance(step, Signal | Update):
        return {"step": type(step).__name__.lower(), "name": step.name, "args": list(step.args)}
    if isinstance(step, Query):
        return {"step": "query", "name": step.name}
    if isinstance(step, Settle):
        return {"step": "settle"}
    raise LabError(f"unknown drive step {step!r}; expected Signal, Update, Query or Settle")


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


async def record_case(client: Client, case: Case, case_dir: Path) -> dict[str, Any]:
    """Record ``case`` on the server behind ``client`` and write its directory.

    Writes ``case_dir/v1.json``, ``case_dir/v2.json`` (proto-JSON histories of the first run of
    each version) and ``case_dir/case.json``; returns the ``case.json`` content.
    """
    runs = {}
    for label, cls in (("v1", case.v1), ("v2", case.v2)):
        # Sequential on purpose: both versions use the same workflow id and task queue.
        runs[label] = await run_version(client, case, label, cls)
    code = {"v1": case.v1, "v2": case.v2}
    replays = {}
    for history_label, code_label in (("v1", "v2"), ("v2", "v1"), ("v1", "v1"), ("v2", "v2")):
        outcome = await replay_with(runs[history_label].history, code[code_label], case.support)
        replays[f"{history_label}_on_{code_label}"] = outcome.to_dict()
    case_dir.mkdir(parents=True, exist_ok=True)
    versions = {}
    for label, run in runs.items():
        (case_dir / f"{label}.json").write_text(run.history.to_json() + "\n")
        versions[label] = {
            "class": _qualified(code[label]),
            "history": f"{label}.json",
            "run_id": run.history.run_id,
            "status": run.status,
            "events": len(run.history.events),
            "steps": run.steps,
        }
    expected = {"v1_on_v2": case.expect.v1_on_v2, "v2_on_v1": case.expect.v2_on_v1}
    record = {
        "format": FORMAT,
        "name": case.name,
        "description": case.description,
        "kind": case.kind,
        "where": case.where,
        "workflow_type": case.workflow_type,
        "workflow_id": case_workflow_id(case),
        "task_queue": case_task_queue(case),
        "inputs": list(case.inputs),
        "drive": [_step_json(step) for step in case.drive],
        "support": [_qualified(cls) for cls in case.support],
        "message_stable": case.message_stable,
        "v1": versions["v1"],
        "v2": versions["v2"],
        "expected": expected,
        "replays": replays,
        "safe": replays["v1_on_v2"]["outcome"] == "ok",
        "expected_safe": expected["v1_on_v2"] == "ok",
        "matches_expectation": all(replays[k]["outcome"] == v for k, v in expected.items()),
        "sdk": {"temporalio": temporalio.__version__},
    }
    (case_dir / "case.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return record


def case_row(record: dict[str, Any]) -> dict[str, Any]:
    """The ``cases.csv`` row of one ``case.json`` record."""
    replays = record["replays"]
    return {
        "case": record["name"], "kind": record["kind"], "where": record["where"],
        "v1_on_v2_outcome": replays["v1_on_v2"]["outcome"],
        "v1_on_v2_message": replays["v1_on_v2"]["message"],
        "v2_on_v1_outcome": replays["v2_on_v1"]["outcome"],
        "v2_on_v1_message": replays["v2_on_v1"]["message"],
        "safe": record["safe"], "expected_safe": record["expected_safe"],
        "matches_expectation": record["matches_expectation"],
        "message_stable": record["message_stable"], "description": record["description"],
    }


def _resolve(cases: Sequence[str | Case] | None) -> list[Case]:
    if cases is None:
        return registered_cases()
    return [case if isinstance(case, Case) else get_case(case) for case in cases]


def write_table(gallery_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Write cases.csv: the recorded rows replace same-named ones; other existing rows stay."""
    table_path = gallery_dir / "cases.csv"
    recorded = {row["case"] for row in rows}
    kept: list[dict[str, Any]] = []
    if table_path.exists():
        existing = pd.read_csv(table_path, dtype=str, keep_default_na=False)
        kept = [row for row in existing.to_dict("records") if row["case"] not in recorded]
    # Registered cases in registry order, then any others (user cases) in the order met.
    order = {case.name: position for position, case in enumerate(registered_cases())}
    merged = sorted(kept + rows, key=lambda row: order.get(row["case"], len(order)))
    table = pd.DataFrame(merged, columns=TABLE_COLUMNS)
    table.to_csv(table_path, index=False)


async def arecord_gallery(
    data_dir: Path, server_address: str, cases: Sequence[str | Case] | None = None,
    *, namespace: str = "default",
) -> pd.DataFrame:
    """Async form of :func:`record_gallery`."""
    chosen = _resolve(cases)
    names = [case.name for case in chosen]
    if len(set(names)) != len(names):
        raise LabError(f"gallery cases named twice in {names}; expected distinct names")
    gallery_dir = Path(data_dir) / "gallery"
    client = await Client.connect(server_address, namespace=namespace)
    await ensure_search_attributes(client)
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(case: Case) -> dict[str, Any]:
        async with limit:
            try:
                return await asyncio.wait_for(
                    record_case(client, case, gallery_dir / case.name), CASE_TIMEOUT_SECONDS
                )
            except TimeoutError:
                raise LabError(
                    f"gallery case {case.name!r} not recorded within {CASE_TIMEOUT_SECONDS:.0f} s "
                    f"on {server_address}; expected both runs and four replays to finish"
                ) from None

    records = await asyncio.gather(*(one(case) for case in chosen))
    rows = [case_row(record) for record in records]
    write_table(gallery_dir, rows)
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def record_gallery(
    data_dir: Path, server_address: str, cases: Sequence[str | Case] | None = None,
    *, namespace: str = "default",
) -> pd.DataFrame:
    """Record gallery cases on a running server and write them under ``data_dir/gallery``.

    Parameters
    ----------
    data_dir
        The data root; cases go to ``data_dir/gallery/<case>/`` and the table to
        ``data_dir/gallery/cases.csv``.
    server_address
        ``host:port`` of a Temporal server (e.g. ``DevServer().address``).
    cases
        Names of registered cases or :class:`Case` objects; all registered cases when omitted.
    namespace
        Namespace to run in.

    Returns
    -------
    pandas.DataFrame
        One row per recorded case, columns :data:`TABLE_COLUMNS`. ``cases.csv`` receives these
        rows and keeps the rows of cases not recorded this time.
    """
    coroutine = arecord_gallery(data_dir, server_address, cases, namespace=namespace)
    return run_sync(coroutine)
