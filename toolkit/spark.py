"""Histories on Spark: the same decoder, the same tables and the same dataset, on many machines.

>>> from toolkit import spark as tks                                     # doctest: +SKIP
>>> events, errors = tks.read_histories(spark, "s3a://exports/2026/11/")  # doctest: +SKIP
>>> tables = tks.tables(spark, events)          # activities, workflow_tasks, runs
>>> report = tks.write_dataset(spark, "/mnt/exports/", "/mnt/histories.parquet")

Files are read with Spark's ``binaryFile`` source and decoded on the executors by
``mapInArrow`` with :func:`toolkit.datasets.writer.encode_files`, the function the
single-machine writer runs: one events frame per Arrow batch of files, then the tables, handed
back to Spark as Arrow with the dataset's schemas (:func:`toolkit.datasets.layout.file_schema`).
So a Spark DataFrame here has the columns and types of the dataset's Parquet files, and
``write_dataset`` writes the rows :func:`toolkit.write_dataset` writes.

What scales with what: decoding and table building scale with executor cores (one Arrow batch
of files per task at a time; memory per task is bounded by
``spark.sql.execution.arrow.maxRecordsPerBatch`` files); the driver holds one small row per run
(deduplication by run id against the dataset's manifest, the same rule as on one machine), a
writer lease for the whole job, and commits the batch through the protocol of
:mod:`toolkit.datasets.commit` (:mod:`toolkit.datasets.staged`), so the dataset folder must be a
path the driver can lock and rename files in (local disk, NFS v4) and the executors can write
to. Spark writes and single-machine writes may share a dataset at any time.

Spark needs Java 17+ and ``pip install 'temporal-agent-toolkit[spark]'`` (or the wheel on the
cluster: see the README).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote, urlparse

import pyarrow as pa

from toolkit.datasets.commit import LOCK_TIMEOUT, WriterLease, staging_dir
from toolkit.datasets.compact import compact_dataset
from toolkit.datasets.layout import TABLES, file_schema
from toolkit.datasets.manifest import Manifest, prepare_dataset
from toolkit.datasets.staged import commit_staged
from toolkit.datasets.tables import RUN_KEYS
from toolkit.datasets.writer import DatasetWrite, _errors_frame, _keep, encode_files
from toolkit.histories.reading.batch import ERROR_COLUMNS, _is_history_file

__all__ = ["SparkHistories", "read_histories", "tables", "write_dataset"]

#: What the decoding tasks emit: one row per (table or report, Arrow batch of files).
_ENCODED = pa.schema([("kind", pa.string()), ("ipc", pa.binary())])
_REPORTS = ("_facts", "_files", "_errors", "_skipped")


class SparkHistories(NamedTuple):
    """What :func:`read_histories` returns: events, and one row per file that failed."""

    events: Any
    errors: Any


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _local_name(uri: str) -> str:
    """``file:/x/y.json`` -> ``/x/y.json`` (as the single-machine reader names it); other
    schemes (``s3a://``, ``hdfs://``) stay URIs."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _to_ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def _encoder(
    namespace: str | None, read_options: dict[str, Any], known: frozenset[str], wanted: set[str]
) -> Any:
    """The ``mapInArrow`` function decoding ``binaryFile`` rows into the encoded stream."""

    def encode(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            files, skipped = [], []
            columns = batch.to_pydict()
            for uri, content in zip(columns["path"], columns["content"], strict=True):
                name = _local_name(uri)
                if not _is_history_file(Path(name)):
                    continue
                digest = hashlib.sha256(content).hexdigest()
                if digest in known:
                    skipped.append(name)
                else:
                    files.append((name, digest, content))
            encoded = encode_files(files, namespace, read_options)
            out = {name: t for name, t in encoded.tables.items() if name in wanted}
            out["_facts"] = pa.Table.from_pandas(encoded.facts, preserve_index=False)
            out["_files"] = pa.Table.from_pylist(encoded.file_rows)
            out["_errors"] = pa.Table.from_pandas(_errors_frame(encoded.failures),
                                                  preserve_index=False)  # fmt: skip
            out["_skipped"] = pa.table({"source": pa.array(skipped, pa.string())})
            kinds = [k for k, t in out.items() if t.num_rows or k in _REPORTS]
            yield pa.RecordBatch.from_pydict(
                {"kind": kinds, "ipc": [_to_ipc(out[k]) for k in kinds]}, schema=_ENCODED
            )

    return encode


def _exploder(table: str, keep: set[tuple[str, int]] | None, batch: str | None) -> Any:
    """The ``mapInArrow`` function turning encoded rows of ``table`` back into its rows."""
    schema = file_schema(table)

    def explode(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for encoded in batches:
            for data in encoded.column("ipc").to_pylist():
                rows = _from_ipc(data)
                if keep is not None:
                    keys = zip(rows.column("source").to_pylist(),
                               rows.column("history").to_pylist(), strict=True)  # fmt: skip
                    rows = rows.filter(pa.array([k in keep for k in keys], pa.bool_()))
                if batch is not None and table == "runs":
                    at = rows.schema.get_field_index("batch")
                    rows = rows.set_column(at, "batch", pa.array([batch] * len(rows), pa.string()))
                yield from rows.cast(schema).to_batches()

    return explode


def _encode(
    spark: Any,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    namespace: str | None,
    read_options: dict[str, Any],
    known: frozenset[str],
    wanted: Iterable[str],
) -> Any:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .load([os.fspath(p) for p in paths])
        .select("path", "content")
    )
    encoder = _encoder(namespace, read_options, known, set(wanted))
    return files.mapInArrow(encoder, _spark_schema(_ENCODED))


def _table(encoded: Any, name: str, keep: Any = None, batch: str | None = None) -> Any:
    rows = encoded.where(encoded.kind == name)
    return rows.mapInArrow(_exploder(name, keep, batch), _spark_schema(file_schema(name)))


def _reports(encoded: Any) -> dict[str, pa.Table]:
    """The report streams, collected on the driver in one job (one small row per run or
    file): kind -> table."""
    found: dict[str, list[pa.Table]] = {kind: [] for kind in _REPORTS}
    for row in encoded.where(encoded.kind.isin(list(_REPORTS))).collect():
        part = _from_ipc(row.ipc)
        if part.num_rows:
            found[row.kind].append(part)
    return {
        kind: pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})
        for kind, parts in found.items()
    }


