"""``write_dataset``: histories (files, folders, Cloud export trees) -> a Parquet dataset.

Files are read in batches; a batch is decoded into one events frame and its tables are built
once (in worker processes when there are several cores, each history's event fields decoded
once for all of them: :mod:`toolkit.histories.columns.event_fields`), then deduplicated (by run
id: Cloud exports deliver at least once) against itself and against what the dataset already
holds, written as one Parquet file per table (a worker hands back each table as its file's
bytes) and committed in the manifest (:mod:`toolkit.datasets.manifest`). A file whose bytes
were already written (same sha256) is not read again, so writing the same exports twice adds
nothing.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.datasets.arrow import to_arrow
from toolkit.datasets.check import check_dataset, drop_batches
from toolkit.datasets.commit import (
    LOCK_TIMEOUT,
    BatchParts,
    WriterLease,
    commit_batch,
    commit_lock,
    remove_leftovers,
)
from toolkit.datasets.compact import compact_dataset
from toolkit.datasets.json_cells import Piece
from toolkit.datasets.layout import ROW_GROUP_ROWS, TABLES, file_schema
from toolkit.datasets.manifest import FILES_SCHEMA, RUNS_SCHEMA, Manifest, prepare_dataset
from toolkit.datasets.merge import in_schema, sort_rows
from toolkit.datasets.tables import RUN_KEYS, batch_tables, run_facts, run_key
from toolkit.errors import HistoryFormatError
from toolkit.gc_pause import paused_gc
from toolkit.histories.columns.event_fields import shared_event_fields
from toolkit.histories.events import frame_from_parts
from toolkit.histories.reading.batch import ERROR_COLUMNS, error_row, find_history_files
from toolkit.histories.reading.pool import progress_bar, run_chunks, start_early
from toolkit.histories.reading.read import read_history_parts, read_many_parts

__all__ = ["DatasetWrite", "EncodedBatch", "encode_files", "write_dataset"]

_CONFLICT_COLUMNS = ["run_key", "source", "history", "events", "kept_events"]


@dataclass
class DatasetWrite:
    """What one :func:`write_dataset` call did.

    ``runs_duplicate`` counts copies of runs already written (or repeated in the input) with the
    same number of events and last event id; ``runs_conflicting`` counts copies that differ (an
    open run exported again later, say): the first copy stays, the others are listed in
    ``conflicts``. Files that could not be read are listed in ``errors``. Batches found damaged
    when the write started (parts missing: :func:`toolkit.check_dataset`) are un-claimed and
    their source files written again (``repaired_batches``); sources no longer there are listed
    in ``unrepairable``.
    """

    dataset: Path
    files: int = 0
    files_skipped: int = 0
    files_failed: int = 0
    histories: int = 0
    runs_written: int = 0
    runs_duplicate: int = 0
    runs_conflicting: int = 0
    events_written: int = 0
    batches: list[str] = field(default_factory=list)
    repaired_batches: list[str] = field(default_factory=list)
    unrepairable: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["source", "reason"])
    )
    errors: pd.DataFrame = field(default_factory=lambda: _errors_frame([]))
    conflicts: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=_CONFLICT_COLUMNS)
    )

    def __str__(self) -> str:
        return (
            f"{self.dataset}: {self.files} files ({self.files_skipped} already written, "
            f"{self.files_failed} unreadable), {self.histories} histories -> "
            f"{self.runs_written} runs written ({self.events_written} events), "
            f"{self.runs_duplicate} duplicates skipped, {self.runs_conflicting} conflicting copies"
        )


def _errors_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(ERROR_COLUMNS)).astype(ERROR_COLUMNS)


def write_dataset(
    histories: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    dataset: str | os.PathLike[str],
    *,
    namespace: str | None = None,
    batch_files: int = 250,
    errors: str = "collect",
    progress: bool | None = None,
    workers: int | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
    compact: bool = False,
    **read_options: Any,
) -> DatasetWrite:
    """Add histories to a Parquet dataset (created if absent), deduplicated by run id.

    Parameters
    ----------
    histories
        A history file, a folder (searched recursively, Cloud export trees included), a glob,
        or a list of them (see :func:`toolkit.read_histories`).
    dataset
        The dataset folder (layout and schemas in :mod:`toolkit.datasets`).
    namespace
        Namespace for histories whose source names none (Cloud export paths do).
    batch_files
        Files read per batch; each batch is one commit and one Parquet file per table, and
        memory is bounded by it (a peak of 0.32 GB per process measured for 250 files of 80
        events, 0.6 GB for 1,000, 1.03 GB for 2,000). A fresh worker faults in its whole
        heap (a batch's): at 1,000 files that cost more CPU than committing four times as
        many batches does (``benchmarks/bench_datasets.py``).
    workers
        Processes decoding batches (``None``: one per core); the parent hashes files,
        deduplicates runs and commits batches in order. See :mod:`toolkit.histories.reading.pool`.
    errors
        ``"collect"`` (default): unreadable files are listed in ``errors``; ``"raise"``: the
        first one raises.
    progress
        Show a progress bar; by default for more than 100 files.
    lock_timeout
        Seconds to wait for the dataset's commit lock while another writer commits a batch
        (writers take turns batch by batch; :mod:`toolkit.datasets.commit`). When it runs out
        the write raises before writing its batch.
    compact
        Then merge the files of the dataset's small batches (every incremental write adds one
        file per table) with :func:`toolkit.compact_dataset` at its default target.
    **read_options
        Passed to :func:`toolkit.read_history` (``codec``, ``decode_payloads``).

    Returns
    -------
    DatasetWrite
        Counts, batch ids, unreadable files and conflicting copies.

    Raises
    ------
    toolkit.errors.HistoryFormatError
        When ``histories`` names no history file (or, with ``errors="raise"``, a file is bad).
    toolkit.errors.ToolkitError
        When ``dataset`` is a non-empty folder that is not a dataset, or the commit lock cannot
        be taken (in time, or at all: a file system without locks).
    """
    if errors not in ("collect", "raise"):
        raise ValueError("errors must be 'collect' or 'raise'")
    if batch_files < 1:
        raise ValueError("batch_files must be at least 1")
    start_early(workers)  # the pool's server imports the toolkit while files are found, hashed
    files = find_history_files(histories)
    missing = [p for p in files if not p.exists()]
    if missing:
        raise HistoryFormatError(
            str(missing[0]), "no such file or directory", expected="history files or a folder"
        )
    if not files:
        raise HistoryFormatError(
            str(histories), "no history files found", expected="history files, a folder or a glob"
        )
    root = prepare_dataset(dataset)
    report = DatasetWrite(root, files=len(files))
    failures: list[dict[str, Any]] = []
    conflicts: list[dict[str, Any]] = []
    with WriterLease(root) as lease:
        files += _recover(root, files, lock_timeout, report)
        manifest = Manifest(root)
        manifest.refresh()  # files already written are skipped without being read
        show = len(files) > 100 if progress is None else progress
        with progress_bar(total=len(files), disable=not show, desc="export", unit="file") as bar:
            chunks = _prepared(files, batch_files, manifest, report, bar)
            args = (namespace, read_options, True)  # tables come back as Parquet bytes
            for encoded in run_chunks(encode_files, chunks, args, workers):
                if errors == "raise" and encoded.failures:
                    # Errors do not cross processes: read the file again here to raise it.
                    read_history_parts(Path(encoded.failures[0]["source"]), **read_options)
                failures += encoded.failures
                _write_batch(encoded, manifest, lease, lock_timeout, report, conflicts)
                bar.update(len(encoded.file_rows) + len(encoded.failures))
    report.files_failed = len(failures)
    report.errors = _errors_frame(failures)
    report.conflicts = pd.DataFrame(conflicts, columns=_CONFLICT_COLUMNS)
    if compact:  # under a lease of its own, once this write's batches are committed
        compact_dataset(root, lock_timeout=lock_timeout)
    return report


@dataclass
class ParquetPart:
    """A table already written as a Parquet file (its bytes), as :func:`_write_table` would.

    What a worker sends back instead of the Arrow table, a fortieth of its size: pickling the
    90 MB of tables of 1,000 histories cost the worker more than writing the files, and the
    parent unpickled them. The parent writes the bytes as they are, or reads them back for the
    odd batch whose runs it must filter.
    """

    data: bytes
    num_rows: int

    @classmethod
    def of(cls, table: pa.Table) -> ParquetPart:
        """``table`` written to Parquet in memory."""
        sink = pa.BufferOutputStream()
        _to_parquet(table, sink)
        return cls(sink.getvalue().to_pybytes(), table.num_rows)

    def read(self) -> pa.Table:
        """The table again (schema, metadata and rows as written)."""
        return pq.read_table(pa.BufferReader(self.data)).combine_chunks()


@dataclass
class EncodedBatch:
    """A chunk of files decoded into the dataset's tables (before deduplication): what a
    worker process hands back. Tables are Arrow, with :func:`file_schema` and sorted, or (but
    ``runs``, whose rows get their batch id when committed) their :class:`ParquetPart`."""

    tables: dict[str, pa.Table | ParquetPart]
    facts: pd.DataFrame
    failures: list[dict[str, Any]]
    file_rows: list[dict[str, Any]]
    histories: int = 0


def encode_files(
    files: list[tuple[Path, str]] | list[tuple[str, str, bytes]],
    namespace: str | None,
    read_options: dict[str, Any],
    parquet: bool = False,
) -> EncodedBatch:
    """Decode files into one events frame, then the four tables, once.

    ``files`` are ``(path, sha256)`` (read here) or ``(name, sha256, content)`` (the bytes of
    a file named ``name``: :mod:`toolkit.spark`). Runs in a worker process when
    ``write_dataset`` has several; reads nothing from the dataset (deduplication against it
    happens when the batch is committed). ``parquet``: the tables but ``runs`` as
    :class:`ParquetPart`.
    """
    failures: list[dict[str, Any]] = []
    file_rows: list[dict[str, Any]] = []
    hashes: dict[str, str] = {}
    with paused_gc():
        sources = [io.BytesIO(content[0]) if content else Path(path)
                   for path, _, *content in files]  # fmt: skip
        names = [str(path) for path, *_ in files]
        parts, errors = read_many_parts(sources, names, **read_options)
        histories: dict[str, int] = {}
        for part in parts:
            for facts in part.facts:
                histories[facts[0]] = histories.get(facts[0], 0) + 1
        for index, (path, digest, *content) in enumerate(files):
            if index in errors:
                failures.append(error_row(path, errors[index]))
                continue
            size = len(content[0]) if content else Path(path).stat().st_size
            hashes[str(path)] = digest
            file_rows.append({"file_sha256": digest, "source": str(path), "size": size,
                              "histories": histories.get(str(path), 0)})  # fmt: skip
        events = frame_from_parts(parts)
        if events.empty:
            return EncodedBatch({}, run_facts(events), failures, file_rows)
        # Each history's event fields are decoded once, for the tables and the JSON text.
        with shared_event_fields():
            # Rows in the files' order already (but the runs', a row per run): no Arrow sort
            # moving the tables' text.
            frames = batch_tables(events, hashes, "", namespace, ordered=True)
            memo: dict[int, Piece] = {}  # the events' and activities' payloads are one cell
            tables: dict[str, pa.Table | ParquetPart] = {}
            for name, frame in frames.items():
                table, schema = to_arrow(frame, TABLES[name], memo=memo), file_schema(name)
                place = sort_rows if name == "runs" else in_schema
                tables[name] = place(table, schema)
    if parquet:
        tables = {name: table if name == "runs" else ParquetPart.of(table)
                  for name, table in tables.items()}  # fmt: skip
    # The runs table holds each history's facts already (as run_facts gives them, in order).
    facts = frames["runs"][[*RUN_KEYS, "run_id", "events", "last_event_id", "file_sha256"]]
    return EncodedBatch(tables, facts, failures, file_rows, sum(histories.values()))


def _prepared(
    paths: list[Path],
    batch_files: int,
    manifest: Manifest,
    report: DatasetWrite,
    bar: Any,
) -> Iterator[list[tuple[Path, str]]]:
    """Chunks of ``(path, sha256)`` still to write: files whose bytes the dataset (or this
    write) already holds are counted as skipped and never decoded."""
    handed: set[str] = set()
    chunk: list[tuple[Path, str]] = []
    for path in paths:
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:  # gone or unreadable: decoding it reports the error in the batch
            digest = ""
        if digest and (digest in manifest.files or digest in handed):
            report.files_skipped += 1
            bar.update(1)
            continue
        handed.add(digest)
        chunk.append((path, digest))
        if len(chunk) == batch_files:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _keep(
    facts: pd.DataFrame,
    hashes: dict[str, str],
    manifest: Manifest,
    report: DatasetWrite,
    conflicts: list[dict[str, Any]],
) -> pd.DataFrame:
    """The histories of a batch to write: one copy per run key, none already written."""
    identities = zip(facts["run_id"], facts["source"], facts["history"], strict=True)
    facts = facts.assign(run_key=[run_key(r, hashes.get(s), h) for r, s, h in identities])
    # The common case, decided for all rows at once: a run met once, not in the dataset yet.
    # A dict lookup per run (Series.isin converted every key the dataset holds, for every
    # batch: quadratic in the runs written).
    runs = manifest.runs
    written = np.fromiter((key in runs for key in facts["run_key"].tolist()), bool, len(facts))
    alone = ~facts["run_key"].duplicated(keep=False) & ~written
    if alone.all():
        return facts
    # Within the batch the most complete copy wins (an open run exported again when closed).
    ranked = facts[~alone].sort_values(["run_key", "events"], ascending=[True, False],
                                       kind="stable")  # fmt: skip
    kept_rows = []
    for key, group in ranked.groupby("run_key", sort=False):
        best = group.iloc[0]
        known = manifest.runs.get(key)
        reference = known if known is not None else (best["events"], best["last_event_id"])
        for position, (_, row) in enumerate(group.iterrows()):
            if known is None and position == 0:
                kept_rows.append(row)
            elif (row["events"], row["last_event_id"]) == tuple(reference):
                report.runs_duplicate += 1
            else:
                report.runs_conflicting += 1
                conflicts.append({"run_key": key, "source": row["source"],
                                  "history": int(row["history"]), "events": int(row["events"]),
                                  "kept_events": int(reference[0])})  # fmt: skip
    if not kept_rows:
        return facts[alone]
    return pd.concat([facts[alone], pd.DataFrame(kept_rows, columns=facts.columns)])


def _recover(
    root: Path, files: list[Path], lock_timeout: float, report: DatasetWrite
) -> list[Path]:
    """Remove a crashed writer's leftovers and un-claim batches whose rows are damaged (the
    check of :func:`toolkit.check_dataset`); return their source files still present, to be
    written again with this write's own files."""
    with commit_lock(root, lock_timeout):
        remove_leftovers(root)
        found = check_dataset(root, deep=False)
        if found.ok:
            return []
        dropped = drop_batches(root, found.broken_batches())
    report.repaired_batches = list(dropped.batches)
    report.unrepairable = dropped.unrepairable
    known = {p.resolve() for p in files}
    return [p for p in dropped.sources if p.resolve() not in known]


