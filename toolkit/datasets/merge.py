"""Parquet parts merged into one file in the writer's row order, a few thousand rows at a time.

Compaction used to read a chunk's parts whole, sort them and write the result: memory grew with
the chunk (about 4 GB to compact the events of 20,000 small histories, 27 MiB of zstd Parquet).
Every part the writer makes is already sorted by :data:`~toolkit.datasets.layout.SORT_BY`, and
the sort keys end with the run (``source``, ``history``), so each run's rows are one contiguous
range of one part. The merge therefore needs only each part's runs and keys (the key columns,
read one part at a time), the order of all runs (a sort of one row per run), and then one
forward pass over every part, streamed in batches, copying runs to the output in that order.

A part that is not sorted (a Spark task writes the tables of several encoded batches one after
another) is read whole and sorted first: one part fits in memory, since its writer held it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from toolkit.datasets.layout import ROW_GROUP_ROWS, SORT_BY

__all__ = ["conformed", "in_schema", "merge_sorted", "sort_rows"]

#: Rows read from a part at a time, at most: every part of a chunk is open at once, so together
#: they hold about :data:`OPEN_ROWS` rows (each part at least 256).
BATCH_ROWS = 4096
OPEN_ROWS = 64 * 1024
_KEY_ORDER = [(key, "ascending") for key in SORT_BY]


def conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` in ``schema``: columns a part written before they existed lacks are null
    (readers fill them from the rows' other columns, :mod:`toolkit.datasets.frames`)."""
    for field in schema:
        if field.name not in table.column_names:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table.select(schema.names).cast(schema)


def sort_rows(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows in the writer's order: by :data:`SORT_BY`, each run's rows kept in their order
    (the sort is stable and every row of a run has the same sort keys)."""
    return in_schema(table.take(pc.sort_indices(table, sort_keys=_KEY_ORDER)), schema)


def in_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s metadata, :func:`conformed` where its columns differ."""
    if table.schema.remove_metadata() == schema.remove_metadata():
        return table.replace_schema_metadata(schema.metadata)  # no copy of the columns
    return conformed(table, schema)


class _Part:
    """One part: where its runs start and end, and a forward-only reader of its rows."""

    def __init__(self, path: Path, schema: pa.Schema, batch_rows: int) -> None:
        self.path = path
        self._schema = schema
        self._batch_rows = batch_rows
        keys = pq.read_table(path, columns=list(SORT_BY), schema=_keys_schema(schema))
        self._whole: pa.Table | None = None
        if not _is_sorted(keys):
            self._whole = sort_rows(pq.read_table(path, schema=schema), schema)
            keys = self._whole.select(list(SORT_BY))
        starts = _run_starts(keys)
        stops = np.append(starts[1:], keys.num_rows).astype(np.int64)
        self.runs = keys.take(starts).append_column("start", pa.array(starts))
        self.runs = self.runs.append_column("stop", pa.array(stops))
        self._batches: Iterator[pa.RecordBatch] | None = None
        self._current: pa.RecordBatch | None = None
        self._offset = 0

    def _next_batch(self) -> pa.RecordBatch:
        if self._batches is None:
            if self._whole is not None:
                self._batches = iter(self._whole.to_batches(max_chunksize=self._batch_rows))
            else:
                file = pq.ParquetFile(self.path)
                self._batches = file.iter_batches(batch_size=self._batch_rows, use_threads=False)
        batch = next(self._batches)
        if batch.schema.remove_metadata() != self._schema.remove_metadata():
            table = conformed(pa.Table.from_batches([batch]), self._schema)
            batch = table.combine_chunks().to_batches()[0]
        return batch

    def take(self, count: int) -> list[pa.RecordBatch]:
        """The next ``count`` rows (slices of the batches read; nothing is copied)."""
        out = []
        while count:
            if self._current is None or self._offset == self._current.num_rows:
                self._current, self._offset = self._next_batch(), 0
            n = min(count, self._current.num_rows - self._offset)
            out.append(self._current.slice(self._offset, n))
            self._offset += n
            count -= n
        return out


def _keys_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([schema.field(key) for key in SORT_BY])


def _is_sorted(keys: pa.Table) -> bool:
    order = pc.sort_indices(keys, sort_keys=_KEY_ORDER).to_numpy()
    return bool((order == np.arange(len(order))).all())


def _run_starts(keys: pa.Table) -> np.ndarray:
    """First row of each stretch of rows with equal keys (a run, in a sorted part)."""
    n = keys.num_rows
    if not n:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for column in keys.columns:
        codes = pc.dictionary_encode(column).combine_chunks().indices
        codes = pc.fill_null(codes, -1).to_numpy()
        change[1:] |= codes[1:] != codes[:-1]
    return np.flatnonzero(change).astype(np.int64)


def merge_sorted(paths: list[Path], schema: pa.Schema, out: Path) -> int:
    """Write the rows of ``paths`` to ``out`` in the writer's order; return the rows written.

    Memory: one part's key columns while its runs are found, then about :data:`OPEN_ROWS`
    rows read ahead over all parts, plus one output row group.
    """
    batch_rows = max(256, min(BATCH_ROWS, OPEN_ROWS // max(1, len(paths))))
    parts = [_Part(path, schema, batch_rows) for path in paths]
    if not parts:
        pq.write_table(schema.empty_table(), out, compression="zstd")
        return 0
    runs = pa.concat_tables(
        part.runs.append_column("part", pa.array(np.full(part.runs.num_rows, i, np.int64)))
        for i, part in enumerate(parts)
    )
    # Ties (one run in two parts: never, the writer deduplicates runs) go by part, then row.
    order = pc.sort_indices(runs, sort_keys=[*_KEY_ORDER, ("part", "ascending"),
                                             ("start", "ascending")])  # fmt: skip
    visit = runs.select(["part", "start", "stop"]).take(order)
    part, start, stop = (visit.column(c).to_numpy() for c in range(3))
    # Consecutive runs of one part are consecutive rows of it: copied as one stretch.
    first = np.flatnonzero(np.diff(part, prepend=-1) != 0)
    lengths = np.add.reduceat(stop - start, first) if len(first) else first
    written = 0
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        for source, count in zip(part[first].tolist(), lengths.tolist(), strict=True):
            pending += parts[source].take(count)
            pending_rows += count
            while pending_rows >= ROW_GROUP_ROWS:
                table = pa.Table.from_batches(pending, schema)
                writer.write_table(table.slice(0, ROW_GROUP_ROWS), row_group_size=ROW_GROUP_ROWS)
                rest = table.slice(ROW_GROUP_ROWS)
                pending, pending_rows = rest.to_batches(), rest.num_rows
                written += ROW_GROUP_ROWS
        if pending_rows or not written:
            last = pa.Table.from_batches(pending, schema)
            writer.write_table(last, row_group_size=ROW_GROUP_ROWS)
            written += pending_rows
    return written
