"""Replay recorded histories with this environment's OpenAI Agents workflow (the real Replayer).

``python -m toolkit.lab.openai_agents.replay --out RESULTS.jsonl HISTORY.json ...`` runs inside
one environment of :mod:`.envs` and writes one JSON line per history (``history``, ``outcome``,
``error_type``, ``message``, the replaying versions), like :mod:`toolkit.lab.adk_python.replay`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.lab.adk_python.replay import main_for, replay_with
from toolkit.lab.openai_agents.compat import versions

__all__ = ["replay_files", "replayer_options"]


def replayer_options() -> dict[str, Any]:
    """The ``Replayer`` options of this environment's workers (the OpenAI Agents plugin, the
    lab's sandbox), for ``tk.replay_check(options=...)``."""
    from toolkit.lab.openai_agents.worker import build_plugin, sandbox_runner

    return {"plugins": [build_plugin()], "workflow_runner": sandbox_runner()}


async def _replay(paths: Sequence[Path]) -> list[dict[str, Any]]:
    from temporalio.worker import Replayer

    from toolkit.lab.openai_agents.workflow import LabOpenAIAgentWorkflow

    replayer = Replayer(workflows=[LabOpenAIAgentWorkflow], **replayer_options())
    return await replay_with(replayer, paths)


def replay_files(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Replay each history file with this interpreter's OpenAI Agents workflow code."""
    return asyncio.run(_replay(paths))


if __name__ == "__main__":
    main_for(replay_files, versions)
