"""Where a dataset keeps its tables, their schemas, and how readers open them.

Layout (plain Parquet files, read alike by DuckDB, Spark, Trino, polars, pyarrow)::

    DATASET/
      _toolkit/dataset.json                      format, tables, their Arrow schemas, sort order
      _toolkit/batches/<batch>/runs.parquet      manifest: the runs each batch committed
      _toolkit/batches/<batch>/files.parquet     manifest: the files each batch read (sha256)
      _toolkit/batches/<batch>/parts.json        manifest: its part files, rows and bytes
      _toolkit/batches/<batch>/replaces.json     a compaction's batch: the batches it rewrote
      _toolkit/writers/<writer>.lease            live writers (toolkit.datasets.commit)
      _toolkit/staging/<batch>/<table>/          a Spark write's files before its commit
      _toolkit/commit.lock                       taken by a writer for each batch
      events/part-<batch>-<n>.parquet            one file per batch (more for a huge batch or
                                                 a Spark write; toolkit.datasets.compact
                                                 merges small ones)
      activities/...   workflow_tasks/...   runs/...

No hive partition folders: engines type partition values by guessing from the path (a workflow
type ``123`` became an integer, ``2026-11-01`` a date, non-ASCII names came back
percent-encoded), so every column, ``namespace``, ``workflow_type`` and ``date`` (the UTC date
of the run's first event, Arrow ``date32``) included, is stored in the files with the declared
type of :data:`TABLES`, null or not. Rows are sorted by :data:`SORT_BY` and written in row
groups of :data:`ROW_GROUP_ROWS`, so the Parquet min/max statistics let every engine skip the
row groups of other dates, namespaces and workflow types (``where date = ...`` reads a
fraction of a file). Folders starting with ``_`` are ignored by Spark, Hive and pyarrow's
discovery.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from toolkit.datasets.arrow import schema_of
from toolkit.histories.events import COLUMNS
from toolkit.histories.tables.activity import ACTIVITY_COLUMNS
from toolkit.histories.tables.workflow_task import WORKFLOW_TASK_COLUMNS

if TYPE_CHECKING:  # DuckDB takes a sixth of a second to import; the writer's workers never query
    import duckdb

__all__ = [
    "FORMAT",
    "MANIFEST_DIR",
    "PARTITIONS",
    "ROW_GROUP_ROWS",
    "RUN_COLUMNS",
    "SORT_BY",
    "TABLES",
    "file_schema",
    "is_dataset",
    "register_dataset",
    "table_files",
]

FORMAT = "toolkit.dataset/2"
MANIFEST_DIR = "_toolkit"
#: Hive partition columns: none (see above); kept so code asking for them keeps working.
PARTITIONS: tuple[str, ...] = ()
#: Row order inside every file (then each run's own order: event id, scheduling, ...).
SORT_BY: tuple[str, ...] = ("date", "namespace", "workflow_type", "source", "history")
ROW_GROUP_ROWS = 64 * 1024
#: Columns every table carries: what the run is, and its UTC start date.
RUN_COLUMNS: dict[str, str] = {"namespace": "object", "workflow_type": "object", "date": "date"}


def _kinds(columns: dict[str, str], json_columns: Iterable[str]) -> dict[str, str]:
    as_json = set(json_columns)
    out = {}
    for name, dtype in {**columns, **RUN_COLUMNS}.items():
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
    "runs": _kinds(
        {
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
        (),
    ),
}


def file_schema(table: str) -> pa.Schema:
    """The Arrow schema of a table's Parquet files (every file has exactly this schema)."""
    described = {"toolkit.table": table, "toolkit.format": FORMAT}
    return schema_of(TABLES[table]).with_metadata(described)


def is_dataset(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a dataset directory (it holds ``_toolkit/dataset.json``)."""
    return (Path(path) / MANIFEST_DIR / "dataset.json").is_file()


def table_files(dataset: str | os.PathLike[str], table: str) -> list[Path]:
    """The Parquet files of one table, in path order."""
    return sorted((Path(dataset) / table).glob("*.parquet"))


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
    from toolkit.datasets.commit import committed_batches, committed_parts  # (imports us)

    # One list of committed batches for every table: the views agree with each other even
    # while writers commit.
    committed = committed_batches(Path(dataset))
    names = []
    for table in TABLES:
        if skip and table in skip:
            continue
        quoted = f'"{table}"'
        # Only parts of committed batches: a batch being written (or left by a crash) is not
        # part of the dataset yet.
        parts = committed_parts(dataset, table, committed)
        if parts:
            listed = ", ".join("'" + str(p).replace("'", "''") + "'" for p in parts)
            # One schema in every file: no union_by_name (it reads every footer), and no hive
            # columns from folder names above the dataset.
            connection.execute(
                f"create view {quoted} as select * from read_parquet([{listed}], "
                "hive_partitioning = false)"
            )
        else:
            connection.register(table, file_schema(table).empty_table())
        names.append(table)
    return names
