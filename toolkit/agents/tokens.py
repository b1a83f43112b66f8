"""The token ledger of agent runs: one row per model call, and sums per run, turn, agent, model.

Token counts are the provider's own, as the framework recorded them in the model activity's
result (read by :mod:`toolkit.agents.model_io`): OpenAI Agents' ``Usage``, ADK's
``usage_metadata`` (Gemini's counts), pydantic-ai's ``RequestUsage``. A result without usage, an
SDK's empty default or a malformed count gives None with the reason in ``usage_note``; nothing
is estimated and no 0 is invented.

What a history cannot show: Temporal keeps an activity's result only for the attempt that
completed. Attempts that failed before it, and calls that never completed, may have cost tokens
that are recorded nowhere; :func:`token_usage` counts them apart (``retried_attempts``,
``failed_calls``) and never adds a guess. Replays re-run no activity, so nothing is counted twice.

Columns of :func:`model_calls`
------------------------------
=======================  =========  ====================================================
column                   dtype      meaning
=======================  =========  ====================================================
``source``, ``history``  object,    the history
                         int64
``run_id``,              object     the run
``workflow_id``
``label``                object     the run's version label (as in ``listings_per_turn``)
``turn``, ``step``       Int64      the turn, and the model call's place in it (1-based)
``event_id``             int64      the ``ActivityTaskScheduled`` event
``activity_type``        object     the model activity
``framework``            object     the payload shape read (``openai_agents``, ...)
``agent``, ``model``     object     where the framework records them
``scheduled``,           datetime   activity times (UTC; NaT when absent)
``started``, ``closed``
``attempt``              Int64      the attempt that closed (or runs)
``outcome``              object     ``completed``, ``failed``, ``timed_out``,
                                    ``canceled``, None while open
``input_tokens``,        Int64      the provider's counts; cached input is part of the
``output_tokens``,                  input (as OpenAI, Gemini and pydantic-ai count it),
``cached_input_tokens``,            reasoning part of the output
``reasoning_tokens``,
``total_tokens``
``usage_note``           object     why counts are None or doubtful (None: read as recorded)
``requested_tools``      object     tool names the answer asks for (list; None: no result)
``input_bytes``,         Int64      sizes of the payloads' data
``output_bytes``
=======================  =========  ====================================================
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Mapping
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.activity_turns import ActivityTurns, activity_turns
from toolkit.agents.ledger_labels import run_labels
from toolkit.agents.model_io import ledger_fields_of_columns
from toolkit.agents.roles import Roles
from toolkit.errors import ToolkitError
from toolkit.gc_pause import paused_gc
from toolkit.histories.columns.lazy import extra_of_attributes
from toolkit.replay.commands import events_frame

__all__ = ["MODEL_CALL_COLUMNS", "TOKEN_FIELDS", "genai_attributes", "model_calls",
           "token_usage"]  # fmt: skip

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens",
                "total_tokens")  # fmt: skip
MODEL_CALL_COLUMNS = [
    "source", "history", "run_id", "workflow_id", "label", "turn", "step", "event_id",
    "activity_type", "framework", "agent", "model", "scheduled", "started", "closed", "attempt",
    "outcome", *TOKEN_FIELDS, "usage_note", "requested_tools", "input_bytes", "output_bytes",
]  # fmt: skip
_UTC_NS = pd.DatetimeTZDtype("ns", "UTC")
_CLOSED = {"ActivityTaskCompleted": "completed", "ActivityTaskFailed": "failed",
           "ActivityTaskTimedOut": "timed_out", "ActivityTaskCanceled": "canceled"}  # fmt: skip


def model_calls_of(frame: pd.DataFrame, found: ActivityTurns) -> pd.DataFrame:
    """The :func:`model_calls` table of ``frame`` from its activity turns."""
    picks = np.flatnonzero((found.spans["role"] == "model").to_numpy())
    columns: dict[str, Any] = {name: [] for name in MODEL_CALL_COLUMNS}
    if len(picks):
        scheduled = found.positions["scheduled"][picks]
        closing = found.positions["closed"][picks]
        starting = found.positions["started"][picks]
        codes = found.positions["run"][picks].tolist()
        heads = _heads(frame, found)
        label_of = run_labels(frame, found, codes)
        # The three span columns the ledger takes, each taken alone (not every column's rows).
        turns = found.spans["turn"].iloc[picks].tolist()
        steps: dict[tuple[int, int], int] = {}
        for code, turn in zip(codes, turns, strict=True):
            steps[(code, turn)] = steps.get((code, turn), 0) + 1
            columns["step"].append(steps[(code, turn)])
        closed_types = _at(frame, "event_type", closing)
        # Per call: (framework, agent, model, usage, notes, requested_tools, input_bytes,
        # output_bytes), as its ModelCall holds them.
        attributes = _at(frame, "attributes", scheduled)
        # A frame read without its extra cells (to_otel's) has each made from its attributes.
        extras = [extra if extra is not None else extra_of_attributes(cell)
                  for extra, cell in zip(_at(frame, "extra", scheduled), attributes,
                                         strict=True)]  # fmt: skip
        calls = ledger_fields_of_columns(
            _at(frame, "input", scheduled), extras, attributes,
            _at(frame, "activity_type", scheduled), closed_types, _at(frame, "result", closing),
            _at(frame, "attributes", closing),
        )  # fmt: skip
        frameworks, agents, models, usages, notes, requested, inputs, outputs = (
            list(column) for column in zip(*calls, strict=True))  # fmt: skip
        counts = zip(*map(_COUNTS, usages), strict=True)
        columns.update({
            "source": [heads["source"][c] for c in codes],
            "history": found.spans["history"].iloc[picks].tolist(),
            "run_id": [heads["run_id"][c] for c in codes],
            "workflow_id": [heads["workflow_id"][c] for c in codes],
            "label": [label_of[c] for c in codes],
            "turn": turns, "event_id": found.spans["event_id"].iloc[picks].tolist(),
            "activity_type": _at(frame, "activity_type", scheduled),
            "framework": frameworks, "agent": agents, "model": models,
            **{name: [None] * len(picks) for name in ("scheduled", "started", "closed")},  # below
            "attempt": _attempts(frame, starting),
            "outcome": [None if kind is None else _CLOSED[kind] for kind in closed_types],
            **{name: list(values) for name, values in zip(TOKEN_FIELDS, counts, strict=True)},
            "usage_note": list(map(_usage_note, usages, notes)),
            "requested_tools": requested, "input_bytes": inputs, "output_bytes": outputs,
        })  # fmt: skip
    times = (_times_at(frame, {"scheduled": scheduled, "started": starting, "closed": closing})
             if len(picks) else {})  # fmt: skip
    typed = _typed_table(columns, times) if len(picks) else None
    if typed is not None:
        return typed
    out = pd.DataFrame(columns, columns=MODEL_CALL_COLUMNS, dtype=object)
    for name, values in times.items():
        out[name] = values
    for column in ("history", "event_id"):
        out[column] = out[column].astype("int64")
    for column in ("turn", "step", "attempt", *TOKEN_FIELDS, "input_bytes", "output_bytes"):
        out[column] = out[column].astype("Int64")
    for column in ("scheduled", "started", "closed"):
        out[column] = pd.to_datetime(out[column], utc=True)
    return out


_COUNTS = operator.attrgetter(*TOKEN_FIELDS)  # a Usage's counts, in TOKEN_FIELDS' order


def _usage_note(usage: Any, more: tuple[Any, ...]) -> Any:
    """The call's ``usage_note``: its usage's note and the reader's notes joined (None where
    there is none); the note alone where the reader noted nothing (the join of one text)."""
    note = usage.note
    if not more and type(note) is str:
        return note or None
    return "; ".join(filter(None, [note, *more])) or None


def _attempts(frame: pd.DataFrame, rows: np.ndarray) -> list[Any]:
    """The ``attempt`` column at row positions ``rows`` as ints (None where -1, missing or no
    such column): the loader's Int64 column taken as it is, any other through :func:`_at`."""
    column = frame["attempt"] if "attempt" in frame.columns else None
    if column is not None and isinstance(column.dtype, pd.Int64Dtype):
        return column.array.take(rows, allow_fill=True).to_numpy(  # type: ignore[no-any-return]
            dtype=object, na_value=None).tolist()
    return [None if a is None or pd.isna(a) else int(a) for a in _at(frame, "attempt", rows)]


