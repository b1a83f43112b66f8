"""History-budget recordings: agents' long tool loops on a dev server with lowered limits.

Modules: :mod:`.scenarios` (the runs and the server limits they meet), :mod:`.frameworks` (ADK,
OpenAI Agents and pydantic-ai as the recorder drives them), :mod:`.record` (the recorder). The
entry points import lazily, like the other recorders'.

Examples
--------
>>> paths = record_live(Path("build/live"))                      # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

__all__ = ["record_all", "record_live"]


def record_all(data_dir: Path, frameworks: Sequence[str] | None = None,
               budgets: Sequence[str] | None = None) -> list[Path]:
    """Record every budget of :data:`.scenarios.BUDGETS` with every framework (or the ones
    named) under ``data_dir/history_budget``, each group of runs on its own dev server.

    Returns
    -------
    list of Path
        The histories, then ``recordings.csv``.
    """
    from toolkit.lab.history_budget import record

    return record.record_all(Path(data_dir), frameworks, budgets)


def record_live(address: str, out_dir: Path, server_log: Path | None = None) -> list[Path]:
    """Record :data:`.scenarios.LIVE` (a loop the server terminates within a minute) with the
    project's own google-adk, on the dev server at ``address``.

    The server must have been started with ``LIVE.dynamic_config`` (``DevServer(
    dynamic_config=LIVE.dynamic_config, log_level="warn")``; its ``log_path`` as ``server_log``
    keeps its lines about the run). Histories go to ``out_dir/<env>/``.
    """
    from toolkit.lab.history_budget.frameworks import framework
    from toolkit.lab.history_budget.record import record_run
    from toolkit.lab.history_budget.scenarios import LIVE

    return asyncio.run(record_run(framework("adk"), LIVE, address, Path(out_dir),
                                  server_log=server_log))
