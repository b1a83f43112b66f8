"""Findings about size: runs the server stopped for their history's size, runs about to be, and
payloads over the payload limit (:mod:`toolkit.agents.budget`,
:mod:`toolkit.histories.size_errors`).

``history_size``: runs terminated for history size or event count (the history's own reason), and
open runs whose forecast reaches a limit within the next few turns. ``payload_size``: payload and
message size failures in histories and logs, attributed to the activity, tool or model call whose
payload it was, with how often the same oversize work was retried.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from toolkit.investigate.findings import finding
from toolkit.text import count, nbytes

__all__ = ["NEXT_STEPS", "budget_runs", "history_size", "payload_size"]

_HISTORY_LIMITS = {"history_bytes": "history size", "history_events": "event count",
                   "transaction_bytes": "transaction size",
                   "mutable_state_bytes": "mutable state size"}  # fmt: skip
_PAYLOAD_LIMITS = {"payload_bytes": "payload size", "task_completion_bytes":
                   "workflow task completion size", "memo_bytes": "memo size",
                   "payload_bytes_warn": "payload size warning"}  # fmt: skip

#: What to do about each kind of size problem, by framework where they differ.
NEXT_STEPS = {
    "history": (
        "Continue-as-new at a turn boundary, carrying a summary of the conversation instead of "
        "the whole of it (workflow.info().is_continue_as_new_suggested() says when); keep large "
        "payloads out of the history with a claim check (a payload codec or External Storage "
        "that stores the bytes elsewhere and keeps a reference); trim or summarize what each "
        "model call is sent; with OpenAI Agents, previous_response_id lets the provider keep "
        "the conversation so each call sends only the new items."
    ),
    "payload": (
        "Keep the oversize value out of the history: store it elsewhere and pass a reference "
        "(a claim check, a payload codec or External Storage), or cut or summarize the tool "
        "result before returning it; a model input over the limit needs the conversation "
        "trimmed or the run continued-as-new before it gets there. Retrying cannot help: the "
        "same bytes fail again."
    ),
}

#: A run "will reach a limit soon" when that many turns' model calls (or ten calls) remain.
_SOON_TURNS = 3


def budget_runs(events: pd.DataFrame, runs: pd.DataFrame, errors: pd.DataFrame) -> pd.DataFrame:
    """The events of the runs a size finding can be about: open runs and runs whose history
    records a size failure (``errors``, :func:`toolkit.size_errors`); the others completed
    within every limit."""
    open_sources = runs.loc[runs["open"], "source"].tolist()
    failed = errors.loc[errors["found_in"] == "history", "source"].dropna() if len(errors) else []
    sources = set(open_sources) | set(failed)
    return events[events["source"].isin(sources)]


def history_size(budget: pd.DataFrame, errors: pd.DataFrame) -> list[dict[str, Any]]:
    """Runs stopped for history size or count, and open runs forecast to be soon; ``errors``
    (:func:`toolkit.size_errors`) adds the log lines that report the same limits."""
    logged = errors[(errors["found_in"] == "log") & errors["limit"].isin(_HISTORY_LIMITS)] \
        if len(errors) else errors  # fmt: skip
    out = []
    stopped = budget[budget["limit_hit"].isin(_HISTORY_LIMITS)] if len(budget) else budget
    for (limit, workflow_type), group in stopped.groupby(["limit_hit", "workflow_type"],
                                                         sort=False, dropna=False):  # fmt: skip
        mine = logged[logged["limit"] == limit]
        out.append(_stopped(limit, workflow_type, group, mine))
        logged = logged[logged["limit"] != limit]
    for limit, group in logged.groupby("limit", sort=False):
        out.append(_seen_in_logs(limit, group))
    if budget.empty:
        return out
    running = budget[(budget["status"] == "running") & budget["limit_hit"].isna()
                     & budget["forecast_model_calls"].notna()]  # fmt: skip
    soon = running.loc[[_soon(row) for row in running.itertuples()]] if len(running) else running
    soon = soon[soon["first_limit"].isin(_HISTORY_LIMITS)]
    for (limit, workflow_type), group in soon.groupby(["first_limit", "workflow_type"],
                                                      sort=False, dropna=False):  # fmt: skip
        out.append(_forecast(limit, workflow_type, group))
    return out


def _records(rows: pd.DataFrame) -> list[list[Any]]:
    """``[source, line]`` of each log record: which file each cited line is in."""
    found = rows[rows["line"].notna()]
    return [[source, int(line)] for source, line in zip(found["source"], found["line"],
                                                        strict=True)]  # fmt: skip


def _soon(row: Any) -> bool:
    remaining = row.forecast_model_calls - row.model_calls
    per_turn = row.model_calls / row.turns if row.turns else row.model_calls
    return remaining <= max(_SOON_TURNS * per_turn, 10)


def _spend(group: pd.DataFrame) -> str:
    """Where the bytes went, over the group's runs, in one sentence."""
    roles = [r for r in group["bytes_by_role"] if isinstance(r, dict)]
    if not roles:
        return ""
    total = sum(sum(r.values()) for r in roles)
    model_input = sum(r["model_input"] for r in roles)
    shares = group["resent_share"].dropna()
    text = f" Model inputs are {model_input / total:.0%} of these histories' bytes" if total else ""
    if len(shares):
        text += (f"; {shares.mean():.0%} of the model input bytes re-send what an earlier "
                 "call of the same run already sent (the conversation so far)")  # fmt: skip
    return text + "."