_INT64 = ("history", "event_id")
_NULLABLE_INTS = ("turn", "step", "attempt", *TOKEN_FIELDS, "input_bytes", "output_bytes")
_INT_OR_NONE = {int, type(None)}


def _typed_table(columns: dict[str, list[Any]], times: dict[str, Any]) -> pd.DataFrame | None:
    """The table the general route after it makes of ``columns`` and ``times``, each column
    made in its dtype at once (not an object column converted: a dozen conversions cost more
    than the ledger's other columns): where every integer column holds only ints (and None in
    the nullable ones) and the times are the loader's UTC nanoseconds (which ``pd.to_datetime(
    ..., utc=True)`` leaves as they are); None for anything else, which the general route
    reads."""
    data: dict[str, Any] = {}
    for name, values in times.items():
        if getattr(values, "dtype", None) != _UTC_NS:
            return None
        data[name] = values
    try:
        for name in _INT64:
            values = columns[name]
            if not set(map(type, values)) <= {int}:
                return None
            data[name] = np.array(values, dtype=np.int64)
        for name in _NULLABLE_INTS:
            values = columns[name]
            kinds = set(map(type, values))
            if not kinds <= _INT_OR_NONE:
                return None
            if type(None) in kinds:
                missing = np.array([v is None for v in values], dtype=bool)
                ints = np.array([0 if v is None else v for v in values], dtype=np.int64)
            else:
                missing, ints = np.zeros(len(values), dtype=bool), np.array(values, dtype=np.int64)
            data[name] = pd.arrays.IntegerArray(ints, missing)
    except OverflowError:  # an int past int64: the general route says what it makes of it
        return None
    for name in MODEL_CALL_COLUMNS:
        if name not in data:  # object columns, as DataFrame(..., dtype=object) makes them
            data[name] = pd.Series(columns[name], dtype=object)
    return pd.DataFrame(data, columns=MODEL_CALL_COLUMNS)


