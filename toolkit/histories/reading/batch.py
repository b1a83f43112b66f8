"""``read_histories``: many files in, one events frame and a per-file error table out."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from toolkit.errors import HistoryFormatError, ToolkitError
from toolkit.gc_pause import paused_gc
from toolkit.histories.events import frame_from_parts
from toolkit.histories.reading.growing import GrowingFrame
from toolkit.histories.reading.pool import decode_chunks, progress_bar
from toolkit.histories.reading.read import check_read_options, read_many_parts
from toolkit.histories.reading.sidecars import LAB_SIDECARS, sidecar_kind

__all__ = [
    "HistoryBatch",
    "decode_files",
    "error_frame",
    "find_history_files",
    "iter_histories",
    "read_histories",
]

_DEFAULT_CHUNK = 500

#: File name endings taken when a directory is given (Cloud export files have no suffix and
#: are taken from ``export/`` trees whatever their name).
HISTORY_SUFFIXES = (".json", ".json.gz", ".gz", ".bin", ".binpb", ".pb", ".jsonl")

ERROR_COLUMNS = {"source": "str", "error_type": "str", "message": "str", "position": "str"}


class HistoryBatch(NamedTuple):
    """What :func:`read_histories` returns: the events of every file and the files that failed."""

    events: pd.DataFrame
    errors: pd.DataFrame


def _is_history_file(path: Path) -> bool:
    name = path.name.lower()
    if name.startswith("."):
        return False
    return name.endswith(HISTORY_SUFFIXES) or "/export/" in path.as_posix()


def find_history_files(paths: Any, skipped: list[tuple[Path, str]] | None = None) -> list[Path]:
    """Expand a path, a directory (recursively), a glob pattern, or a list of them into files.

    Files that are not histories by their name
    (:func:`toolkit.histories.reading.sidecars.sidecar_kind`: the lab's ``.meta.json``,
    ``.mcp.jsonl`` request logs, logs, notes) are left out, and listed as ``(path, what it is)``
    in ``skipped`` when a list is given. A file named explicitly is left out only when it is one
    of the lab's sidecars; any other is tried.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    candidates: list[tuple[Path, bool]] = []  # (path, named explicitly)
    for item in paths:
        text = os.fspath(item)
        if any(ch in text for ch in "*?["):
            found = [Path(p) for p in sorted(glob.glob(text, recursive=True))]
            candidates += [(p, False) for p in found if p.is_file()]
        elif os.path.isdir(text):
            candidates += [
                (p, False)
                for p in sorted(Path(text).rglob("*"))
                if p.is_file() and _is_history_file(p)
            ]
        else:
            # A Path is kept as it is: building one again re-parses it (~30 us for a deep path,
            # a tenth of the time to read a small history).
            candidates.append((item if isinstance(item, Path) else Path(text), True))
    files: list[Path] = []
    for path, explicit in candidates:
        kind = sidecar_kind(path)
        if kind is None or (explicit and kind not in LAB_SIDECARS):
            files.append(path)
        elif skipped is not None:
            skipped.append((path, kind))
    return files


