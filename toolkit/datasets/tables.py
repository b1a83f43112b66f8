"""One batch of events -> the dataset's tables, each row tagged with its run's namespace,
workflow type and start date."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from toolkit.datasets.arrow import to_arrow
from toolkit.datasets.layout import SORT_BY, TABLES
from toolkit.histories.tables import activities, workflow_tasks

__all__ = ["RUN_KEYS", "batch_tables", "run_facts", "run_key"]

#: Columns that identify one history inside a batch's events frame.
RUN_KEYS = ["source", "history"]

_CLOSED = {
    "WorkflowExecutionCompleted": "completed",
    "WorkflowExecutionFailed": "failed",
    "WorkflowExecutionTimedOut": "timed_out",
    "WorkflowExecutionCanceled": "canceled",
    "WorkflowExecutionTerminated": "terminated",
    "WorkflowExecutionContinuedAsNew": "continued_as_new",
}
_NONDETERMINISM = "WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR"


def run_facts(events: pd.DataFrame) -> pd.DataFrame:
    """One row per history of ``events``: its identity, size, times and closing status."""
    read = [*RUN_KEYS, "event_id", "event_time", "event_type", *_IDENTITY]
    selected = events[read]
    runs = _sorted_runs(selected)
    if runs is None:
        ordered = selected.sort_values([*RUN_KEYS, "event_id"], kind="stable")
        grouped = ordered.groupby(RUN_KEYS, sort=False, dropna=False)
        # The keys as pandas types them, one row per group in order of appearance (as agg
        # gives).
        facts = grouped.size().reset_index()[RUN_KEYS]
        groups = grouped.ngroup().to_numpy()
        last_ids = grouped["event_id"].max().to_numpy()
    else:  # rows in that order already (as a batch is read): each run one range of rows
        ordered, (groups, starts) = selected, runs
        # The keys typed as grouping types them (as its index's levels).
        keys = [selected[key].to_numpy()[starts] for key in RUN_KEYS]
        facts = pd.MultiIndex.from_arrays(keys, names=RUN_KEYS).to_frame(index=False)
        facts.columns = pd.Index(RUN_KEYS, dtype=object)  # labels as reset_index types them
        ends = np.append(starts[1:], len(groups)) - 1
        last_ids = selected["event_id"].to_numpy()[ends]  # ids ascend within each run
    # Each other fact is one event picked per group, its value taken as the frame holds it:
    # groupby's first and last test every cell for a missing value, a run's identity columns
    # hold one on its first event already.
    first, last = _ends(groups, len(facts))
    for name in _IDENTITY:
        facts[name] = _taken(ordered[name], _present(groups, first, ordered[name], last=False))
    times = ordered["event_time"]
    facts["start_time"] = _taken(times, _earliest(groups, times, len(facts)))
    facts["events"] = np.bincount(groups, minlength=len(facts))
    facts["last_event_id"] = last_ids
    kinds = ordered["event_type"]
    last_type = _taken(kinds, _present(groups, last, kinds, last=True))
    closed = last_type.map(_CLOSED)
    facts["status"] = closed.fillna("open").astype(object)
    last_time = _taken(times, _present(groups, last, times, last=True))
    facts["close_time"] = last_time.where(closed.notna())
    return facts


_IDENTITY = ("run_id", "workflow_id", "namespace", "workflow_type")


def _sorted_runs(events: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """Each row's group and each group's first row, where ``events`` is sorted by source,
    history and event id already (the groups numbered in row order, as grouping the sorted
    rows numbers them); None where it is not, or a key is missing or no plain integer."""
    history, ids = events["history"], events["event_id"]
    plain = [isinstance(c.dtype, np.dtype) and c.dtype.kind in "iu" for c in (history, ids)]
    if len(events) < 2 or not all(plain):  # nullable integers (Int64) take the general path
        return None
    source = events["source"].to_numpy(dtype=object)
    if pd.isna(source).any():
        return None
    try:
        rising = source[1:] >= source[:-1]
        same_source = source[1:] == source[:-1]
    except TypeError:  # sources of several types
        return None
    numbers, event_ids = history.to_numpy(), ids.to_numpy()
    history_step = np.diff(numbers)
    same_run = same_source & (history_step == 0)
    if not rising.all() or (same_source & (history_step < 0)).any():
        return None
    if (same_run & (np.diff(event_ids) < 0)).any():
        return None
    new_run = np.concatenate(([True], ~same_run))
    return np.cumsum(new_run) - 1, np.flatnonzero(new_run)


def _ends(groups: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The position of each group's first row, and of its last."""
    rows = np.arange(len(groups))
    return _picks(groups, rows, count), _picks(groups, rows[::-1], count)


