"""Parquet datasets of workflow histories, for fleet-scale questions and for other engines.

>>> report = tk.write_dataset("exports/", "histories.parquet")       # doctest: +SKIP
>>> tk.sql("select workflow_type, count(*) from runs group by 1",     # doctest: +SKIP
...        dataset="histories.parquet")

A dataset is a folder of plain Parquet files (pyarrow, no custom encodings), one folder per
table and one file per table per write batch, with no hive partition folders: ``namespace``,
``workflow_type`` and ``date`` are typed columns inside every file (rows sorted by them, so
Parquet statistics skip what a filter excludes). Spark (``spark.read.parquet("DATASET/events")``),
polars (``pl.scan_parquet("DATASET/events/*.parquet")``), pyarrow
(``ds.dataset("DATASET/events")``), Trino (a table over ``DATASET/events``) and DuckDB
(``read_parquet('DATASET/events/*.parquet')``) read the same rows with the same types, with
their defaults. :mod:`toolkit.datasets.layout` describes the folders and the manifest, and
``_toolkit/dataset.json`` lists every column with its Arrow type (the schema every file has).

Tables
------
``events``
    the events frame (:mod:`toolkit.histories`), one row per event.
``activities``
    :func:`toolkit.activities`, one row per activity execution.
``workflow_tasks``
    :func:`toolkit.workflow_tasks`, one row per workflow task (``commands`` and the SDK flags
    as JSON text).
``runs``
    one row per run: ``run_key`` (the run id, or ``sha256:<file>#<history>`` for a history
    without one), ``run_id``, ``workflow_id``, ``source``, ``history``, ``start_time``,
    ``close_time``, ``status`` (``completed``, ``failed``, ``timed_out``, ``canceled``,
    ``terminated``, ``continued_as_new`` or ``open``), ``events``, ``last_event_id``,
    ``activities``, ``failed_activities``, ``workflow_tasks``, ``failed_workflow_tasks``,
    ``nondeterminism`` (a workflow task failed with a nondeterminism cause), ``file_sha256``,
    ``batch``.

Every table also has the run columns ``namespace``, ``workflow_type`` and ``date`` (UTC date
of the run's first event, ``date32``); ``events`` keeps its other columns, with the types of
:mod:`toolkit.datasets.arrow`: payloads, ``attributes`` and ``extra`` are JSON text (as the
source wrote them), times are UTC microseconds, durations are seconds. Format
``toolkit.dataset/2``; a dataset of format 1 (hive folders) is refused with a message (write
it again from the exports).

Writes
------
Incremental and idempotent: each batch of files is deduplicated by run key (the first copy of a
run stays; later copies of a different length are reported as conflicts, never written twice),
and files already written (same sha256) are skipped without being read.
:func:`compact_dataset` merges the small files of many small batches into few large ones, in
one atomic commit (:mod:`toolkit.datasets.compact`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolkit.datasets.arrow import json_text, to_arrow
from toolkit.datasets.check import DatasetCheck, DatasetRepair, check_dataset, repair_dataset
from toolkit.datasets.compact import DatasetCompaction, compact_dataset
from toolkit.datasets.layout import PARTITIONS, TABLES, is_dataset, table_files
from toolkit.datasets.writer import DatasetWrite, write_dataset

if TYPE_CHECKING:
    from toolkit.datasets.query import DERIVED_FROM_EVENTS, sql

__all__ = [
    "DERIVED_FROM_EVENTS",
    "PARTITIONS",
    "TABLES",
    "DatasetCheck",
    "DatasetCompaction",
    "DatasetRepair",
    "DatasetWrite",
    "check_dataset",
    "compact_dataset",
    "is_dataset",
    "json_text",
    "repair_dataset",
    "sql",
    "table_files",
    "to_arrow",
    "write_dataset",
]


def __getattr__(name: str) -> Any:
    # The query side on first use (PEP 562): DuckDB takes a sixth of a second to import, and
    # the writer's worker processes, which import this package, never query.
    if name in ("DERIVED_FROM_EVENTS", "sql"):
        from toolkit.datasets import query

        return getattr(query, name)
    raise AttributeError(f"module 'toolkit.datasets' has no attribute {name!r}")
