"""The header ``toolkit show`` prints above the events: what the run was and how it ended."""

from __future__ import annotations

import textwrap
from typing import Any, TextIO

import pandas as pd

from toolkit.cli.render import cell_text, plain

__all__ = ["print_summary", "run_summary"]

def run_summary(events: pd.DataFrame) -> dict[str, Any]:
    """What a reader asks first about one history: type, ids, status, result, duration.

    Returns
    -------
    dict
        ``workflow_type``, ``workflow_id``, ``run_id``, ``status`` (the closing event's, as
        the CLI and UI spell it, or ``Running`` with no closing event), ``input`` (the started
        event's decoded payloads), ``result`` (the
        completion's decoded payloads, or the failure message), ``duration`` (start to close,
        or to the last event while running, a ``Timedelta``), ``events``, ``failed_tasks``
        (workflow tasks that failed or timed out), ``last_task_failure`` (the last one's
        message), ``started`` (the first event's time).
    """
    from toolkit.datasets.tables import run_facts

    first, last = events.iloc[0], events.iloc[-1]
    closed = run_facts(events)["status"].iloc[0]  # completed, timed_out, ... or open
    status = "Running" if closed == "open" else "".join(map(str.capitalize, closed.split("_")))
    result: Any = None
    if last["event_type"] == "WorkflowExecutionCompleted":
        result = _one_or_list(plain(last["result"]))
    elif status != "Running" and isinstance(last["failure_message"], str):
        result = last["failure_message"]
    failed_tasks = events["event_type"].isin(["WorkflowTaskFailed", "WorkflowTaskTimedOut"])
    task_failures = events.loc[failed_tasks, "failure_message"].dropna()
    return {
        "workflow_type": first["workflow_type"],
        "workflow_id": first["workflow_id"],
        "run_id": first["run_id"],
        "status": status,
        "input": _one_or_list(plain(first["input"])) if first["event_type"].endswith("Started")
        else None,
        "result": result,
        "last_task_failure": task_failures.iloc[-1] if len(task_failures) else None,
        "started": events["event_time"].min(),
        "duration": events["event_time"].max() - events["event_time"].min(),
        "events": len(events),
        "failed_tasks": int(failed_tasks.sum()),
        "ended": ending(last),
    }


def ending(last: Any) -> str | None:
    """Why a run whose last event is ``last`` ended, in the history's own words (None while it
    runs, or for a plain completion, whose result says it all)."""
    kind = last["event_type"]
    attributes = last.get("attributes")
    get = attributes.get if hasattr(attributes, "get") else (lambda key, default=None: default)
    if kind == "WorkflowExecutionTerminated":
        who = get("identity") or last.get("identity")
        reason = get("reason")
        return "terminated" + (f" by {who}" if who else "") + (f": {reason}" if reason else "")
    if kind == "WorkflowExecutionFailed":  # its message is the result line
        state = last.get("retry_state")
        return "failed" + (f" ({state})" if isinstance(state, str) and "UNSPECIFIED" not in state
                           else "")  # fmt: skip
    if kind == "WorkflowExecutionTimedOut":
        state = last.get("retry_state")
        return "timed out (the run or execution timeout passed)" + (
            f", {state}" if isinstance(state, str) else "")
    if kind == "WorkflowExecutionCanceled":
        return "canceled"
    if kind == "WorkflowExecutionContinuedAsNew":
        run = get("newExecutionRunId")
        return "continued as new" + (f" as run {run}" if run else "")
    return None


def _size_note(events: pd.DataFrame, ended: str | None) -> str:
    """For a run stopped by a size limit, how large it had grown (``toolkit budget`` says more)."""
    from toolkit.histories.size_errors import parse_size_error

    if not ended or parse_size_error(ended) is None:
        return ""
    from toolkit.agents.budget import history_budget
    from toolkit.text import count, nbytes

    row = history_budget(events).iloc[0]
    calls = f" after {count(row['model_calls'], 'model call')}" if row["model_calls"] else ""
    return f" (history {nbytes(row['history_bytes'])}{calls}: see toolkit budget)"


def _one_or_list(value: Any) -> Any:
    """A single payload as itself, several as their list."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def one_line(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, saying its full length when it was cut."""
    if len(text) <= width:
        return text
    note = f"… [{len(text):,} characters, --full]"
    return text[: max(10, width - len(note))].rstrip() + note


#: Summary values that can be pages long (a model's answer, a prompt, a stack trace): one line
#: unless ``--full``.
_LONG = ("input", "result", "failure")
#: Where no terminal says how wide a line is (piped, ``--width 0``), long values are cut here.
_PIPED_LINE = 120


def print_summary(
    events: pd.DataFrame, out: TextIO, width: int, *, history: Any = None, full: bool = False
) -> None:
    """Print :func:`run_summary` as aligned ``key  value`` lines, values wrapped to ``width``
    (``history``: the run's index in a file of several, printed first). Input, result and
    failure take one line, cut with their full length said, unless ``full``."""
    facts = run_summary(events)
    ids = ", ".join(f"{k.split('_')[0]} {facts[k]}" for k in ("workflow_id", "run_id")
                    if isinstance(facts[k], str))  # fmt: skip
    status = facts["status"]
    if facts["failed_tasks"]:
        count = facts["failed_tasks"]
        status += f" ({count} workflow task{'s' if count > 1 else ''} failed)"
    lines = {
        "history": "" if history is None else str(history),
        "workflow": f"{facts['workflow_type']}" + (f"  ({ids})" if ids else ""),
        "status": status,
        "ended": (facts["ended"] or "") + _size_note(events, facts["ended"]),
        "input": cell_text(facts["input"]) if facts["input"] is not None else "",
        "result": cell_text(facts["result"]) if facts["result"] is not None else "",
        "failure": cell_text(facts["last_task_failure"]) if facts["failed_tasks"] else "",
        "started": f"{cell_text(facts['started'])} UTC",
        "duration": cell_text(facts["duration"])
        + (" so far" if facts["status"] == "Running" else ""),
        "events": str(facts["events"]),
    }
    for key, value in lines.items():
        if not value:
            continue
        if key in _LONG and not full:
            value = one_line(value, width - 10 if width > 0 else _PIPED_LINE)
        if width <= 0:
            out.write(f"{key:<9} {value}\n")
            continue
        pieces = textwrap.wrap(value, max(20, width - 10), break_on_hyphens=False) or [""]
        out.write(f"{key:<9} {pieces[0]}\n")
        for piece in pieces[1:]:
            out.write(f"{'':<9} {piece}\n")
    out.write("\n")
