"""sdk-core flag 3 (``MoveTerminalCommands``) and .NET's ``ReorderWorkflowCompletion``.

What sdk-core does (``crates/sdk-core/src/worker/workflow/managed_run.rs``,
``preprocess_command_sequence`` and ``preprocess_command_sequence_old_behavior``; flag defined in
``internal_flags.rs``, introduced by sdk-core PR 776, July 2024, first in temporalio 1.7):

- the language SDK hands core one activation's commands in the order the code issued them;
- with the flag, core sends every non-terminal command in that order, then the *first* terminal
  command (complete, fail, cancel, continue-as-new); later terminals are dropped;
- without it, core cuts the sequence after the first terminal command: non-terminal commands
  issued after it are dropped;
- a worker that is not replaying always uses the new behaviour, and records every flag its core
  knows in the first workflow task it completes (``write_all_known``); replaying, core uses the
  new behaviour only where the history records the flag.

So a history whose core knows flag 3 records it from its first task, and one whose core records
other flags but not 3 was made by a core that does not know it, which cuts at the terminal in its
own run and when replaying alike. Two pairs need nothing: the recorded history has the flag (the
replay reorders as the new code's own run did), or the new code's core does not know it (both cut).
The remaining pair, recorded without the flag and new code with it, is modelled here.

The new code's own history shows, at its closing task, the non-terminal commands ``n1..nm`` then
the completion. Replaying without the flag, the code's commands after the cut are ``n1..nj`` and
the completion, for the ``j`` of them issued before the completion: a prefix, because reordering
keeps the non-terminals' order. ``j`` is not in either history, so every ``j`` is tried. When all
give the same verdict, the verdict is exact; otherwise an assumption says which ``j`` it takes.

The other way round (the recorded history has the flag, the new code's core does not know it:
a rollback, or a history of the new code recorded on an older SDK than the recorded one), both
cut only if the new code really runs on that older core: the recorded run moved a command
before its completion, the older core drops it again, and replay fails there. On the recorded
history's SDK or a newer one, core moves it as the recorded run did and replay succeeds, as
the lab's flag pairs show (``late_command`` of temporalio 1.7.0: 1.6.0's Replayer fails, 1.7.0's
replays) and the SDKs' own replay tests of such histories do (sdk-dotnet
``ExecuteWorkflowAsync_UpdateAfterComplete_ProcessesProperly``, sdk-typescript
``Flags from 1.11.[01] are retroactively applied on replay``). Such a failure is therefore
reported with that assumption, not as certain.

.NET's lang flag 1 ``ReorderWorkflowCompletion`` (``src/Temporalio/Worker/WorkflowInstance.cs``)
moves the last completion command to the end of the activation, only when replaying a history
that records it. Under flag 3 that changes nothing (core reorders again and keeps the first
terminal). Without flag 3, with one completion it sends every non-terminal (``j = m``), with
several the first terminal stays where it was (a prefix again). So the same ``j`` covers it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from toolkit.replay.tasks import SplitHistory, Task

__all__ = [
    "MOVE_TERMINAL_COMMANDS",
    "REORDER_COMPLETION",
    "TERMINAL_KINDS",
    "move_terminal_commands",
]

MOVE_TERMINAL_COMMANDS = 3
REORDER_COMPLETION = 1  # .NET WorkflowLogicFlag.ReorderWorkflowCompletion
TERMINAL_KINDS = frozenset({
    "CompleteWorkflowExecution", "FailWorkflowExecution", "CancelWorkflowExecution",
    "ContinueAsNewWorkflowExecution",
})  # fmt: skip

#: Model runs x tasks the cut points may cost; beyond it they are not all tried (the model's
#: work grows with the square of the tasks: 64 cuts of two 150-task histories take under 1 s).
CUT_BUDGET = 20_000


def _closing_task(history: SplitHistory) -> Task | None:
    """The task whose commands end with a terminal command after at least one other command."""
    for task in reversed(history.tasks):
        if task.commands:
            closing = len(task.commands) > 1 and task.commands[-1].get("kind") in TERMINAL_KINDS
            return task if closing else None
    return None


def _cut(history: SplitHistory, task: Task, kept: int) -> SplitHistory:
    """``history`` with only the first ``kept`` commands before ``task``'s completion."""
    commands = [*task.commands[:kept], task.commands[-1]]
    tasks = [dataclasses.replace(t, commands=commands) if t is task else t for t in history.tasks]
    return dataclasses.replace(history, tasks=tasks)


def _fails_before(run: Any, closing: Task) -> bool:
    """Whether replay failed on a command queued before every one of ``closing``'s.

    sdk-core matches queued commands first in, first out and the closing task's are queued
    last, so such a failure is reached the same way whatever the cut. Local activities (found
    by sequence number) and cancels (which take an unsent command out of the queue) break that.
    """
    failure = getattr(run, "failure", None)
    command = getattr(failure, "command", None)
    if command is None or command.get("marker_name") == "core_local_activity":
        return False
    cancels = {"CancelTimer", "RequestCancelActivityTask"}
    if any(row.get("kind") in cancels for row in closing.commands):
        return False
    return not any(command is row for row in closing.commands)


def _outcome(run: Any) -> tuple[Any, ...]:
    """What a verdict reports of a model run: failure point and check, or the code's error."""
    failure = getattr(run, "failure", None)
    error = getattr(run, "code_error", None)
    return (
        None if failure is None else (failure.event.get("event_id"), failure.check),
        None if error is None else error.event_id,
        getattr(run, "stopped_at", None),
    )


