"""``read_history`` gives the frames it gave before the loaders were sped up (issue 25).

``fixtures/frames/digests.json`` holds, for every history file of the lab (``data/``) and of the
public corpus, read alone with ``read_history``, a digest of its frame: the columns in order, their
dtypes and every cell (a lazy cell as the value it decodes to; dict keys sorted, because the keys of
a binary history's marker ``details`` come in an order that depends on what the process imported);
or, for a file the loader refuses, the error's type and message. It also holds the digests of the
benchmark's tiled history (``benchmarks/bench_read_history.py``, 5,000 events) as proto-JSON and as
binary. The fixture was made by the implementation named in it, before the change; the test reads
the same files again and compares. A file whose bytes changed since (the lab re-recorded) is left
out; most must still be there.

Regenerate (only for a deliberate change of the frames):
``.venv/bin/python tests/test_frames_equal.py`` (writes the fixture).
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
from google.protobuf import json_format
from temporalio.api.history.v1 import History

import toolkit as tk
from toolkit.errors import ToolkitError
from toolkit.histories.reading.batch import find_history_files

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
DIGESTS = Path(__file__).parent / "fixtures" / "frames" / "digests.json"
SEED = ROOT / "data" / "adk" / "adk-2.13.0" / "two_turns.json"
TILED_EVENTS = 5_000


def _name(path: Path) -> str:
    path = path.resolve()
    for prefix, root in (("data", ROOT / "data"), ("corpus", CORPUS)):
        root = root.resolve()
        if path.is_relative_to(root):
            return f"{prefix}/{path.relative_to(root)}"
    raise AssertionError(f"a file outside data/ and the corpus: {path}")


def _plain(value: Any) -> Any:
    """A cell as plain data: lazy cells decoded, missing values as None."""
    if hasattr(value, "value") and type(value).__module__.startswith("toolkit."):
        value = value.value
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()  # numpy scalars
    return value


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": value.hex()}
    return repr(value)


def frame_digest(frame: pd.DataFrame) -> dict[str, str]:
    """The columns and dtypes of ``frame`` and a digest of every cell."""
    digest = hashlib.sha256()
    for column in frame.columns:
        for cell in frame[column].tolist():
            digest.update(orjson.dumps(_plain(cell), default=_default,
                                       option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))
            digest.update(b"\n")
    schema = ", ".join(f"{c}: {t}" for c, t in frame.dtypes.astype(str).items())
    return {
        "schema": hashlib.sha256(schema.encode()).hexdigest()[:16],
        "cells": digest.hexdigest()[:32],
        "rows": str(len(frame)),
    }


def _read(source: Any, name: str | None = None) -> dict[str, str]:
    try:
        return frame_digest(tk.read_history(source, name=name))
    except ToolkitError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def _tiled() -> dict[str, dict[str, str]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_read_history import build_large_history

    history = build_large_history(SEED, TILED_EVENTS)
    text = orjson.dumps(history, option=orjson.OPT_INDENT_2)
    binary = json_format.ParseDict(history, History()).SerializeToString()
    return {"json": _read(text, "tiled"), "binary": _read(binary, "tiled")}


def _files() -> list[Path]:
    """Every history file of the lab and of the corpus, each read by its name there (the
    ``source`` column holds it: no checkout's own path)."""
    return find_history_files([ROOT / "data", CORPUS / "histories"])


def _implementation() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    ).stdout.strip()[:120]


def write_fixture() -> None:
    files = {
        _name(p): {"sha256": hashlib.sha256(p.read_bytes()).hexdigest(), **_read(p, _name(p))}
        for p in _files()
    }
    fixture = {"implementation": _implementation(), "tiled": _tiled(), "files": files}
    DIGESTS.parent.mkdir(parents=True, exist_ok=True)
    DIGESTS.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    return json.loads(DIGESTS.read_text())


def test_files_read_as_before(corpus: Path, expected: dict[str, Any]) -> None:
    files = _files()
    compared = 0
    for path in files:
        want = expected["files"].get(_name(path))
        if want is None or want["sha256"] != hashlib.sha256(path.read_bytes()).hexdigest():
            continue  # recorded since the fixture was made
        got = {"sha256": want["sha256"], **_read(path, _name(path))}
        assert got == want, _name(path)
        compared += 1
    assert compared >= 0.8 * len(expected["files"]), (compared, len(expected["files"]))
    binaries = [p for p in files if p.suffix in (".bin", ".binpb")]
    assert binaries and compared > 300


def test_tiled_history_reads_as_before(expected: dict[str, Any]) -> None:
    if not SEED.exists():
        pytest.skip(f"the benchmark's seed history {SEED} is absent")
    assert _tiled() == expected["tiled"]


if __name__ == "__main__":
    write_fixture()
