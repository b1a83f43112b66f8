"""Shared fixtures: the real dev server, the public corpus, recorded data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.lab.server import DevServer

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"
DATA = ROOT / "data"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The public corpus in ../shared/corpus (skips where it is absent)."""
    if not CORPUS.is_dir():
        pytest.skip(f"public corpus not found at {CORPUS} (../shared is absent on this checkout)")
    return CORPUS


@pytest.fixture(scope="session")
def dev_server() -> Iterator[DevServer]:
    """One real Temporal dev server for the session, on a free port, stopped by PID."""
    server = DevServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


from fixtures_samples import samples  # noqa: E402,F401  (session fixture: recorded samples)
from fixtures_spark import spark  # noqa: E402,F401  (session fixture: local Spark)
