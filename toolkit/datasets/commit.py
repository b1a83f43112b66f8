"""How many writers share one dataset: writer leases, the commit lock, batch commits, leftovers.

The protocol (the writer calls only :class:`WriterLease`, :func:`commit_lock`,
:func:`commit_batch` and :func:`remove_leftovers`):

1. A writer takes a *lease*: ``_toolkit/writers/<writer>.lease``, created with ``O_EXCL``,
   holding its pid, host and start time, locked with ``flock`` for as long as the writer lives
   (the operating system releases the lock when the process ends, however it ends) and touched
   every :data:`HEARTBEAT` seconds. Batch ids carry the writer id, so every part file names the
   writer that wrote it.
2. Each batch runs under the dataset's *commit lock* (``flock`` on ``_toolkit/commit.lock``):
   load the batches committed since the last look, deduplicate against them, write the Parquet
   parts, fsync them, then commit by renaming the batch's manifest folder into
   ``_toolkit/batches/<batch>/`` (one atomic rename: before it the batch does not exist, after it
   every part it lists is on disk). Writers therefore interleave batch by batch and never write
   the same run twice. A writer that cannot take the lock within ``lock_timeout`` seconds, or on
   a file system without locks, raises before writing anything.
3. Leftovers (parts and manifest folders of batches that never committed) are removed only when
   their writer is provably gone: its lease is absent, its ``flock`` can be taken (its process
   has ended), or its heartbeat is older than :data:`LEASE_EXPIRY` (a machine that vanished
   without the file system noticing). A writer checks, right before committing, that its lease
   is still there; one that was presumed dead commits nothing and raises.

4. A compaction (:mod:`toolkit.datasets.compact`) commits a batch like any other, with a
   ``replaces.json`` naming the batches whose rows it rewrote; from its rename on those batches
   are *superseded*: no longer committed (:func:`committed_batches`), their folders and parts
   removed by the compaction or, if it died first, as leftovers. Compaction batch ids end in
   ``-c<sequence>``, so finding the superseded batches reads only the compactions' lists.
5. A writer whose parts are written elsewhere first (:mod:`toolkit.spark`'s executors) stages
   them in ``_toolkit/staging/<batch>/``, named after its lease like a part: removed with the
   leftovers once its writer is gone.

Readers (:func:`toolkit.sql`) read only parts of committed batches (:func:`committed_parts`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import os
import re
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.datasets.layout import MANIFEST_DIR, TABLES
from toolkit.errors import ToolkitError
from toolkit.forking import fork_safe

__all__ = [
    "HEARTBEAT",
    "LEASE_EXPIRY",
    "LOCK_TIMEOUT",
    "BatchParts",
    "WriterLease",
    "batch_of",
    "commit_batch",
    "commit_lock",
    "committed_batches",
    "committed_parts",
    "discard_batches",
    "remove_leftovers",
    "staging_dir",
    "superseded_batches",
    "writer_gone",
]

#: Seconds between two touches of a live writer's lease file.
HEARTBEAT = 30.0
#: Seconds after its last heartbeat when a lease counts as abandoned even if still locked.
LEASE_EXPIRY = 15 * 60.0
#: Default seconds a writer waits for the commit lock before giving up (before writing).
LOCK_TIMEOUT = 600.0

# part-<batch>-<n>.parquet; a batch id is <UTC time>-<writer>[-<sequence>] (older datasets: no
# sequence, and a random id in the writer's place); a compaction's sequence is c<n>.
_PART = re.compile(r"^part-(?P<batch>\d{8}T\d{6}-(?P<writer>[0-9a-f]+)(?:-c?\d+)?)-\d+\.parquet$")
_COMPACTION = re.compile(r"-c\d+$")
#: The file in a compaction batch's manifest folder listing the batches it supersedes.
REPLACES = "replaces.json"


def batches_dir(root: Path) -> Path:
    """``_toolkit/batches``: one folder per committed batch."""
    return root / MANIFEST_DIR / "batches"


def _writers_dir(root: Path) -> Path:
    return root / MANIFEST_DIR / "writers"


def batch_of(part: str) -> tuple[str, str] | None:
    """``(batch, writer)`` of a part file name, or None for a file the writer did not name."""
    match = _PART.match(part)
    return (match.group("batch"), match.group("writer")) if match else None


def staging_dir(root: Path, batch: str | None = None) -> Path:
    """``_toolkit/staging/<batch>``: where a batch's parts are written before they are renamed
    into the table folders (:mod:`toolkit.spark`); without ``batch``, the folder of them all."""
    staging = root / MANIFEST_DIR / "staging"
    return staging if batch is None else staging / batch


def _batch_folders(root: Path) -> set[str]:
    folder = batches_dir(root)
    if not folder.is_dir():
        return set()
    return {p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")}


def superseded_batches(root: Path, folders: set[str] | None = None) -> set[str]:
    """Batches a committed compaction rewrote (their folders may still be there)."""
    gone: set[str] = set()
    for name in _batch_folders(root) if folders is None else folders:
        if _COMPACTION.search(name):
            # A compaction folder appears by one rename with its list inside; gone since the
            # listing (a repair dropped it), its list no longer applies.
            with contextlib.suppress(FileNotFoundError):
                listed = orjson.loads((batches_dir(root) / name / REPLACES).read_bytes())
                gone.update(listed["replaces"])
    return gone


def committed_batches(root: Path) -> set[str]:
    """Ids of the batches committed so far (and not superseded by a compaction)."""
    folders = _batch_folders(root)
    return folders - superseded_batches(root, folders)


def all_parts(root: Path, table: str) -> list[Path]:
    """Every part file of ``table``, committed or not."""
    return sorted((root / table).rglob("part-*.parquet"))


def committed_parts(
    root: str | os.PathLike[str], table: str, committed: set[str] | None = None
) -> list[Path]:
    """The part files of ``table`` that belong to committed batches, in path order.

    Pass ``committed`` (from :func:`committed_batches`) to read several tables as of one
    moment. Files not named like the writer's parts (added by hand, or by another tool) are
    kept.
    """
    path = Path(root)
    committed = committed_batches(path) if committed is None else committed
    kept = []
    for part in sorted((path / table).rglob("*.parquet")):
        named = batch_of(part.name)
        if named is None or named[0] in committed:
            kept.append(part)
    return kept


# --------------------------------------------------------------------------- locks and leases


def _flock(fd: int, *, blocking: bool) -> bool:
    """Lock ``fd`` exclusively; False if another process holds it (non-blocking)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EACCES, errno.EAGAIN):
            return False
        raise ToolkitError(
            f"the dataset's file system refuses file locks ({exc}); concurrent writes need "
            "locks and atomic renames (a local disk, or NFS v4)"
        ) from None
    return True


