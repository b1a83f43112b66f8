"""Replay recorded histories with this environment's pydantic-ai workflow (the real Replayer).

``python -m toolkit.lab.pydantic_ai.replay --out RESULTS.jsonl HISTORY.json ...`` runs inside
one environment of :mod:`.envs` and writes one JSON line per history (``history``, ``outcome``,
``error_type``, ``message``, the replaying versions), like :mod:`toolkit.lab.adk_python.replay`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.lab.adk_python.replay import classify
from toolkit.lab.pydantic_ai.agents import versions

__all__ = ["replay_files"]


async def _replay(paths: Sequence[Path]) -> list[dict[str, Any]]:
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    from toolkit.lab.pydantic_ai.worker import plugins, sandbox_runner
    from toolkit.lab.pydantic_ai.workflow import LabPydanticAIAgentWorkflow

    client_plugin, agent_plugins = plugins()
    replayer = Replayer(workflows=[LabPydanticAIAgentWorkflow],
                        plugins=[client_plugin, *agent_plugins], workflow_runner=sandbox_runner())
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


def replay_files(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Replay each history file with this interpreter's workflow code."""
    return asyncio.run(_replay(paths))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Replay histories with this environment.")
    parser.add_argument("--out", type=Path, required=True, help="JSON-lines results file")
    parser.add_argument("histories", nargs="+", type=Path)
    args = parser.parse_args(argv)
    env_versions = versions()
    rows = replay_files(args.histories)
    with args.out.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps({**row, "replayer": env_versions}) + "\n")
    sys.exit(0)


if __name__ == "__main__":
    main()
