"""SDK flags recorded in histories, and what each changes when one history replays against code.

sdk-core and the language SDKs record in ``WorkflowTaskCompleted.sdkMetadata`` the flags whose
behaviour a workflow task relied on (``coreUsedFlags``, ``langUsedFlags``). Replaying a history,
an SDK turns on only the flags that history records, so code replaying an old history behaves as
the old SDK did, while the new code's own history shows the new behaviour. Where the two
histories' flags differ at a task, the model must either apply what the flag changes or say that
it cannot (an assumption naming the flag, hence an inexact verdict).

Flags known here (names as in the SDKs' sources):

sdk-core (``CoreInternalFlags``)
    1 ``IdAndTypeDeterminismChecks``: activity / child / local-activity id and type compared;
    modelled in :mod:`toolkit.replay.core_model`.
    2 ``UpsertSearchAttributeOnPatch``: a patch marker is followed by an upsert of
    ``TemporalChangeVersion``; modelled (marker and upsert match as one unit on both sides).
    3 ``MoveTerminalCommands``: without it, commands issued after the workflow's completion in
    the same activation are dropped; with it, they are moved before the completion. Modelled
    here: the new code's history (with the flag) cannot show which of its last commands came
    after the completion, so where the recorded history lacks them they are taken to have come
    after it (and are dropped), otherwise before it; either way an assumption names the flag.
    4 ``NexusOperationDeterminismChecks`` (sdk-core of temporalio 1.35): a Nexus operation's
    service and operation compared; modelled in :mod:`toolkit.replay.core_model`.
Python (``_WorkflowLogicFlag``)
    1 ``RAISE_ON_CANCELLING_COMPLETED_ACTIVITY``,
    2 ``PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH``.
TypeScript (``SdkFlags``)
    1 ``NonCancellableScopesAreShieldedFromPropagation``, 2
    ``ProcessWorkflowActivationJobsAsSingleBatch`` (both also on for tasks completed by 1.11.0 and
    1.11.1, which did not record them), 3 ``OpenTelemetryInterceptorsTracesInboundSignals`` (on
    for tasks of SDK >= 1.11.5), 4 ``OpenTelemetryInterceptorsTracesLocalActivities`` (>= 1.11.6),
    5 ``OpenTelemetryInterceporsAvoidsExtraYields`` (>= 1.13.2), 6
    ``OpenTelemetryInterceptorsInstrumentsAllMethods``.
.NET (``WorkflowLogicFlag``)
    1 ``ReorderWorkflowCompletion``, 2 ``ApplyModernEventLoopLogic``.

Language flags change the order in which an SDK runs activation jobs, the yield points of its
interceptors, or whether a cancellation raises: what the new code would issue under the other
setting is in neither history, so none is modelled; each one that differs where it matters is an
assumption.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

from toolkit.replay.flag_releases import ignores_when_replaying
from toolkit.replay.tasks import SplitHistory, Task

__all__ = ["CORE_FLAGS", "LANG_FLAGS", "apply_flags", "history_flags", "lang_of"]

ID_AND_TYPE_CHECKS, UPSERT_ON_PATCH, MOVE_TERMINAL_COMMANDS, NEXUS_CHECKS = 1, 2, 3, 4

CORE_FLAGS = {
    ID_AND_TYPE_CHECKS: "IdAndTypeDeterminismChecks",
    UPSERT_ON_PATCH: "UpsertSearchAttributeOnPatch",
    MOVE_TERMINAL_COMMANDS: "MoveTerminalCommands",
    NEXUS_CHECKS: "NexusOperationDeterminismChecks",
}
_MODELLED_CORE = frozenset({ID_AND_TYPE_CHECKS, UPSERT_ON_PATCH, NEXUS_CHECKS})

LANG_FLAGS: dict[str, dict[int, str]] = {
    "python": {
        1: "RAISE_ON_CANCELLING_COMPLETED_ACTIVITY",
        2: "PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH",
    },
    "typescript": {
        1: "NonCancellableScopesAreShieldedFromPropagation",
        2: "ProcessWorkflowActivationJobsAsSingleBatch",
        3: "OpenTelemetryInterceptorsTracesInboundSignals",
        4: "OpenTelemetryInterceptorsTracesLocalActivities",
        5: "OpenTelemetryInterceporsAvoidsExtraYields",
        6: "OpenTelemetryInterceptorsInstrumentsAllMethods",
    },
    "dotnet": {1: "ReorderWorkflowCompletion", 2: "ApplyModernEventLoopLogic"},
}

_TERMINAL = frozenset({
    "CompleteWorkflowExecution", "FailWorkflowExecution", "CancelWorkflowExecution",
    "ContinueAsNewWorkflowExecution",
})  # fmt: skip


def lang_of(sdk_name: str | None) -> str | None:
    """``python`` / ``typescript`` / ``dotnet`` / ... from ``sdkMetadata.sdkName``."""
    if not sdk_name:
        return None
    for lang in ("python", "typescript", "dotnet", "ruby"):
        if lang in sdk_name.lower():
            return lang
    return sdk_name


def _version(text: str | None) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text or "")[:3])


#: TypeScript's alternate conditions: flags on when replaying tasks of these SDK versions.
_TS_IMPLIED: list[tuple[int, Callable[[tuple[int, ...]], bool]]] = [
    (1, lambda v: v[:2] == (1, 11) and len(v) > 2 and v[2] in (0, 1)),
    (2, lambda v: v[:2] == (1, 11) and len(v) > 2 and v[2] in (0, 1)),
    (3, lambda v: v >= (1, 11, 5)),
    (4, lambda v: v >= (1, 11, 6)),
    (5, lambda v: v >= (1, 13, 2)),
]


def _lang_flags(history: SplitHistory, task: Task, replaying: bool) -> frozenset[int]:
    # TypeScript reads a flag as on for tasks an SDK version is known to have run with it on
    # (its alternate conditions); applied to both sides, each with its own SDK's version.
    flags = task.lang_flags
    if lang_of(history.sdk_name) == "typescript" and history.sdk_version:
        version = _version(history.sdk_version)
        flags = flags | {flag for flag, holds in _TS_IMPLIED if holds(version)}
    return flags


def _first_difference(
    old: SplitHistory, new: SplitHistory, flags_of: Callable[[SplitHistory, Task, bool], Any]
) -> dict[int, int]:
    """Flag -> first task (1-based) where replaying ``old`` and ``new``'s own run disagree."""
    found: dict[int, int] = {}
    for old_task, new_task in zip(old.tasks, new.tasks, strict=False):
        differing = flags_of(old, old_task, True) ^ flags_of(new, new_task, False)
        for flag in differing:
            found.setdefault(flag, old_task.index)
    return found