@contextlib.contextmanager
def commit_lock(root: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the dataset's commit lock (waiting up to ``timeout`` seconds for it).

    Raises
    ------
    toolkit.errors.ToolkitError
        When the lock is not free within ``timeout`` seconds, or the file system has no locks.
    """
    path = root / MANIFEST_DIR / "commit.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while not _flock(fd, blocking=False):
            if time.monotonic() >= deadline:
                raise ToolkitError(
                    f"{root}: another writer has held the dataset's commit lock for more than "
                    f"{timeout:g} s; nothing was written (raise lock_timeout= to wait longer)"
                )
            time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


class WriterLease:
    """A live writer's claim on its batches; use as a context manager.

    The lease file holds ``{"pid", "host", "started"}``, stays ``flock``-ed while the writer
    lives, and its modification time is the writer's heartbeat.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.writer = uuid.uuid4().hex[:12]
        self.path = _writers_dir(root) / f"{self.writer}.lease"
        self._sequence = 0
        self._stop = threading.Event()
        self._fd: int | None = None
        self._beat: threading.Thread | None = None

    def __enter__(self) -> WriterLease:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Locked under a name no cleaner looks at, then renamed: a cleaner never sees the lease
        # unlocked (the lock follows the file through the rename).
        draft = self.path.with_name(f".{self.writer}.draft")
        fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        self._fd = fd
        _flock(fd, blocking=True)
        facts = {"pid": os.getpid(), "host": socket.gethostname(),
                 "started": dt.datetime.now(dt.UTC).isoformat()}  # fmt: skip
        os.write(fd, orjson.dumps(facts))
        os.fsync(fd)
        os.replace(draft, self.path)
        # It holds no lock a forked worker takes: a pool may still fork (toolkit.forking).
        beat = threading.Thread(target=self._heartbeat, name="dataset-lease", daemon=True)
        self._beat = fork_safe(beat)
        self._beat.start()
        return self

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT):
            with contextlib.suppress(OSError):
                os.utime(self.path)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self.path.unlink()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def new_batch_id(self, *, compaction: bool = False) -> str:
        """A sortable batch id naming this writer: ``<UTC time>-<writer>-<sequence>`` (the
        sequence is ``c<n>`` for a compaction's batch)."""
        self._sequence += 1
        sequence = f"c{self._sequence}" if compaction else self._sequence
        return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{self.writer}-{sequence}"

    def still_held(self) -> bool:
        """Whether the lease file is still there (no cleaner took this writer for dead)."""
        return self.path.is_file()


def writer_gone(root: Path, writer: str, *, now: float | None = None) -> bool:
    """Whether ``writer`` has provably ended (see the module's rule 3)."""
    path = _writers_dir(root) / f"{writer}.lease"
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        if _flock(fd, blocking=False):
            return True  # nobody holds it: the process that did has ended
        age = (time.time() if now is None else now) - os.fstat(fd).st_mtime
        return age > LEASE_EXPIRY
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- batches


