"""``toolkit.sql``: ask DuckDB about histories, derived tables, logs and Parquet datasets.

(The function is exported as ``toolkit.sql``; it lives here, not in a ``toolkit/sql.py``, so
that no submodule named like it can shadow it in the lazily imported flat API.)

>>> tk.sql("select activity_type, max(attempt) from activities group by 1", events=events)
>>> tk.sql("select * from runs where workflow_type = 'Checkout'", dataset="exports.parquet")

Table names
-----------
Every keyword argument is registered under its own name. Some names bring others with them:

``events=`` (an events frame, see :mod:`toolkit.histories`)
    also exposes tables derived from it, each built only when its name appears in the query:
    ``activities``, ``workflow_tasks``, ``timers``, ``signals``, ``updates``,
    ``child_workflows``, ``markers`` (``toolkit.<name>(events)``), ``commands``
    (:func:`toolkit.commands`), ``agent_steps`` (:func:`toolkit.agent_steps`, roles detected
    from activity names) and ``nondeterminism_errors``. ``commands`` and ``agent_steps`` are
    computed per source file and carry a ``source`` column, so frames of many files stay apart;
    ``agent_steps`` leaves out the files whose activities match no agent framework (it raises
    only when none does).
    A table passed explicitly (``activities=my_frame``) wins over the derived one.
``logs=`` (a frame from :func:`toolkit.read_logs`)
    registered as ``logs``; its ``fields`` dict becomes JSON text. Also exposes the log
    detectors, each built only when its name appears in the query: ``duplicate_tools``,
    ``retries``, ``dead_letters``, ``mcp_client_failures`` (``toolkit.<name>(logs)``) and
    ``nondeterminism`` (the ``[TMPRL1100]`` lines); with no ``events=``, the logs' findings are
    also ``nondeterminism_errors``.
``dataset=`` (a directory written by :func:`toolkit.write_dataset`)
    registers each of its tables (``events``, ``activities``, ``workflow_tasks``, ``runs``) as a
    view over its Parquet files, partition columns ``namespace``, ``date`` and
    ``workflow_type`` included.
any other name
    a DataFrame is registered as a table; a path (a Parquet file, a directory of Parquet
    files, or a glob) as a view over ``read_parquet``.

Columns follow :mod:`toolkit.datasets.arrow`: dicts, lists and lazy cells are JSON text
(``attributes->>'$.activityType.name'``), durations are seconds (DOUBLE), times are TIMESTAMPTZ
in UTC; everything else keeps its name and meaning.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from toolkit.datasets.arrow import to_arrow
from toolkit.datasets.layout import TABLES, is_dataset, register_dataset
from toolkit.errors import ToolkitError

__all__ = ["DERIVED_FROM_EVENTS", "DERIVED_FROM_LOGS", "sql"]


def _derived() -> dict[str, Callable[[pd.DataFrame], pd.DataFrame]]:
    # Imported late: the analysis modules pull in temporalio and protobuf.
    from toolkit.agents.turns import agent_steps
    from toolkit.histories import tables
    from toolkit.replay.commands import commands, per_source
    from toolkit.replay.errors_table import nondeterminism_errors

    return {
        "activities": tables.activities,
        "workflow_tasks": tables.workflow_tasks,
        "timers": tables.timers,
        "signals": tables.signals,
        "updates": tables.updates,
        "child_workflows": tables.child_workflows,
        "markers": tables.markers,
        "commands": commands,  # already per source
        # agent_steps is per source too; re-wrapped so that files of no agent are left out.
        "agent_steps": per_source(inspect.unwrap(agent_steps), skip_unrecognised=True),
        "nondeterminism_errors": nondeterminism_errors,
    }


def _derived_from_logs(*, with_events: bool) -> dict[str, Callable[[pd.DataFrame], pd.DataFrame]]:
    from toolkit.logs.detectors import LOG_DETECTORS

    tables = dict(LOG_DETECTORS)
    if not with_events:  # else the name belongs to the events' WorkflowTaskFailed table
        tables["nondeterminism_errors"] = LOG_DETECTORS["nondeterminism"]
    return tables


#: Tables registered automatically next to ``logs=`` (``nondeterminism_errors`` too when no
#: ``events=`` is given).
DERIVED_FROM_LOGS: tuple[str, ...] = (
    "duplicate_tools", "retries", "dead_letters", "mcp_client_failures", "nondeterminism",
)  # fmt: skip

#: Tables registered automatically next to ``events=``.
DERIVED_FROM_EVENTS: tuple[str, ...] = (
    "activities", "workflow_tasks", "timers", "signals", "updates", "child_workflows", "markers",
    "commands", "agent_steps", "nondeterminism_errors",
)  # fmt: skip

_STRING_LITERAL = re.compile(r"'(?:[^']|'')*'")


def _mentioned(query: str, name: str) -> bool:
    """Whether ``name`` appears in the query as a word (outside string literals)."""
    code = _STRING_LITERAL.sub("''", query)
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", code, re.IGNORECASE) is not None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _register(connection: duckdb.DuckDBPyConnection, name: str, value: Any) -> None:
    if isinstance(value, pd.DataFrame):
        connection.register(name, to_arrow(value))
    elif isinstance(value, (str, os.PathLike)):
        path = Path(value)
        if path.is_dir():
            pattern = str(path / "**" / "*.parquet")
        elif path.exists() or any(ch in str(value) for ch in "*?["):
            pattern = str(value)
        else:
            raise ToolkitError(f"table {name}={value!s}: no such file or directory; expected a "
                               "Parquet file, a directory of Parquet files or a glob")
        literal = pattern.replace("'", "''")
        connection.execute(
            f"create view {_quote(name)} as select * from read_parquet('{literal}', "
            "hive_partitioning = true, union_by_name = true)"
        )
    else:
        raise ToolkitError(
            f"table {name}=<{type(value).__name__}>: cannot register it; expected a DataFrame "
            "or the path of a Parquet file, directory or dataset"
        )


def sql(
    query: str, *, dataset: str | os.PathLike[str] | None = None, **tables: Any
) -> pd.DataFrame:
    """Run a DuckDB query over frames and Parquet datasets; return the result as a DataFrame.

    Parameters
    ----------
    query
        DuckDB SQL. Table names are documented in :mod:`toolkit.datasets.query`.
    dataset
        A dataset directory written by :func:`toolkit.write_dataset`; its tables are registered
        under their names (explicit keyword tables win).
    **tables
        ``name=DataFrame`` or ``name=path``; ``events=`` and ``logs=`` also expose the tables
        derived from them.

    Returns
    -------
    pandas.DataFrame
        The query's result (times in UTC).

    Raises
    ------
    toolkit.errors.ToolkitError
        When a table cannot be registered or DuckDB rejects the query (the message lists the
        tables that were registered).
    """
    connection = duckdb.connect()
    try:
        connection.execute("set TimeZone = 'UTC'")
        names: list[str] = []
        if dataset is not None:
            if not is_dataset(dataset):
                raise ToolkitError(
                    f"{dataset}: not a toolkit dataset (no _toolkit/dataset.json); expected a "
                    "directory written by toolkit.write_dataset or `toolkit export`"
                )
            # Only the tables the query names: each view costs a look at its files.
            unused = {t for t in TABLES if not _mentioned(query, t)}
            names += register_dataset(connection, dataset, skip=set(tables) | unused)
        for name, value in tables.items():
            _register(connection, name, value)
            names.append(name)
        events = tables.get("events")
        if isinstance(events, pd.DataFrame):
            for name, build in _derived().items():
                if name not in tables and _mentioned(query, name):
                    connection.register(name, to_arrow(build(events)))
                    names.append(name)
        logs = tables.get("logs")
        if isinstance(logs, pd.DataFrame):
            for name, build in _derived_from_logs(with_events=events is not None).items():
                if name not in tables and name not in names and _mentioned(query, name):
                    connection.register(name, to_arrow(build(logs)))
                    names.append(name)
        try:
            return connection.execute(query).df()
        except duckdb.Error as exc:
            listed = ", ".join(sorted(set(names))) or "none"
            raise ToolkitError(f"SQL query failed (tables registered: {listed}): {exc}") from None
    finally:
        connection.close()