def _seen_in_logs(limit: str, group: pd.DataFrame) -> dict[str, Any]:
    run_ids = group["run_id"].dropna().unique().tolist()
    return finding(
        "history_size", "critical",
        f"History {_HISTORY_LIMITS[limit]} over the server's limit: seen in logs "
        f"({count(len(group), 'record')})",
        runs=run_ids, times=group["ts"],
        evidence={"table": "size_errors", "sources": group["source"].dropna().unique().tolist(),
                  "log_lines": group["line"].dropna().astype(int).tolist(),
                  "log_records": _records(group)},
        explanation=(f"{group['text'].iloc[0]}: the server refused further changes to "
                     f"{'the runs ' + ', '.join(run_ids) if run_ids else 'a run'} and terminates "
                     "it; its history was not among the files given (add it for its budget)."),
        next_step=NEXT_STEPS["history"], confidence="certain",
    )  # fmt: skip


def _stopped(
    limit: str, workflow_type: Any, group: pd.DataFrame, logged: pd.DataFrame
) -> dict[str, Any]:
    run_ids = group["run_id"].dropna().tolist()
    calls = group["model_calls"]
    reach = (f"after {calls.min()} model calls" if calls.min() == calls.max()
             else f"after {calls.min()} to {calls.max()} model calls")  # fmt: skip
    sizes = group["history_bytes"]
    suggested = group.loc[group["continue_as_new_seen"], "continue_as_new_at"].dropna()
    explanation = (
        f"The server terminated {count(len(group), 'run')} with "
        f"\"{group['limit_reason'].iloc[0]}\" at {nbytes(sizes.min())}"
        + (f" to {nbytes(sizes.max())}" if sizes.max() != sizes.min() else "")
        + f" of history ({count(int(group['events'].max()), 'event')} at most), {reach}."
        + _spend(group)
        + (f" The server had suggested continue-as-new after "
           f"{count(int(suggested.min()), 'model call')}; the runs went on."
           if len(suggested) else "")
    )  # fmt: skip
    return finding(
        "history_size", "critical",
        f"{count(len(group), f'{workflow_type} run')} terminated: "
        f"{_HISTORY_LIMITS[limit]} over the server's limit {reach}",
        runs=run_ids, times=[], versions=group["label"].dropna().tolist(),
        evidence={"table": "history_budget",
                  "sources": group["source"].dropna().tolist()
                  + logged["source"].dropna().unique().tolist(),
                  "history_bytes": sizes.astype(int).tolist(),
                  "model_calls": calls.astype(int).tolist(),
                  "log_lines": logged["line"].dropna().astype(int).tolist(),
                  "log_records": _records(logged)},
        explanation=explanation
        + (f" The workers logged it {count(len(logged), 'time')}." if len(logged) else ""),
        next_step=NEXT_STEPS["history"], confidence="certain",
    )  # fmt: skip


