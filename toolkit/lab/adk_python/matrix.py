"""The replay matrix: every recorded history replayed in every version environment.

Each environment replays all histories in one subprocess of its own interpreter
(``python -m toolkit.lab.adk_python.replay``), so each replay uses exactly that environment's
google-adk, temporalio and plugin. The result is ``replay_matrix.csv`` with the columns
:data:`COLUMNS`, one row per (history, replaying environment).
"""

from __future__ import annotations

import csv
import json
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.errors import LabError
from toolkit.lab.adk_python.envs import (
    VersionEnvironment,
    ensure_environment,
    module_command,
    process_env,
)

__all__ = ["COLUMNS", "MATRIX_NAME", "build_matrix", "history_files", "read_matrix", "replay_in"]

COLUMNS = ("history", "recorded_env", "replayer_env", "outcome", "error_type", "message")
MATRIX_NAME = "replay_matrix.csv"


def history_files(adk_dir: Path) -> list[Path]:
    """Recorded histories under ``adk_dir`` (``<env>/<scenario>.json``, metadata excluded)."""
    return sorted(p for p in adk_dir.glob("*/*.json") if not p.name.endswith(".meta.json"))


REPLAY_MODULE = "toolkit.lab.adk_python.replay"


def replay_in(
    env: VersionEnvironment, histories: list[Path], *, venvs_dir: Path | None = None,
    timeout: float = 900.0, module: str = REPLAY_MODULE,
) -> list[dict[str, Any]]:
    """Replay ``histories`` with ``env``'s workflow code in a subprocess; one dict per history.

    ``module`` is the replay entry point run in ``env`` (another framework's recorder passes its
    own; it takes ``--out RESULTS.jsonl HISTORY ...`` like :mod:`.replay`).

    Raises
    ------
    LabError
        When the replay process fails or does not report every history.
    """
    python = ensure_environment(env, venvs_dir) if venvs_dir else ensure_environment(env)
    with tempfile.TemporaryDirectory(prefix="toolkit-replay-") as tmp:
        out = Path(tmp) / "results.jsonl"
        command = module_command(python, module, "--out", str(out),
                                 *(str(h) for h in histories))
        done = subprocess.run(command, capture_output=True, text=True, env=process_env(),
                              timeout=timeout, check=False)
        if done.returncode != 0 or not out.exists():
            raise LabError(f"replay in {env.name} failed (exit {done.returncode}): "
                           f"{done.stderr[-3000:]}")
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    if len(rows) != len(histories):
        raise LabError(f"replay in {env.name} reported {len(rows)} of {len(histories)} histories")
    return rows


def _recorded_env(history: Path) -> str:
    meta = history.with_suffix(".meta.json")
    if meta.exists():
        return str(json.loads(meta.read_text(encoding="utf-8"))["env"])
    return history.parent.name


def build_matrix(
    adk_dir: Path, envs: Sequence[VersionEnvironment], *, venvs_dir: Path | None = None,
    module: str = REPLAY_MODULE,
) -> Path:
    """Replay every history under ``adk_dir`` in every env of ``envs``; write the CSV there.

    ``module``: the replay entry point (see :func:`replay_in`)."""
    histories = history_files(adk_dir)
    if not histories:
        raise LabError(f"no recorded histories under {adk_dir}; expected <env>/<scenario>.json")
    rows = []
    for env in envs:
        results = replay_in(env, histories, venvs_dir=venvs_dir, module=module)
        for history, result in zip(histories, results, strict=True):
            rows.append({
                "history": history.relative_to(adk_dir).as_posix(),
                "recorded_env": _recorded_env(history), "replayer_env": env.name,
                "outcome": result["outcome"], "error_type": result["error_type"],
                "message": result["message"],
            })
    path = adk_dir / MATRIX_NAME
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_matrix(path: Path) -> list[dict[str, str]]:
    """Rows of a replay matrix CSV.

    Raises
    ------
    LabError
        When the header is not :data:`COLUMNS` (names the file).
    """
    with path.open(encoding="utf-8", newline="") as source:
        reader = csv.DictReader(source)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise LabError(f"{path} line 1: header {reader.fieldnames}; expected {list(COLUMNS)}")
        return list(reader)
