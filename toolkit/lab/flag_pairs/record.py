"""Record the flag pairs and the real Replayer's verdict on each history replayed by each release.

``python -m toolkit.lab.flag_pairs --data data`` (also ``make record`` part ``flag_pairs``) writes

- ``data/flag_pairs/<flag>/<version>/<scenario>.json``: the history (the CLI's export) and its
  ``.meta.json`` (release, workflow id, status, the flags its workflow tasks recorded);
- ``data/flag_pairs/recordings.csv``: one row per history, the same facts;
- ``data/flag_pairs/replay_matrix.csv``: each history replayed by every release recorded for the
  same flag (both ways and itself), in that release's environment, with the Replayer's outcome
  (``tk.read_replay_matrix`` reads it: ``recorded_release`` / ``replayer_release``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from toolkit.errors import LabError
from toolkit.lab.adk_python.matrix import replay_in
from toolkit.lab.flag_pairs.drive import EchoService, Run, run_scenario
from toolkit.lab.flag_pairs.envs import environment
from toolkit.lab.flag_pairs.plan import PLAN, Recording
from toolkit.lab.flag_pairs.workflows import CODE_ENV
from toolkit.lab.server import DevServer, find_temporal_binary

__all__ = [
    "MATRIX_COLUMNS",
    "PLAN",
    "RECORDING_COLUMNS",
    "Recording",
    "build_matrix",
    "main",
    "record_all",
    "record_one",
]


RECORDING_COLUMNS = (
    "history",
    "flag",
    "scenario",
    "temporalio",
    "single_batch",
    "code",
    "workflow_id",
    "status",
    "sdk_name",
    "sdk_version",
    "core_flags",
    "lang_flags",
)
MATRIX_COLUMNS = (
    "history",
    "flag",
    "scenario",
    "recorded_release",
    "replayer_release",
    "outcome",
    "error_type",
    "message",
)


def recorded_flags(history: dict[str, Any]) -> dict[str, Any]:
    """SDK name, version and the union of the flags its completed workflow tasks recorded."""
    core: set[int] = set()
    lang: set[int] = set()
    sdk: dict[str, str] = {}
    for event in history.get("events", []):
        metadata = (event.get("workflowTaskCompletedEventAttributes") or {}).get("sdkMetadata")
        if not metadata:
            continue
        core.update(int(f) for f in metadata.get("coreUsedFlags") or [])
        lang.update(int(f) for f in metadata.get("langUsedFlags") or [])
        sdk.update(
            {
                k: v
                for k, v in (
                    ("name", metadata.get("sdkName")),
                    ("version", metadata.get("sdkVersion")),
                )
                if v
            }
        )
    return {
        "sdk_name": sdk.get("name", ""),
        "sdk_version": sdk.get("version", ""),
        "core": sorted(core),
        "lang": sorted(lang),
    }


def _endpoint(address: str, task_queue: str) -> str:
    """Create a Nexus endpoint on the dev server targeting ``task_queue``; return its name."""
    name = f"flag-pairs-{uuid.uuid4().hex[:8]}"
    command = [
        str(find_temporal_binary()),
        "operator",
        "nexus",
        "endpoint",
        "create",
        "--address",
        address,
        "--name",
        name,
        "--target-namespace",
        "default",
        "--target-task-queue",
        task_queue,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise LabError(f"creating Nexus endpoint {name} failed: {done.stderr[-2000:]}")
    return name


async def record_one(
    client: Client,
    recording: Recording,
    address: str,
    out_dir: Path,
    log_dir: Path,
    endpoint: str | None = None,
    venvs_dir: Path | None = None,
) -> Path:
    """Record ``recording`` into ``out_dir`` (history and ``.meta.json``); return the path.

    ``endpoint`` is the Nexus endpoint the Nexus workflow calls; ``venvs_dir`` where release
    environments are built (None: ``data/venvs``)."""
    env = environment(recording.env)
    tag = uuid.uuid4().hex[:8]
    workflow_id = f"flag-pairs-{recording.scenario.replace('_', '-')}-{recording.label}-{tag}"
    run = Run(
        env, address, f"flag-pairs-{tag}", log_dir, recording.single_batch, recording.code,
        venvs_dir,
    )  # fmt: skip
    history, status, run_id = await run_scenario(
        client, run, recording.workflow_type, workflow_id, recording.delivery, endpoint
    )
    flags = recorded_flags(history)
    meta = {
        "flag": recording.flag,
        "scenario": recording.scenario,
        "env": env.name,
        "temporalio": run.worker_info.get("temporalio"),
        "single_batch": recording.single_batch,
        "code": recording.code,
        "workflow_type": recording.workflow_type,
        "workflow_id": workflow_id,
        "run_id": run_id,
        "status": status,
        "delivery": recording.delivery,
        "flags": flags,
    }
    path = out_dir / recording.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")
    path.with_suffix(".meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return path


async def _record(
    plan: Sequence[Recording], address: str, out_dir: Path, log_dir: Path, venvs_dir: Path
) -> list[Path]:
    client = await Client.connect(address)
    nexus_queue = f"flag-pairs-nexus-{uuid.uuid4().hex[:8]}"
    nexus = any(r.workflow_type == "FlagPairsNexus" for r in plan)
    endpoint = _endpoint(address, nexus_queue) if nexus else None
    # The Nexus handler runs in this process for every run (one endpoint targets its queue).
    async with Worker(client, task_queue=nexus_queue, nexus_service_handlers=[EchoService()]):
        return [
            await record_one(client, r, address, out_dir, log_dir, endpoint, venvs_dir)
            for r in plan
        ]


def _write_csv(path: Path, columns: Sequence[str], rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_recordings(out_dir: Path, plan: Sequence[Recording]) -> Path:
    """``recordings.csv``: one row per recorded history of ``plan``."""
    rows = []
    for recording in plan:
        meta = json.loads((out_dir / recording.path).with_suffix(".meta.json").read_text())
        flags = meta["flags"]
        rows.append(
            {
                "history": recording.path.as_posix(),
                "flag": recording.flag,
                "scenario": recording.scenario,
                "temporalio": meta["temporalio"],
                "single_batch": meta["single_batch"],
                "code": meta["code"],
                "workflow_id": meta["workflow_id"],
                "status": meta["status"],
                "sdk_name": flags["sdk_name"],
                "sdk_version": flags["sdk_version"],
                "core_flags": " ".join(map(str, flags["core"])),
                "lang_flags": " ".join(map(str, flags["lang"])),
            }
        )
    return _write_csv(out_dir / "recordings.csv", RECORDING_COLUMNS, rows)


def replayer_label(release: str, code: str) -> str:
    """``1.35.0``, or ``1.35.0/<code>`` for a changed code version."""
    return release if code == "same" else f"{release}/{code}"


@contextlib.contextmanager
def _code_version(code: str) -> Iterator[None]:
    """``$FLAG_PAIRS_CODE`` for the replay subprocesses started inside (they inherit it)."""
    before = os.environ.get(CODE_ENV)
    os.environ[CODE_ENV] = code
    try:
        yield
    finally:
        if before is None:
            del os.environ[CODE_ENV]
        else:
            os.environ[CODE_ENV] = before


def build_matrix(out_dir: Path, plan: Sequence[Recording], venvs_dir: Path | None = None) -> Path:
    """Replay each history of ``plan`` with every release and code version recorded for its
    flag; write ``replay_matrix.csv``."""
    rows = []
    for flag in dict.fromkeys(r.flag for r in plan):
        mine = [r for r in plan if r.flag == flag]
        paths = [out_dir / r.path for r in mine]
        for env_name, code in dict.fromkeys((r.env, r.code) for r in mine):
            env = environment(env_name)
            with _code_version(code):
                results = replay_in(
                    env, paths, venvs_dir=venvs_dir, module="toolkit.lab.flag_pairs.replay"
                )
            for recording, result in zip(mine, results, strict=True):
                rows.append(
                    {
                        "history": recording.path.as_posix(),
                        "flag": flag,
                        "scenario": recording.scenario,
                        "recorded_release": recording.label,
                        "replayer_release": replayer_label(env.temporalio, code),
                        **{k: result[k] for k in ("outcome", "error_type", "message")},
                    }
                )
    return _write_csv(out_dir / "replay_matrix.csv", MATRIX_COLUMNS, rows)


def record_all(data_dir: Path, address: str, plan: Sequence[Recording] = PLAN) -> list[Path]:
    """Record ``plan`` under ``data_dir/flag_pairs`` on the server at ``address``; environments
    are built under ``data_dir/venvs`` when missing. Returns the histories, then the two CSVs
    (which describe ``plan`` only: record a part of it into another directory)."""
    out_dir, venvs_dir = Path(data_dir) / "flag_pairs", Path(data_dir) / "venvs"
    with tempfile.TemporaryDirectory(prefix="toolkit-flag-pairs-") as logs:
        paths = asyncio.run(_record(plan, address, out_dir, Path(logs), venvs_dir))
    return [*paths, write_recordings(out_dir, plan), build_matrix(out_dir, plan, venvs_dir)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.lab.flag_pairs", description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("data"))
    parser.add_argument("--address", help="a running server (default: start a dev server)")
    args = parser.parse_args(argv)
    if args.address:
        record_all(args.data, args.address)
        return 0
    with DevServer() as server:
        record_all(args.data, server.address)
    return 0


if __name__ == "__main__":
    sys.exit(main())
