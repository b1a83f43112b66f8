"""``tk.investigate``: one call from a folder of exports and logs to findings and a report.

::

    inv = tk.investigate("incident/", logs="incident/logs/", configs="mcp.json")
    inv.findings              # ranked: kind, severity, title, runs, versions, evidence, ...
    inv.to_html("report.html")

Modules: :mod:`~toolkit.investigate.inputs` (what is read, what is skipped),
:mod:`~toolkit.investigate.labels` (runs and their version labels),
:mod:`~toolkit.investigate.findings` and :mod:`~toolkit.investigate.listings` (one function per
finding kind), :mod:`~toolkit.investigate.report` (the :class:`Investigation` and its report).

The package is callable (``toolkit.investigate(...)`` runs :func:`investigate`): importing a
subpackage binds its module onto ``toolkit``, which would otherwise hide the function of the
same name.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pandas as pd

from toolkit.errors import ToolkitError
from toolkit.investigate import budget as _budget
from toolkit.investigate import findings as _kinds
from toolkit.investigate.inputs import gather
from toolkit.investigate.labels import label_note, runs_table
from toolkit.investigate.listings import (
    agent_listings,
    declared_change,
    declared_summary,
    listing_change,
    listing_summary,
)
from toolkit.investigate.report import Investigation, LazyTables
from toolkit.logs.duplicates import duplicate_tools_in_history

__all__ = ["Investigation", "investigate"]

_RETRY_EVENTS = {"ActivityTaskFailed", "ActivityTaskTimedOut"}


def _activities(events: pd.DataFrame) -> pd.DataFrame:
    """Activity executions of the runs that had a retry, failure or timeout (the rest is quiet)."""
    from toolkit.histories.tables import activities

    started = events["event_type"] == "ActivityTaskStarted"
    noisy = events["event_type"].isin(_RETRY_EVENTS) | (started & (events["attempt"] > 1))
    sources = events.loc[noisy.fillna(False), "source"].unique()
    if len(sources) == 0:
        return pd.DataFrame(columns=["activity_type", "run_id", "attempt", "outcome"])
    return activities(events[events["source"].isin(sources)])


def _nondeterminism(events: pd.DataFrame, logs: pd.DataFrame | None) -> pd.DataFrame:
    from toolkit.replay.errors_table import nondeterminism_errors

    failed = events[events["event_type"] == "WorkflowTaskFailed"]
    sources = failed["source"].unique()
    parts = [nondeterminism_errors(events[events["source"].isin(sources)])] if len(sources) else []
    if logs is not None and len(logs):
        parts.append(nondeterminism_errors(logs))
    parts = [p for p in parts if len(p)]
    return (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(
            columns=[
                "found_in",
                "source",
                "run_id",
                "kind",
                "expected",
                "actual",
                "message",
                "ts",
                "line",
                "failed_event_id",
            ]
        )
    )


def _endpoints(configs: list[Any], errors: pd.DataFrame) -> tuple[pd.DataFrame | None, list]:
    from toolkit.agents.mcp import mcp_endpoints

    frames, rows = [], []
    for config in configs:
        try:
            frames.append(mcp_endpoints(config))
        except ToolkitError as exc:
            rows.append(
                {"source": str(config), "kind": "config", "status": "failed", "reason": str(exc)}
            )
    return (pd.concat(frames, ignore_index=True) if frames else None), rows


def _log_tables(logs: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    from toolkit.logs import detectors

    if logs is None or logs.empty:
        empty = pd.DataFrame(columns=["line", "ts", "level", "source"])
        return {"duplicate_tools": empty, "retries": empty, "dead_letters": empty}
    return {
        "duplicate_tools": detectors.duplicate_tools(logs),
        "retries": detectors.retries(logs),
        "dead_letters": detectors.dead_letters(logs),
    }


def _task_failures(events: pd.DataFrame) -> dict[str, tuple[int, str]]:
    """Per run id, its last failed or timed-out workflow task: (event id, what it says)."""
    failed = events[events["event_type"].isin(["WorkflowTaskFailed", "WorkflowTaskTimedOut"])]
    out = {}
    for row in failed[
        ["run_id", "event_id", "event_type", "failure_message", "cause"]
    ].itertuples():
        if isinstance(row.run_id, str):
            text = next((v for v in (row.failure_message, row.cause) if isinstance(v, str)), None)
            out[row.run_id] = (int(row.event_id), text or row.event_type)
    return out


def _size_tables(
    events: pd.DataFrame, runs: pd.DataFrame, logs: pd.DataFrame | None, limits: Any
) -> dict[str, pd.DataFrame]:
    """Size failures (histories and logs) and the budget of the runs a size finding can be
    about (open runs, runs with a size failure): the completed rest is left to the evidence."""
    from toolkit.agents.budget import history_budget
    from toolkit.histories.server_limits import resolve_limits
    from toolkit.histories.size_errors import size_errors

    resolve_limits(limits)  # a wrong name or unit is an error before any work
    parts = [size_errors(events)] if len(events) else []
    if logs is not None and len(logs):
        parts.append(size_errors(logs))
    parts = [p for p in parts if len(p)]
    errors = pd.concat(parts, ignore_index=True) if parts else size_errors([])
    chosen = _budget.budget_runs(events, runs, errors) if len(events) else events
    budget = history_budget(chosen, limits=limits) if len(chosen) else history_budget(
        events.iloc[:0], limits=limits)
    return {"size_errors": errors, "history_budget": budget, "budget_sources": chosen}


def _full_budget(events: pd.DataFrame, sizes: dict[str, Any], limits: Any) -> pd.DataFrame:
    from toolkit.agents.budget import history_budget

    if len(sizes["budget_sources"]) == len(events):
        return sizes["history_budget"]
    return history_budget(events, limits=limits)


def _model_call_sizes(events: pd.DataFrame) -> pd.DataFrame:
    from toolkit.agents.growth import model_call_sizes

    return model_call_sizes(events)


def _model_calls(events: pd.DataFrame) -> pd.DataFrame:
    from toolkit.agents.tokens import MODEL_CALL_COLUMNS, model_calls

    return model_calls(events) if len(events) else pd.DataFrame(columns=MODEL_CALL_COLUMNS)


def _tokens_per_turn(calls: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The token ledger per run and turn, labelled as the investigation labels runs."""
    from toolkit.agents.tokens import token_usage

    keys = ["source", "history"]
    if {*keys, "label"} <= set(runs.columns):
        calls = calls.drop(columns="label").merge(runs[[*keys, "label"]], on=keys, how="left")
    return token_usage(calls, by=("source", "history", "run_id", "label", "turn"))


