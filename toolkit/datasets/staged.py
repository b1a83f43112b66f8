"""Committing a batch whose parts another engine wrote: :mod:`toolkit.spark`'s executors.

The single-machine writer deduplicates, writes and commits a batch all under the commit lock.
A Spark job cannot hold the lock while its executors decode and write (that takes minutes and
would stall every other writer), so its driver:

1. holds a writer lease (:class:`toolkit.datasets.commit.WriterLease`) for the whole job;
2. deduplicates against the dataset as it is when the job starts and has the executors write
   the kept rows into ``_toolkit/staging/<batch>/<table>/`` (the batch id names the lease, so no
   other writer's cleanup touches the staging folder while the driver lives);
3. calls :func:`commit_staged`, which under the commit lock deduplicates again against what
   other writers committed meanwhile, drops those runs' rows from the staged files, renames the
   files into the table folders as the batch's parts, checks their rows against the runs it
   claims and commits with the protocol of :mod:`toolkit.datasets.commit` (fsync, one atomic
   rename, refused if the lease was taken for dead).

A driver that dies anywhere leaves a staging folder and maybe uncommitted parts named after its
lease: leftovers that :func:`toolkit.check_dataset` reports and the next write or
:func:`toolkit.repair_dataset` removes once the lease is released.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.datasets.commit import BatchParts, WriterLease, commit_batch, commit_lock
from toolkit.datasets.layout import ROW_GROUP_ROWS, TABLES
from toolkit.datasets.manifest import FILES_SCHEMA, RUNS_SCHEMA, Manifest
from toolkit.datasets.writer import DatasetWrite, _keep
from toolkit.errors import ToolkitError

__all__ = ["commit_staged"]


def _move(staged: Path, target: Path, drop: set[tuple[str, int]]) -> int:
    """Move a staged part to ``target`` without the rows of runs in ``drop``; its row count."""
    if not drop:
        rows = pq.read_metadata(staged).num_rows
        staged.replace(target)
        return rows
    table = pq.read_table(staged)
    keys = zip(table.column("source").to_pylist(), table.column("history").to_pylist(),
               strict=True)  # fmt: skip
    table = table.filter(pa.array([key not in drop for key in keys], pa.bool_()))
    pq.write_table(table, target, row_group_size=ROW_GROUP_ROWS, compression="zstd")
    staged.unlink()
    return table.num_rows


def commit_staged(
    lease: WriterLease,
    manifest: Manifest,
    batch: str,
    staging: Path,
    planned: pd.DataFrame,
    facts: pd.DataFrame,
    file_rows: pa.Table,
    report: DatasetWrite,
    lock_timeout: float,
) -> None:
    """Commit the staged parts of ``batch`` (see the module).

    Parameters
    ----------
    planned
        The runs the executors wrote (``run_key``, ``source``, ``history``, ...): what
        :func:`toolkit.datasets.writer._keep` kept when the job started.
    facts
        One row per history read (``source``, ``history``, ``run_id``, ``events``,
        ``last_event_id``, ``file_sha256``), deduplicated again here.
    file_rows
        The files read (``files.parquet`` of the batch).
    report
        Filled with the runs written, duplicates and conflicts as of the commit.

    Raises
    ------
    toolkit.errors.ToolkitError
        When the staged files hold other rows than the runs claimed, the commit lock cannot be
        taken in time, or the lease was taken for dead; nothing of the batch is then kept.
    """
    root = manifest.root
    hashes = dict(zip(facts["source"], facts["file_sha256"], strict=True))
    parts = BatchParts(root, batch)
    with commit_lock(root, lock_timeout):
        manifest.refresh()
        conflicts: list[dict[str, Any]] = []
        kept = _keep(facts, hashes, manifest, report, conflicts)
        # Only staged runs can be claimed (a run a repair dropped meanwhile is its to rewrite).
        kept = kept[kept["run_key"].isin(set(planned["run_key"]))]
        gone = planned[~planned["run_key"].isin(set(kept["run_key"]))]
        drop = set(zip(gone["source"], gone["history"].astype("int64"), strict=True))
        try:
            found = {table: 0 for table in TABLES}
            for table in TABLES:
                staged = sorted((staging / table).glob("part-*.parquet"))
                (root / table).mkdir(parents=True, exist_ok=True)
                for number, part in enumerate(staged):
                    target = root / table / f"part-{batch}-{number}.parquet"
                    rows = _move(part, target, drop)
                    if rows:
                        parts.add(table, target, rows)
                        found[table] += rows
                    else:
                        target.unlink()
            claimed = {"runs": len(kept), "events": int(kept["events"].sum())}
            if {t: found[t] for t in claimed} != claimed:
                raise ToolkitError(
                    f"{staging}: the staged parts of batch {batch} hold {found} rows where the "
                    f"batch claims {claimed}; expected every kept run's rows (files lost "
                    "between the executors and the commit?); nothing was committed, rerun"
                )
            runs = pa.Table.from_pandas(
                kept[RUNS_SCHEMA.names].astype({"events": "int64", "last_event_id": "int64"}),
                schema=RUNS_SCHEMA, preserve_index=False,
            )  # fmt: skip
            files = file_rows.select(FILES_SCHEMA.names).cast(FILES_SCHEMA)
            commit_batch(lease, parts, {"runs.parquet": runs, "files.parquet": files})
        except BaseException:
            parts.remove()
            raise
    manifest.batches.add(batch)
    manifest.remember(runs)
    manifest.files.update(files.column("file_sha256").to_pylist())
    report.runs_written += len(kept)
    report.events_written += claimed["events"]
    report.conflicts = pd.DataFrame(conflicts, columns=report.conflicts.columns)
    report.batches.append(batch)
