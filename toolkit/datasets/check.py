"""``check_dataset`` and ``repair_dataset``: does every claimed run have its rows, and mend it.

What is checked, from the manifest of each committed batch (``_toolkit/batches/<batch>/``):

``missing_part``
    a part the batch lists is absent, or its size differs from the one committed.
``wrong_rows``
    (``deep=True``) a part's Parquet footer counts other rows than the batch committed.
``manifest_mismatch``
    the batch's runs manifest and its parts disagree (events of its runs vs event rows, runs
    vs rows of the ``runs`` table).
``duplicate_run``
    a run key claimed by two committed batches (the later batch is reported).
``unlisted_part``
    a part named after a committed batch that the batch does not list (readers would read its
    rows twice).
``orphan_part``
    a part of a batch that never committed, whose writer is gone (leftover of a crash), a
    part or manifest folder of a batch a compaction superseded (left by a compaction that died
    before removing it), or a staging folder of a Spark write whose driver is gone.

Parts of a batch another writer is still writing are not problems (``in_progress``). Batches
committed before the manifest listed its parts (``parts.json``) cannot be verified part by part
and are counted in ``unverified``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow.parquet as pq

from toolkit.datasets.commit import (
    WriterLease,
    all_parts,
    batch_of,
    batches_dir,
    commit_lock,
    committed_batches,
    remove_leftovers,
    staging_dir,
    superseded_batches,
    writer_gone,
)
from toolkit.datasets.layout import MANIFEST_DIR, TABLES, is_dataset
from toolkit.errors import ToolkitError

__all__ = ["DatasetCheck", "DatasetRepair", "check_dataset", "drop_batches", "repair_dataset"]

PROBLEM_COLUMNS = ["kind", "batch", "table", "path", "detail"]
#: Problems that make a batch's claim untrue: the batch is dropped and written again.
BREAKING = ("missing_part", "wrong_rows", "manifest_mismatch", "duplicate_run")


@dataclass
class DatasetCheck:
    """What :func:`check_dataset` found. ``ok`` when ``problems`` is empty."""

    dataset: Path
    batches: int = 0
    runs: int = 0
    events: int = 0
    in_progress: int = 0
    unverified: int = 0
    problems: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PROBLEM_COLUMNS))

    @property
    def ok(self) -> bool:
        return self.problems.empty

    def broken_batches(self) -> list[str]:
        """Committed batches whose claim is untrue (see :data:`BREAKING`)."""
        broken = self.problems[self.problems["kind"].isin(BREAKING)]
        return sorted(set(broken["batch"]))

    def __str__(self) -> str:
        state = "ok" if self.ok else f"{len(self.problems)} problem(s)"
        counts = ", ".join(f"{k} {n}" for k, n in Counter(self.problems["kind"]).items())
        return (
            f"{self.dataset}: {state}; {self.batches} committed batches, {self.runs} runs, "
            f"{self.events} events; {self.in_progress} parts being written by live writers, "
            f"{self.unverified} batches without a parts list" + (f" ({counts})" if counts else "")
        )


def _listed_parts(folder: Path) -> dict[str, list[dict[str, Any]]] | None:
    listed = folder / "parts.json"
    return orjson.loads(listed.read_bytes())["tables"] if listed.is_file() else None


def check_dataset(dataset: str | os.PathLike[str], *, deep: bool = True) -> DatasetCheck:
    """Check that every run the manifest claims has its rows, once, and nothing else is there.

    Parameters
    ----------
    dataset
        A dataset directory written by :func:`toolkit.write_dataset`.
    deep
        Also read each part's Parquet footer and compare its row count (``False``: sizes only,
        what :func:`toolkit.write_dataset` checks before it writes).

    Returns
    -------
    DatasetCheck
        Counts and a ``problems`` table (``kind``, ``batch``, ``table``, ``path``, ``detail``);
        the kinds are listed in :mod:`toolkit.datasets.check`.

    Raises
    ------
    toolkit.errors.ToolkitError
        When ``dataset`` is not a dataset.
    """
    root = Path(dataset)
    if not is_dataset(root):
        raise ToolkitError(f"{root}: not a toolkit dataset (no {MANIFEST_DIR}/dataset.json)")
    report = DatasetCheck(root)
    problems: list[dict[str, Any]] = []
    committed = committed_batches(root)
    listed_paths: set[str] = set()
    claimed: dict[str, str] = {}
    for batch in sorted(committed):
        folder = batches_dir(root) / batch
        runs = pq.read_table(folder / "runs.parquet", columns=["run_key", "events"])
        keys = runs.column("run_key").to_pylist()
        report.batches += 1
        report.runs += len(keys)
        report.events += sum(runs.column("events").to_pylist())
        for key in keys:
            if key in claimed:
                problems.append(
                    {
                        "kind": "duplicate_run",
                        "batch": batch,
                        "table": "runs",
                        "path": None,
                        "detail": f"run {key} also in {claimed[key]}",
                    }
                )
            else:
                claimed[key] = batch
        tables = _listed_parts(folder)
        if tables is None:
            report.unverified += 1
            continue
        rows: Counter[str] = Counter()
        for table, parts in tables.items():
            for part in parts:
                listed_paths.add(part["path"])
                rows[table] += part["rows"]
                problem = _part_problem(root / part["path"], part, deep)
                if problem:
                    problems.append(
                        {
                            "kind": problem[0],
                            "batch": batch,
                            "table": table,
                            "path": part["path"],
                            "detail": problem[1],
                        }
                    )
        expected = {"events": sum(runs.column("events").to_pylist()), "runs": len(keys)}
        for table, count in expected.items():
            if rows[table] != count:
                problems.append({"kind": "manifest_mismatch", "batch": batch, "table": table,
                                 "path": None, "detail": f"{rows[table]} rows in its parts, "
                                 f"{count} claimed"})  # fmt: skip
    problems += _stray_parts(root, committed, listed_paths, report)
    report.problems = pd.DataFrame(problems, columns=PROBLEM_COLUMNS)
    return report


def _part_problem(path: Path, part: dict[str, Any], deep: bool) -> tuple[str, str] | None:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "missing_part", f"absent ({part['rows']} rows committed)"
    if size != part["bytes"]:
        return "missing_part", f"{size} bytes, {part['bytes']} committed"
    if deep:
        rows = pq.read_metadata(path).num_rows
        if rows != part["rows"]:
            return "wrong_rows", f"{rows} rows, {part['rows']} committed"
    return None


def _orphan(batch: str, table: str | None, path: Path, root: Path, why: str) -> dict[str, Any]:
    relative = path.relative_to(root).as_posix()
    return {"kind": "orphan_part", "batch": batch, "table": table, "path": relative,
            "detail": why}  # fmt: skip


def _stray_parts(
    root: Path, committed: set[str], listed: set[str], report: DatasetCheck
) -> list[dict[str, Any]]:
    found = []
    verdicts: dict[str, bool] = {}
    verified = {b for b in committed if (batches_dir(root) / b / "parts.json").is_file()}
    superseded = superseded_batches(root)
    for batch in sorted(superseded):
        if (batches_dir(root) / batch).is_dir():
            found.append(_orphan(batch, None, batches_dir(root) / batch, root,
                                 "manifest of a batch a compaction rewrote"))  # fmt: skip
    for table in TABLES:
        for part in all_parts(root, table):
            named = batch_of(part.name)
            if named is None:
                continue
            batch, writer = named
            relative = part.relative_to(root).as_posix()
            if batch in committed:
                if batch in verified and relative not in listed:
                    found.append(
                        {
                            "kind": "unlisted_part",
                            "batch": batch,
                            "table": table,
                            "path": relative,
                            "detail": "not in the batch's parts list",
                        }
                    )
                continue
            if batch in superseded:
                found.append(_orphan(batch, table, part, root, "its batch was compacted"))
                continue
            if writer not in verdicts:
                verdicts[writer] = writer_gone(root, writer)
            if verdicts[writer]:
                found.append(_orphan(batch, table, part, root, "its batch never committed"))
            else:
                report.in_progress += 1
    staging = staging_dir(root)
    for folder in sorted(staging.iterdir()) if staging.is_dir() else ():
        named = batch_of(f"part-{folder.name}-0.parquet")
        if named is None or writer_gone(root, named[1]):
            found.append(_orphan(folder.name, None, folder, root,
                                 "staging folder of a write that never committed"))  # fmt: skip
        else:
            report.in_progress += 1
    return found


# --------------------------------------------------------------------------- repair


@dataclass
class DroppedBatches:
    """Batches un-claimed by :func:`drop_batches` and what can be written again."""

    batches: list[str] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)
    unrepairable: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["source", "reason"])
    )


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def drop_batches(dataset: Path, batches: list[str]) -> DroppedBatches:
    """Un-claim ``batches`` (their manifest folder goes first, then their parts); return their
    source files that are still there with the same bytes. Call with the commit lock held."""
    dropped = DroppedBatches()
    lost: list[dict[str, str]] = []
    graveyard = dataset / MANIFEST_DIR / "dropped"
    graveyard.mkdir(parents=True, exist_ok=True)
    for batch in batches:
        folder = batches_dir(dataset) / batch
        files = pq.read_table(folder / "files.parquet").to_pylist()
        tables = _listed_parts(folder) or {}
        gone = graveyard / batch
        os.replace(folder, gone)  # from here on no reader or writer counts the batch
        for table in TABLES:
            for part in all_parts(dataset, table):
                if (batch_of(part.name) or ("", ""))[0] == batch:
                    part.unlink(missing_ok=True)
        for parts in tables.values():
            for part in parts:
                (dataset / part["path"]).unlink(missing_ok=True)
        shutil.rmtree(gone, ignore_errors=True)
        dropped.batches.append(batch)
        for row in files:
            source = Path(row["source"])
            digest = _sha256(source)
            if digest == row["file_sha256"]:
                dropped.sources.append(source)
            else:
                reason = "no longer there" if digest is None else "its bytes changed"
                lost.append({"source": row["source"], "reason": f"{reason} (batch {batch})"})
    dropped.unrepairable = pd.DataFrame(lost, columns=["source", "reason"])
    return dropped


@dataclass
class DatasetRepair:
    """What :func:`repair_dataset` did: the check before and after, what it removed, dropped and
    rewrote, and what it could not repair (``unrepairable``: sources gone or changed)."""

    before: DatasetCheck
    after: DatasetCheck
    removed: list[str] = field(default_factory=list)
    dropped_batches: list[str] = field(default_factory=list)
    runs_rewritten: int = 0
    unrepairable: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["source", "reason"])
    )

    def __str__(self) -> str:
        return (
            f"{self.before.dataset}: removed {len(self.removed)} leftover/unlisted files, dropped "
            f"{len(self.dropped_batches)} damaged batches, rewrote {self.runs_rewritten} runs; "
            f"{len(self.unrepairable)} source files could not be read again; now: "
            f"{'ok' if self.after.ok else str(len(self.after.problems)) + ' problem(s)'}"
        )


def repair_dataset(dataset: str | os.PathLike[str]) -> DatasetRepair:
    """Mend what :func:`check_dataset` finds: remove leftovers and unlisted parts, un-claim
    damaged batches and write their runs again from their source files (when still there).

    Returns
    -------
    DatasetRepair
        The checks before and after, and what could not be repaired.
    """
    from toolkit.datasets.writer import write_dataset

    root = Path(dataset)
    before = check_dataset(root)
    with WriterLease(root), commit_lock(root):
        removed = [str(p) for p in remove_leftovers(root)]
        found = check_dataset(root)
        for row in found.problems.itertuples():
            if row.kind == "unlisted_part":
                (root / row.path).unlink(missing_ok=True)
                removed.append(str(root / row.path))
        dropped = drop_batches(root, found.broken_batches())
    rewritten = 0
    if dropped.sources:
        rewritten = write_dataset(dropped.sources, root, progress=False).runs_written
    return DatasetRepair(before, check_dataset(root), removed, dropped.batches, rewritten,
                         dropped.unrepairable)  # fmt: skip
