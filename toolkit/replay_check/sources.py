"""Where a replay check's histories come from: files, folders, globs, datasets, frames, objects.

A server (an address or a ``temporalio.client.Client``, with a visibility query) is
:mod:`toolkit.replay_check.server`'s; everything else is resolved here into
:class:`~toolkit.replay_check.items.Item` objects, in the order given (a folder's files in path
order, a file's histories in file order).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.errors import HistoryFormatError, ToolkitError
from toolkit.replay_check.items import (
    Item,
    fast_histories,
    items_from_frame,
    items_from_histories,
    load_failure,
)

__all__ = ["is_server", "items_from_dataset", "items_from_source"]

_ADDRESS = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


def is_server(source: Any) -> bool:
    """Whether ``source`` names a Temporal server: a client, or ``host:port`` that is no path."""
    if type(source).__name__ == "Client" and hasattr(source, "list_workflows"):
        return True
    return isinstance(source, str) and bool(_ADDRESS.match(source)) and not os.path.exists(source)


def _file_items(paths: list[Path], read_options: dict[str, Any]) -> list[Item]:
    from toolkit.histories.reading.batch import read_histories

    if not paths:
        return []
    events, errors = read_histories(
        paths, errors="collect", dedupe=False, progress=False, workers=1, **read_options
    )
    failed = {str(row.source): str(row.message) for row in errors.itertuples()}
    read = set(events["source"].unique()) if len(events) else set()
    parsed: dict[tuple[str, int], Any] = {}
    for path in paths:
        name = str(path)
        histories = fast_histories(path) if name in read else None
        for position, history in enumerate(histories or ()):
            parsed[(name, position)] = history
    # Histories the fast parse did not read (other dialects) are built from the frame; a file
    # whose count differs is read from the frame whole.
    counts = events.groupby("source", sort=False)["history"].nunique().to_dict() if read else {}
    fast = Counter(name for name, _ in parsed)
    wrong = {name for name, count in counts.items() if fast.get(name, 0) not in (0, count)}
    if wrong:
        parsed = {key: value for key, value in parsed.items() if key[0] not in wrong}
    by_source: dict[str, list[Item]] = {}
    for item in items_from_frame(events, parsed) if read else []:
        by_source.setdefault(item.source, []).append(item)
    out: list[Item] = []
    for path in paths:
        name = str(path)
        if name in failed:
            out.append(load_failure(name, failed[name]))
        elif name in by_source:
            out += by_source[name]
        else:
            out.append(load_failure(name, f"{name}: no history read"))
    return out


def items_from_dataset(path: Path, query: str | None = None) -> list[Item]:
    """Items for the runs of a dataset written by :func:`toolkit.write_dataset`.

    ``query`` is a DuckDB ``where`` clause over its ``runs`` table (``status = 'open' and
    workflow_type = 'Agent'``); every run otherwise.
    """
    import duckdb

    from toolkit.datasets.frames import events_from_arrow
    from toolkit.datasets.layout import register_dataset

    where = f"where {query}" if query else ""
    with duckdb.connect() as connection:
        register_dataset(connection, path)
        try:
            table = connection.sql(
                "select e.* from events e join (select distinct source, history from runs "
                f"{where}) r using (source, history) order by e.source, e.history, e.event_id"
            ).to_arrow_table()
        except duckdb.Error as error:
            raise ToolkitError(
                f"{path}: the query {query!r} does not run over the dataset's runs table "
                f"({error}); expected a DuckDB where clause such as \"status = 'open'\""
            ) from None
    return items_from_frame(events_from_arrow(table))


def _expand(item: Any, query: str | None, read_options: dict[str, Any]) -> list[Item]:
    from toolkit.datasets.layout import is_dataset
    from toolkit.histories.reading.batch import find_history_files

    text = os.fspath(item)
    if os.path.isdir(text) and is_dataset(text):
        return items_from_dataset(Path(text), query)
    if os.path.isdir(text) or any(ch in text for ch in "*?["):
        return _file_items(find_history_files(text), read_options)
    if not os.path.exists(text):
        raise HistoryFormatError(
            text, "no such file or folder",
            expected="history files, a folder or glob of them, a dataset, or host:port",
        )  # fmt: skip
    return _file_items([Path(text)], read_options)


def items_from_source(
    source: Any, *, query: str | None = None, read_options: dict[str, Any] | None = None
) -> list[Item]:
    """Items for everything ``source`` names, in order.

    Parameters
    ----------
    source
        A path (file, folder, glob, dataset), an events frame, a
        ``temporalio.client.WorkflowHistory``, or a list of these.
    query
        For a dataset: a DuckDB ``where`` clause over its ``runs`` table.
    read_options
        Passed to :func:`toolkit.read_histories` (``codec``, ``workflow_id_from``, ...).

    Raises
    ------
    toolkit.errors.HistoryFormatError
        For a path that does not exist (files that exist but cannot be read are items with an
        ``error``).
    """
    options = dict(read_options or {})
    if isinstance(source, pd.DataFrame):
        return items_from_frame(source)
    if type(source).__name__ == "WorkflowHistory":
        return items_from_histories([(f"<WorkflowHistory {source.workflow_id}>", source)])
    if isinstance(source, (str, os.PathLike)):
        return _expand(source, query, options)
    if isinstance(source, (list, tuple)):
        out: list[Item] = []
        paths: list[Path] = []
        for one in source:  # consecutive plain files are read as one batch
            if isinstance(one, (str, os.PathLike)) and os.path.isfile(one):
                paths.append(Path(one))
                continue
            out += _file_items(paths, options)
            paths = []
            out += items_from_source(one, query=query, read_options=options)
        return out + _file_items(paths, options)
    raise HistoryFormatError(
        repr(type(source).__name__), "cannot check this",
        expected="history paths, a folder, a glob, a dataset, an events frame, a "
        "WorkflowHistory, or a server address with query=",
    )  # fmt: skip