def _times_at(frame: pd.DataFrame, picks: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per name: ``event_time`` at the row positions (NaT where -1); the loader's UTC
    nanoseconds taken as an array, any other column's values as :func:`_at` lists them."""
    times = frame["event_time"] if "event_time" in frame.columns else None
    if times is None or times.dtype != _UTC_NS:
        return {name: _at(frame, "event_time", rows) for name, rows in picks.items()}
    return {name: times.array.take(rows, allow_fill=True) for name, rows in picks.items()}


def _at(frame: pd.DataFrame, name: str, rows: np.ndarray) -> list[Any]:
    """``frame[name]`` at row positions ``rows`` as a list (None where -1 or no such column)."""
    if name not in frame.columns:
        return [None] * len(rows)
    # Taken first, then converted: a whole column of times or strings as objects costs more
    # than the ledger.
    column = frame[name]
    if column.dtype == object:  # its own objects, picked by numpy (no Series of the rows made)
        values = column.to_numpy()[np.maximum(rows, 0)]
    else:
        values = column.iloc[np.maximum(rows, 0)].to_numpy(dtype=object, copy=True)
    values[rows < 0] = None
    return values.tolist()


def _heads(frame: pd.DataFrame, found: ActivityTurns) -> dict[str, list[Any]]:
    """Per column ``source``, ``run_id``, ``workflow_id``: each run's value at its first event
    (None where the frame has no such column)."""
    return {name: _at(frame, name, found.positions["first"])
            for name in ("source", "run_id", "workflow_id")}  # fmt: skip


def model_calls(events: Any, roles: str | Roles = "auto") -> pd.DataFrame:
    """One row per model call of every agent run in ``events`` (columns in the module docstring).

    Parameters
    ----------
    events
        An events frame (one or many histories) or anything :func:`toolkit.read_history` reads.
    roles
        As in :func:`toolkit.agent_steps`; histories no framework is recognised in give no rows.
    """
    frame = _frame(events)
    with paused_gc():
        return model_calls_of(frame, activity_turns(frame, roles))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _frame(events: Any) -> pd.DataFrame:
    """An events frame as it is; files, folders and globs read (the first unreadable raises)."""
    if isinstance(events, (pd.DataFrame, bytes)):
        return events_frame(events)
    from toolkit.histories.reading.batch import read_histories

    return read_histories(events, errors="raise").events


def _prices(prices: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Checked price table: model -> {input, output[, cached_input]} per million tokens."""
    if not isinstance(prices, Mapping):
        raise ToolkitError(f"prices: expected a mapping of model -> {{'input': ..., 'output': "
                           f"...}} per million tokens, got {type(prices).__name__}")  # fmt: skip
    table = {}
    for model, entry in prices.items():
        if not isinstance(entry, Mapping) or not {"input", "output"} <= set(entry):
            raise ToolkitError(
                f"prices[{model!r}]: expected 'input' and 'output' (and "
                f"optionally 'cached_input') per million tokens, got {entry!r}"
            )
        unknown = set(entry) - {"input", "output", "cached_input"}
        bad = [k for k, v in entry.items() if isinstance(v, bool) or not isinstance(v, (int, float))
               or v < 0]  # fmt: skip
        if unknown or bad:
            raise ToolkitError(f"prices[{model!r}]: unknown keys {sorted(unknown)} or prices "
                               f"that are no non-negative numbers {bad}")  # fmt: skip
        table[str(model)] = {k: float(v) for k, v in entry.items()}
    return table


def _cost(row: Mapping[str, Any], table: Mapping[str, Mapping[str, float]]) -> float | None:
    price = table.get(row["model"]) if isinstance(row["model"], str) else None
    tokens_in, tokens_out = row["input_tokens"], row["output_tokens"]
    if price is None or pd.isna(tokens_in) or pd.isna(tokens_out):
        return None
    cached = row["cached_input_tokens"]
    cached = 0 if pd.isna(cached) or "cached_input" not in price else int(cached)
    return ((int(tokens_in) - cached) * price["input"] + cached * price.get("cached_input", 0.0)
            + int(tokens_out) * price["output"]) / 1_000_000  # fmt: skip


def token_usage(
    events: Any,
    *,
    by: str | Iterable[str] = ("run_id",),
    prices: Mapping[str, Mapping[str, float]] | None = None,
    roles: str | Roles = "auto",
) -> pd.DataFrame:
    """Tokens summed per run (or turn, agent, model, label: any :func:`model_calls` columns).

    Parameters
    ----------
    events
        A :func:`model_calls` table, an events frame or anything ``read_history`` reads.
    by
        Columns to group by, e.g. ``("run_id", "turn")``, ``"model"``, ``("label", "turn")``.
    prices
        Optional, per million tokens: ``{"gpt-4o": {"input": 2.5, "output": 10.0,
        "cached_input": 1.25}}``. No prices are built in; a model the table does not name (or a
        call without counts) is left out of ``cost`` and counted in ``unpriced_calls``.
    roles
        As in :func:`model_calls`.

    Returns
    -------
    pandas.DataFrame
        One row per group: the ``by`` columns, ``calls``, ``calls_with_usage``,
        ``failed_calls`` (no result: failed, timed out, canceled or still open),
        ``retried_attempts`` (attempts before the one that closed), the sums of
        :data:`TOKEN_FIELDS` (over calls that report them; <NA> when none does) and, with
        ``prices``, ``cost`` and ``unpriced_calls``.
    """
    calls = events if _is_calls(events) else model_calls(events, roles)
    keys = [by] if isinstance(by, str) else list(by)
    missing = [k for k in keys if k not in calls.columns]
    if missing:
        raise ToolkitError(f"token_usage: by={missing} are no model_calls columns; expected "
                           f"some of {MODEL_CALL_COLUMNS}")  # fmt: skip
    work = calls.copy()
    work["has_usage"] = work["input_tokens"].notna() | work["output_tokens"].notna()
    work["no_result"] = work["outcome"].ne("completed")
    work["retried"] = (work["attempt"].fillna(1).astype("int64") - 1).clip(lower=0)
    aggregations: dict[str, Any] = {
        "calls": ("event_id", "size"), "calls_with_usage": ("has_usage", "sum"),
        "failed_calls": ("no_result", "sum"), "retried_attempts": ("retried", "sum"),
        **{name: (name, lambda s: s.sum(min_count=1)) for name in TOKEN_FIELDS},
    }  # fmt: skip
    if prices is not None:
        table = _prices(prices)
        work["cost"] = [_cost(row, table) for row in work.to_dict("records")]
        work["unpriced"] = work["cost"].isna()
        work["cost"] = work["cost"].astype("Float64")
        aggregations["cost"] = ("cost", lambda s: s.sum(min_count=1))
        aggregations["unpriced_calls"] = ("unpriced", "sum")
    out = work.groupby(keys, dropna=False, sort=True).agg(**aggregations).reset_index()
    for name in TOKEN_FIELDS:
        out[name] = out[name].astype("Int64")
    return out


def _is_calls(value: Any) -> bool:
    return isinstance(value, pd.DataFrame) and {"input_tokens", "usage_note"} <= set(value.columns)


#: The attributes :func:`genai_attributes` gives each model call, in order.
_GENAI_KEYS = (
    "gen_ai.operation.name", "gen_ai.request.model", "gen_ai.agent.name",
    "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.reasoning.output_tokens",
    "llm.model_name", "llm.token_count.prompt", "llm.token_count.completion",
    "llm.token_count.total", "llm.token_count.prompt_details.cache_read",
    "llm.token_count.completion_details.reasoning", "temporal.agent.framework",
    "temporal.usage_note", "temporal.payload.input_bytes", "temporal.payload.output_bytes",
    "_requested_tools",
)  # fmt: skip


def genai_attributes(calls: pd.DataFrame) -> dict[tuple[Any, int, int], dict[str, Any]]:
    """OpenTelemetry GenAI and OpenInference attributes of each model call, keyed by (source,
    history, scheduled event id), for :func:`toolkit.traces.spans.trace_spans`: the
    :data:`_GENAI_KEYS` whose value is not None (pd.NA given as None)."""
    if calls.empty:
        return {}
    # Column by column, not value by value: each column's pd.NA and None found by C-level
    # passes, then every call's dict made by one function call (mapped over the columns) that
    # builds it from constant keys at once, a key whose value is None then taken out (the
    # others keep their order).
    columns: list[list[Any]] = []
    kinds: list[str] = []  # per column: "" as it is, "drop" a None, "na" pd.NA given as None
    for name in _GENAI_NAMES:
        column = calls[name]
        if isinstance(column.dtype, pd.Int64Dtype):  # no None in it: pd.NA the only missing
            columns.append(column.to_numpy(dtype=object, na_value=None).tolist())
            kinds.append("")
            continue
        listed = column.tolist()
        has_none = any(map(operator.is_, listed, repeat(None)))
        has_na = any(map(operator.is_, listed, repeat(pd.NA)))
        columns.append(listed)
        kinds.append("drop" if has_none and not has_na else "na" if has_na and not has_none
                     else "both" if has_na else "")  # fmt: skip
    keys = zip(calls["source"].tolist(), *(
        calls[name].tolist() if calls[name].dtype == np.int64 else map(int, calls[name].tolist())
        for name in ("history", "event_id")), strict=True)  # fmt: skip
    return dict(zip(keys, map(_genai_builder(tuple(kinds)), *columns), strict=True))


#: The ledger's columns :func:`genai_attributes` reads, the value of :data:`_GENAI_KEYS`'
#: each (after the first, "chat" for every call) the one at its place in :data:`_GENAI_OF`.
_GENAI_NAMES = ("model", "agent", *TOKEN_FIELDS, "framework", "usage_note", "input_bytes",
                "output_bytes", "requested_tools")  # fmt: skip
_GENAI_OF = (0, 1, 2, 3, 4, 5, 0, 2, 3, 6, 4, 5, 7, 8, 9, 10, 11)


@functools.lru_cache(maxsize=64)
def _genai_builder(kinds: tuple[str, ...]) -> Any:
    """A function of one value per :data:`_GENAI_NAMES` column giving a call's attributes dict:
    its keys written as constants (the dict made at once, as a literal), each value of a
    column holding pd.NA given as None, and a key whose column's value is None then removed.
    Made once per pattern of ``kinds`` (see :func:`genai_attributes`)."""
    arguments = [f"v{k}" for k in range(len(_GENAI_NAMES))]
    value = [f"(None if v{k} is NA else v{k})" if kind in ("na", "both") else f"v{k}"
             for k, kind in enumerate(kinds)]  # fmt: skip
    items = [f"{_GENAI_KEYS[0]!r}: 'chat'", *(f"{key!r}: {value[k]}" for key, k in zip(
        _GENAI_KEYS[1:], _GENAI_OF, strict=True))]  # fmt: skip
    lines = [f"def build({', '.join(arguments)}):", f"    out = {{{', '.join(items)}}}"]
    for key, k in zip(_GENAI_KEYS[1:], _GENAI_OF, strict=True):
        if kinds[k] in ("drop", "both"):
            lines.append(f"    if v{k} is None:\n        del out[{key!r}]")
    lines.append("    return out")
    namespace: dict[str, Any] = {"NA": pd.NA}
    exec(compile("\n".join(lines), "<genai_attributes>", "exec"), namespace)
    return namespace["build"]