def _core(history: SplitHistory, task: Task, replaying: bool) -> frozenset[int]:
    return task.core_flags


def _terminal_tasks(history: SplitHistory, start: int) -> list[Task]:
    """Tasks from ``start`` whose commands end with a completion after other commands."""
    return [
        task
        for task in history.tasks[start - 1 :]
        if len(task.commands) > 1 and task.commands[-1].get("kind") in _TERMINAL
    ]


def _without_leading(history: SplitHistory, tasks: list[Task]) -> SplitHistory:
    """``history`` with the commands before the completion of ``tasks`` left out."""
    chosen = {task.index for task in tasks}
    changed = [
        dataclasses.replace(task, commands=[task.commands[-1]]) if task.index in chosen else task
        for task in history.tasks
    ]
    return dataclasses.replace(history, tasks=changed)


def apply_flags(
    old: SplitHistory, new: SplitHistory, model: Callable[[SplitHistory, SplitHistory], Any]
) -> tuple[Any, tuple[str, ...]]:
    """Run ``model(old, new)`` with what the flags both histories record change.

    Parameters
    ----------
    old, new
        The recorded history and the new code's history, split.
    model
        :func:`toolkit.replay.core_model.model_replay` (or one like it): returns a ``ModelRun``.

    Returns
    -------
    tuple
        The ``ModelRun`` to use and the assumptions the flags add (empty when no flag that
        differs matters before the verdict's point).
    """
    run = model(old, new)
    notes: list[str] = []
    core = _first_difference(old, new, _core)
    moved = core.get(MOVE_TERMINAL_COMMANDS)
    if moved is not None and _matters(run, moved):
        run, note = _move_terminal(old, new, run, moved, model)
        if note:
            notes.append(note)
    for flag, task in sorted(core.items()):
        if flag in _MODELLED_CORE or flag == MOVE_TERMINAL_COMMANDS or not _matters(run, task):
            continue
        notes.append(
            f"sdk-core flag {flag} ({CORE_FLAGS.get(flag, 'unknown to this toolkit')}) differs "
            f"between the two histories from task {task}; its effect is not modelled"
        )
    lang = lang_of(old.sdk_name or new.sdk_name)
    names = LANG_FLAGS.get(lang or "", {})
    for flag, task in sorted(_first_difference(old, new, _lang_flags).items()):
        if not _matters(run, task):
            continue
        recorded = "records" if flag in _lang_flags(old, old.tasks[task - 1], True) else "lacks"
        if recorded == "records" and ignores_when_replaying(lang, flag, new.sdk_version):
            continue  # the new code's release predates the flag: it replays as its own run went
        notes.append(
            f"{lang or 'language'} SDK flag {flag} ({names.get(flag, 'unknown to this toolkit')})"
            f": the recorded history {recorded} it from task {task}, the new code's history "
            "does not agree; it changes job order, yield points or cancellation in the SDK, "
            "which the histories cannot show: not modelled"
        )
    return run, tuple(notes)