def read_histories(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    errors: str = "collect",
    dedupe: bool = True,
    progress: bool | None = None,
    chunksize: int | None = None,
    workers: int | None = 1,
    **read_options: Any,
) -> HistoryBatch | Iterator[HistoryBatch]:
    """Read many history files into one events frame (or one frame per chunk of files).

    The files of a chunk are decoded into columns and made one frame together, which is the
    frame reading each file with :func:`toolkit.read_history` and concatenating would give,
    column for column and dtype for dtype.

    Parameters
    ----------
    paths
        A file, a directory (searched recursively for ``*.json``, ``*.json.gz``, ``*.bin``,
        ``*.binpb`` and Cloud export files), a glob pattern (``"exports/**/*.json"``), or a list
        of any of these. Files that are not histories by their name (the lab's ``.meta.json``,
        ``.mcp.jsonl`` request logs, ``.log`` files, ...) are skipped, never reported as errors.
    errors
        ``"collect"`` (default): files that cannot be read are listed in ``errors`` and the
        others are read; ``"raise"``: the first failure raises.
    dedupe
        Drop repeated copies of a run (Cloud exports deliver at least once): histories with the
        same ``run_id``, number of events and last event id are kept once (across chunks too).
    progress
        Show a progress bar; by default only for more than 20 files.
    chunksize
        Return an iterator of :class:`HistoryBatch`, one per ``chunksize`` files, for folders
        larger than memory (memory is bounded by the chunk, not the folder); same as
        :func:`iter_histories`.
    workers
        Processes decoding files in parallel (``None``: one per core). With several, each
        process decodes whole chunks (``chunksize``, else 500 files) and hands back frames
        whose ``attributes``/``extra``/payload cells are still undecoded. Sending a frame back
        costs about what decoding it does, so this pays off only on idle cores (on this
        project's shared 2-core machine it was slower: see ``benchmarks/bench_datasets.py``);
        :func:`toolkit.write_dataset`, whose workers hand back Arrow tables, gains more.
    **read_options
        Passed to :func:`toolkit.read_history` (``codec``, ``decode_payloads``, ...).

    Returns
    -------
    HistoryBatch or iterator of HistoryBatch
        ``events``: the events frame of all files (``source`` tells them apart);
        ``errors``: one row per failed file with ``source``, ``error_type``, ``message``,
        ``position``.
    """
    batches = iter_histories(
        paths,
        chunksize=chunksize or _DEFAULT_CHUNK,
        errors=errors,
        dedupe=dedupe,
        progress=progress,
        workers=workers,
        **read_options,
    )
    if chunksize is not None:
        return batches
    rows, failures = GrowingFrame(len(batches)), []
    for batch in batches:
        rows.append(batch.events)
        failures.append(batch.errors)
        del batch  # its frame's arrays are copied: their memory serves the next chunk
    events = rows.frame()
    failed = failures[0] if len(failures) == 1 else pd.concat(failures, ignore_index=True)
    return HistoryBatch(events, failed)


def iter_histories(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    chunksize: int = 1000,
    errors: str = "collect",
    dedupe: bool = True,
    progress: bool | None = None,
    workers: int | None = 1,
    **read_options: Any,
) -> Iterator[HistoryBatch]:
    """Yield one :class:`HistoryBatch` per ``chunksize`` files (see :func:`read_histories`).

    Files are found (and a folder naming none is reported) when this is called, before the
    first chunk is read.
    """
    if errors not in ("collect", "raise"):
        raise ValueError("errors must be 'collect' or 'raise'")
    check_read_options(read_options, "read_histories")
    if chunksize < 1:
        raise ValueError("chunksize must be at least 1")
    skipped: list[tuple[Path, str]] = []
    files = find_history_files(paths, skipped)
    if not files:
        found = f" (only {len(skipped)} files that are not histories)" if skipped else ""
        raise HistoryFormatError(
            str(paths), f"no history files found{found}", expected="files or a glob"
        )
    show = len(files) > 20 if progress is None else progress
    chunks = [files[i : i + chunksize] for i in range(0, len(files), chunksize)]
    return _Chunks(_batches(chunks, errors, dedupe, show, workers, read_options), len(chunks))


class _Chunks(Iterator[HistoryBatch]):
    """The batches of :func:`iter_histories`, one per chunk of files; ``len()`` is how many
    chunks there are (the files were found when it was called)."""

    def __init__(self, batches: Iterator[HistoryBatch], count: int) -> None:
        self._batches, self._count = batches, count

    def __next__(self) -> HistoryBatch:
        return next(self._batches)

    def __len__(self) -> int:
        return self._count

    def close(self) -> None:
        """Stop early, as a generator's ``close`` does (a pool of workers is shut down)."""
        close = getattr(self._batches, "close", None)
        if close is not None:
            close()


def _batches(
    chunks: list[list[Path]],
    errors: str,
    dedupe: bool,
    show: bool,
    workers: int | None,
    read_options: dict[str, Any],
) -> Iterator[HistoryBatch]:
    seen: set[tuple[Any, int, int]] = set()
    decoded = decode_chunks(chunks, errors == "raise", read_options, workers)
    total = sum(map(len, chunks))
    with progress_bar(total=total, disable=not show, desc="histories", unit="file") as bar:
        for chunk, (events, failures) in zip(chunks, decoded, strict=True):
            if dedupe and not events.empty:
                events = _dedupe_runs(events, seen)
            bar.update(len(chunk))
            yield HistoryBatch(events, error_frame(failures))


