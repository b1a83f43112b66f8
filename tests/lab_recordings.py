"""The lab's committed recordings (``data/<framework>/<env>/<scenario>.json`` and ``.meta.json``)
as the data tests read them.

Import with ``from lab_recordings import ...`` (``tests/`` is on the path).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolkit.lab.adk_python.matrix import MATRIX_NAME

DATA_ROOT = Path(__file__).resolve().parents[1] / "data"


def recordings_dir(framework: str) -> Path:
    """``data/<framework>``; skips the importing test module when no replay matrix was recorded
    there (the recording is ``make record``, too slow for CI)."""
    path = DATA_ROOT / framework
    if not (path / MATRIX_NAME).exists():
        pytest.skip(f"no recorded data in {path} (run `make record`)", allow_module_level=True)
    return path


def load_recording(data: Path, env: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The history ``data/env/name.json`` and its metadata."""
    path = data / env / f"{name}.json"
    return (json.loads(path.read_text()),
            json.loads(path.with_suffix(".meta.json").read_text()))


def event_attributes(history: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The ``key`` attributes (e.g. ``activityTaskScheduledEventAttributes``) of the events that
    have them, in order."""
    return [e[key] for e in history["events"] if key in e]