def _picks(groups: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """Per group, the first of ``rows`` (positions, in the order to search) in it; -1 where
    none is."""
    picks = np.full(count, -1, dtype=np.int64)
    found, first = np.unique(groups[rows], return_index=True)
    picks[found] = rows[first]
    return picks


def _present(groups: np.ndarray, ends: np.ndarray, column: pd.Series, *, last: bool) -> np.ndarray:
    """Per group, its first (or ``last``) row where ``column`` has a value, as groupby's first
    and last pick it: the group's end in ``ends`` itself, unless that one is missing."""
    if not column.iloc[ends].isna().any():
        return ends
    rows = np.flatnonzero(column.notna().to_numpy(dtype=bool))
    return _picks(groups, rows[::-1] if last else rows, len(ends))


def _earliest(groups: np.ndarray, times: pd.Series, count: int) -> np.ndarray:
    """Per group, the position of its earliest time (the first of equal ones); -1 where none."""
    rows = np.flatnonzero(times.notna().to_numpy(dtype=bool))
    # Rows by (group, time, position): each group's first row is its earliest time.
    instants = times.to_numpy(dtype="datetime64[ns]").view(np.int64)[rows]
    return _picks(groups, rows[np.lexsort((rows, instants, groups[rows]))], count)


def _taken(column: pd.Series, picks: np.ndarray) -> pd.Series:
    """``column``'s values at ``picks``, with its dtype; missing where -1 (None for objects,
    as groupby's first and last give)."""
    if column.dtype != object:
        return pd.Series(column.array.take(picks, allow_fill=True), copy=False)
    values = column.to_numpy()[picks]
    values[picks < 0] = None
    return pd.Series(values, dtype=object, copy=False)


def _partition_of(facts: pd.DataFrame, default_namespace: str | None) -> pd.DataFrame:
    keys = facts[RUN_KEYS].copy()
    namespace = facts["namespace"].astype(object)
    if default_namespace is not None:
        namespace = namespace.where(namespace.notna(), default_namespace)
    keys["namespace"] = namespace
    keys["workflow_type"] = facts["workflow_type"].astype(object)
    for column in ("namespace", "workflow_type"):
        keys[column] = keys[column].where(keys[column].notna(), None).astype(object)
    keys["date"] = facts["start_time"]  # stored as its UTC date (kind "date")
    return keys


def _tag(table: pd.DataFrame, partitions: pd.DataFrame) -> pd.DataFrame:
    """Attach each row's partition columns (by source and history), keeping row order."""
    keyed = table.drop(columns=[c for c in ("namespace", "workflow_type") if c in table.columns])
    left = keyed.assign(history=keyed["history"].astype("int64"))
    # ``partitions`` has one row per run (run_facts groups by RUN_KEYS): merge's many-to-one
    # validation, which doubled its time, could never fail here.
    return left.merge(partitions, on=RUN_KEYS, how="left", sort=False)


def batch_tables(
    events: pd.DataFrame,
    files: dict[str, str],
    batch: str,
    default_namespace: str | None,
    *,
    ordered: bool = False,
) -> dict[str, pd.DataFrame]:
    """The dataset tables of one batch (events already deduplicated).

    Parameters
    ----------
    events
        The batch's events frame (several files).
    files
        Source name -> sha256 of the file's bytes.
    batch
        The batch id, stored on every run.
    default_namespace
        Namespace for histories whose source does not name one.
    ordered
        The rows of ``events``, ``activities`` and ``workflow_tasks`` in the dataset files'
        order (:data:`~toolkit.datasets.layout.SORT_BY`, each run's rows in their order), as
        sorting each table once converted to Arrow puts them, but by moving the frames' rows
        (object pointers), not the Arrow tables' text. ``runs`` keeps :func:`run_facts`'
        order (one row per run, by source and history), which deduplication goes by.

    Returns
    -------
    dict
        ``events``, ``activities``, ``workflow_tasks``, ``runs``: frames carrying the run
        columns ``namespace``, ``workflow_type`` and ``date`` (the start time; stored as its
        UTC date).
    """
    facts = run_facts(events)
    partitions = _partition_of(facts, default_namespace)
    acts = activities(events, payload_cells=True)  # their JSON text is cut from the bytes
    tasks = workflow_tasks(events)
    runs = facts.drop(columns=["namespace", "workflow_type"]).copy()
    identities = zip(runs["run_id"], runs["source"], runs["history"], strict=True)
    runs["run_key"] = [run_key(run, files.get(source), h) for run, source, h in identities]
    runs["file_sha256"] = runs["source"].map(files).astype(object)
    runs["batch"] = batch
    tables = {"events": events, "activities": acts, "workflow_tasks": tasks, "runs": runs}
    rows = _run_rows(facts, tables)
    if rows is None:  # keys the run positions cannot be computed for: grouped and merged
        merged = _merged_tables(tables, partitions)
        if not ordered:
            return merged
        return {name: table if name == "runs" else _taken_rows(table, _order_of(table, name))
                for name, table in merged.items()}  # fmt: skip
    count = len(facts)
    outcomes = {name: tables[name]["outcome"].isin(["failed", "timed_out"]).to_numpy(dtype=bool)
                for name in ("activities", "workflow_tasks")}  # fmt: skip
    nondeterminism = (tasks["cause"] == _NONDETERMINISM).to_numpy(dtype=bool, na_value=False)
    runs["activities"] = np.bincount(rows["activities"], minlength=count)
    runs["failed_activities"] = np.bincount(
        rows["activities"][outcomes["activities"]], minlength=count
    )
    runs["workflow_tasks"] = np.bincount(rows["workflow_tasks"], minlength=count)
    runs["failed_workflow_tasks"] = np.bincount(
        rows["workflow_tasks"][outcomes["workflow_tasks"]], minlength=count
    )
    runs["nondeterminism"] = np.bincount(rows["workflow_tasks"][nondeterminism],
                                         minlength=count) > 0  # fmt: skip
    tagged = {name: _tagged(table, partitions, rows[name]) for name, table in tables.items()}
    if not ordered:
        return tagged
    # Every row of a run has its run's sort keys, and the runs' keys differ (each its own
    # source and history): a stable sort of the rows is the runs' order, then each run's own.
    rank = np.empty(len(facts), dtype=np.int64)
    rank[_order_of(partitions, "runs")] = np.arange(len(facts))
    return {name: table if name == "runs" else
            _taken_rows(table, np.argsort(rank[rows[name]], kind="stable"))
            for name, table in tagged.items()}  # fmt: skip


_KEY_ORDER = [(key, "ascending") for key in SORT_BY]


def _order_of(frame: pd.DataFrame, table: str) -> np.ndarray:
    """The positions of ``frame``'s rows in the order the Arrow sort of the dataset files gives
    them (:func:`toolkit.datasets.merge.sort_rows`): the sort keys converted as that table's
    columns are (each value on its own), sorted by Arrow itself (its order of text, dates and
    nulls)."""
    keys = to_arrow(frame, {key: TABLES[table][key] for key in SORT_BY})
    return pc.sort_indices(keys, sort_keys=_KEY_ORDER).to_numpy()


def _taken_rows(frame: pd.DataFrame, positions: np.ndarray) -> pd.DataFrame:
    """``frame``'s rows at ``positions``, renumbered (the frame itself where that is all)."""
    if len(positions) < 2 or (np.diff(positions) == 1).all():
        return frame
    return frame.take(positions).reset_index(drop=True)


def _run_rows(
    facts: pd.DataFrame, tables: dict[str, pd.DataFrame]
) -> dict[str, np.ndarray] | None:
    """Each table's rows' runs, as positions in ``facts`` (one row per run, sorted by source
    and history as :func:`run_facts` gives them), found by one integer search per table; None
    where a source is missing, a history number is no small integer, or a row has no run."""
    sources = pd.Index(facts["source"]).unique()
    histories = [facts["history"], *(table["history"] for table in tables.values())]
    if sources.hasnans or not sources.is_monotonic_increasing:
        return None
    try:
        numbers = [np.asarray(h, dtype=np.int64) for h in histories]
    except (TypeError, ValueError):
        return None
    stride = 1 + max((int(n.max()) for n in numbers if len(n)), default=0)
    if min((int(n.min()) for n in numbers if len(n)), default=0) < 0 or stride > 2**31:
        return None
    known = _keys(sources, facts, numbers[0], stride)
    if known is None or (len(known) > 1 and not (np.diff(known) > 0).all()):
        return None
    out = {}
    for (name, table), number in zip(tables.items(), numbers[1:], strict=True):
        wanted = _keys(sources, table, number, stride)
        if wanted is None:
            return None
        found = np.searchsorted(known, wanted)
        if len(wanted) and (found >= len(known)).any():
            return None
        if not (known[found] == wanted).all():
            return None
        out[name] = found
    return out


def _keys(
    sources: pd.Index, frame: pd.DataFrame, histories: np.ndarray, stride: int
) -> np.ndarray | None:
    """One integer per row of ``frame`` for its (source, history); None for an unknown source."""
    codes = sources.get_indexer(frame["source"])
    return None if (codes < 0).any() else codes.astype(np.int64) * stride + histories


def _tagged(table: pd.DataFrame, partitions: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """:func:`_tag` by each row's run position in ``partitions`` (what the merge finds)."""
    keyed = table.drop(columns=[c for c in ("namespace", "workflow_type") if c in table.columns])
    out = keyed.assign(history=keyed["history"].astype("int64"))
    for name in ("namespace", "workflow_type", "date"):
        column = partitions[name]
        values = column.array.take(rows) if column.dtype != object else column.to_numpy()[rows]
        out[name] = pd.Series(values, index=out.index, dtype=column.dtype, copy=False)
    out.columns = pd.Index(out.columns.tolist())  # labels typed as a merge types them
    return out.reset_index(drop=True)


def _merged_tables(
    tables: dict[str, pd.DataFrame], partitions: pd.DataFrame
) -> dict[str, pd.DataFrame]:
    """The run counts by grouping, the partition columns by merging: for any keys."""
    acts, tasks, runs = tables["activities"], tables["workflow_tasks"], tables["runs"]
    counts: dict[str, Any] = {
        "activities": acts.groupby(RUN_KEYS).size(),
        "failed_activities": acts[acts["outcome"].isin(["failed", "timed_out"])]
        .groupby(RUN_KEYS)
        .size(),
        "workflow_tasks": tasks.groupby(RUN_KEYS).size(),
        "failed_workflow_tasks": tasks[tasks["outcome"].isin(["failed", "timed_out"])]
        .groupby(RUN_KEYS)
        .size(),
        "nondeterminism": tasks[tasks["cause"] == _NONDETERMINISM].groupby(RUN_KEYS).size(),
    }
    index = pd.MultiIndex.from_frame(runs[RUN_KEYS].astype({"history": "int64"}))
    for name, series in counts.items():
        series.index = series.index.set_levels(series.index.levels[1].astype("int64"), level=1)
        values = series.reindex(index, fill_value=0).to_numpy()
        runs[name] = values > 0 if name == "nondeterminism" else values
    return {name: _tag(table, partitions) for name, table in tables.items()}


def run_key(run_id: Any, file_sha256: str | None, history: Any) -> str:
    """The key a run is deduplicated by: its run id, else its file's hash and position."""
    if isinstance(run_id, str) and run_id:
        return run_id
    return f"sha256:{file_sha256}#{int(history)}"