def _forecast(limit: str, workflow_type: Any, group: pd.DataFrame) -> dict[str, Any]:
    run_ids = group["run_id"].dropna().tolist()
    remaining = (group["forecast_model_calls"] - group["model_calls"]).astype(int)
    turns = []
    for row in group.itertuples():
        per_turn = row.model_calls / row.turns if row.turns else row.model_calls
        turns.append(row.turns + max(1, math.ceil((row.forecast_model_calls - row.model_calls)
                                                  / max(per_turn, 1))))  # fmt: skip
    confidence = group["confidence"].dropna()
    level = "low" if (confidence == "low").any() else ("medium" if (confidence == "medium").any()
                                                       else "high")  # fmt: skip
    explanation = (
        f"By the growth of their model calls so far (fitted on {group['fit_calls'].min()} to "
        f"{group['fit_calls'].max()} calls), these open runs reach the {_HISTORY_LIMITS[limit]} "
        f"limit after {group['forecast_model_calls'].min()} model calls at the earliest, "
        f"{remaining.min()} from now (about turn {min(turns)}); the server will terminate them "
        f"there." + _spend(group)
    )
    return finding(
        "history_size", "high",
        f"{count(len(group), f'open {workflow_type} run')} will reach the "
        f"{_HISTORY_LIMITS[limit]} limit in about {count(remaining.min(), 'model call')}",
        runs=run_ids, versions=group["label"].dropna().tolist(),
        evidence={"table": "history_budget", "sources": group["source"].dropna().tolist(),
                  "forecast_model_calls": group["forecast_model_calls"].astype(int).tolist(),
                  "model_calls": group["model_calls"].astype(int).tolist()},
        explanation=explanation, next_step=NEXT_STEPS["history"], confidence=level,
    )  # fmt: skip


def payload_size(errors: pd.DataFrame, budget: pd.DataFrame) -> list[dict[str, Any]]:
    """Payload and message size failures: those the histories record, by limit and by what
    carried the payload (an activity's result, a workflow task's command), and those only the
    worker logs show, by limit and run, with the sizes the records state."""
    found = errors[errors["limit"].isin(_PAYLOAD_LIMITS)] if len(errors) else errors
    if found.empty:
        return []
    # A run terminated for a payload also records the workflow task failure before it: one.
    terminated = set(found.loc[found["event_type"] == "WorkflowExecutionTerminated", "run_id"])
    found = found[~((found["event_type"] == "WorkflowTaskFailed")
                    & found["run_id"].isin(terminated))]  # fmt: skip
    rows = {r.run_id: r for r in budget.itertuples()} if len(budget) else {}
    history = found[found["found_in"] == "history"]
    # An agent that fails the run because an activity's payload failed: one failure, told once.
    failed_activity = set(history.loc[history["event_type"] == "ActivityTaskFailed", "run_id"])
    then_failed = set(history.loc[history["event_type"] == "WorkflowExecutionFailed", "run_id"])
    history = history[~((history["event_type"] == "WorkflowExecutionFailed")
                        & history["run_id"].isin(failed_activity))]  # fmt: skip
    logged = found[found["found_in"] == "log"]
    # Log records of a run the histories already show are that finding's evidence.
    known = logged["run_id"].isin(set(history["run_id"].dropna()))
    echoes, logged = logged[known], logged[~known]
    out = []
    carriers = [_carrier(e, a, rows.get(r)) for e, a, r in zip(
        history["event_type"], history["activity_type"], history["run_id"], strict=True)]
    history = history.assign(_carrier=carriers)
    for (limit, carrier), group in history.groupby(["limit", "_carrier"], sort=False):
        lines = echoes[echoes["run_id"].isin(set(group["run_id"]))]
        out.append(_payload_in_history(limit, carrier, group, lines, then_failed))
    for (limit, _), group in logged.groupby(["limit", logged["run_id"].fillna("")], sort=False):
        out.append(_payload_in_logs(limit, group))
    return out