def _explained_lines(rows: list[dict[str, Any]]) -> set[tuple[Any, int]]:
    """(source, line) of every log record some finding already cites."""
    out = set()
    for row in rows:
        evidence = row["evidence"]
        if evidence.get("log_records"):
            out.update((source, int(line)) for source, line in evidence["log_records"])
            continue
        for source in evidence.get("sources", []):
            out.update((source, int(line)) for line in evidence.get("log_lines", []))
    return out


def investigate(
    histories: Any = None,
    *,
    logs: Any = None,
    configs: Any = None,
    server: Any = None,
    query: str | None = None,
    namespace: str = "default",
    versions: Any = None,
    workflows: Any = None,
    limits: Any = None,
) -> Investigation:
    """Read the evidence of an incident and say what went wrong, ranked, with its evidence.

    Parameters
    ----------
    histories
        History files, folders or globs (any dialect the loader reads), events frames, or a
        list of these. Files that are not histories (the lab's ``.meta.json``, ``.mcp.jsonl``
        request logs, logs, notes) are skipped with a note in ``errors``.
    logs
        Worker/agent log files or folders (any format :func:`toolkit.read_logs` reads).
    configs
        MCP/agent configs (:func:`toolkit.mcp_endpoints`): the duplicate-tool finding then
        names the endpoint and the entry to keep.
    server, query, namespace
        A Temporal address (or client) and a visibility query: the matching runs are fetched
        (:func:`toolkit.fetch_histories`) and investigated with the files.
    versions
        Overrides of the version labels: a mapping (run id, workflow id, source or default
        label -> label) or a callable taking the run's row and returning a label (None keeps
        the default). By default labels come from the histories themselves (see
        :mod:`toolkit.histories.versions`).
    workflows
        Workflow classes: every history is also replayed with temporalio's ``Replayer``
        (evidence ``replay``), and runs that fail replay are findings.
    limits
        The server's limits for the history-size findings and forecasts
        (:func:`toolkit.history_budget`): None for the self-hosted defaults, ``"cloud"``, or a
        mapping by name or dynamic-config key.

    Returns
    -------
    Investigation
        ``runs``, ``findings``, ``evidence``, ``figures``, ``errors`` (see there).

    Raises
    ------
    toolkit.errors.HistoryFormatError
        When histories were given and not one could be read.
    """
    inputs = gather(
        histories, logs=logs, configs=configs, server=server, query=query, namespace=namespace
    )
    events, log_frame = inputs.events, inputs.logs
    if "source" in events.columns:
        events = events.assign(source=events["source"].fillna("<events>"))
    runs = runs_table(events, versions)
    note = label_note(runs)
    endpoints, config_errors = _endpoints(inputs.configs, inputs.errors)
    errors = (
        pd.concat(
            [inputs.errors, pd.DataFrame(config_errors, columns=inputs.errors.columns)],
            ignore_index=True,
        )
        if config_errors
        else inputs.errors
    )
    nondeterminism = _nondeterminism(events, log_frame)
    activities = _activities(events) if len(events) else pd.DataFrame()
    compared = agent_listings(events, runs, compared_only=True) if len(events) else pd.DataFrame()
    summary = listing_summary(compared)
    log_tables = _log_tables(log_frame)
    replay = None
    if workflows is not None and len(events):
        from toolkit.replay.replayer import replay as replay_with

        replay = replay_with(events, list(workflows))
    failures = _task_failures(events)
    sizes = _size_tables(events, runs, log_frame, limits)

    rows: list[dict[str, Any]] = []
    rows += _kinds.nondeterminism(nondeterminism, runs)
    if replay is not None:
        rows += _kinds.replay_failures(replay, runs)
    rows += _kinds.stuck_runs(runs, failures)
    rows += _kinds.activity_retries(activities, runs)
    rows += _kinds.duplicate_tool(log_tables["duplicate_tools"], endpoints)
    declared = _declared(events)
    in_history = duplicate_tools_in_history(events) if len(events) else pd.DataFrame()
    if len(in_history):
        rows += _kinds.duplicate_tool_in_history(in_history, runs)
    twice = _declared_twice(declared)
    if len(twice):
        rows += _kinds.duplicate_declaration(twice, runs)
    rows += listing_change(compared, summary, note)
    rows += _budget.history_size(sizes["history_budget"], sizes["size_errors"])
    rows += _budget.payload_size(sizes["size_errors"], sizes["history_budget"])
    declared_by_label = declared_summary(declared, runs)
    rows += declared_change(declared_by_label, note)
    rows += _kinds.dead_letters(log_tables["dead_letters"])
    shapes = (_kinds.log_error_shapes(log_frame, _explained_lines(rows))
              if log_frame is not None and len(log_frame) else None)  # fmt: skip
    if shapes is not None:
        rows += _kinds.log_errors(shapes)

    evidence = LazyTables(
        _evidence_builders(
            events,
            runs,
            log_frame,
            endpoints,
            nondeterminism,
            activities,
            lambda: agent_listings(events, runs) if len(events) else pd.DataFrame(),
            summary,
            log_tables,
            replay,
        )
        | {"duplicate_tools_in_history": lambda: in_history,
           "declared_duplicates": lambda: twice,
           "declared_tools": lambda: declared,
           "declared_summary": lambda: declared_by_label,
           "size_errors": lambda: sizes["size_errors"],
           "history_budget": lambda: _full_budget(events, sizes, limits),
           "model_call_sizes": lambda: _model_call_sizes(events),
           "model_calls": lambda: _model_calls(events),
           "tokens_per_turn": lambda: _tokens_per_turn(evidence["model_calls"], runs)}
        | ({"log_errors": lambda: shapes} if shapes is not None else {})
    )
    figures = LazyTables({"listings_per_turn": lambda: _listings_figure(compared)})
    log_lines = int(log_frame["lines"].sum()) if log_frame is not None else 0
    return Investigation(
        runs=runs,
        findings=_kinds.rank(rows),
        evidence=evidence,
        figures=figures,
        errors=errors,
        label_note=note,
        inputs={"history_files": inputs.history_files, "log_lines": log_lines},
    )


