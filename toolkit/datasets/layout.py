"""Where a dataset keeps its tables, their schemas, and how readers open them.

Layout (hive-style, readable by DuckDB, Spark, Trino, pyarrow)::

    DATASET/
      _toolkit/dataset.json                      format, tables, columns, partitioning
      _toolkit/batches/<batch>/runs.parquet      manifest: the runs each write committed
      _toolkit/batches/<batch>/files.parquet     manifest: the files each write read (sha256)
      events/namespace=<ns>/date=<YYYY-MM-DD>/workflow_type=<type>/part-<batch>-<n>.parquet
      activities/...   workflow_tasks/...   runs/...   (same partitioning)

Partition values are percent-encoded where a name holds ``/``, ``=``, spaces or other reserved
characters, and a missing value is written ``__HIVE_DEFAULT_PARTITION__`` (read back as NULL by
DuckDB, Spark, Trino and pyarrow). ``date`` is the UTC date of the run's first event. The
partition columns are not stored inside the files (the Hive convention): engines add them from
the path. Folders starting with ``_`` are ignored by Spark, Hive and pyarrow's discovery.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import duckdb
import pyarrow as pa

from toolkit.datasets.arrow import schema_of
from toolkit.histories.events import COLUMNS
from toolkit.histories.tables_activities import ACTIVITY_COLUMNS
from toolkit.histories.tables_workflow_tasks import WORKFLOW_TASK_COLUMNS

__all__ = [
    "FORMAT",
    "MANIFEST_DIR",
    "PARTITIONS",
    "TABLES",
    "file_schema",
    "is_dataset",
    "register_dataset",
    "table_files",
]

FORMAT = "toolkit.dataset/1"
MANIFEST_DIR = "_toolkit"
PARTITIONS: tuple[str, ...] = ("namespace", "date", "workflow_type")
_PARTITION_TYPES = {"namespace": "VARCHAR", "date": "DATE", "workflow_type": "VARCHAR"}


def _kinds(columns: dict[str, str], json_columns: Iterable[str]) -> dict[str, str]:
    as_json = set(json_columns)
    out = {}
    for name, dtype in columns.items():
        if name in as_json:
            out[name] = "json"
        elif dtype.startswith("datetime64"):
            out[name] = "datetime"
        else:
            out[name] = dtype
    return out


#: Column -> kind of each table (see :mod:`toolkit.datasets.arrow` for the Arrow types).
TABLES: dict[str, dict[str, str]] = {
    "events": _kinds(COLUMNS, ("input", "result", "details", "attributes", "extra")),
    "activities": _kinds(ACTIVITY_COLUMNS, ("input", "result")),
    "workflow_tasks": _kinds(
        WORKFLOW_TASK_COLUMNS, ("commands", "core_used_flags", "lang_used_flags")
    ),
    "runs": {
        "run_key": "object",  # run_id, or sha256:<file>#<history> for a history without one
        "run_id": "object",
        "workflow_id": "object",
        "namespace": "object",
        "workflow_type": "object",
        "source": "object",
        "history": "Int64",
        "start_time": "datetime",
        "close_time": "datetime",
        "status": "object",  # the closing event type, or "open"
        "events": "Int64",
        "last_event_id": "Int64",
        "activities": "Int64",
        "failed_activities": "Int64",
        "workflow_tasks": "Int64",
        "failed_workflow_tasks": "Int64",
        "nondeterminism": "boolean",
        "file_sha256": "object",
        "batch": "object",
    },
}


def file_schema(table: str) -> pa.Schema:
    """The Arrow schema of a table's Parquet files (partition columns excluded)."""
    return schema_of(TABLES[table], drop=PARTITIONS)


def is_dataset(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a dataset directory (it holds ``_toolkit/dataset.json``)."""
    return (Path(path) / MANIFEST_DIR / "dataset.json").is_file()


def table_files(dataset: str | os.PathLike[str], table: str) -> list[Path]:
    """The Parquet files of one table, in path order."""
    return sorted((Path(dataset) / table).rglob("*.parquet"))


def register_dataset(
    connection: duckdb.DuckDBPyConnection,
    dataset: str | os.PathLike[str],
    *,
    skip: set[str] | None = None,
) -> list[str]:
    """Create one view per table of ``dataset`` on ``connection``; return the names.

    A table with no files yet (no activity in any run, say) is still registered, empty, with
    its documented columns.
    """
    names = []
    for table in TABLES:
        if skip and table in skip:
            continue
        quoted = f'"{table}"'
        if table_files(dataset, table):
            pattern = str(Path(dataset) / table / "**" / "*.parquet").replace("'", "''")
            types = ", ".join(f"'{k}': '{v}'" for k, v in _PARTITION_TYPES.items())
            connection.execute(
                f"create view {quoted} as select * from read_parquet('{pattern}', "
                f"hive_partitioning = true, hive_types = {{{types}}}, union_by_name = true)"
            )
        else:
            empty = file_schema(table).empty_table()
            for name in PARTITIONS:
                kind = pa.date32() if name == "date" else pa.string()
                empty = empty.append_column(name, pa.nulls(0, kind))
            connection.register(table, empty)
        names.append(table)
    return names
