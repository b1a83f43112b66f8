"""Shared fixtures: the real dev server, the public corpus, recorded data; and how `make test`
splits the tests between pytest-xdist workers."""

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
    """One real Temporal dev server for the session (for each xdist worker that uses one), on a
    free port, stopped by PID."""
    server = DevServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


#: Session fixtures worth starting once per run rather than once per xdist worker: the modules
#: whose tests use one run on the same worker. (A dev server is not one of them: it starts in
#: seconds, and the server tests are a third of the run, too much to keep on one worker.)
_ONE_WORKER = {"spark": "spark"}  # a JVM of its own, a gigabyte of memory


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def _keeps_module_state(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture shared with other tests of its module or class."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = getattr(info, "name2fixturedefs", None) or {}
    scopes = {d.scope for defs in definitions.values() for d in defs}
    return bool(scopes - {"function", "session"})


def _units(items: list[pytest.Item]) -> dict[str, tuple[int, str | None]]:
    """Node id -> ``(rank, xdist group)``: lower ranks are handed out first (the longest units,
    so that the quick modules fill the gaps at the end); group ``None`` makes the test a unit of
    its own. A group name holds neither ``@`` nor ``]`` (xdist splits node ids on them)."""
    shared: dict[str, str] = {}  # module -> the group of a session fixture one of its tests uses
    slow: set[str] = set()  # modules with slow or live-server tests
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))  # with the fixtures they use in turn
        for fixture, group in _ONE_WORKER.items():
            if fixture in fixtures:
                shared.setdefault(_module(item), group)
        marked = item.get_closest_marker("slow") or item.get_closest_marker("server")
        if marked or "dev_server" in fixtures:
            slow.add(_module(item))
    units: dict[str, tuple[int, str | None]] = {}
    for item in items:
        module = _module(item)
        if module in shared:  # the whole module, so that its module fixtures are built once
            units[item.nodeid] = (1, shared[module])
        elif item.get_closest_marker("slow") and not _keeps_module_state(item):
            # A slow test sharing nothing with its module goes alone: the workers split the
            # long ones. Live recordings (minutes of the dev server's timers) go first of all.
            live = "dev_server" in getattr(item, "fixturenames", ())
            units[item.nodeid] = (0 if live else 2, None)
        else:  # the module stays on one worker: its module fixtures are built once
            units[item.nodeid] = (3 if module in slow else 4, module)
    return units


@pytest.hookimpl(tryfirst=True)  # before xdist appends the group to each node id
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (``make test``): group the tests, long units first."""
    if config.getoption("dist", "no") != "loadgroup":
        return
    units = _units(items)
    for item in items:
        group = units[item.nodeid][1]
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # xdist hands out the units in collection order (with --no-loadscope-reorder); a stable
    # sort keeps the order of the tests inside each unit.
    items.sort(key=lambda item: units[item.nodeid][0])


from fixtures_samples import samples  # noqa: E402,F401  (session fixture: recorded samples)
from fixtures_spark import spark  # noqa: E402,F401  (session fixture: local Spark)
