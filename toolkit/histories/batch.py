"""``read_histories``: many files in, one events frame and a per-file error table out."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
from tqdm.auto import tqdm

from toolkit.errors import HistoryFormatError, ToolkitError
from toolkit.histories.events import empty_events_frame
from toolkit.histories.read import read_history

__all__ = ["HistoryBatch", "find_history_files", "read_histories"]

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
    if name.startswith(".") or name.endswith(".meta.json"):
        return False
    return name.endswith(HISTORY_SUFFIXES) or "/export/" in path.as_posix()


def find_history_files(paths: Any) -> list[Path]:
    """Expand a path, a directory (recursively), a glob pattern, or a list of them into files."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: list[Path] = []
    for item in paths:
        text = os.fspath(item)
        if any(ch in text for ch in "*?["):
            found += [Path(p) for p in sorted(glob.glob(text, recursive=True)) if Path(p).is_file()]
        elif Path(text).is_dir():
            found += sorted(p for p in Path(text).rglob("*") if p.is_file() and _is_history_file(p))
        else:
            found.append(Path(text))
    return found


def read_histories(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    errors: str = "collect",
    dedupe: bool = True,
    progress: bool | None = None,
    **read_options: Any,
) -> HistoryBatch:
    """Read many history files into one events frame.

    Parameters
    ----------
    paths
        A file, a directory (searched recursively for ``*.json``, ``*.json.gz``, ``*.bin``,
        ``*.binpb`` and Cloud export files), a glob pattern (``"exports/**/*.json"``), or a list
        of any of these.
    errors
        ``"collect"`` (default): files that cannot be read are listed in ``errors`` and the
        others are read; ``"raise"``: the first failure raises.
    dedupe
        Drop repeated copies of a run (Cloud exports deliver at least once): histories with the
        same ``run_id``, number of events and last event id are kept once.
    progress
        Show a progress bar; by default only for more than 20 files.
    **read_options
        Passed to :func:`toolkit.read_history` (``codec``, ``decode_payloads``, ...).

    Returns
    -------
    HistoryBatch
        ``events``: the events frame of all files (``source`` tells them apart);
        ``errors``: one row per failed file with ``source``, ``error_type``, ``message``,
        ``position``.
    """
    if errors not in ("collect", "raise"):
        raise ValueError("errors must be 'collect' or 'raise'")
    files = find_history_files(paths)
    if not files:
        raise HistoryFormatError(str(paths), "no history files found", expected="files or a glob")
    show = len(files) > 20 if progress is None else progress
    frames: list[pd.DataFrame] = []
    failures: list[dict[str, Any]] = []
    for path in tqdm(files, disable=not show, desc="histories", unit="file"):
        try:
            frames.append(read_history(path, **read_options))
        except ToolkitError as exc:
            if errors == "raise":
                raise
            failures.append(
                {
                    "source": str(path),
                    "error_type": type(exc).__name__,
                    "message": str(exc),
                    "position": getattr(exc, "position", None),
                }
            )
    events = pd.concat(frames, ignore_index=True) if frames else empty_events_frame()
    if dedupe and not events.empty:
        events = _dedupe_runs(events)
    error_frame = pd.DataFrame(failures, columns=list(ERROR_COLUMNS)).astype(ERROR_COLUMNS)
    return HistoryBatch(events, error_frame)


def _dedupe_runs(events: pd.DataFrame) -> pd.DataFrame:
    sizes = (
        events.groupby(["source", "history"], sort=False, dropna=False)
        .agg(run_id=("run_id", "first"), events=("event_id", "size"), last=("event_id", "max"))
        .reset_index()
    )
    with_run = sizes[sizes["run_id"].notna()]
    keep = with_run.drop_duplicates(["run_id", "events", "last"])
    dropped = with_run.drop(keep.index)
    if dropped.empty:
        return events
    drop_keys = set(zip(dropped["source"], dropped["history"], strict=True))
    mask = [
        (s, h) not in drop_keys for s, h in zip(events["source"], events["history"], strict=True)
    ]
    return events[mask].reset_index(drop=True)