def error_frame(failures: list[dict[str, Any]]) -> pd.DataFrame:
    """The error table: one row per unreadable file."""
    return pd.DataFrame(failures, columns=list(ERROR_COLUMNS)).astype(ERROR_COLUMNS)


def error_row(source: Any, exc: ToolkitError) -> dict[str, Any]:
    """One row of the error table for ``exc``."""
    return {
        "source": str(source),
        "error_type": type(exc).__name__,
        "message": str(exc),
        "position": getattr(exc, "position", None),
    }


def decode_files(
    files: list[Path], raise_errors: bool, read_options: dict[str, Any]
) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Decode ``files`` into one events frame (built once) and the error rows of the others."""
    with paused_gc():
        parts, errors = read_many_parts(list(files), **read_options)
        if raise_errors and errors:
            raise next(iter(errors.values()))
        failures = [error_row(files[index], exc) for index, exc in errors.items()]
        return frame_from_parts(parts), failures


def _dedupe_runs(events: pd.DataFrame, seen: set[tuple[Any, int, int]]) -> pd.DataFrame:
    """Drop histories whose (run id, events, last event id) was met before (in ``seen``).

    A batch's frame holds each history's rows together, so its histories are read off where
    ``source`` or ``history`` changes (a tenth of the cost of grouping them); a frame that
    does not is grouped as before (:func:`_dedupe_runs_grouped`, the same result).
    """
    spans = history_spans(events)
    if spans is None:
        return _dedupe_runs_grouped(events, seen)
    starts, stops = spans
    run_ids = events["run_id"].to_numpy(dtype=object)
    present = np.flatnonzero(pd.notna(run_ids))  # a run's id: its first one given (``first``)
    at = np.searchsorted(present, starts)
    at_row = present[np.minimum(at, len(present) - 1)] if len(present) else at
    has_run = (at < len(present)) & (at_row < stops)
    sizes = (stops - starts).tolist()
    lasts = np.maximum.reduceat(events["event_id"].to_numpy(), starts).tolist()
    keep = np.ones(len(starts), dtype=bool)
    for k in np.flatnonzero(has_run).tolist():
        key = (run_ids[at_row[k]], sizes[k], lasts[k])
        if key in seen:
            keep[k] = False
        seen.add(key)
    if keep.all():
        return events
    return events[np.repeat(keep, stops - starts)].reset_index(drop=True)


def history_spans(events: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """First and past-last row of each history (``source``, ``history``), in the frame's
    order, when each history's rows are together and its keys plain; None otherwise."""
    if not len(events) or events["event_id"].dtype != np.int64:
        return None
    history = events["history"].to_numpy()
    if history.dtype != np.int64:
        return None
    source = events["source"].to_numpy(dtype=object)
    change = np.ones(len(source), dtype=bool)
    change[1:] = (source[1:] != source[:-1]) | (history[1:] != history[:-1])
    starts = np.flatnonzero(change)
    names = source[starts].tolist()
    if not all(type(name) is str for name in names):
        return None
    if len(set(zip(names, history[starts].tolist(), strict=True))) < len(starts):
        return None  # a history's rows apart
    return starts, np.append(starts[1:], len(source))


def _dedupe_runs_grouped(events: pd.DataFrame, seen: set[tuple[Any, int, int]]) -> pd.DataFrame:
    """:func:`_dedupe_runs` for any frame: the histories found by grouping its rows."""
    sizes = (
        events.groupby(["source", "history"], sort=False, dropna=False)
        .agg(run_id=("run_id", "first"), events=("event_id", "size"), last=("event_id", "max"))
        .reset_index()
    )
    with_run = sizes[sizes["run_id"].notna()]
    keys = zip(with_run["run_id"], with_run["events"], with_run["last"], strict=True)
    dropped = []
    for row, key in zip(with_run.index, keys, strict=True):
        if key in seen:
            dropped.append(row)
        seen.add(key)
    if not dropped:
        return events
    gone = with_run.loc[dropped]
    drop_keys = set(zip(gone["source"], gone["history"], strict=True))
    mask = [
        (s, h) not in drop_keys for s, h in zip(events["source"], events["history"], strict=True)
    ]
    return events[mask].reset_index(drop=True)
