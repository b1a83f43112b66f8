"""The dataset's manifest: which runs and files the committed batches hold.

A batch writes its Parquet parts (``part-<batch>-<n>``) and commits by renaming its manifest
folder into ``_toolkit/batches/<batch>/`` (``runs.parquet``, ``files.parquet``, ``parts.json``).
How concurrent writers take turns, and when leftovers of a crashed writer are removed, is
:mod:`toolkit.datasets.commit`; what a reader can rely on is :mod:`toolkit.datasets.check`.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.datasets.commit import batches_dir, commit_lock, committed_batches
from toolkit.datasets.layout import FORMAT, MANIFEST_DIR, PARTITIONS, TABLES, file_schema
from toolkit.errors import ToolkitError

__all__ = [
    "FILES_SCHEMA",
    "RUNS_SCHEMA",
    "Manifest",
    "open_manifest",
    "prepare_dataset",
]

RUNS_SCHEMA = pa.schema(
    [("run_key", pa.string()), ("events", pa.int64()), ("last_event_id", pa.int64()),
     ("file_sha256", pa.string()), ("source", pa.string())]
)  # fmt: skip
FILES_SCHEMA = pa.schema(
    [("file_sha256", pa.string()), ("source", pa.string()), ("size", pa.int64()),
     ("histories", pa.int64())]
)  # fmt: skip


#: How many times :meth:`Manifest.refresh` lists the batches again when one vanished meanwhile.
_REFRESH_TRIES = 20


@dataclass
class Manifest:
    """What a dataset holds: run key -> (events, last event id), file hashes, batches read."""

    root: Path
    runs: dict[str, tuple[int, int]] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)
    batches: set[str] = field(default_factory=set)

    def refresh(self) -> None:
        """Read the batches committed since the last look (all of them if one was dropped).

        A compaction running meanwhile commits the batch that merges others, then removes
        them: a batch listed here may be gone when its manifest is read. Then the batches are
        listed again (the merged one holds its runs), a few times at most."""
        for _ in range(_REFRESH_TRIES):
            committed = committed_batches(self.root)
            if self.batches - committed:  # a repair or a compaction dropped a batch: start over
                self.runs.clear()
                self.files.clear()
                self.batches.clear()
            try:
                for batch in sorted(committed - self.batches):
                    self._read_batch(batch)
                return
            except FileNotFoundError:
                if batch in committed_batches(self.root):
                    raise  # not removed by another writer: something else is wrong
        raise ToolkitError(f"{self.root}: its batches kept changing while they were read "
                           f"({_REFRESH_TRIES} tries); try again once the compaction is done")

    def _read_batch(self, batch: str) -> None:
        folder = batches_dir(self.root) / batch
        runs = pq.read_table(folder / "runs.parquet")
        files = pq.read_table(folder / "files.parquet", columns=["file_sha256"])
        self.remember(runs)  # only once both are read: a batch is taken whole or not at all
        self.files.update(files.column(0).to_pylist())
        self.batches.add(batch)

    def remember(self, runs: pa.Table) -> None:
        """Add a runs manifest's ``run_key -> (events, last_event_id)``; the first batch naming a
        run wins."""
        columns = runs.select(["run_key", "events", "last_event_id"]).to_pydict()
        for key, events, last in zip(
            columns["run_key"], columns["events"], columns["last_event_id"], strict=True
        ):
            self.runs.setdefault(key, (events, last))


def _describe() -> bytes:
    tables = {
        name: {
            "columns": {f.name: str(f.type) for f in file_schema(name)},
            "partitioning": list(PARTITIONS),
        }
        for name in TABLES
    }
    return orjson.dumps({"format": FORMAT, "tables": tables}, option=orjson.OPT_INDENT_2)


def prepare_dataset(root: str | os.PathLike[str]) -> Path:
    """Create the dataset folder and its ``dataset.json`` if needed (safe when several writers
    start at once); check the format of an existing one.

    Raises
    ------
    toolkit.errors.ToolkitError
        When ``root`` is a file, a non-empty folder that is not a dataset, or a dataset of
        another format.
    """
    path = Path(root)
    described = path / MANIFEST_DIR / "dataset.json"
    if path.exists() and not path.is_dir():
        raise ToolkitError(f"{path}: is a file; expected a dataset directory (new or existing)")
    # ``_toolkit`` alone is a dataset another writer is creating right now.
    if (
        not described.is_file()
        and path.is_dir()
        and any(p.name != MANIFEST_DIR for p in path.iterdir())
    ):
        raise ToolkitError(
            f"{path}: the folder is not empty and holds no _toolkit/dataset.json; expected "
            "a new folder or a dataset written by toolkit.write_dataset"
        )
    described.parent.mkdir(parents=True, exist_ok=True)
    if not described.is_file():
        with commit_lock(path):
            if not described.is_file():
                draft = described.with_name(f".dataset-{uuid.uuid4().hex}.json")
                draft.write_bytes(_describe())
                os.replace(draft, described)
    found = orjson.loads(described.read_bytes()).get("format")
    if found != FORMAT:
        raise ToolkitError(f"{described}: dataset format {found!r}; expected {FORMAT!r}")
    return path


def open_manifest(root: str | os.PathLike[str]) -> Manifest:
    """Create the dataset if needed and load what its committed batches hold."""
    manifest = Manifest(prepare_dataset(root))
    manifest.refresh()
    return manifest
