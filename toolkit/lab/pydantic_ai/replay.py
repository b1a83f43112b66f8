"""Replay recorded histories with this environment's pydantic-ai workflow (the real Replayer).

``python -m toolkit.lab.pydantic_ai.replay --out RESULTS.jsonl HISTORY.json ...`` runs inside
one environment of :mod:`.envs` and writes one JSON line per history (``history``, ``outcome``,
``error_type``, ``message``, the replaying versions), like :mod:`toolkit.lab.adk_python.replay`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.lab.adk_python.replay import main_for, replay_with
from toolkit.lab.pydantic_ai.agents import versions

__all__ = ["replay_files", "replayer_options"]


def replayer_options() -> dict[str, Any]:
    """The ``Replayer`` options of this environment's workers (pydantic-ai's plugins, the lab's
    sandbox), for ``tk.replay_check(options=...)``."""
    from toolkit.lab.pydantic_ai.worker import plugins, sandbox_runner

    client_plugin, agent_plugins = plugins()
    return {"plugins": [client_plugin, *agent_plugins], "workflow_runner": sandbox_runner()}


async def _replay(paths: Sequence[Path]) -> list[dict[str, Any]]:
    from temporalio.worker import Replayer

    from toolkit.lab.pydantic_ai.workflow import LabPydanticAIAgentWorkflow

    replayer = Replayer(workflows=[LabPydanticAIAgentWorkflow], **replayer_options())
    return await replay_with(replayer, paths)


def replay_files(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Replay each history file with this interpreter's pydantic-ai workflow code."""
    return asyncio.run(_replay(paths))


if __name__ == "__main__":
    main_for(replay_files, versions)
