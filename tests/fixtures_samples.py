"""Session fixture: the sample histories recorded once on the real dev server.

Import it in ``tests/conftest.py`` with ``from fixtures_samples import samples``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.lab.samples import record_samples
from toolkit.lab.server import DevServer

# One recording per server even when several modules import the fixture (each import is a
# separate fixture definition to pytest, and would otherwise record again).
_RECORDED: dict[str, dict[str, Path]] = {}


@pytest.fixture(scope="session")
def samples(dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every sample scenario recorded on the session's dev server: history name -> JSON file."""
    if dev_server.address not in _RECORDED:
        _RECORDED[dev_server.address] = record_samples(
            dev_server.address, tmp_path_factory.mktemp("samples"),
        )
    return _RECORDED[dev_server.address]
