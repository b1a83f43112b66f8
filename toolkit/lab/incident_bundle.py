"""The lab's incident bundle: what a team would have saved after the two lab incidents.

``notebooks/postmortem.ipynb`` runs on it when no folder of real exports is given. It holds,
as plain files with no lab sidecars (the way a user's exports look):

- ``histories/``: the Python ADK runs recorded on google-adk 1.28.1 and 1.29.0 (``make record``),
  including the rolling upgrade whose second turn fails with ``[TMPRL1100]`` on the 1.29.0 worker;
- ``logs/worker.log``: the hosted runtime's log before the endpoint fix (``duplicate tool``
  errors, five deliveries, a dead letter);
- ``mcp.json``: that runtime's MCP registry (two entries on one endpoint).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from toolkit.errors import LabError

__all__ = ["Bundle", "lab_bundle"]

DATA = Path(__file__).resolve().parents[2] / "data"
_RELEASES = ("adk-1.28.1", "adk-1.29.0")


@dataclass(frozen=True)
class Bundle:
    """Where the bundle's parts are."""

    histories: Path
    logs: Path
    configs: Path


def lab_bundle(out: Path, data: Path = DATA) -> Bundle:
    """Copy the bundle's files from the recorded ``data`` into ``out`` (replacing it).

    Raises
    ------
    toolkit.errors.LabError
        When the recordings are missing (run ``make record``).
    """
    sources = [p for r in _RELEASES for p in sorted((data / "adk" / r).glob("*.json"))]
    sources = [p for p in sources if not p.name.endswith(".meta.json")]
    log = data / "duplicate_tool" / "go" / "before.log"
    registry = data / "duplicate_tool" / "go" / "registry.json"
    if not sources or not log.is_file() or not registry.is_file():
        raise LabError(f"{data}: the ADK and duplicate-tool recordings are missing; "
                       "expected them from make record")  # fmt: skip
    if out.exists():
        shutil.rmtree(out)
    bundle = Bundle(out / "histories", out / "logs", out / "mcp.json")
    bundle.histories.mkdir(parents=True)
    bundle.logs.mkdir()
    for path in sources:
        # Exports are flat and named by the user: the release is not in the path.
        shutil.copy(
            path, bundle.histories / f"run-{len(list(bundle.histories.iterdir())):02d}.json"
        )
    shutil.copy(log, bundle.logs / "worker.log")
    shutil.copy(registry, bundle.configs)
    return bundle