def _rank(run: Any) -> tuple[int, int]:
    """Order of preference among cut points: no failure, then the latest failure."""
    failure = getattr(run, "failure", None)
    if failure is None:
        return (1, 0)
    return (0, int(failure.event.get("event_id") or 0))


def _older_core_drops(
    old: SplitHistory, new: SplitHistory, run: Any,
    model: Callable[[SplitHistory, SplitHistory], Any],
) -> str | None:  # fmt: skip
    """The assumption behind a failure at a command the recorded run moved before its
    completion, when the new code's history comes from a core without flag 3 (None otherwise).

    It is an assumption only if the failure depends on the core: the new code's closing task,
    given the recorded run's remaining commands as issued after its completion (what a core
    with the flag would move before it; the older core's own run dropped them, so its history
    cannot show them), replays. If even that fails, the verdict holds on any core.
    """
    failure = getattr(run, "failure", None)
    recorded = _closing_task(old)
    if failure is None or recorded is None or not new.tasks:
        return None
    if MOVE_TERMINAL_COMMANDS not in old.tasks[-1].core_flags:
        return None
    if MOVE_TERMINAL_COMMANDS in new.tasks[-1].core_flags:
        return None
    moved = {row.get("event_id") for row in recorded.commands}
    if failure.event.get("event_id") not in moved:
        return None
    last = next((t for t in reversed(new.tasks) if t.commands), None)
    if last is None or last.commands[-1].get("kind") not in TERMINAL_KINDS:
        return None
    kept = last.commands[:-1]
    wanted = recorded.commands[:-1]
    if [r.get("identity") for r in kept] != [r.get("identity") for r in wanted[: len(kept)]]:
        return None
    best = [*kept, *(dict(r) for r in wanted[len(kept):]), last.commands[-1]]
    tasks = [dataclasses.replace(t, commands=best) if t is last else t for t in new.tasks]
    if getattr(model(old, dataclasses.replace(new, tasks=tasks)), "failure", None) is not None:
        return None
    return (
        "sdk-core flag 3 (MoveTerminalCommands) is in the recorded history and not in the new "
        "code's, whose sdk-core is older: the recorded run moved command(s) it issued after "
        f"its completion before it (task {recorded.index}), which that older sdk-core drops; "
        "the verdict holds for new code on that sdk-core. On the recorded history's SDK or a "
        "newer one, if the code issues them after its completion as the recorded run did, "
        "sdk-core moves them again and replay succeeds"
    )


def move_terminal_commands(
    old: SplitHistory, new: SplitHistory, run: Any,
    model: Callable[[SplitHistory, SplitHistory], Any], *, dotnet_reorder: bool = False,
) -> tuple[Any, str | None]:  # fmt: skip
    """Apply sdk-core flag 3 where the recorded history lacks it and the new code's core has it.

    Parameters
    ----------
    old, new
        The recorded history and the new code's history, split.
    run
        ``model(old, new)``, the run without the cut.
    model
        :func:`toolkit.replay.core_model.model_replay` (or one like it).
    dotnet_reorder
        The histories are .NET's, whose lang flag 1 (``ReorderWorkflowCompletion``) is read.

    Returns
    -------
    tuple
        The run to use and an assumption (None when every cut point gives the same verdict, or
        when the flag changes nothing for this pair).
    """
    rollback = _older_core_drops(old, new, run, model)
    if rollback is not None:
        return run, rollback
    closing = _closing_task(new)
    if closing is None or not old.tasks:
        return run, None  # nothing issued next to a completion
    core_knows = MOVE_TERMINAL_COMMANDS in new.tasks[-1].core_flags
    # The new code's own run sent its non-terminals before the completion: its core has flag 3,
    # or (.NET before that flag) its .NET moved the completion itself and recorded lang flag 1.
    own_run_reorders = core_knows or (dotnet_reorder and REORDER_COMPLETION in closing.lang_flags)
    aligned = old.tasks[min(closing.index, len(old.tasks)) - 1]
    if not own_run_reorders or (core_knows and MOVE_TERMINAL_COMMANDS in aligned.core_flags):
        return run, None  # both cut at the completion, or both reorder
    before = len(closing.commands) - 1
    if _fails_before(run, closing):
        return run, None
    if before * (len(old.tasks) + len(new.tasks)) > CUT_BUDGET:
        return run, (
            "sdk-core flag 3 (MoveTerminalCommands) is not in the recorded history: replaying "
            "it, sdk-core drops the commands issued after the completion in the same activation; "
            f"the new code's task {closing.index} has {before} commands before its completion "
            "and the cut points were too many to try: taken to be none"
        )
    runs = {kept: model(old, _cut(new, closing, kept)) if kept < before else run
            for kept in range(before, -1, -1)}  # fmt: skip
    if len({_outcome(r) for r in runs.values()}) == 1:
        return run, None
    kept, chosen = max(runs.items(), key=lambda item: (_rank(item[1]), item[0]))
    ok = [k for k, r in runs.items() if getattr(r, "failure", None) is None]
    verdicts = (
        f"replay passes if the first {_counts(ok)} of them came before it and fails otherwise"
        if ok
        else "replay fails whichever came before it, but at different events"
    )
    return chosen, (
        "sdk-core flag 3 (MoveTerminalCommands) is not in the recorded history: replaying it, "
        "sdk-core drops the commands the code issues after its completion in the same activation"
        f". The new code's history shows {before} command(s) before the completion of its task "
        f"{closing.index} but not which of them the code issued after it; {verdicts}. "
        f"Taken: the first {kept} before it"
    )


def _counts(values: list[int]) -> str:
    ordered = sorted(values)
    return (
        " or ".join(str(v) for v in ordered)
        if len(ordered) < 4
        else (f"{ordered[0]}..{ordered[-1]}")
    )
