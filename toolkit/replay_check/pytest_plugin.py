"""The replay check in a project's own test suite (a pytest plugin, loaded by its entry point).

Two ways in:

- **options**, on the command line or in the project's pytest configuration: one test per
  history file (one for a server's runs), failing with the explanation and the Replayer's text,
  skipped with the reason for histories the code does not define::

      pytest --replay-check tests/histories --replay-check-workflows app.workflows:Order

      # pyproject.toml
      [tool.pytest.ini_options]
      replay_check = ["tests/histories"]             # files, folders, globs, a dataset
      replay_check_workflows = ["app.workflows:Order"]
      replay_check_options = "app.replay:replayer_options"   # optional

  With ``--replay-check-address`` (and ``--replay-check-query``, ``--replay-check-sample``) the
  histories are fetched from a server (a staging namespace).
- **the fixture** ``replay_check``: :func:`toolkit.replay_check` itself, whose result has
  :meth:`~toolkit.replay_check.ReplayCheck.assert_replays`::

      def test_open_orders_survive_the_deploy(replay_check):
          replay_check("tests/histories/", [OrderWorkflow]).assert_replays()

Nothing is imported beyond pytest until a test asks for a check.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["ReplayCheckFailure"]

_KEY = pytest.StashKey[Any]()


class ReplayCheckFailure(AssertionError):
    """A history the new code would not replay (the message says why)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("replay-check", "replay recorded histories with the workflow code")
    group.addoption("--replay-check", action="append", default=[], metavar="PATH",
                    help="history files, folders, globs or a dataset to replay (one test each)")
    group.addoption("--replay-check-workflows", action="append", default=[],
                    metavar="MODULE:CLASS", help="the workflow classes to replay them with")
    group.addoption("--replay-check-options", metavar="MODULE:FUNCTION",
                    help="a function returning the Replayer options")
    group.addoption("--replay-check-address", help="fetch the runs from this Temporal server")
    group.addoption("--replay-check-query", help="visibility query for the server")
    group.addoption("--replay-check-namespace", default=None, help="namespace on the server")
    group.addoption("--replay-check-sample", type=int, default=None,
                    help="closed runs per workflow type and build id (every open run is checked)")
    parser.addini("replay_check", "histories replayed by the replay check", type="paths",
                  default=[])  # fmt: skip
    parser.addini("replay_check_workflows", "workflow classes (module:Class)", type="args",
                  default=[])  # fmt: skip
    parser.addini("replay_check_options", "a function returning Replayer options", default="")
    parser.addini("replay_check_address", "a Temporal server", default="")
    parser.addini("replay_check_query", "visibility query for the server", default="")


def _settings(config: pytest.Config) -> dict[str, Any]:
    paths = [str(p) for p in config.getoption("replay_check")] or [
        str(p) for p in config.getini("replay_check")]  # fmt: skip
    return {
        "paths": paths,
        "workflows": config.getoption("replay_check_workflows")
        or list(config.getini("replay_check_workflows")),
        "options": config.getoption("replay_check_options")
        or config.getini("replay_check_options") or None,
        "address": config.getoption("replay_check_address")
        or config.getini("replay_check_address") or None,
        "query": config.getoption("replay_check_query")
        or config.getini("replay_check_query") or None,
        "namespace": config.getoption("replay_check_namespace") or "default",
        "sample": config.getoption("replay_check_sample"),
    }


class ReplayCheckItem(pytest.Item):
    """One history file (or a server's runs) of the configured check."""

    def __init__(self, *, source: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source

    def runtest(self) -> None:
        check = _the_check(self.config)
        rows = check.results if self.source == "*" else check.results[
            check.results["source"].map(os.path.abspath) == os.path.abspath(self.source)]
        broken = rows[rows["outcome"].isin(["nondeterminism", "failed"])]
        unreadable = rows[rows["reason"].fillna("").str.startswith("unreadable")]
        if len(broken) or len(unreadable):
            raise ReplayCheckFailure(_describe(broken, unreadable))
        if len(rows) and (rows["outcome"] == "skipped").all():
            pytest.skip("; ".join(dict.fromkeys(rows["reason"])))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ReplayCheckFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"replay-check {self.name}"


def _describe(broken: Any, unreadable: Any) -> str:
    lines = []
    for row in broken.sort_values("open", ascending=False).itertuples():
        state = "open run" if row.open else "closed run"
        lines.append(f"{state} {row.workflow_id} ({row.run_id}, recorded by {row.label}): "
                     f"{row.outcome}\n  {row.explanation or ''}\n"
                     f"  the Replayer: {row.core_message}")  # fmt: skip
    lines += [f"not checked: {row.reason}" for row in unreadable.itertuples()]
    return "\n".join(lines)


def _the_check(config: pytest.Config) -> Any:
    """The configured check, run once for every item of the session."""
    if _KEY not in config.stash:
        from toolkit.replay_check import replay_check

        settings = _settings(config)
        source = settings["address"] or settings["paths"]
        config.stash[_KEY] = replay_check(
            source, settings["workflows"], options=settings["options"], query=settings["query"],
            namespace=settings["namespace"], sample=settings["sample"],
        )  # fmt: skip
    return config.stash[_KEY]


def _sources(settings: dict[str, Any]) -> Iterator[str]:
    from toolkit.histories.reading.batch import find_history_files

    for path in settings["paths"]:
        if os.path.isdir(path) and (Path(path) / "_toolkit" / "dataset.json").is_file():
            yield path  # a dataset
        else:
            yield from (str(p) for p in find_history_files(path))


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    settings = _settings(config)
    if not settings["workflows"] or not (settings["paths"] or settings["address"]):
        return
    sources = list(_sources(settings)) if not settings["address"] else []
    datasets = [s for s in sources if os.path.isdir(s)]
    if settings["address"] or datasets:  # the runs are not files: one test for all of them
        where = settings["address"] or ", ".join(datasets)
        items.append(ReplayCheckItem.from_parent(session, name=f"replay-check[{where}]",
                                                 source="*"))  # fmt: skip
        return
    for source in sources:
        items.append(ReplayCheckItem.from_parent(
            session, name=f"replay-check[{os.path.relpath(source)}]", source=source))


@pytest.fixture
def replay_check() -> Any:
    """:func:`toolkit.replay_check` (see its parameters); call ``.assert_replays()`` on what it
    returns to fail the test with what would break."""
    from toolkit.replay_check import replay_check as check

    return check
