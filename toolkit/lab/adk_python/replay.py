"""Replay recorded histories with this environment's workflow code (temporalio's ``Replayer``).

``python -m toolkit.lab.adk_python.replay --out RESULTS.jsonl HISTORY.json ...`` runs inside one
version environment and writes one JSON line per history to ``RESULTS.jsonl``: ``history``,
``outcome`` (``ok``, ``nondeterminism`` or ``error``), ``error_type`` and ``message`` (the replay
failure's exact text), plus the versions of the replaying environment. A file rather than stdout
because the SDK core logs its warnings to stdout. One process replays many histories because most
of its time is imports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolkit.lab.adk_python.compat import versions

__all__ = ["classify", "main_for", "replay_files", "replay_with", "replayer_options"]


def classify(failure: BaseException | None) -> dict[str, str]:
    """Outcome, error type and message of one replay failure (None: replayed fine)."""
    if failure is None:
        return {"outcome": "ok", "error_type": "", "message": ""}
    from temporalio.workflow import NondeterminismError

    kind = "nondeterminism" if isinstance(failure, NondeterminismError) else "error"
    return {"outcome": kind, "error_type": type(failure).__name__, "message": str(failure)}


async def replay_with(replayer: Any, paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Replay each history file with ``replayer`` (a temporalio ``Replayer``), in order; one
    ``{"history", "outcome", "error_type", "message"}`` per file (see :func:`classify`)."""
    from temporalio.client import WorkflowHistory

    rows = []
    for path in paths:
        try:
            history = WorkflowHistory.from_json(path.stem, path.read_text(encoding="utf-8"))
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            failure: BaseException | None = result.replay_failure
        except Exception as error:
            failure = error
        rows.append({"history": str(path), **classify(failure)})
    return rows


def replayer_options() -> dict[str, Any]:
    """The ``Replayer`` options of this environment's workers (the ADK plugin, the lab's
    sandbox); ``tk.replay_check(..., options="toolkit.lab.adk_python.replay:replayer_options")``
    builds them in the replaying environment."""
    from toolkit.lab.adk_python.worker import build_plugin, sandbox_runner

    return {"plugins": [build_plugin()], "workflow_runner": sandbox_runner()}


async def _replay(paths: Sequence[Path]) -> list[dict[str, Any]]:
    from temporalio.worker import Replayer

    from toolkit.lab.adk_python.workflow import LabAdkAgentWorkflow

    replayer = Replayer(workflows=[LabAdkAgentWorkflow], **replayer_options())
    return await replay_with(replayer, paths)


def replay_files(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Replay each history file with this interpreter's workflow code."""
    return asyncio.run(_replay(paths))


def main_for(
    replay: Callable[[Sequence[Path]], list[dict[str, Any]]],
    env_versions: Callable[[], dict[str, Any]], argv: Sequence[str] | None = None,
) -> None:
    """The replay entry point of a framework: ``--out RESULTS.jsonl HISTORY ...``, one JSON line
    per history with the replaying environment's versions."""
    parser = argparse.ArgumentParser(description="Replay histories with this environment.")
    parser.add_argument("--out", type=Path, required=True, help="JSON-lines results file")
    parser.add_argument("histories", nargs="+", type=Path)
    args = parser.parse_args(argv)
    replaying = env_versions()
    rows = replay(args.histories)
    with args.out.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps({**row, "replayer": replaying}) + "\n")
    sys.exit(0)


def main(argv: Sequence[str] | None = None) -> None:
    main_for(replay_files, versions, argv)


if __name__ == "__main__":
    main()
