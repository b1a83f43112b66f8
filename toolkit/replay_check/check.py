"""``tk.replay_check``: replay recorded histories with the new code as production would, before
it ships, and say what would break.

Steps: gather the histories (:mod:`.sources`, :mod:`.server`), label and sample them, cut open
runs to their last completed workflow task (:mod:`toolkit.replay.trim`), skip the workflow types
the code does not define, replay the rest under their own workflow ids (:mod:`.in_process`,
:mod:`.pool`), explain each failure from the commands the code issued (:mod:`.explain`), and
group the failures (:mod:`.groups`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pandas as pd

from toolkit.errors import ToolkitError
from toolkit.replay.check_worker import Replayed
from toolkit.replay.trim import completed_prefix
from toolkit.replay_check.explain import explain as explain_failure
from toolkit.replay_check.groups import chains, groups
from toolkit.replay_check.in_process import InProcess
from toolkit.replay_check.items import Item
from toolkit.replay_check.pool import Job, WorkerPool
from toolkit.replay_check.result import RESULT_COLUMNS, ReplayCheck
from toolkit.replay_check.sampling import sample_items

__all__ = ["replay_check"]


def _runner(
    workflows: Any, options: Any, python: str | None, workers: int | None
) -> InProcess | WorkerPool:
    if python is None and (workers is None or workers <= 1):
        return InProcess(workflows, options)
    return WorkerPool(workflows, options, python=python, workers=workers or 1)


def _options(options: Any, codec: Any, replayer_options: dict[str, Any]) -> Any:
    """One set of Replayer options: a spec string, or a dict with the codec folded into the
    data converter."""
    if isinstance(options, str):
        if replayer_options or codec is not None:
            raise ToolkitError(
                "options= is a spec of a function returning the Replayer options; give the "
                f"other options ({', '.join(sorted(replayer_options)) or 'codec'}) there too"
            )
        return options
    merged = {**dict(options or {}), **replayer_options}
    if codec is not None:
        from temporalio.converter import DataConverter

        converter = merged.get("data_converter") or DataConverter.default
        merged["data_converter"] = dataclasses.replace(converter, payload_codec=codec)
    return merged


def _metadata(items: list[Item], versions: Any) -> pd.DataFrame:
    """One row per readable item, indexed by its position in the check: the runs table (ids,
    status, label; the lab's sidecars are found next to the files) and its chain. Items read
    together share their frame, which is labelled in one pass."""
    from toolkit.investigate.labels import runs_table

    batches: dict[int, pd.DataFrame] = {}
    for item in items:
        if item.batch is not None:
            batches.setdefault(id(item.batch), item.batch)
    if not batches:
        return pd.DataFrame()
    frames = list(batches.values())
    events = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    if events["source"].isna().any():
        events = events.assign(source=events["source"].fillna("<frame>"))
    runs = runs_table(events, versions)
    by_key = {key: row for key, row in zip(zip(runs["source"], runs["history"], strict=True),
                                           runs.to_dict("records"), strict=True)}  # fmt: skip
    rows = []
    for index, item in enumerate(items):
        row = by_key.get((item.source, item.position))
        if row is None or item.history is None:
            continue
        started = item.history.events[0].workflow_execution_started_event_attributes
        rows.append({**row, "history": index, "chain": started.first_execution_run_id or None,
                     "continued_from": started.continued_execution_run_id or None})
    return pd.DataFrame(rows).set_index("history") if rows else pd.DataFrame()


def _chain_positions(rows: list[dict[str, Any]], continued: dict[int, Any]) -> None:
    """Each run's place in its chain among the checked runs, by following continued-from."""
    by_run = {row["run_id"]: row for row in rows if row.get("run_id")}
    for row in rows:
        position, seen, previous = 0, set(), continued.get(row["history"])
        while previous in by_run and previous not in seen:
            seen.add(previous)
            position += 1
            previous = continued.get(by_run[previous]["history"])
        row["chain_position"] = position if row.get("chain") else None


def _base_row(index: int, item: Item, meta: pd.DataFrame) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(RESULT_COLUMNS)
    row.update(history=index, source=item.source, position=item.position,
               namespace=item.namespace, workflow_id_from=item.workflow_id_from)  # fmt: skip
    if item.history is not None:
        row["workflow_id"] = item.history.workflow_id
        row["events"] = len(item.history.events)
    if len(meta) and index in meta.index:
        facts = meta.loc[index]
        for column in ("run_id", "workflow_type", "label", "label_source", "status", "start",
                       "chain"):  # fmt: skip
            value = facts[column]
            row[column] = None if not isinstance(value, str) and pd.isna(value) else value
        row["open"] = bool(facts["open"])
    return row


def _skip_reason(row: dict[str, Any], item: Item, types: list[str], dynamic: bool,
                 seen: dict[tuple[Any, ...], int]) -> str | None:  # fmt: skip
    if item.error is not None:
        return f"unreadable: {item.error}"
    identity = (row["run_id"], row["events"], item.history.events[-1].event_id)
    if row["run_id"] and identity in seen:
        return f"duplicate: the same run as history {seen[identity]}"
    seen.setdefault(identity, row["history"])
    if not dynamic and row["workflow_type"] not in types:
        known = ", ".join(types) or "none"
        return (f"unknown workflow type: {row['workflow_type']!r} is not among the workflow "
                f"types of the given code ({known})")  # fmt: skip
    return None


def _fill(row: dict[str, Any], replayed: Replayed, frame: pd.DataFrame | None, explain: bool,
          kept_last: int) -> Any:  # fmt: skip
    """Put the replay's outcome (and its explanation) in ``row``; return the divergence."""
    from toolkit.replay.code_replay import rust_debug_field

    row.update(outcome=replayed.outcome, error_type=replayed.error_type,
               message=replayed.message, seconds=replayed.seconds)  # fmt: skip
    if replayed.outcome == "ok":
        return None
    row["core_message"] = rust_debug_field(replayed.message or "", "message") or replayed.message
    if not explain or frame is None:
        return None
    found = explain_failure(frame[frame["event_id"] <= kept_last], replayed)
    if found is None:
        return None
    row.update(event_id=found.event_id, event_type=found.event_type, check=found.check,
               expected=_plain(found.expected), actual=_plain(found.actual),
               explanation=found.text)  # fmt: skip
    return found.divergence


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def _results(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    for column in ("position", "events", "replayed_events", "trimmed", "tasks", "event_id",
                   "chain_position", "group"):  # fmt: skip
        frame[column] = frame[column].astype("Int64")
    frame["open"] = frame["open"].astype("boolean")
    frame["seconds"] = frame["seconds"].astype(float)
    return frame


def replay_check(
    source: Any = None,
    workflows: Any = (),
    *,
    query: str | None = None,
    sample: int | None = None,
    max_open: int | None = 1000,
    namespace: str = "default",
    workers: int | None = None,
    timeout: float | None = 60.0,
    python: str | None = None,
    options: Any = None,
    codec: Any = None,
    versions: Any = None,
    trim: bool = True,
    explain: bool = True,
    read_options: dict[str, Any] | None = None,
    **replayer_options: Any,
) -> ReplayCheck:
    """Replay recorded histories with new workflow code, as production would, and say which
    runs a deploy would break, why, and which of them are still open.

    Parameters
    ----------
    source
        Where the histories are: history files, folders (searched recursively), globs, a dataset
        written by :func:`toolkit.write_dataset`, an events frame, a
        ``temporalio.client.WorkflowHistory``, a list of these; or a Temporal server (an
        address ``host:port`` or a connected ``Client``) with ``query``.
    workflows
        The new code: workflow classes, ``"package.module:Class"`` specs (a spec may name a
        list or dict of classes), or a list of these, child workflows included.
    query
        For a server: a visibility query (``WorkflowType = 'Agent' AND StartTime >
        '2026-11-01T00:00:00Z'``; ``TaskQueue``, ``BuildIds``, ``ExecutionStatus`` work too).
        For a dataset: a DuckDB ``where`` clause over its ``runs`` table.
    sample
        Check at most this many closed runs per workflow type and version label (build id),
        the most recent first; every open run is checked, up to ``max_open`` in all. None:
        every run.
    max_open
        The most open runs checked (the most recent first); None: no limit.
    namespace
        For a server address.
    workers
        Replay in this many worker processes (results stay in input order). None or 1 replays
        in this process.
    timeout
        Seconds one history may take; a history that takes longer is ``failed`` (in a worker
        process, the process is stopped and replaced; in this process it is abandoned).
    python
        Replay in worker processes of this interpreter (the replaying version's environment:
        ``"envs/new/bin/python"``); ``workflows`` and ``options`` are then imported there by
        name.
    options
        ``temporalio.worker.Replayer`` options: a dict, or (for worker processes) a
        ``"module:function"`` spec of a function returning them, so that a data converter,
        payload codec, interceptors, plugins or sandbox options are built where the code runs.
    codec
        A ``temporalio.converter.PayloadCodec`` put on the data converter (in this process).
    versions
        Overrides of the version labels (see :func:`toolkit.investigate`).
    trim
        Cut open runs after their last completed workflow task (default; see
        :mod:`toolkit.replay.trim`). False replays them as exported.
    explain
        Explain each failure from the commands the code issued (no extra replay).
    read_options
        Passed to :func:`toolkit.read_histories` (``workflow_id_from``, ``codec``, ...).
    **replayer_options
        More ``Replayer`` options (``data_converter``, ``interceptors``, ``workflow_runner``,
        ``plugins``, ``runtime``, ...), in this process.

    Returns
    -------
    ReplayCheck
        ``results`` (one row per history), ``groups``, ``chains``, ``summary()``,
        ``to_junit()``, ``to_html()``, ``exit_code``.

    Raises
    ------
    toolkit.errors.ToolkitError
        When the code cannot be loaded (a module that does not import, a class that is not a
        workflow), a server cannot be reached, a path does not exist, or no history matches.
    """
    classes = [workflows] if isinstance(workflows, (str, type)) else list(workflows or ())
    if not classes:
        raise ToolkitError("no workflow code given; expected workflow classes or "
                           "'package.module:Class' specs")  # fmt: skip
    runner = _runner(classes, _options(options, codec, replayer_options), python, workers)
    try:
        items, sampled = _gather(source, query=query, namespace=namespace, sample=sample,
                                 max_open=max_open, read_options=read_options)  # fmt: skip
        if sampled:  # the server's listing was sampled already
            sample = max_open = None
        return _check(items, runner, classes, timeout=timeout, trim=trim, explain=explain,
                      versions=versions, sample=sample, max_open=max_open)  # fmt: skip
    finally:
        runner.close()


def _gather(source: Any, *, query: str | None, namespace: str, sample: int | None,
            max_open: int | None, read_options: dict[str, Any] | None,
            ) -> tuple[list[Item], bool]:  # fmt: skip
    """The items to check, and whether they are a sample already (a server's)."""
    from toolkit.replay_check.sources import is_server, items_from_source

    server = is_server(source)
    if server:
        from toolkit.replay_check.server import items_from_server

        items = items_from_server(source, query, namespace=namespace, sample=sample,
                                  max_open=max_open)  # fmt: skip
    else:
        if source is None:
            raise ToolkitError("no histories given; expected paths, a dataset, a frame or a "
                               "server address with query=")  # fmt: skip
        items = items_from_source(source, query=query, read_options=read_options)
    if not items:
        raise ToolkitError(f"no histories found in {source!r}"
                           + (f" for query {query!r}" if query else ""))  # fmt: skip
    return items, server


def _check(items: list[Item], runner: InProcess | WorkerPool, classes: Sequence[Any], *,
           timeout: float | None, trim: bool, explain: bool, versions: Any,
           sample: int | None, max_open: int | None) -> ReplayCheck:  # fmt: skip
    meta = _metadata(items, versions)
    rows = [_base_row(index, item, meta) for index, item in enumerate(items)]
    rows = sample_items(rows, sample, max_open)
    seen: dict[tuple[Any, ...], int] = {}
    jobs, kept_last = [], {}
    for row in rows:
        item = items[row["history"]]
        reason = _skip_reason(row, item, runner.types, runner.dynamic, seen)
        if reason is not None:
            row.update(outcome="skipped", reason=reason)
            continue
        events = item.history.events
        cut = completed_prefix(events) if trim else None
        keep = cut.keep if cut is not None else len(events)
        row.update(replayed_events=keep, trimmed=len(events) - keep,
                   tasks=cut.tasks if cut is not None else None)  # fmt: skip
        kept_last[row["history"]] = events[keep - 1].event_id if keep else 0
        jobs.append(Job(row["history"], item.history.workflow_id, events[:keep]))
    replayed = runner.run(jobs, timeout)
    divergences = {}
    for row in rows:
        if row["history"] in replayed:
            item = items[row["history"]]
            found = _fill(row, replayed[row["history"]], item.frame, explain,
                          kept_last[row["history"]])  # fmt: skip
            if found is not None:
                divergences[row["history"]] = found
    continued = meta["continued_from"].to_dict() if len(meta) else {}
    _chain_positions(rows, continued)
    results = _results(rows)
    table, numbers = groups(results)
    results["group"] = pd.array(numbers, dtype="Int64")
    code = {"workflows": [getattr(c, "__qualname__", c) for c in classes],
            "types": list(runner.types), "dynamic": runner.dynamic,
            "python": getattr(runner, "python", None),
            "temporalio": getattr(runner, "temporalio", None),
            "workers": getattr(runner, "size", 1)}  # fmt: skip
    runs = meta.drop(columns=["chain", "continued_from"]).reset_index() if len(meta) else meta
    return ReplayCheck(results, table, chains(results), runs, code, divergences)
