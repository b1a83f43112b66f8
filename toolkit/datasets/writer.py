"""``write_dataset``: histories (files, folders, Cloud export trees) -> a Parquet dataset.

Files are read in batches; each batch is deduplicated (by run id: Cloud exports deliver at
least once) against itself and against what the dataset already holds, written as Parquet parts
and committed in the manifest (:mod:`toolkit.datasets.manifest`). A file whose bytes were already
written (same sha256) is not read again, so writing the same exports twice adds nothing.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
from tqdm.auto import tqdm

from toolkit.datasets.arrow import to_arrow
from toolkit.datasets.layout import PARTITIONS, TABLES
from toolkit.datasets.manifest import (
    RUNS_SCHEMA,
    Manifest,
    commit_batch,
    new_batch_id,
    open_manifest,
)
from toolkit.datasets.tables import RUN_KEYS, batch_tables, run_facts, run_key
from toolkit.errors import HistoryFormatError, ToolkitError
from toolkit.histories.batch import ERROR_COLUMNS, find_history_files
from toolkit.histories.read import read_history

__all__ = ["DatasetWrite", "write_dataset"]

_PARTITIONING = ds.partitioning(
    pa.schema([(name, pa.string()) for name in PARTITIONS]), flavor="hive"
)
_CONFLICT_COLUMNS = ["run_key", "source", "history", "events", "kept_events"]


@dataclass
class DatasetWrite:
    """What one :func:`write_dataset` call did.

    ``runs_duplicate`` counts copies of runs already written (or repeated in the input) with the
    same number of events and last event id; ``runs_conflicting`` counts copies that differ (an
    open run exported again later, say): the first copy stays, the others are listed in
    ``conflicts``. Files that could not be read are listed in ``errors``.
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
    batch_files: int = 1000,
    errors: str = "collect",
    progress: bool | None = None,
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
        Files read per batch; each batch is one commit, so memory stays bounded.
    errors
        ``"collect"`` (default): unreadable files are listed in ``errors``; ``"raise"``: the
        first one raises.
    progress
        Show a progress bar; by default for more than 100 files.
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
        When ``dataset`` is a non-empty folder that is not a dataset.
    """
    if errors not in ("collect", "raise"):
        raise ValueError("errors must be 'collect' or 'raise'")
    if batch_files < 1:
        raise ValueError("batch_files must be at least 1")
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
    manifest = open_manifest(dataset)
    report = DatasetWrite(Path(dataset), files=len(files))
    failures: list[dict[str, Any]] = []
    conflicts: list[dict[str, Any]] = []
    show = len(files) > 100 if progress is None else progress
    with tqdm(total=len(files), disable=not show, desc="export", unit="file") as bar:
        for start in range(0, len(files), batch_files):
            chunk = files[start : start + batch_files]
            _write_batch(chunk, manifest, namespace, errors, read_options, report, failures,
                         conflicts)  # fmt: skip
            bar.update(len(chunk))
    report.files_failed = len(failures)
    report.errors = _errors_frame(failures)
    report.conflicts = pd.DataFrame(conflicts, columns=_CONFLICT_COLUMNS)
    return report


def _read_files(
    paths: list[Path],
    manifest: Manifest,
    errors: str,
    read_options: dict[str, Any],
    report: DatasetWrite,
    failures: list[dict[str, Any]],
) -> tuple[list[pd.DataFrame], dict[str, str], list[dict[str, Any]]]:
    frames: list[pd.DataFrame] = []
    hashes: dict[str, str] = {}
    file_rows: list[dict[str, Any]] = []
    seen_now: set[str] = set()
    for path in paths:
        data = path.read_bytes() if path.is_file() else None
        digest = hashlib.sha256(data).hexdigest() if data is not None else None
        if digest is not None and (digest in manifest.files or digest in seen_now):
            report.files_skipped += 1
            continue
        try:
            if data is None:
                raise HistoryFormatError(str(path), "no such file", expected="a history file")
            # A named file object keeps the path hints (run id in the name, export namespace).
            frame = read_history(io.BytesIO(data), name=str(path), **read_options)
        except ToolkitError as exc:
            if errors == "raise":
                raise
            failures.append({"source": str(path), "error_type": type(exc).__name__,
                             "message": str(exc), "position": getattr(exc, "position", None)})
            continue
        seen_now.add(digest)  # type: ignore[arg-type]
        hashes[str(path)] = digest  # type: ignore[assignment]
        frames.append(frame)
        histories = int(frame["history"].nunique())
        report.histories += histories
        file_rows.append({"file_sha256": digest, "source": str(path), "size": len(data),
                          "histories": histories})  # fmt: skip
    return frames, hashes, file_rows


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
    # Within the batch the most complete copy wins (an open run exported again when closed).
    ranked = facts.sort_values(["run_key", "events"], ascending=[True, False], kind="stable")
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
    return pd.DataFrame(kept_rows, columns=facts.columns)


def _write_batch(
    paths: list[Path],
    manifest: Manifest,
    namespace: str | None,
    errors: str,
    read_options: dict[str, Any],
    report: DatasetWrite,
    failures: list[dict[str, Any]],
    conflicts: list[dict[str, Any]],
) -> None:
    frames, hashes, file_rows = _read_files(paths, manifest, errors, read_options, report,
                                            failures)  # fmt: skip
    if not frames:
        return
    events = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    kept = _keep(run_facts(events), hashes, manifest, report, conflicts)
    batch = new_batch_id()
    runs_manifest = RUNS_SCHEMA.empty_table()
    if len(kept):
        wanted = pd.MultiIndex.from_frame(kept[RUN_KEYS].astype({"history": "int64"}))
        mask = pd.MultiIndex.from_frame(events[RUN_KEYS].astype({"history": "int64"})).isin(wanted)
        events = events[mask].reset_index(drop=True)
        tables = batch_tables(events, hashes, batch, namespace)
        for name, frame in tables.items():
            _write_table(manifest.root / name, name, frame, batch)
        runs = tables["runs"]
        report.runs_written += len(runs)
        report.events_written += len(events)
        columns = runs[RUNS_SCHEMA.names].astype(
            {"run_key": str, "events": "int64", "last_event_id": "int64", "source": str}
        )
        runs_manifest = pa.Table.from_pandas(columns, schema=RUNS_SCHEMA, preserve_index=False)
    files_manifest = pa.Table.from_pylist(file_rows)
    commit_batch(manifest, batch, runs_manifest, files_manifest)
    report.batches.append(batch)


def _write_table(folder: Path, name: str, frame: pd.DataFrame, batch: str) -> None:
    if frame.empty:
        return
    table = to_arrow(frame, {**TABLES[name], **dict.fromkeys(PARTITIONS, "object")})
    ds.write_dataset(
        table,
        folder,
        format="parquet",
        partitioning=_PARTITIONING,
        basename_template=f"part-{batch}-{{i}}.parquet",
        existing_data_behavior="overwrite_or_ignore",
        max_partitions=100_000,
        max_rows_per_group=1 << 20,
    )