def _declared(events: pd.DataFrame) -> pd.DataFrame:
    """The tools each model call was offered (:func:`toolkit.agents.declared.declared_tools`)."""
    from toolkit.agents.declared import DECLARED_COLUMNS, declared_tools

    return declared_tools(events) if len(events) else pd.DataFrame(columns=DECLARED_COLUMNS)


def _declared_twice(declared: pd.DataFrame) -> pd.DataFrame:
    """The model calls that declared a tool name twice (``declared_twice`` rows)."""
    from toolkit.agents.declared import declared_duplicates

    return declared_duplicates(declared)


def _evidence_builders(
    events: pd.DataFrame,
    runs: pd.DataFrame,
    logs: pd.DataFrame | None,
    endpoints: pd.DataFrame | None,
    nondeterminism: pd.DataFrame,
    activities: pd.DataFrame,
    listings: Any,
    summary: pd.DataFrame,
    log_tables: dict[str, pd.DataFrame],
    replay: pd.DataFrame | None,
) -> dict[str, Any]:
    from toolkit.histories import tables

    builders: dict[str, Any] = {
        "runs": lambda: runs,
        "events": lambda: events,
        "activities": lambda: tables.activities(events) if len(events) else activities,
        "workflow_tasks": lambda: tables.workflow_tasks(events),
        "nondeterminism_errors": lambda: nondeterminism,
        "agent_steps": lambda: _agent_steps(events),
        "listings_per_turn": listings,
        "listing_summary": lambda: summary,
    }
    if logs is not None:
        from toolkit.logs.correlate import correlate

        builders["logs"] = lambda: logs
        builders.update({name: (lambda t=table: t) for name, table in log_tables.items()})
        builders["correlations"] = lambda: correlate(logs, events, how="inner")
    if endpoints is not None:
        builders["mcp_endpoints"] = lambda: endpoints
    if replay is not None:
        builders["replay"] = lambda: replay
    return builders


