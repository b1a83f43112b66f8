"""Replay recorded flag-pair histories with this environment's temporalio ``Replayer``.

``python -m toolkit.lab.flag_pairs.replay --out RESULTS.jsonl HISTORY.json ...`` runs inside one
release's environment and writes one JSON line per history: ``history``, ``outcome`` (``ok``,
``nondeterminism`` or ``error``), ``error_type``, ``message`` and the replaying ``temporalio``.
Each history replays under the workflow id it was recorded with (its ``.meta.json``), since ids
the code builds from the workflow id must come out as recorded. ``$FLAG_PAIRS_CODE`` names the
code version replaying (:data:`toolkit.lab.flag_pairs.workflows.CODE_CHANGES`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["classify", "main", "replay_files", "replayer_options"]


def classify(failure: BaseException | None) -> dict[str, str]:
    """Outcome, error type and message of one replay failure (None: replayed fine)."""
    if failure is None:
        return {"outcome": "ok", "error_type": "", "message": ""}
    # By name: temporalio 1.1.0 raises its nondeterminism errors under the same class name.
    names = {cls.__name__ for cls in type(failure).__mro__}
    kind = "nondeterminism" if "NondeterminismError" in names else "error"
    return {"outcome": kind, "error_type": type(failure).__name__, "message": str(failure)}


def workflow_id_of(path: Path) -> str:
    """The workflow id ``path`` was recorded under (its sidecar), else the file's stem."""
    meta = path.with_suffix(".meta.json")
    if meta.is_file():
        return str(json.loads(meta.read_text(encoding="utf-8"))["workflow_id"])
    return path.stem


async def _replay_one(replayer: Any, path: Path) -> BaseException | None:
    from temporalio.client import WorkflowHistory

    history = WorkflowHistory.from_json(workflow_id_of(path), path.read_text(encoding="utf-8"))
    try:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    except TypeError:  # releases before raise_on_replay_failure raise the failure instead
        try:
            await replayer.replay_workflow(history)
        except Exception as error:
            return error
        return None
    return result.replay_failure


def replayer_options() -> dict[str, Any]:
    """The ``Replayer`` options of the flag pairs (unsandboxed: old sandboxes differ in what they
    let through), for ``tk.replay_check(options=...)``."""
    from temporalio.worker import UnsandboxedWorkflowRunner

    return {"workflow_runner": UnsandboxedWorkflowRunner()}


async def _replay(paths: Sequence[Path]) -> list[dict[str, Any]]:
    from temporalio.worker import Replayer

    from toolkit.lab.flag_pairs.workflows import workflows

    replayer = Replayer(workflows=workflows(), **replayer_options())
    rows = []
    for path in paths:
        try:
            failure = await _replay_one(replayer, path)
        except Exception as error:
            failure = error
        rows.append({"history": str(path), **classify(failure)})
    return rows


def replay_files(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Replay each history file with this interpreter's temporalio and workflow code."""
    return asyncio.run(_replay(paths))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Replay flag-pair histories with this release.")
    parser.add_argument("--out", type=Path, required=True, help="JSON-lines results file")
    parser.add_argument("histories", nargs="+", type=Path)
    args = parser.parse_args(argv)
    release = metadata.version("temporalio")
    with args.out.open("w", encoding="utf-8") as out:
        for row in replay_files(args.histories):
            out.write(json.dumps({**row, "temporalio": release}) + "\n")
    # temporalio 1.1.0's bridge aborts the interpreter's finalization (PyGILState_Release, exit
    # -6) after every replay has run; the results are written and closed, so skip finalizing.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
