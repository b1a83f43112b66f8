"""The history budget's turn count as it was, run by run (the oracle of
tests/test_budget_turns.py): a walk over each run's start, signals and updates."""

from __future__ import annotations

from typing import Any

_MESSAGES = ("WorkflowExecutionSignaled", "WorkflowExecutionUpdateAdmitted",
             "WorkflowExecutionUpdateAccepted")  # fmt: skip


def user_turns(run: Any) -> int:
    """User messages the run received (its start, user signals, user updates counted once)."""
    if run.roles is None:
        return 0
    c, roles, start = run.columns, run.roles, run.start
    turns, updates = 0, set()
    first_activity = next(iter(run.positions("ActivityTaskScheduled")), len(run))
    started = False
    messages = run.positions(*_MESSAGES)
    kinds = c.frame_list("event_type")
    signals = c.frame_list("signal_name") if "signal_name" in c else None
    update_ids = c.frame_list("update_id") if "update_id" in c else None
    update_names = c.frame_list("update_name") if "update_name" in c else None
    for p in run.positions("WorkflowExecutionStarted", *_MESSAGES):
        kind = kinds[start + p]
        if kind == "WorkflowExecutionStarted" and roles.start_is_user:
            started = True
        elif kind == "WorkflowExecutionSignaled" and roles.is_user_signal(
                signals[start + p] if signals is not None else None):  # fmt: skip
            turns += 1
        elif kind in ("WorkflowExecutionUpdateAdmitted", "WorkflowExecutionUpdateAccepted"):
            key = (update_ids[start + p] if update_ids is not None else None) or p
            if key not in updates and roles.is_user_update(
                    update_names[start + p] if update_names is not None else None):  # fmt: skip
                updates.add(key)
                turns += 1
    first_message = messages[0] if messages else len(run)
    if started and not (turns and first_message < first_activity):
        turns += 1
    return turns
