"""The dataset's manifest: which runs and files each write committed, and crash recovery.

A write is a sequence of *batches*. A batch writes its Parquet parts (``part-<batch>-<n>``) and
then commits by renaming its manifest folder into ``_toolkit/batches/<batch>/`` (one atomic
rename). Parts whose batch never committed (a write killed half-way) are deleted by the next
write, so a re-run neither loses nor doubles anything.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.datasets.layout import FORMAT, MANIFEST_DIR, PARTITIONS, TABLES, file_schema
from toolkit.errors import ToolkitError

__all__ = ["Manifest", "commit_batch", "new_batch_id", "open_manifest"]

_PART = re.compile(r"^part-(?P<batch>[0-9T]+-[0-9a-f]+)-\d+\.parquet$")

RUNS_SCHEMA = pa.schema(
    [("run_key", pa.string()), ("events", pa.int64()), ("last_event_id", pa.int64()),
     ("file_sha256", pa.string()), ("source", pa.string())]
)  # fmt: skip
FILES_SCHEMA = pa.schema(
    [("file_sha256", pa.string()), ("source", pa.string()), ("size", pa.int64()),
     ("histories", pa.int64())]
)  # fmt: skip


@dataclass
class Manifest:
    """What a dataset already holds: run key -> (events, last event id), and file hashes."""

    root: Path
    runs: dict[str, tuple[int, int]] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)


def new_batch_id() -> str:
    """A sortable, unique batch id (UTC time, then random hex)."""
    return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def _batches_dir(root: Path) -> Path:
    return root / MANIFEST_DIR / "batches"


def _describe() -> bytes:
    tables = {
        name: {
            "columns": {f.name: str(f.type) for f in file_schema(name)},
            "partitioning": list(PARTITIONS),
        }
        for name in TABLES
    }
    return orjson.dumps({"format": FORMAT, "tables": tables}, option=orjson.OPT_INDENT_2)


def open_manifest(root: str | os.PathLike[str]) -> Manifest:
    """Create the dataset folder if needed, drop uncommitted parts, load the manifest.

    Raises
    ------
    toolkit.errors.ToolkitError
        When ``root`` exists but is not a dataset (a non-empty folder without
        ``_toolkit/dataset.json``), or is a dataset of another format.
    """
    path = Path(root)
    described = path / MANIFEST_DIR / "dataset.json"
    if path.exists() and not path.is_dir():
        raise ToolkitError(f"{path}: is a file; expected a dataset directory (new or existing)")
    if not described.is_file():
        if path.is_dir() and any(path.iterdir()):
            raise ToolkitError(
                f"{path}: the folder is not empty and holds no _toolkit/dataset.json; expected "
                "a new folder or a dataset written by toolkit.write_dataset"
            )
        described.parent.mkdir(parents=True, exist_ok=True)
        described.write_bytes(_describe())
    else:
        found = orjson.loads(described.read_bytes()).get("format")
        if found != FORMAT:
            raise ToolkitError(f"{described}: dataset format {found!r}; expected {FORMAT!r}")
    committed = _committed(path)
    _remove_uncommitted(path, committed)
    manifest = Manifest(path)
    for batch in sorted(committed):
        _remember(manifest, pq.read_table(_batches_dir(path) / batch / "runs.parquet"))
        files = pq.read_table(_batches_dir(path) / batch / "files.parquet", columns=["file_sha256"])
        manifest.files.update(files.column(0).to_pylist())
    return manifest


def _committed(root: Path) -> set[str]:
    folder = _batches_dir(root)
    if not folder.is_dir():
        return set()
    return {p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")}


def _remove_uncommitted(root: Path, committed: set[str]) -> None:
    for table in TABLES:
        for part in (root / table).rglob("part-*.parquet"):
            match = _PART.match(part.name)
            if match and match.group("batch") not in committed:
                part.unlink()
    leftovers = _batches_dir(root)
    if leftovers.is_dir():
        for tmp in leftovers.glob(".tmp-*"):
            shutil.rmtree(tmp, ignore_errors=True)


def commit_batch(manifest: Manifest, batch: str, runs: pa.Table, files: pa.Table) -> None:
    """Write the batch's manifest and commit it (atomic rename), then remember it in memory."""
    final = _batches_dir(manifest.root) / batch
    tmp = _batches_dir(manifest.root) / f".tmp-{batch}"
    tmp.mkdir(parents=True, exist_ok=True)
    pq.write_table(runs.cast(RUNS_SCHEMA), tmp / "runs.parquet")
    pq.write_table(files.cast(FILES_SCHEMA), tmp / "files.parquet")
    os.replace(tmp, final)
    _remember(manifest, runs)
    manifest.files.update(files.column("file_sha256").to_pylist())


def _remember(manifest: Manifest, runs: pa.Table) -> None:
    """Add a runs manifest's ``run_key -> (events, last_event_id)`` to ``manifest.runs``; the
    first batch naming a run wins."""
    columns = runs.select(["run_key", "events", "last_event_id"]).to_pydict()
    for key, events, last in zip(
        columns["run_key"], columns["events"], columns["last_event_id"], strict=True
    ):
        manifest.runs.setdefault(key, (events, last))
