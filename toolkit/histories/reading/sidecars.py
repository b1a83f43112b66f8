"""Files that sit next to exported histories but are not histories.

Folders people save after an incident (and the lab's ``data/``) mix histories with other files:
the lab's ``<name>.meta.json`` metadata, MCP request logs (``*.mcp.jsonl``), worker logs, notes,
tables and charts. Loading them as histories would report them as broken files, which hides the
files that really are broken; they are recognised by name instead and skipped with a note.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["LAB_SIDECARS", "sidecar_kind"]

#: Kinds skipped even when a file is named explicitly (the lab writes them next to histories,
#: so a list built with ``glob("data/adk/*/*.json")`` holds them); other kinds are skipped only
#: when a folder or a glob is expanded, and a file named explicitly is always tried.
LAB_SIDECARS = ("lab metadata sidecar", "MCP request log")

#: Name endings (lower case) of files that are never histories, and what they are.
_ENDINGS = (
    (".meta.json", "lab metadata sidecar"),
    (".mcp.jsonl", "MCP request log"),
    # No history dialect is JSON lines; such files next to histories are logs (the lab's
    # per-server ``mcp.jsonl`` request logs, structured worker logs).
    (".jsonl", "JSON lines log"),
    (".ndjson", "JSON lines log"),
    (".log", "log file"),
    (".log.gz", "log file"),
    (".md", "notes"),
    (".csv", "table"),
    (".parquet", "table"),
    (".png", "image"),
    (".svg", "image"),
    (".html", "report"),
    (".ipynb", "notebook"),
    (".yaml", "config"),
    (".yml", "config"),
    (".py", "source code"),
)
#: Whole file names the lab writes next to recordings.
_NAMES = {"meta.json": "lab metadata sidecar"}


def sidecar_kind(path: str | Path) -> str | None:
    """What a file that is not a history is, judged by its name; None for a history candidate.

    Parameters
    ----------
    path
        A file path.

    Returns
    -------
    str or None
        E.g. ``"lab metadata sidecar"`` for ``run.meta.json``, ``"MCP request log"`` for
        ``run.mcp.jsonl``; None when the name does not rule out a history.
    """
    name = os.path.basename(os.fspath(path)).lower()  # no Path built: called once per file
    if name in _NAMES:
        return _NAMES[name]
    for ending, kind in _ENDINGS:
        if name.endswith(ending):
            return kind
    return None
