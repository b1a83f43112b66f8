"""The replay matrix: every recorded twin history replayed against every variant's workflow.

Replay is temporalio's own :class:`~temporalio.worker.Replayer`; a pair either replays (``ok``),
fails with a :class:`~temporalio.workflow.NondeterminismError` (``nondeterminism``, the
``[TMPRL1100]`` text kept verbatim) or fails otherwise (``other``).
"""

from __future__ import annotations

import asyncio
import csv
from collections.abc import Iterable
from pathlib import Path

from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from toolkit.lab.go_twin.history import load_history
from toolkit.lab.go_twin.variants import VARIANTS, Variant
from toolkit.lab.go_twin.workflows import workflow_class, workflow_runner

__all__ = [
    "MATRIX_COLUMNS", "read_matrix", "replay_matrix", "replay_matrix_sync", "replay_one",
    "write_matrix",
]

MATRIX_COLUMNS = (
    "history", "recorded_variant", "replayer_variant", "outcome", "error_type", "message",
)


async def replay_one(history_path: Path, variant: Variant) -> tuple[str, str, str]:
    """Replay one history file against ``variant``: (outcome, error type, message)."""
    history = load_history(history_path)
    replayer = Replayer(workflows=[workflow_class(variant)], workflow_runner=workflow_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    failure = result.replay_failure
    if failure is None:
        return "ok", "", ""
    outcome = "nondeterminism" if isinstance(failure, NondeterminismError) else "other"
    return outcome, type(failure).__name__, str(failure)


async def replay_matrix(
    root: Path, histories: Iterable[Path], variants: Iterable[Variant] = VARIANTS
) -> list[dict[str, str]]:
    """One row per (history, replaying variant).

    Parameters
    ----------
    root
        Directory the history paths are reported relative to; each history lies in
        ``<root>/<recorded variant>/<scenario>.json``.
    histories
        History files to replay.
    variants
        Variants to replay each history against.
    """
    rows = []
    variants = list(variants)
    for path in sorted(histories):
        relative = Path(path).resolve().relative_to(Path(root).resolve())
        for variant in variants:
            outcome, error_type, message = await replay_one(path, variant)
            rows.append({
                "history": relative.as_posix(),
                "recorded_variant": relative.parts[0],
                "replayer_variant": variant.name,
                "outcome": outcome,
                "error_type": error_type,
                "message": message,
            })
    return rows


def write_matrix(rows: list[dict[str, str]], path: Path) -> Path:
    """Write the matrix as CSV (columns :data:`MATRIX_COLUMNS`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=MATRIX_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_matrix(path: Path) -> list[dict[str, str]]:
    """Read a matrix written by :func:`write_matrix` (every row, in file order)."""
    with Path(path).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def replay_matrix_sync(root: Path, histories: Iterable[Path]) -> list[dict[str, str]]:
    """:func:`replay_matrix` for callers without an event loop."""
    return asyncio.run(replay_matrix(root, histories))