@dataclass
class BatchParts:
    """The part files one batch wrote: table -> [(path relative to the dataset, rows, bytes)]."""

    root: Path
    batch: str
    tables: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)

    def add(self, table: str, path: str | os.PathLike[str], rows: int) -> None:
        """Record a part written for ``table`` (called by the writer for each file)."""
        full = Path(path)
        relative = full.relative_to(self.root).as_posix()
        self.tables.setdefault(table, []).append((relative, rows, full.stat().st_size))

    def paths(self) -> list[Path]:
        return [self.root / rel for parts in self.tables.values() for rel, _, _ in parts]

    def remove(self) -> None:
        """Delete the parts (a batch that will not commit)."""
        for path in self.paths():
            path.unlink(missing_ok=True)

    def as_json(self) -> bytes:
        listed = {t: [{"path": p, "rows": r, "bytes": b} for p, r, b in parts]
                  for t, parts in self.tables.items()}  # fmt: skip
        return orjson.dumps({"batch": self.batch, "tables": listed}, option=orjson.OPT_INDENT_2)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit_batch(
    lease: WriterLease,
    parts: BatchParts,
    manifest_tables: dict[str, pa.Table],
    replaces: dict[str, object] | None = None,
) -> None:
    """Commit a batch whose parts are written: manifest files, then one atomic rename.

    ``manifest_tables`` maps a file name (``runs.parquet``, ``files.parquet``) to its table;
    ``replaces`` (a compaction's batch only) is written as ``replaces.json``. Call with the
    commit lock held.

    Raises
    ------
    toolkit.errors.ToolkitError
        When the writer's lease was taken for dead meanwhile or one of its parts is gone (the
        batch is then not committed and its parts are removed).
    """
    missing = [p for p in parts.paths() if not p.is_file()]
    if missing or not lease.still_held():
        parts.remove()
        why = f"its part {missing[0]} is gone" if missing else "its writer lease was expired"
        raise ToolkitError(
            f"{parts.root}: batch {parts.batch} was not committed: {why} (a writer stalled for "
            f"more than {LEASE_EXPIRY:g} s is presumed dead); nothing of it was kept, rerun the "
            "write"
        )
    _commit_parts(parts, manifest_tables, replaces)


def _commit_parts(
    parts: BatchParts, manifest_tables: dict[str, pa.Table], replaces: dict[str, object] | None
) -> None:
    """fsync the parts, write the manifest folder, rename it into place (the commit point)."""
    for path in parts.paths():
        _fsync(path)  # the rows are on disk before the manifest claims them
    final = batches_dir(parts.root) / parts.batch
    tmp = batches_dir(parts.root) / f".tmp-{parts.batch}"
    tmp.mkdir(parents=True, exist_ok=True)
    for name, table in manifest_tables.items():
        pq.write_table(table, tmp / name)
        _fsync(tmp / name)
    (tmp / "parts.json").write_bytes(parts.as_json())
    _fsync(tmp / "parts.json")
    if replaces is not None:
        (tmp / REPLACES).write_bytes(orjson.dumps(replaces))
        _fsync(tmp / REPLACES)
    os.replace(tmp, final)
    _fsync(final.parent)


def discard_batches(root: Path, batches: set[str]) -> None:
    """Delete superseded batches: their manifest folders first (each one rename out of
    ``batches/``), then their parts; a crash in between leaves parts :func:`remove_leftovers`
    removes."""
    graveyard = root / MANIFEST_DIR / "dropped" / uuid.uuid4().hex[:12]
    graveyard.mkdir(parents=True, exist_ok=True)
    for batch in batches:
        with contextlib.suppress(FileNotFoundError):  # another cleaner was first
            os.replace(batches_dir(root) / batch, graveyard / batch)
    for table in TABLES:  # one listing per table, not one per batch
        for part in all_parts(root, table):
            if (batch_of(part.name) or ("", ""))[0] in batches:
                part.unlink(missing_ok=True)
    shutil.rmtree(graveyard, ignore_errors=True)


def remove_leftovers(root: Path) -> list[Path]:
    """Delete parts, staging folders and unfinished manifest folders of batches whose writer is
    gone, and what is left of batches a compaction superseded.

    Call with the commit lock held. Returns the removed paths.
    """
    folders = _batch_folders(root)
    superseded = superseded_batches(root, folders)
    committed = folders - superseded
    verdicts: dict[str, bool] = {}

    def gone(writer: str) -> bool:
        if writer not in verdicts:
            verdicts[writer] = writer_gone(root, writer)
        return verdicts[writer]

    removed = [batches_dir(root) / batch for batch in sorted(folders & superseded)]
    if removed:
        discard_batches(root, folders & superseded)
    for table in TABLES:
        for part in all_parts(root, table):
            named = batch_of(part.name)
            if named is None or named[0] in committed:
                continue
            # A superseded batch's rows are in its compaction: its writer's liveness is moot.
            if named[0] in superseded or gone(named[1]):
                part.unlink(missing_ok=True)
                removed.append(part)
    for tmp in batches_dir(root).glob(".tmp-*") if batches_dir(root).is_dir() else ():
        named = batch_of(f"part-{tmp.name.removeprefix('.tmp-')}-0.parquet")
        if named is None or gone(named[1]):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    staging = staging_dir(root)
    for folder in staging.iterdir() if staging.is_dir() else ():
        named = batch_of(f"part-{folder.name}-0.parquet")
        if named is None or gone(named[1]):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    leases = _writers_dir(root)
    for lease in leases.glob("*.lease") if leases.is_dir() else ():
        if gone(lease.stem):
            lease.unlink(missing_ok=True)
    return removed
