"""The history budget of durable agents: where the bytes go, and when a run meets a limit.

:func:`history_budget` gives one row per run: its size as the server counts it, what each role
(model input and output, tool calls, listings) has spent of it, how much of the model inputs is
the conversation re-sent, the limit the server enforced if it stopped the run, and, from the
growth fitted on its model calls (:mod:`toolkit.agents.forecast`), which limit comes first and
after how many model calls.

Examples
--------
>>> budget = tk.history_budget("exports/")                  # doctest: +SKIP
>>> budget[["run_id", "history_bytes", "first_limit", "forecast_model_calls"]]  # doctest: +SKIP
>>> tk.history_budget(events, fit=0.25)   # forecast from each run's first quarter  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.forecast import (
    Forecast,
    Growth,
    continue_as_new_many,
    fit_growth,
    fit_growth_many,
    fit_history_growth,
    forecast_many,
)
from toolkit.agents.frame_sizes import FrameSizes, KindSamples
from toolkit.agents.growth import (
    Call,
    RunSizes,
    as_events,
    calls_of,
    runs_of,
    user_turns,
)
from toolkit.agents.resent import resent_of_run
from toolkit.agents.roles import Roles
from toolkit.errors import ToolkitError
from toolkit.gc_pause import paused_gc
from toolkit.histories.columns.lazy import without_extra_cells
from toolkit.histories.enums import CLOSE_STATUS
from toolkit.histories.server_limits import resolve_limits
from toolkit.histories.size_errors import LIMIT_EVENT_TYPES, first_limit_hit
from toolkit.histories.versions import run_label
from toolkit.replay.commands import events_frame
from toolkit.text import count

__all__ = ["BUDGET_COLUMNS", "history_budget"]

BUDGET_COLUMNS = [
    "source", "history", "workflow_id", "run_id", "workflow_type", "label", "status", "events",
    "history_bytes", "exact", "largest_payload_bytes", "largest_payload", "turns", "model_calls",
    "bytes_by_role", "resent_bytes", "resent_share", "growth", "limit_hit", "limit_reason",
    "first_limit", "forecast_model_calls", "forecast_low", "forecast_high", "fit_calls",
    "confidence", "calls_before", "continue_as_new_at", "continue_as_new_seen", "note",
]  # fmt: skip


def history_budget(
    events: Any,
    *,
    limits: Mapping[str, Any] | str | None = None,
    roles: str | Roles = "auto",
    fit: int | float | None = None,
    workers: int | None = 1,
) -> pd.DataFrame:
    """One row per run: its history size, where the bytes go, and when it meets a limit.

    Parameters
    ----------
    events
        An events frame (:func:`toolkit.read_histories`) or paths, folders and globs of
        exports (read with :func:`toolkit.read_histories`; unreadable files are listed in
        ``result.attrs["errors"]``, one dict per file: ``source``, ``error_type``, ``message``,
        ``position``).
    limits
        The server's limits (see :mod:`toolkit.histories.server_limits`): None for the
        self-hosted defaults, ``"cloud"``, or a mapping overriding some of them, by name
        (``history_bytes``, ``payload_bytes``, ...) or by the server's dynamic-config key
        (``limit.historySize.error``).
    roles
        Which activities are model calls, tool calls and listings (``"auto"``: the agent
        presets of :mod:`toolkit.agents.roles`).
    fit
        Fit each run's growth on its first ``fit`` model calls (a number), or on that share of
        them (a fraction such as ``0.25``), as if the run had been looked at then; the rest of
        the row still describes the whole run, so ``forecast_model_calls`` can be compared with
        ``model_calls``. None: every call.
    workers
        For paths: processes that read and measure chunks of files in parallel, from a few
        hundred files on (1: in this process; None: one per core, as for
        :func:`toolkit.read_histories`). The rows are those of the whole folder
        read as one frame, to the byte: each chunk is measured with the event kinds' samples
        and the builds' SDKs the chunks before it found (a chunk sent before they were known,
        and that found them otherwise, is measured again here). Only the budget rows come back
        from them, but their server imports the toolkit first (about a second, once per
        process): on this project's idle 2-core machine two workers took 0.37 s against 0.66 s
        in this process for 1,000 runs once that server was up
        (``benchmarks/bench_history_budget.py``), and gain nothing while other work keeps the
        cores busy, so they are not the default.

    Returns
    -------
    pandas.DataFrame
        =====================  ==========================================================
        column                 meaning
        =====================  ==========================================================
        source, history        the run (file, history inside it)
        workflow_id, run_id,   as in the events frame; ``label`` is the version label
        workflow_type, label   (:func:`toolkit.histories.versions.version_labels`)
        status                 ``running``, ``completed``, ``terminated``, ...
        events                 events in the history
        history_bytes          its size as the server counts it (``historySizeBytes``)
        exact                  False where some events were measured after normalizing
                               an old dialect or re-encoding decoded payloads
        largest_payload_bytes  the largest ``Payloads`` field (an input or a result):
        largest_payload        what the payload limit compares; which one it is
        turns                  user messages the run received (as ``agent_steps`` counts)
        model_calls            model calls that completed
        bytes_by_role          ``{model_input, model_output, tool_input, tool_result,
                               listing, other}``: payload bytes per role, ``other`` the
                               rest of the history (event envelopes, other payloads)
        resent_bytes           bytes of model inputs the previous model call had already
                               sent (the re-sent conversation, system prompt and tool
                               declarations: the inputs' common beginning and end)
        resent_share           ``resent_bytes`` over all model input bytes
        growth                 the fit: ``base`` (first input bytes), ``increment`` (what
                               each call's input adds), ``other`` (what else a call adds),
                               ``events_per_call``, ``calls`` fitted on, spreads
        limit_hit              the limit the server (or the SDK) enforced, read from the
                               history: ``history_bytes``, ``history_events``,
                               ``payload_bytes``, ``task_completion_bytes``, ... else None
        limit_reason           the history's own words for it
        first_limit            the first error limit the run reaches (the hit one, or by
                               the forecast)
        forecast_model_calls   model calls that complete before it, by the forecast
        forecast_low, _high    a 90% interval of that count
        fit_calls              model calls the forecast was fitted on
        confidence             ``high``, ``medium``, ``low``, or None without a forecast
        calls_before           per error limit, the completed calls before it stops the
                               run (None: not within 100,000 calls)
        continue_as_new_at     model calls completed when the server first suggested
                               continue-as-new (from the history), else by the forecast
        continue_as_new_seen   True where the history holds that suggestion
        note                   why something is unknown or uncertain
        =====================  ==========================================================
    """
    resolved = resolve_limits(limits)
    if not isinstance(events, pd.DataFrame):
        table = _budget_of_paths(events, limits, roles, fit, workers)
        if table is not None:
            return table
    # Reading and measuring make hundreds of thousands of small objects, none in a cycle:
    # without the collector, which would rescan every live frame at each burst of them (with
    # one frame of 1,000 runs already loaded, more than the whole budget costs).
    with paused_gc(), without_extra_cells():  # the budget reads no event's extra cell
        events, errors = as_events(events)
        rows = _rows(events, resolved, roles, fit, None)
    out = _budget_frame(rows)
    if errors is not None and len(errors):
        # Plain records, not a frame: pandas compares attrs when it concatenates budgets.
        out.attrs["errors"] = errors.to_dict("records")
    return out


_INT_COLUMNS = frozenset({"events", "history_bytes", "turns", "model_calls", "fit_calls"})
_NULLABLE_INT_COLUMNS = frozenset({"largest_payload_bytes", "resent_bytes", "forecast_model_calls",
                                   "forecast_low", "forecast_high", "continue_as_new_at"})
#: Columns of text (or None) kept as Python objects; ``source`` and ``status`` are pandas' text.
_TEXT_COLUMNS = frozenset({"label", "limit_hit", "limit_reason", "first_limit", "confidence",
                           "note", "largest_payload", "workflow_id", "run_id", "workflow_type"})


def _rows(events: pd.DataFrame, limits: dict[str, int], roles: Any, fit: Any,
          carried: _Carried | None) -> list[dict[str, Any]]:  # fmt: skip
    """The budget rows of a frame's runs; ``carried``: what the chunks of the same folder
    before this frame found, for a folder measured chunk by chunk."""
    builds: dict[str, str] = {} if carried is None else carried.builds
    runs = runs_of(events, roles, samples=None if carried is None else carried.samples)
    unfinished = [_run_row(run, limits, fit, builds) for run in runs]
    _fit_together(unfinished)
    return _finished(unfinished, limits)


class _Builds(dict[str, str]):
    """The SDK each build id was seen with (``versions.run_label``'s ``sdk_of_build``),
    noting which builds a chunk added and which a label looked up without finding them: where
    an earlier chunk had either (and another SDK for one added), the chunk's labels may not be
    those of one frame of both."""

    def __init__(self, known: dict[str, str]) -> None:
        super().__init__(known)
        self.added: dict[str, str] = {}
        self.missed: set[Any] = set()

    def get(self, build: Any, default: Any = None) -> Any:
        if not dict.__contains__(self, build):
            self.missed.add(build)
        return dict.get(self, build, default)

    def __setitem__(self, build: str, sdk: str) -> None:
        self.added[build] = sdk
        dict.__setitem__(self, build, sdk)


@dataclass
class _Carried:
    """What a chunk of a folder is measured with from the chunks before it: the event kinds'
    samples (:class:`~toolkit.agents.frame_sizes.KindSamples`) and the builds' SDKs; the only
    things one run's row takes from other runs."""

    samples: KindSamples
    builds: _Builds

    @classmethod
    def of(cls, samples: dict[Any, int], builds: dict[str, str]) -> _Carried:
        return cls(KindSamples(known=samples), _Builds(builds))

    def found(self) -> tuple[dict[Any, tuple[int, bool]], dict[str, str], set[Any]]:
        """What this chunk found for itself: kinds it sampled, builds it added and missed."""
        return self.samples.added, self.builds.added, self.builds.missed


def _measured_apart(found: tuple[dict[Any, tuple[int, bool]], dict[str, str], set[Any]],
                    samples: dict[Any, int], builds: dict[str, str]) -> bool:  # fmt: skip
    """Whether a chunk measured with less than the chunks before it found (``samples`` and
    ``builds``, all of them by now) may differ from one frame of them all: it sampled a kind
    they had sampled and got another envelope (or an inexact size), looked up a build they
    knew, or gave one of their builds another SDK."""
    sampled, added, missed = found
    for kind, (envelope, exact) in sampled.items():
        if kind in samples and (samples[kind] != envelope or not exact):
            return True
    if not missed.isdisjoint(builds):
        return True
    return any(build in builds and builds[build] != sdk for build, sdk in added.items())


def _budget_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The budget's rows as a frame, each column made with its type (no inference to undo)."""
    columns: dict[str, Any] = {}
    for name in BUDGET_COLUMNS:
        values = [row[name] for row in rows]
        if name in _INT_COLUMNS:
            columns[name] = np.array(values, dtype=np.int64)
        elif name in _NULLABLE_INT_COLUMNS:
            missing = np.array([v is None for v in values], dtype=bool)
            whole = np.array([0 if v is None else v for v in values], dtype=np.int64)
            columns[name] = pd.arrays.IntegerArray(whole, missing)
        elif name == "resent_share":
            columns[name] = np.array([np.nan if v is None else v for v in values], np.float64)
        elif name in ("exact", "continue_as_new_seen"):
            columns[name] = np.array(values, dtype=bool)
        elif name in _TEXT_COLUMNS or name in ("bytes_by_role", "growth", "calls_before"):
            column = np.empty(len(values), dtype=object)
            column[:] = values  # dicts and texts as they are, None where missing
            columns[name] = pd.Series(column, dtype=object, copy=False)  # not inferred as str
        else:
            columns[name] = pd.Series(values, dtype=None if values else object)
    return pd.DataFrame(columns, columns=BUDGET_COLUMNS)


#: From how many files a folder's budget is worth worker processes (their start costs ~1 s).
_POOL_FROM = 400
#: The fewest files of a chunk sent to a worker.
_CHUNK_FILES = 50


def _budget_of_paths(paths: Any, limits: Any, roles: Any, fit: Any,
                     workers: int | None) -> pd.DataFrame | None:  # fmt: skip
    """The budget of many files, chunks of them read and measured in worker processes; None
    when this process should do it (few files, one worker)."""
    from toolkit.histories.reading.batch import error_frame, find_history_files
    from toolkit.histories.reading.pool import resolve_workers, run_chunks, start_early

    count = resolve_workers(workers)
    files = find_history_files(paths) if count > 1 else []
    if count <= 1 or len(files) < _POOL_FROM:
        return None
    size = max(_CHUNK_FILES, -(-len(files) // (count * 4)))
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    samples: dict[Any, int] = {}  # what the chunks measured so far found, first found first
    builds: dict[str, str] = {}

    def sent() -> Iterator[tuple[list[Any], dict[Any, int], dict[str, str]]]:
        for files in chunks[1:]:  # taken when a worker is free: with all found by then
            yield files, dict(samples), dict(builds)

    start_early(count)  # the workers' server imports the toolkit while the first chunk is read
    first = _budget_of_files((chunks[0], {}, {}), limits, roles, fit)
    tables, failures = [], []
    args = (limits, roles, fit)
    for at, done in enumerate(chain([first], run_chunks(_budget_of_files, sent(), args, count))):
        if _measured_apart(done[2], samples, builds):
            # Sent before a chunk ahead of it was done, it found for itself what that one found
            # first, and differently: measured again with it, its rows are those of one frame.
            done = _budget_of_files((chunks[at], dict(samples), dict(builds)), *args)
        sampled, added, _ = done[2]
        for kind, (envelope, _) in sampled.items():
            samples.setdefault(kind, envelope)
        builds.update({build: sdk for build, sdk in added.items() if build not in builds})
        tables.append(done[0])
        failures.extend(done[1])
    out = pd.concat(tables, ignore_index=True)
    # A run delivered twice (Cloud exports are at least once) is counted once, as reading does.
    out = out.drop_duplicates(subset=["run_id", "events", "history_bytes"], ignore_index=True)
    if failures:
        out.attrs["errors"] = error_frame(failures).to_dict("records")
    return out


def _budget_of_files(
    chunk: tuple[list[Any], dict[Any, int], dict[str, str]], limits: Any, roles: Any, fit: Any
) -> tuple[pd.DataFrame, list[dict[str, Any]], tuple[dict[Any, int], dict[str, str], set[Any]]]:
    """One chunk's budget (in a worker process): its files read, its runs measured with what
    the chunks before it found (``chunk``: the files, the kinds' samples, the builds' SDKs);
    the table, the unreadable files, and what it found for itself (:meth:`_Carried.found`)."""
    from toolkit.histories.reading.batch import decode_files

    files, samples, builds = chunk
    with without_extra_cells():
        events, failures = decode_files(files, False, {})
    carried = _Carried.of(samples, builds)
    with paused_gc():
        rows = _rows(events_frame(events), resolve_limits(limits), roles, fit, carried)
    return _budget_frame(rows), failures, carried.found()


@dataclass
class _Unfinished:
    """A run's row before its forecast (made for all runs of the frame at once): what the rest
    of the row is made of."""

    row: dict[str, Any]
    growth: Growth | None
    notes: list[str]
    hit: Any
    completed: int
    inexact_payloads: int
    has_calls: bool
    #: A growth left to :func:`_fit_together`: the frame's sizes and the run's calls in them.
    pending: tuple[FrameSizes, int, int] | None = None


def _run_row(
    run: RunSizes, limits: dict[str, int], fit: int | float | None, sdk_of_build: dict[str, str]
) -> _Unfinished:
    last_type = run.value("event_type", -1)
    notes = [run.roles_note] if run.roles_note else []
    calls, by_role = calls_of(run)
    completed = [call for call in calls if call.completed]
    total = run.total_bytes()
    hit = _limit_hit(run)
    largest, largest_where = _largest_payload(run, calls)
    row: dict[str, Any] = {
        "source": run.value("source", 0),
        "history": int(run.value("history", 0, 0)),
        "workflow_id": run.value("workflow_id", 0),
        "run_id": run.value("run_id", 0),
        "workflow_type": run.value("workflow_type", 0),
        "label": _label(run, sdk_of_build),
        "status": CLOSE_STATUS.get(last_type, "running"),
        "events": len(run),
        "history_bytes": total,
        "exact": run.exact,
        "largest_payload_bytes": largest,
        "largest_payload": largest_where,
        "turns": user_turns(run),
        "model_calls": len(completed),
        "bytes_by_role": None if by_role is None else {
            **by_role, "other": total - sum(v for k, v in by_role.items() if k != "other")},
        "limit_hit": hit.limit if hit else None,
        "limit_reason": hit.reason if hit else None,
    }
    row["resent_bytes"], row["resent_share"] = resent_of_run(run, calls)
    used = _fitted(calls, fit)
    row["fit_calls"] = len(used)
    pending = None
    if used is calls and calls and not run.inputs_inexact:
        # Every call of the run, as the frame's arrays hold them: fitted with the other runs'.
        growth, pending = None, (run._sizes, *run._sizes.calls_of_run(run._run))
    else:
        growth = _fit(used, calls, notes, run.inputs_inexact)
    row["continue_as_new_at"] = _continue_as_new_at(run, completed)
    row["continue_as_new_seen"] = row["continue_as_new_at"] is not None
    return _Unfinished(row, growth, notes, hit, len(completed), run.inexact_payloads, bool(calls),
                       pending)  # fmt: skip


def _fit_together(runs: list[_Unfinished]) -> None:
    """The growths :func:`_run_row` left pending, fitted at once (:func:`fit_growth_many`, the
    floats :func:`fit_growth` gives run by run), with :func:`_fit`'s note where too few."""
    waiting = [(run, run.pending) for run in runs if run.pending is not None]
    if not waiting:
        return
    sizes = waiting[0][1][0]
    if any(frame is not sizes for _, (frame, _, _) in waiting):
        raise ValueError("the runs were measured in different frames")
    relative = sizes.call_position - sizes.starts[sizes.call_run]
    growths = fit_growth_many(sizes.call_history_bytes, relative + 1, sizes.call_input,
                              [low for _, (_, low, _) in waiting],
                              [high for _, (_, _, high) in waiting])  # fmt: skip
    for (run, _), growth in zip(waiting, growths, strict=True):
        run.growth, run.pending = growth, None
        if growth is None:
            run.notes.append(_too_few(run.row["fit_calls"], 2))


def _finished(runs: list[_Unfinished], limits: dict[str, int]) -> list[dict[str, Any]]:
    """The rows of ``runs``, their forecasts made together (:func:`forecast_many`)."""
    fitted = [run for run in runs if run.growth is not None]
    forecasts = iter(forecast_many([run.growth for run in fitted], limits))
    later = [run for run in fitted if run.row["continue_as_new_at"] is None]
    for run, at in zip(later, continue_as_new_many([r.growth for r in later], limits),
                       strict=True):  # fmt: skip
        run.row["continue_as_new_at"] = at
    return [_finish(run, next(forecasts) if run.growth is not None else None, limits)
            for run in runs]  # fmt: skip


def _finish(run: _Unfinished, forecast: Forecast | None, limits: dict[str, int]) -> dict[str, Any]:
    """A run's row with its forecast and notes."""
    row, notes, hit = run.row, run.notes, run.hit
    fields = _forecast_fields(run.growth, forecast, hit, notes)
    row.update(fields)
    if hit is not None and hit.limit in limits and fields["calls_before"]:
        expected = fields["calls_before"].get(hit.limit)
        if expected is None or expected > run.completed + 1:
            notes.append(f"the server enforced {hit.limit} after {run.completed} model calls, "
                         "earlier than the limits given allow: pass the server's limits "
                         "(limits=) for a forecast that matches it")  # fmt: skip
    if run.inexact_payloads:
        notes.append(f"{count(run.inexact_payloads, 'payload')} decoded or stripped by the "
                     "exporter: their bytes are estimated or unknown (the events' sizes and "
                     "the server's recorded sizes are not)")  # fmt: skip
        row["exact"] = False
    elif run.has_calls and row["resent_bytes"] is None:
        notes.append("the model inputs are not JSON text (encrypted or binary): what they "
                     "re-send is unknown without the payload codec")  # fmt: skip
    row["note"] = "; ".join(notes) or None
    return row


def _label(run: RunSizes, sdk_of_build: dict[str, str]) -> str:
    """The run's version label (:func:`toolkit.histories.versions.version_labels`): the worker
    that completed its first workflow task."""
    attributes, start = run.columns.frame_list("attributes"), run.start
    completed = [attributes[start + p] for p in run.positions("WorkflowTaskCompleted")[:3]]
    return run_label(completed, sdk_of_build)[0]


def _limit_hit(run: RunSizes) -> Any:
    """:func:`~toolkit.histories.size_errors.first_limit_hit` of the run, shown only the events
    that can say it."""
    sizes = run._sizes
    found = sizes.derived.get("limit_hit")
    if found is None:  # every run's at once: the events' cells read off the frame together
        at, low, high = sizes.type_rows(LIMIT_EVENT_TYPES)
        c = run.columns
        cells = [c.at(name, at) if name in c else [None] * len(at)
                 for name in ("event_type", "event_id", "attributes", "failure_message", "cause")]
        found = sizes.derived["limit_hit"] = [
            first_limit_hit(*(column[a:b] for column in cells)) if b > a else None
            for a, b in zip(low.tolist(), high.tolist(), strict=True)
        ]  # fmt: skip
    return found[run._run]


def _fitted(calls: list[Call], fit: int | float | None) -> list[Call]:
    """The calls the growth is fitted on: the first ``fit`` (or that share) of the completed
    ones, and the call scheduled last when no ``fit`` cuts the run."""
    if fit is None:
        return calls
    completed = [call for call in calls if call.completed]
    if isinstance(fit, float) and 0 < fit <= 1:
        count = max(1, math.floor(len(completed) * fit))
    elif isinstance(fit, int) and not isinstance(fit, bool) and fit > 0:
        count = fit
    else:
        raise ToolkitError(f"fit must be a positive number of calls or a fraction in (0, 1], "
                           f"not {fit!r}")  # fmt: skip
    return completed[:count]


def _fit(used: list[Call], calls: list[Call], notes: list[str],
         inputs_unknown: bool = False) -> Growth | None:  # fmt: skip
    """The growth fitted on the calls ``used`` (None, with a note, where there is none)."""
    if not calls:
        if not notes:
            notes.append("no model calls: nothing to forecast")
        return None
    history, events = [c.history_bytes for c in used], [c.events for c in used]
    if inputs_unknown:
        # An exporter stripped or decoded the inputs: a fit on their sizes would see no growth.
        growth = fit_history_growth(history, events)
        notes.append("the model inputs' sizes are unknown (their payloads were stripped or "
                     "decoded by the exporter): the forecast is fitted on the history sizes the "
                     "server recorded, and the payload and task-completion limits, which compare "
                     "an input itself, are not forecast")  # fmt: skip
        needed = 3
    else:
        growth = fit_growth(history, events, [c.input_bytes for c in used])
        needed = 2
    if growth is None:
        notes.append(_too_few(len(used), needed))
    return growth


def _too_few(calls: int, needed: int) -> str:
    return (f"fitted on {calls} model call{'s' * (calls != 1)}: too few to forecast (at least "
            f"{needed} are needed)")  # fmt: skip


def _forecast_fields(growth: Growth | None, forecast: Forecast | None, hit: Any,
                     notes: list[str]) -> dict[str, Any]:  # fmt: skip
    """The row's forecast columns (and the note where no limit is in sight)."""
    if growth is None or forecast is None:
        return {"growth": None, "first_limit": hit.limit if hit else None,
                "forecast_model_calls": None, "forecast_low": None, "forecast_high": None,
                "confidence": None, "calls_before": None}  # fmt: skip
    spread = (forecast.high - forecast.low) / max(forecast.calls, 1) if forecast.calls else 0
    # The fewest calls that fit their line or curve exactly give no spread: "low".
    exact_fit = 2 if growth.inputs_known else 3
    confidence = ("low" if growth.calls <= exact_fit or spread > 0.25 else
                  "medium" if growth.calls < 6 or spread > 0.1 else "high")  # fmt: skip
    if forecast.calls is None:
        notes.append("no limit within 100,000 model calls at this growth")
        confidence = "low" if growth.calls < 4 else confidence
    return {
        "growth": growth.as_dict(),
        "first_limit": hit.limit if hit else forecast.first_limit,
        "forecast_model_calls": forecast.calls,
        "forecast_low": forecast.low,
        "forecast_high": forecast.high,
        "confidence": confidence,
        "calls_before": forecast.calls_before,
    }


def _largest_payload(run: RunSizes, calls: list[Call]) -> tuple[int | None, str | None]:
    """The largest input or result of the run (the first, an input before a result, where
    several are as large), and what it is."""
    size, column, event_id, activity_type, event_type = _largest_payloads(run)[run._run]
    if not size:
        return None, None
    call = next((number for number, call in enumerate(calls, start=1)
                 if call.event_id == event_id), None)  # fmt: skip
    label = f"input of model call {call}" if call and column == "input" else (
        f"{column} of {activity_type or event_type}")
    return size, f"{label} (event {event_id})"


def _largest_payloads(run: RunSizes) -> list[tuple[int, str, Any, Any, Any]]:
    """Per run of the frame, its largest input or result (an input before a result where both
    are as large): its bytes, which it is, and its event's id, activity type and event type;
    the events' cells read off the frame together, on first use."""
    sizes = run._sizes
    found = sizes.derived.get("largest")
    if found is None:
        input_size, input_at, result_size, result_at = sizes._largest
        picks = [(r, ra, "result") if r > i else (i, ia, "input")
                 for i, ia, r, ra in zip(input_size, input_at, result_size, result_at,
                                         strict=True)]  # fmt: skip
        at = sizes.starts + np.array([p for _, p, _ in picks], np.int64).reshape(-1)
        c = run.columns
        types = c.at("activity_type", at) if "activity_type" in c else [None] * len(at)
        found = sizes.derived["largest"] = [
            (size, column, event_id, activity_type, event_type)
            for (size, _, column), event_id, activity_type, event_type in zip(
                picks, c.at("event_id", at), types, c.at("event_type", at), strict=True)
        ]  # fmt: skip
    return found  # type: ignore[no-any-return]


def _continue_as_new_at(run: RunSizes, completed: list[Call]) -> int | None:
    """Model calls completed when a workflow task first carried ``suggestContinueAsNew``."""
    c, start = run.columns, run.start
    if "suggest_continue_as_new" in c and run.loaded_sizes:  # read by the loader with the sizes
        flags = c.frame_list("suggest_continue_as_new")
        first = next((p for p in run.positions("WorkflowTaskStarted")
                      if flags[start + p] is True), None)  # fmt: skip
        if first is None:
            return None
        event_id = c.frame_list("event_id")[start + first]
        return sum(1 for call in completed if call.event_id < event_id)
    for p in run.positions("WorkflowTaskStarted"):
        if _suggested(c["attributes"][p]):
            event_id = c["event_id"][p]
            return sum(1 for call in completed if call.event_id < event_id)
    return None


def _suggested(attributes: Any) -> bool:
    raw = getattr(attributes, "raw", None)
    text = bytes(raw) if raw is not None else b""
    if raw is not None and b"suggestContinueAsNew" not in text and b"\\u" not in text:
        return False  # most tasks: no decoding of the event to learn that (a key can be escaped)
    try:
        if hasattr(attributes, "message"):
            return bool(getattr(attributes.message, "suggest_continue_as_new", False))
        return bool(attributes.get("suggestContinueAsNew")) if attributes is not None else False
    except Exception:
        return False