def _matters(run: Any, task: int) -> bool:
    """Whether a flag differing from ``task`` on can change the verdict of ``run``."""
    failure = getattr(run, "failure", None)
    return failure is None or failure.task >= task


def _move_terminal(
    old: SplitHistory, new: SplitHistory, run: Any, task: int,
    model: Callable[[SplitHistory, SplitHistory], Any],
) -> tuple[Any, str | None]:  # fmt: skip
    """sdk-core flag 3 (``MoveTerminalCommands``) on one side only."""
    candidates = _terminal_tasks(new, task)
    if not candidates:
        return run, None  # no activation issued a completion next to other commands
    old_has = MOVE_TERMINAL_COMMANDS in old.tasks[min(task, len(old.tasks)) - 1].core_flags
    which = ", ".join(str(t.index) for t in candidates)
    if old_has:
        return run, (
            "sdk-core flag 3 (MoveTerminalCommands) is on replaying the recorded history but not "
            f"in the new code's own run: commands the new code issued after its completion in "
            f"task(s) {which} were dropped from its history, so replay may meet commands "
            "neither history shows; taken to be none"
        )
    failure = getattr(run, "failure", None)
    if failure is not None and any(t.index == failure.task for t in candidates):
        failing = [t for t in candidates if t.index == failure.task]
        retried = model(old, _without_leading(new, failing))
        if getattr(retried, "failure", None) is None or retried.failure.task > failure.task:
            return retried, (
                "sdk-core flag 3 (MoveTerminalCommands) is not in the recorded history: replaying "
                "it, sdk-core drops the commands the code issues after its completion in the "
                f"same activation. The recorded history lacks the new code's other commands of "
                f"task {failure.task}, so they are taken to come after the completion (dropped)"
            )
    return run, (
        "sdk-core flag 3 (MoveTerminalCommands) is not in the recorded history: replaying it, "
        "sdk-core drops commands issued after the completion in the same activation, and the "
        f"new code's history (with the flag) cannot show which of task(s) {which}'s commands "
        "came after it; taken to come before it (kept)"
    )


def history_flags(history: SplitHistory) -> Mapping[str, Any]:
    """The flags a split history records at its last task: for reports and tests."""
    last = history.tasks[-1] if history.tasks else None
    return {
        "sdk": lang_of(history.sdk_name),
        "sdk_version": history.sdk_version,
        "core": sorted(last.core_flags) if last else [],
        "lang": sorted(last.lang_flags) if last else [],
    }
