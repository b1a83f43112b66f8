"""What an investigation reads: histories, logs and configs, and the files it left out.

Histories come from paths, folders, globs or frames (:func:`toolkit.read_histories`: any dialect
the loader reads), or from a server and a visibility query (:func:`toolkit.fetch_histories`).
Files that are not histories by their name (the lab's ``.meta.json``, ``.mcp.jsonl`` request
logs, logs, notes) are skipped with a note; files that fail to load are listed with the reason.
Nothing later is ever derived from a file that failed to load.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.errors import HistoryFormatError, ToolkitError
from toolkit.histories.events import empty_events_frame
from toolkit.histories.reading.batch import find_history_files, read_histories

__all__ = ["ERRORS_COLUMNS", "Inputs", "gather"]

#: Columns of :attr:`toolkit.investigate.Investigation.errors`.
ERRORS_COLUMNS = ["source", "kind", "status", "reason"]

#: Log files taken from a folder given as ``logs=`` (MCP request logs are the lab's, not a
#: worker's, and stay out).
_LOG_ENDINGS = (".log", ".log.gz", ".jsonl", ".jsonl.gz", ".txt", ".out", ".err")


@dataclass
class Inputs:
    """Everything read, and every file left out or failed, one row each in ``errors``."""

    events: pd.DataFrame
    logs: pd.DataFrame | None
    configs: list[Any]
    errors: pd.DataFrame
    history_files: int = 0
    notes: list[str] = field(default_factory=list)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike, pd.DataFrame, bytes)):
        return [value]
    if isinstance(value, Iterable):
        return list(value)
    return [value]


def _histories(items: list[Any], rows: list[dict[str, Any]]) -> tuple[list[pd.DataFrame], int]:
    frames: list[pd.DataFrame] = []
    paths: list[Any] = []
    for item in items:
        if isinstance(item, pd.DataFrame):
            frames.append(item)
        else:
            paths.append(item)
    if not paths:
        return frames, 0
    skipped: list[tuple[Path, str]] = []
    files = find_history_files(paths, skipped)
    rows += [
        {
            "source": str(path),
            "kind": "history",
            "status": "skipped",
            "reason": f"not a history ({kind})",
        }
        for path, kind in skipped
    ]
    if not files:
        return frames, 0
    batch = read_histories(files, progress=False)
    rows += [
        {"source": row.source, "kind": "history", "status": "failed", "reason": row.message}
        for row in batch.errors.itertuples()
    ]
    if not batch.events.empty:
        frames.append(batch.events)
    return frames, len(files)


def _log_files(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, (str, os.PathLike)) and Path(item).is_dir():
            out += sorted(
                p
                for p in Path(item).rglob("*")
                if p.is_file()
                and p.name.lower().endswith(_LOG_ENDINGS)
                and not p.name.lower().endswith(".mcp.jsonl")
            )
        else:
            out.append(item)
    return out


def _logs(items: list[Any], rows: list[dict[str, Any]]) -> pd.DataFrame | None:
    from toolkit.logs.read import read_logs

    frames = []
    for item in _log_files(items):
        if isinstance(item, pd.DataFrame):
            frames.append(item)
            continue
        try:
            frames.append(read_logs(item))
        except ToolkitError as exc:
            rows.append(
                {"source": str(item), "kind": "logs", "status": "failed", "reason": str(exc)}
            )
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else None


def gather(
    histories: Any = None,
    *,
    logs: Any = None,
    configs: Any = None,
    server: Any = None,
    query: str | None = None,
    namespace: str = "default",
) -> Inputs:
    """Read every input of an investigation.

    Raises
    ------
    toolkit.errors.HistoryFormatError
        When histories were given but not one of them could be read (the message names the
        inputs and why each file failed).
    """
    rows: list[dict[str, Any]] = []
    frames, files = _histories(_as_list(histories), rows)
    if server is not None:
        from toolkit.histories.reading.fetch import fetch_histories

        fetched = fetch_histories(server, query, namespace=namespace)
        if len(fetched):
            frames.append(fetched)
    events = pd.concat(frames, ignore_index=True) if frames else empty_events_frame()
    asked = histories is not None or server is not None
    if asked and events.empty:
        reasons = "; ".join(f"{r['source']}: {r['reason']}" for r in rows[:5]) or "no files"
        where = histories if histories is not None else f"{server} ({query})"
        raise HistoryFormatError(
            str(where),
            f"no history could be read ({reasons})",
            expected="history files (any exported dialect), a folder or a glob of them",
        )
    log_frame = _logs(_as_list(logs), rows)
    errors = pd.DataFrame(rows, columns=ERRORS_COLUMNS)
    for column in ERRORS_COLUMNS:
        errors[column] = errors[column].astype(object)
    return Inputs(events, log_frame, _as_list(configs), errors, files)