def _agent_steps(events: pd.DataFrame) -> pd.DataFrame:
    from toolkit.agents.turns import agent_steps
    from toolkit.replay.commands import per_source

    steps = per_source(agent_steps.__wrapped__, skip_unrecognised=True)
    try:
        return steps(events)
    except ToolkitError:
        return pd.DataFrame()  # no agent runs among these histories


def _listings_figure(compared: pd.DataFrame) -> Any:
    """Listings per turn, one bar per (label, turn shape) with the runs' min-max: turns doing
    different work (toolsets, tool calls) are never averaged together, nor are versions."""
    if compared.empty:
        return None
    from toolkit import plots

    answered = compared[compared["status"] == "answered"]
    toolsets = answered.groupby(["source", "history"])["listing_types"].agg(
        lambda names: len({n for turn in names for n in turn})
    )
    shaped = answered.join(toolsets.rename("toolsets"), on=["source", "history"])
    shaped = shaped.assign(
        shape=[
            f"{t} toolset{'s' * (t != 1)}, {c} call{'s' * (c != 1)}"
            for t, c in zip(shaped["toolsets"], shaped["tool_calls"], strict=True)
        ]
    )
    return plots.plot_listings_per_turn(
        shaped,
        group="label",
        bars="shape",
        value="listings",
        runs="run_id",
        title="Tool listings per turn, by version label and turn shape",
    )


class _CallableModule(types.ModuleType):
    """The package itself runs :func:`investigate` (see the module docstring)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Investigation:
        return investigate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