def _carrier(event_type: str, activity_type: Any, run: Any) -> str:
    """What carried the oversize payload, in words."""
    if event_type == "ActivityTaskFailed":
        return f"the result of {activity_type}" if isinstance(activity_type, str) else (
            "an activity's result")  # fmt: skip
    growth = getattr(run, "growth", None)
    before = getattr(run, "calls_before", None)
    if isinstance(growth, dict) and isinstance(before, dict) and before.get(
            "payload_bytes") == run.model_calls:  # fmt: skip
        call = run.model_calls + 1
        size = growth["base"] + growth["increment"] * (call - 1)
        return f"the input of model call {call} (about {nbytes(size)})"
    return "a command of a workflow task"


def _payload_in_history(
    limit: str, carrier: str, group: pd.DataFrame, lines: pd.DataFrame, then_failed: set[Any]
) -> dict[str, Any]:
    run_ids = group["run_id"].dropna().unique().tolist()
    warn = limit.endswith("_warn")
    kinds = set(group["event_type"])
    if kinds == {"WorkflowTaskFailed"}:
        how = ("the SDK failed the workflow task, which retries the same bytes until the code "
               "changes: the run is stuck")
    elif "WorkflowExecutionTerminated" in kinds:
        how = "the server terminated the run"
    elif "ActivityTaskFailed" in kinds:
        how = "the activity failed" + ("; the agent then failed the run"
                                       if then_failed & set(run_ids) else "")
    else:
        how = "the run failed"
    logged = (f" The workers logged it {count(len(lines), 'time')}." if len(lines) else "")
    attempts = group["attempt"].dropna()
    tried = int(attempts.max()) if len(attempts) else 1
    text = group["text"].iloc[0]
    explanation = (
        f"{text.rstrip('.')}. The payload was {carrier}; {how}"
        + (f" (after {count(tried, 'attempt')})" if tried > 1 else "") + "." + logged
    )
    return finding(
        "payload_size", "medium" if warn else "high",
        f"{carrier[0].upper()}{carrier[1:]} over the {_PAYLOAD_LIMITS[limit]} limit "
        f"({count(len(run_ids), 'run')})",
        runs=run_ids, times=group["ts"],
        evidence={"table": "size_errors",
                  "sources": [*group["source"].dropna().unique(),
                              *lines["source"].dropna().unique()],
                  "event_ids": group["event_id"].dropna().astype(int).tolist(),
                  "log_lines": lines["line"].dropna().astype(int).tolist(),
                  "log_records": _records(lines)},
        explanation=explanation, next_step=NEXT_STEPS["payload"], confidence="certain",
    )  # fmt: skip


def _payload_in_logs(limit: str, group: pd.DataFrame) -> dict[str, Any]:
    run_ids = group["run_id"].dropna().unique().tolist()
    warn = limit.endswith("_warn")
    sizes, limits = group["size"].dropna(), group["limit_value"].dropna()
    stated = (f" of {nbytes(sizes.max())}" if len(sizes) else "") + (
        f" (the limit is {nbytes(limits.iloc[0])})" if len(limits) else "")
    what = "warned about" if warn else "refused"
    who = "server" if (group["who"] == "server").all() else "worker"
    explanation = (
        f"{group['text'].iloc[0].rstrip('.')}: the {who} {what} "
        f"{count(len(group), 'payload')}{stated}"
        + ("" if warn or len(group) < 2 else ", the same bytes each time: the work is retried "
           "and can never succeed")
        + ". Seen in logs" + (f" of run {', '.join(run_ids)}" if run_ids else
                              "; the records name no run") + "."
    )  # fmt: skip
    return finding(
        "payload_size", "medium" if warn else "high",
        f"{'Payloads' if len(group) > 1 else 'A payload'}{stated.split(' (')[0]} over the "
        f"{_PAYLOAD_LIMITS[limit]} limit, {what} {count(len(group), 'time')}: seen in logs",
        runs=run_ids, times=group["ts"],
        evidence={"table": "size_errors", "sources": group["source"].dropna().unique().tolist(),
                  "log_lines": group["line"].dropna().astype(int).tolist(),
                  "log_records": _records(group),
                  "sizes": sizes.astype(int).tolist()},
        explanation=explanation, next_step=NEXT_STEPS["payload"], confidence="certain",
    )  # fmt: skip