def _write_batch(
    encoded: EncodedBatch,
    manifest: Manifest,
    lease: WriterLease,
    lock_timeout: float,
    report: DatasetWrite,
    conflicts: list[dict[str, Any]],
) -> None:
    """Deduplicate an encoded batch against the dataset, write its parts, commit it.

    Files were decoded outside the lock (other writers commit meanwhile); deduplication, the
    parts and the commit happen under it, against everything committed until then.
    """
    report.histories += encoded.histories
    if not encoded.file_rows:
        return
    with commit_lock(manifest.root, lock_timeout):
        manifest.refresh()
        batch = lease.new_batch_id()
        parts = BatchParts(manifest.root, batch)
        try:
            runs = _write_parts(encoded, manifest, batch, parts, report, conflicts)
            files = pa.Table.from_pylist(encoded.file_rows, schema=FILES_SCHEMA)
            commit_batch(lease, parts, {"runs.parquet": runs, "files.parquet": files})
        except BaseException:
            parts.remove()  # never committed: leave nothing behind
            raise
    manifest.batches.add(batch)
    manifest.remember(runs)
    manifest.files.update(files.column("file_sha256").to_pylist())
    report.batches.append(batch)


def _write_parts(
    encoded: EncodedBatch,
    manifest: Manifest,
    batch: str,
    parts: BatchParts,
    report: DatasetWrite,
    conflicts: list[dict[str, Any]],
) -> pa.Table:
    """Write the runs of ``encoded`` the dataset does not hold yet; return the runs manifest."""
    hashes = dict(zip(encoded.facts["source"], encoded.facts["file_sha256"], strict=True))
    kept = _keep(encoded.facts, hashes, manifest, report, conflicts)
    runs_manifest = RUNS_SCHEMA.empty_table()
    if len(kept):
        wanted = set(zip(kept["source"], kept["history"].astype("int64"), strict=True))
        filtered = len(kept) < len(encoded.facts)
        for name, table in encoded.tables.items():
            if isinstance(table, ParquetPart) and (filtered or name == "runs"):
                table = table.read()  # rows to change: back to Arrow
            if filtered:
                table = table.filter(_rows_of(table, wanted))
            if name == "runs":
                table = table.set_column(
                    table.schema.get_field_index("batch"), "batch",
                    pa.array([batch] * len(table), pa.string()),
                )  # fmt: skip
                runs_manifest = table.select(RUNS_SCHEMA.names).cast(RUNS_SCHEMA)
                report.runs_written += len(table)
            elif name == "events":
                report.events_written += table.num_rows
            _write_table(parts, name, table, batch)
    return runs_manifest


def _rows_of(table: pa.Table, wanted: set[tuple[str, int]]) -> pa.Array:
    keys = zip(table.column("source").to_pylist(), table.column("history").to_pylist(),
               strict=True)  # fmt: skip
    return pa.array([key in wanted for key in keys], pa.bool_())


def _write_table(
    parts: BatchParts, name: str, table: pa.Table | ParquetPart, batch: str
) -> None:
    """One Parquet file per table per batch, recorded in the batch's parts list (a part of a
    batch that never commits is removed once its writer is gone:
    :mod:`toolkit.datasets.commit`)."""
    if not table.num_rows:
        return
    folder = parts.root / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"part-{batch}-0.parquet"
    if isinstance(table, ParquetPart):
        path.write_bytes(table.data)
    else:
        _to_parquet(table, path)
    parts.add(name, path, table.num_rows)


def _to_parquet(table: pa.Table, where: str | os.PathLike[str] | pa.NativeFile) -> None:
    """The dataset's Parquet settings, for the parent's files and the workers' bytes alike."""
    pq.write_table(table, where, row_group_size=ROW_GROUP_ROWS, compression="zstd")
