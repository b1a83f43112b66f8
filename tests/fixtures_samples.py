"""Session fixture: the sample histories recorded once on the real dev server.

Import it in ``tests/conftest.py`` with ``from fixtures_samples import samples``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.lab.samples import record_samples
from toolkit.lab.server import DevServer


@pytest.fixture(scope="session")
def samples(dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every sample scenario recorded on the session's dev server: history name -> JSON file."""
    return record_samples(dev_server.address, tmp_path_factory.mktemp("samples"))
