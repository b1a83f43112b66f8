"""Recorder B: a twin of Temporal's Go ``googleadk`` plugin's MCP listing rules.

A Python Temporal workflow schedules ``InvokeModel``, ``ListMcpTools`` and ``CallMcpTool`` where
the Go plugin and ADK would, for plugin ∈ {before the fix, with the fix} × ADK ∈ {v2.5.0, v2.6.0}
(:data:`VARIANTS`). The rules live in :mod:`.toolsets` (the plugin's toolset) and :mod:`.flow`
(ADK's model step); the activities talk to the lab's real MCP server and scripted model.

Entry points
------------
:func:`record_all`
    Every scenario × variant into ``<data_dir>/go_twin/`` plus the replay matrix (``make record``).
:func:`record_live`
    The one-call + plain turn scenario for the four variants into ``out_dir`` (``make demo``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from temporalio.client import Client

from toolkit.lab.go_twin.history import commands_per_turn, listings_per_turn, load_history
from toolkit.lab.go_twin.matrix import read_matrix, replay_matrix, write_matrix
from toolkit.lab.go_twin.recorder import Recording, record_scenarios
from toolkit.lab.go_twin.scenarios import LIVE_SUBSET, SCENARIOS, Scenario, scenario_named
from toolkit.lab.go_twin.variants import TASK_QUEUE, VARIANTS, WORKFLOW_NAME, Variant

__all__ = [
    "LIVE_SUBSET",
    "MATRIX_FILE",
    "SCENARIOS",
    "TASK_QUEUE",
    "VARIANTS",
    "WORKFLOW_NAME",
    "Recording",
    "Scenario",
    "Variant",
    "commands_per_turn",
    "listings_per_turn",
    "load_history",
    "read_matrix",
    "record_all",
    "record_into",
    "record_live",
    "scenario_named",
]

MATRIX_FILE = "replay_matrix.csv"


async def record_into(
    out_dir: Path,
    server_address: str,
    scenarios: Iterable[Scenario] = SCENARIOS,
    variants: Iterable[Variant] = VARIANTS,
    *,
    namespace: str = "default",
) -> list[Path]:
    """Record ``scenarios`` × ``variants`` into ``out_dir`` and write its replay matrix.

    Files from an earlier recording of the same variants that this run did not write again are
    removed, so ``out_dir`` holds exactly one recording per scenario and variant.

    Returns
    -------
    list of Path
        Every file written: histories, metadata, then ``replay_matrix.csv``.
    """
    out_dir = Path(out_dir)
    variants = list(variants)
    client = await Client.connect(server_address, namespace=namespace)
    recordings = await record_scenarios(client, list(scenarios), variants, out_dir)
    written = [p for r in recordings for p in (r.history_path, r.meta_path)]
    keep = {p.resolve() for p in written}
    for variant in variants:
        for stale in (out_dir / variant.name).glob("*.json"):
            if stale.resolve() not in keep:
                stale.unlink()
    rows = await replay_matrix(out_dir, [r.history_path for r in recordings])
    written.append(write_matrix(rows, out_dir / MATRIX_FILE))
    return written


def record_all(data_dir: Path, server_address: str) -> list[Path]:
    """Every scenario × variant into ``<data_dir>/go_twin/`` and its replay matrix.

    Parameters
    ----------
    data_dir
        The repository's ``data/`` directory (the twin writes its own ``go_twin/`` below it).
    server_address
        A running Temporal server (``host:port``), e.g. :class:`toolkit.lab.server.DevServer`.
    """
    return asyncio.run(record_into(Path(data_dir) / "go_twin", server_address))


def record_live(server_address: str, out_dir: Path) -> list[Path]:
    """The one-call + plain turn scenario for all four variants, into ``out_dir`` directly
    (``<out_dir>/<variant>/<scenario>.json``, ``.meta.json`` and ``replay_matrix.csv``)."""
    scenarios = [scenario_named(name) for name in LIVE_SUBSET]
    return asyncio.run(record_into(Path(out_dir), server_address, scenarios))