def read_histories(
    spark: Any,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    namespace: str | None = None,
    **read_options: Any,
) -> SparkHistories:
    """History files -> a Spark DataFrame of events with the dataset's ``events`` schema.

    Parameters
    ----------
    spark
        A ``pyspark.sql.SparkSession``.
    paths
        Files or folders (searched recursively; the names :func:`toolkit.read_histories` takes
        in a folder), local or any URI Spark reads (``s3a://``, ``hdfs://``, ``abfss://``).
    namespace
        Namespace for histories whose source names none.
    **read_options
        Passed to :func:`toolkit.read_history` (``decode_payloads``, ``codec``).

    Returns
    -------
    SparkHistories
        ``events``: one row per event (columns and types of the dataset's ``events`` table:
        payloads and attributes as JSON text, times in UTC microseconds, plus ``namespace``,
        ``workflow_type`` and the run's start ``date``); ``errors``: ``source``,
        ``error_type``, ``message``, ``position`` of each file that could not be read. Both are
        lazy and share one decoding pass when ``events`` is cached.
    """
    encoded = _encode(spark, paths, namespace, read_options, frozenset(), ("events",))
    errors = encoded.where(encoded.kind == "_errors").mapInArrow(
        _error_rows, _spark_schema(_ERRORS)
    )
    return SparkHistories(_table(encoded, "events"), errors)


_ERRORS = pa.schema([(name, pa.string()) for name in ERROR_COLUMNS])


