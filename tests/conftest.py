"""Shared fixtures: the real dev server, the public corpus, recorded data; and how `make test`
splits the tests between pytest-xdist workers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    """One real Temporal dev server for the session (for each xdist worker that uses one), on a
    free port, stopped by PID."""
    server = DevServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


# How `make test` (pytest-xdist, --dist loadfile) splits the tests into units, each run whole on
# one worker. A unit is a module, so that its module fixtures are built once, except:
#: modules that share a session fixture worth starting once per run: one unit (one Spark JVM and
#: its gigabyte; a dev server is not one of them: it starts in seconds, and the live-server tests
#: are a third of the run, too much for one worker);
_SHARED_UNITS = {"tests/test_spark.py": "spark", "tests/test_dataset_engines.py": "spark"}
#: long tests that share nothing with the rest of their module: a unit each, so the workers split
#: them (each waits minutes on a notebook kernel or on the dev server's timers).
_ALONE = (
    "tests/test_notebooks.py::test_notebook_runs_quietly_and_its_checks_hold[",
    "tests/test_go_twin_live.py::test_every_other_scenario_live",
    "tests/test_hosted_runtime.py::test_python_capture_is_timestamped_and_correlates",
    "tests/test_hosted_runtime.py::test_record_go_writes_consistent_files",
)


def _unit(nodeid: str) -> str:
    """The unit of one test, by its node id (the controller sees nothing else of it)."""
    module = nodeid.split("::")[0]
    if module in _SHARED_UNITS:
        return _SHARED_UNITS[module]
    return nodeid if nodeid.startswith(_ALONE) else module


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # a pytest-xdist hook; before its own
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the units of :func:`_unit`, handed out in collection order."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    return UnitScheduling(config, log)


def _rank(item: pytest.Item) -> int:
    """Lower ranks are handed out first: the longest units, so that quick modules fill the gaps
    at the end. Live recordings (minutes of waiting on timers), Spark, the other long tests,
    modules with slow or live-server tests, then the rest."""
    unit, fixtures = _unit(item.nodeid), set(getattr(item, "fixturenames", ()))
    if unit == item.nodeid:
        return 0 if "dev_server" in fixtures else 2
    if unit in _SHARED_UNITS.values():
        return 1
    slow = item.get_closest_marker("slow") or item.get_closest_marker("server")
    return 3 if slow or "dev_server" in fixtures else 4


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: the tests in hand-out order (xdist hands out the units in collection
    order with --no-loadscope-reorder). A unit's rank is its first test's; a stable sort keeps
    the order inside each unit."""
    if not hasattr(config, "workerinput"):  # a run without workers keeps the file order
        return
    ranks: dict[str, int] = {}
    for item in items:
        ranks[_unit(item.nodeid)] = min(ranks.get(_unit(item.nodeid), 4), _rank(item))
    items.sort(key=lambda item: ranks[_unit(item.nodeid)])


from fixtures_samples import samples  # noqa: E402,F401  (session fixture: recorded samples)
from fixtures_spark import spark  # noqa: E402,F401  (session fixture: local Spark)
