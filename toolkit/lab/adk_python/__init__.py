"""Recorder A: real Python ADK agents on a real Temporal server, across google-adk versions.

Modules: :mod:`.envs` (version environments), :mod:`.workflow` (the agent workflow),
:mod:`.worker` (worker process), :mod:`.scenarios`, :mod:`.recorder`, :mod:`.replay` (replay
process), :mod:`.matrix` (replay matrix). The entry points below import lazily because the
worker and replay processes import this package inside old version environments.

Examples
--------
>>> from toolkit.lab.server import DevServer                    # doctest: +SKIP
>>> with DevServer() as server:
...     paths = record_live(server.address, Path("build/live"))
"""

from __future__ import annotations

import asyncio
from pathlib import Path

__all__ = ["record_all", "record_live"]

LIVE_SCENARIOS = ("two_turns", "two_toolsets")


def record_live(server_address: str, out_dir: Path) -> list[Path]:
    """Record the two-turn and two-toolsets scenarios with the project's own google-adk.

    Parameters
    ----------
    server_address
        Temporal frontend ``host:port`` (e.g. ``DevServer().address``).
    out_dir
        Histories go to ``out_dir/<env name>/<scenario>.json`` (+ ``.meta.json``), the layout
        of ``data/adk``.

    Returns
    -------
    list of Path
        The history files, in scenario order.
    """
    from toolkit.lab.adk_python.envs import MAIN_ENV
    from toolkit.lab.adk_python.recorder import record_env
    from toolkit.lab.adk_python.scenarios import scenario

    chosen = tuple(scenario(name) for name in LIVE_SCENARIOS)
    return asyncio.run(record_env(MAIN_ENV, server_address, Path(out_dir), scenarios=chosen))


def record_all(data_dir: Path, server_address: str, envs: list[str] | None = None) -> list[Path]:
    """Record every scenario in every version environment, then write the replay matrix.

    Parameters
    ----------
    data_dir
        The repository's ``data`` directory: histories go to ``data_dir/adk/<env>/``, virtual
        environments are built under ``data_dir/venvs/<env>`` (gitignored) when missing; worker
        logs and MCP request logs go to ``data_dir/adk/<env>/logs/``.
    server_address
        Temporal frontend ``host:port``.
    envs
        Environment names (``adk-1.28.1`` ...); all of :data:`.envs.ENVIRONMENTS` when None.
        Rolling upgrades are recorded when both of their environments are selected; the matrix
        replays every history under ``data_dir/adk`` in every selected environment.

    Returns
    -------
    list of Path
        History files, then the replay matrix CSV.
    """
    from toolkit.lab.adk_python.envs import ENVIRONMENTS, environment
    from toolkit.lab.adk_python.matrix import build_matrix
    from toolkit.lab.adk_python.recorder import record_env, record_upgrade
    from toolkit.lab.adk_python.scenarios import UPGRADES

    selected = list(ENVIRONMENTS) if envs is None else [environment(name) for name in envs]
    adk_dir, venvs_dir = Path(data_dir) / "adk", Path(data_dir) / "venvs"
    names = {env.name for env in selected}
    paths: list[Path] = []
    for env in selected:
        paths += asyncio.run(record_env(env, server_address, adk_dir, venvs_dir=venvs_dir,
                                        log_dir=adk_dir / env.name / "logs"))
    for upgrade in UPGRADES:
        if {upgrade.before, upgrade.after} <= names:
            paths.append(asyncio.run(
                record_upgrade(upgrade, server_address, adk_dir, venvs_dir=venvs_dir,
                               log_dir=adk_dir / upgrade.before / "logs")))
    paths.append(build_matrix(adk_dir, selected, venvs_dir=venvs_dir))
    return paths