def _error_rows(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for encoded in batches:
        for data in encoded.column("ipc").to_pylist():
            rows = _from_ipc(data)
            if rows.num_rows:
                yield from rows.select(_ERRORS.names).cast(_ERRORS).to_batches()


def tables(spark: Any, events: Any) -> dict[str, Any]:
    """The ``activities``, ``workflow_tasks`` and ``runs`` tables of a Spark events DataFrame.

    Each run's events are grouped (``groupBy("source", "history")``) and handed to the
    single-machine builders (:func:`toolkit.activities`, :func:`toolkit.workflow_tasks`, the
    dataset's run facts); results have the dataset's schemas. ``events`` holds times in
    microseconds, so durations agree with the single-machine tables to the microsecond;
    ``runs.file_sha256`` is null (the events no longer know their file's bytes) and a run
    without a run id is keyed ``<source>#<history>``.
    """
    del spark  # the session is the events DataFrame's; taken for symmetry with the others
    grouped = events.groupBy(*RUN_KEYS)
    return {
        name: grouped.applyInArrow(_table_builder(name), _spark_schema(file_schema(name)))
        for name in ("activities", "workflow_tasks", "runs")
    }


def _table_builder(name: str) -> Any:
    from toolkit.datasets.arrow import to_arrow
    from toolkit.datasets.frames import events_from_arrow
    from toolkit.datasets.tables import batch_tables

    def build(rows: pa.Table) -> pa.Table:
        events = events_from_arrow(rows)
        namespace = rows.column("namespace")[0].as_py() if rows.num_rows else None
        frame = batch_tables(events, {}, "", namespace)[name]
        if name == "runs":
            keys = zip(frame["run_id"], frame["source"], frame["history"], strict=True)
            frame["run_key"] = [r if isinstance(r, str) and r else f"{s}#{h}" for r, s, h in keys]
            frame["file_sha256"] = None
            frame["batch"] = None
        return to_arrow(frame, TABLES[name]).cast(file_schema(name))

    return build


def write_dataset(
    spark: Any,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    dataset: str | os.PathLike[str],
    *,
    namespace: str | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
    compact: bool = False,
    **read_options: Any,
) -> DatasetWrite:
    """Add history files to a dataset with Spark: the layout, rows and deduplication of
    :func:`toolkit.write_dataset`, as one batch (one commit).

    The driver holds a writer lease for the whole job. Executors decode and build the tables
    once (the encoded result is cached); the driver collects one row per run and keeps one copy
    per run key against the dataset's manifest; the executors write the kept rows into the
    batch's staging folder (one Parquet file per table per Spark task); the driver then commits
    under the dataset's commit lock, deduplicating again against batches other writers
    committed meanwhile (:func:`toolkit.datasets.staged.commit_staged`). Until that commit
    nothing is visible; a driver killed half-way leaves leftovers that
    :func:`toolkit.check_dataset` reports and the next write removes.

    Parameters
    ----------
    spark
        A ``pyspark.sql.SparkSession``.
    paths
        Files or folders, as :func:`read_histories` takes them.
    dataset
        The dataset folder: a path the driver can lock files and rename files in (local disk,
        NFS v4) and the executors can write to.
    namespace
        Namespace for histories whose source names none.
    lock_timeout
        Seconds to wait for the commit lock at the commit (other writers commit batch by
        batch); when it runs out nothing is committed.
    compact
        Then merge the files of the dataset's small batches (Spark writes one file per table
        per task) with :func:`toolkit.compact_dataset` at its default target, on the driver.
    **read_options
        Passed to :func:`toolkit.read_history`.

    Returns
    -------
    DatasetWrite
        As :func:`toolkit.write_dataset` (a file whose bytes are repeated in the input counts
        as a duplicate run rather than a skipped file).
    """
    root = prepare_dataset(dataset).resolve()
    with WriterLease(root) as lease:
        manifest = Manifest(root)
        manifest.refresh()
        known = frozenset(manifest.files)
        encoded = _encode(spark, paths, namespace, read_options, known, TABLES).persist()
        try:
            report = _write(spark, encoded, lease, manifest, Path(dataset), lock_timeout)
        finally:
            encoded.unpersist()
    if compact:  # under a lease of its own: the write's lease is released, its batch committed
        compact_dataset(root, lock_timeout=lock_timeout)
    return report


def _write(
    spark: Any,
    encoded: Any,
    lease: WriterLease,
    manifest: Manifest,
    dataset: Path,
    lock_timeout: float,
) -> DatasetWrite:
    reports = _reports(encoded)
    facts = reports["_facts"].to_pandas()
    file_rows = reports["_files"]
    failures = reports["_errors"].to_pylist()
    skipped = reports["_skipped"].num_rows
    report = DatasetWrite(dataset)
    report.files = file_rows.num_rows + len(failures) + skipped
    report.files_skipped, report.files_failed = skipped, len(failures)
    report.errors = _errors_frame(failures)
    if not file_rows.num_rows:
        return report
    report.histories = len(facts)
    hashes = dict(zip(facts["source"], facts["file_sha256"], strict=True))
    # What to write, as the dataset is now; the counts come from the commit's second look.
    planned = _keep(facts, hashes, manifest, DatasetWrite(dataset), [])
    batch = lease.new_batch_id()
    keep = set(zip(planned["source"], planned["history"].astype("int64"), strict=True))
    staging = staging_dir(manifest.root, batch)
    try:
        _stage_tables(spark, encoded, keep, batch, staging)
        commit_staged(lease, manifest, batch, staging, planned, facts, file_rows, report,
                      lock_timeout)  # fmt: skip
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def _stage_tables(
    spark: Any, encoded: Any, keep: set[tuple[str, int]], batch: str, staging: Path
) -> None:
    """Each table's kept rows written by the executors into ``staging/<table>/``."""
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType", None)
    # Spark's default (INT96) is a legacy encoding; the dataset's times are UTC microseconds.
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    try:
        for name in TABLES:
            frame = _table(encoded, name, keep, batch)
            frame.write.option("compression", "zstd").parquet(str(staging / name))
    finally:
        if previous is None:
            spark.conf.unset("spark.sql.parquet.outputTimestampType")
        else:
            spark.conf.set("spark.sql.parquet.outputTimestampType", previous)
