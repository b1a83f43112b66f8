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
    the same activation are dropped; with it, they are moved before the completion. Modelled in
    :mod:`toolkit.replay.terminal_commands` (every cut point the histories allow is tried; an
    assumption only when they give different verdicts).
    4 ``NexusOperationDeterminismChecks`` (sdk-core of temporalio 1.35): a Nexus operation's
    service and operation compared; modelled in :mod:`toolkit.replay.core_model`.
Python (``_WorkflowLogicFlag``)
    1 ``RAISE_ON_CANCELLING_COMPLETED_ACTIVITY``: an assumption.
    2 ``PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH``: ignored unless an activation mixes
    groups of jobs (patches / signals and updates / the rest) or brings an activity result with
    another job; there, an assumption.
TypeScript (``SdkFlags``)
    1 ``NonCancellableScopesAreShieldedFromPropagation``, 2
    ``ProcessWorkflowActivationJobsAsSingleBatch`` (both also on for tasks whose build id is
    1.11.0's or 1.11.1's, which did not record them), 3
    ``OpenTelemetryInterceptorsTracesInboundSignals`` (on when the history's SDK >= 1.11.5), 4
    ``OpenTelemetryInterceptorsTracesLocalActivities`` (>= 1.11.6), 5
    ``OpenTelemetryInterceporsAvoidsExtraYields`` (>= 1.13.2), 6
    ``OpenTelemetryInterceptorsInstrumentsAllMethods``. Flag 2 is ignored unless an activation
    brings a signal with a job of another kind; the others are assumptions. A TypeScript older
    than a flag never reads it; one that reads flags rejects an activation with an unknown one.
.NET (``WorkflowLogicFlag``)
    1 ``ReorderWorkflowCompletion``: modelled with core flag 3; 2 ``ApplyModernEventLoopLogic``:
    an assumption.

Every language flag but Python's opt-in single batch is recorded by a run that is not replaying
the first time the code relies on it, so only a flag the new code's history has and the replay
of the recorded one lacks can change what the code does. The ones left as assumptions change
whether a cancellation raises or propagates, the yield points of interceptors, or the event
loop's order: what the new code would issue under the other setting is in neither history. Each
note names the SDK source that reads the flag.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from toolkit.replay.flag_releases import ignores_when_replaying, reads_without_recording
from toolkit.replay.tasks import SplitHistory, Task
from toolkit.replay.terminal_commands import MOVE_TERMINAL_COMMANDS, move_terminal_commands

__all__ = ["CORE_FLAGS", "LANG_FLAGS", "apply_flags", "history_flags", "lang_of", "sdk_of"]

ID_AND_TYPE_CHECKS, UPSERT_ON_PATCH, NEXUS_CHECKS = 1, 2, 4

CORE_FLAGS = {
    ID_AND_TYPE_CHECKS: "IdAndTypeDeterminismChecks",
    UPSERT_ON_PATCH: "UpsertSearchAttributeOnPatch",
    MOVE_TERMINAL_COMMANDS: "MoveTerminalCommands",
    NEXUS_CHECKS: "NexusOperationDeterminismChecks",
}
_MODELLED_CORE = frozenset(
    {ID_AND_TYPE_CHECKS, UPSERT_ON_PATCH, MOVE_TERMINAL_COMMANDS, NEXUS_CHECKS}
)

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


#: TypeScript's default build id (packages/worker): ``@temporalio/worker@<version>+<hash>``.
_TS_BUILD_ID = re.compile(r"^@temporalio/worker@(\d+\.\d+\.\d+)[+]")


def _ts_build_version(task: Task | None) -> tuple[int, ...] | None:
    match = _TS_BUILD_ID.match(task.build_id or "") if task is not None else None
    return _version(match.group(1)) if match else None


def sdk_of(history: SplitHistory) -> tuple[str | None, tuple[int, ...] | None]:
    """The SDK (``lang_of`` name) and version of a history: ``sdkMetadata``, else (TypeScript,
    whose older cores did not record ``sdkName``) the default build id of its first task."""
    lang = lang_of(history.sdk_name)
    if lang is not None:
        return lang, _version(history.sdk_version) or None
    built = _ts_build_version(history.tasks[0] if history.tasks else None)
    return ("typescript", built) if built else (None, None)


#: TypeScript's alternate conditions (packages/workflow/src/flags.ts), applied when replaying:
#: flags 1 and 2 on for tasks whose build id is 1.11.0 / 1.11.1's (those releases used them but
#: did not record them); 3-5 on when the history's recorded ``sdkVersion`` is at least these.
_TS_BUILT_BY_1_11_0_OR_1 = (1, 2)
_TS_AT_LEAST = {3: (1, 11, 5), 4: (1, 11, 6), 5: (1, 13, 2)}
#: The TypeScript release each flag came in (flags.ts ``@since``); older SDKs never read it.
_TS_SINCE = {1: (1, 10, 2), 2: (1, 11, 0), 3: (1, 13, 2), 4: (1, 13, 2), 5: (1, 13, 2),
             6: (1, 13, 3)}  # fmt: skip


def _lang_flags(history: SplitHistory, task: Task, replaying: bool) -> frozenset[int]:
    # TypeScript reads a flag as on for tasks an SDK version is known to have run with it on
    # (its alternate conditions); applied to both sides, each with its own SDK's version.
    flags = task.lang_flags
    if sdk_of(history)[0] != "typescript":
        return flags
    built = _ts_build_version(task)
    if built is not None and built[:2] == (1, 11) and built[2] in (0, 1):
        flags = flags | set(_TS_BUILT_BY_1_11_0_OR_1)
    recorded = _version(history.sdk_version)
    return flags | {flag for flag, least in _TS_AT_LEAST.items() if recorded and recorded >= least}


def _new_sdk_predates(new: SplitHistory, flag: int) -> bool:
    """Whether the new code's SDK is a TypeScript release older than ``flag`` (flags.ts)."""
    lang, version = sdk_of(new)
    since = _TS_SINCE.get(flag)
    return lang == "typescript" and version is not None and since is not None and version < since


def _rejected_flag_notes(old: SplitHistory, new: SplitHistory, run: Any) -> list[str]:
    """Notes for flags the recorded history records and the new code's TypeScript does not know.

    A TypeScript from before any flag (< 1.10.2) ignores them and replays as in its own run; a
    later one rejects an activation carrying a flag it does not know.
    """
    version = sdk_of(new)[1]
    if sdk_of(new)[0] != "typescript" or version is None or version < _TS_SINCE[1]:
        return []
    notes = []
    for flag, since in sorted(_TS_SINCE.items()):
        first = next((t.index for t in old.tasks if flag in t.lang_flags), None)
        if version < since and first is not None and _matters(run, first):
            notes.append(
                f"typescript SDK flag {flag} ({LANG_FLAGS['typescript'][flag]}) is recorded from "
                f"task {first} and unknown to the new code's SDK {'.'.join(map(str, version))}: "
                "replaying, it rejects the activation ('Unknown SDK flag', assertValidFlag in "
                "packages/workflow/src/flags.ts), a workflow task failure the model does not report"
            )
    return notes


def _first_difference(
    old: SplitHistory, new: SplitHistory, flags_of: Callable[[SplitHistory, Task, bool], Any],
    one_way: Callable[[int], bool] = lambda flag: False,
) -> dict[int, int]:  # fmt: skip
    """Flag -> first task (1-based) where replaying ``old`` and ``new``'s own run disagree.

    For a ``one_way`` flag only the new run having it counts: the new code's own run records it
    the first time it relies on it, so where its history lacks the flag the code did not read
    it, and replay with the flag on (from ``old``) reads nothing either.
    """
    found: dict[int, int] = {}
    for old_task, new_task in zip(old.tasks, new.tasks, strict=False):
        replayed, own = flags_of(old, old_task, True), flags_of(new, new_task, False)
        for flag in replayed ^ own:
            if flag in own or not one_way(flag):
                found.setdefault(flag, old_task.index)
    return found


def _core(history: SplitHistory, task: Task, replaying: bool) -> frozenset[int]:
    return task.core_flags


def _activation_jobs(history: SplitHistory, index: int, replaying: bool) -> list[str]:
    """The jobs (by kind) the activation of task ``index`` (1-based) carries, as far as shown.

    A task's activation is taken to carry what the history delivered since the task before it:
    ``start``, ``activity`` results, other ``result``s, ``cancel`` requests, ``signal``s,
    ``update``s. Replaying, sdk-core also resolves local activities from their markers
    (``activity``) and adds a ``patch`` job for each ``core_patch`` marker among the task's
    commands.
    """
    task = history.tasks[index - 1]
    before = history.tasks[index - 2].delivered if index > 1 else frozenset()
    jobs = [
        "activity" if key[0] == "result" and str(key[1]).startswith("ActivityTask") else key[0]
        for key in task.delivered - before
    ]
    if replaying:
        for row in task.commands:
            marker = row.get("marker_name")
            if marker in ("core_patch", "core_local_activity"):
                jobs.append("patch" if marker == "core_patch" else "activity")
    return jobs


def _python_batches(history: SplitHistory, index: int, replaying: bool) -> bool:
    # temporalio/worker/_workflow_instance.py (activate): without the flag, jobs run in groups,
    # patches, then signals and updates, then the rest, the code running after each group; with
    # it, one run after all: the same when one group is present. The flag also makes an await on
    # an activity that completed in the activation where its task is cancelled raise
    # (_await_temporal_operation), which needs an activity result next to another job.
    jobs = _activation_jobs(history, index, replaying)
    groups = {"patch" if job == "patch" else "signal" if job in ("signal", "update") else "rest"
              for job in jobs}  # fmt: skip
    return len(groups) > 1 or ("activity" in jobs and len(jobs) > 1)


def _typescript_signals(history: SplitHistory, index: int, replaying: bool) -> bool:
    # packages/worker/src/workflow/vm-shared.ts: the flag is consulted only for an activation
    # with a signal job (``!hasSignals || hasFlag(...)``); without it the signals run as one
    # batch and the other jobs (patches aside, handled first either way) as another, so only
    # a signal next to a job of another kind is affected.
    kinds = set(_activation_jobs(history, index, replaying)) - {"patch"}
    return "signal" in kinds and len(kinds) > 1


#: Flags that act only at some activations, and the test of whether a task's activation is one.
_LANG_SCOPE: dict[tuple[str | None, int], Callable[[SplitHistory, int, bool], bool]] = {
    ("python", 2): _python_batches,
    ("typescript", 2): _typescript_signals,
}

#: Flags an SDK turns on only where a worker opts in, not whenever it relies on them: Python's
#: single batch (off by default in temporalio 1.35, ``_DEFAULT_ENABLED_WORKFLOW_LOGIC_FLAGS``).
#: The others are recorded by the new code's own run the first time it reads them.
_OPT_IN = frozenset({("python", 2)})

#: .NET ReorderWorkflowCompletion: modelled with sdk-core flag 3 (terminal_commands.py).
_MODELLED_LANG = frozenset({("dotnet", 1)})

_OTEL = (
    "It adds or removes a yield point in @temporalio/interceptors-opentelemetry's workflow "
    "interceptors (contrib/interceptors-opentelemetry/src/workflow/index.ts), so it matters only "
    "if the code runs them, which the histories do not show"
)
_LANG_EFFECT: dict[tuple[str | None, int], str] = {
    ("python", 1): (
        "When an activity has completed and the task awaiting it is cancelled in the same "
        "activation, the await raises CancelledError with the flag and returns the result "
        "without it (temporalio/worker/_workflow_instance.py); what the code then issues is in "
        "neither history"
    ),
    ("python", 2): (
        "It runs the code once after all of an activation's jobs instead of after each group "
        "(patches, signals and updates, the rest); an activation here carries more than one "
        "group, and the order of the commands the code then issues is in neither history"
    ),
    ("typescript", 1): (
        "It stops a cancelled scope's cancellation from reaching non-cancellable children, "
        "makes withTimeout cancel its timer when the body finishes first and setTimeout timers "
        "cancellable (packages/workflow/src/cancellation-scope.ts, global-overrides.ts); the "
        "commands this changes are in neither history"
    ),
    ("typescript", 2): (
        "With a signal in the activation it runs the jobs as one batch, signals and updates "
        "first, instead of in phases (packages/worker/src/workflow/vm-shared.ts); an activation "
        "here has a signal, and the order of the code's commands then is in neither history"
    ),
    ("typescript", 3): _OTEL,
    ("typescript", 4): _OTEL,
    ("typescript", 5): _OTEL,
    ("typescript", 6): _OTEL,
    ("dotnet", 2): (
        "Set at the first activation, it changes job order, when the main method starts, event "
        "loop ticks per job and how many satisfied conditions resolve at once "
        "(src/Temporalio/Worker/WorkflowInstance.cs); the command order that results is in "
        "neither history"
    ),
}
_UNKNOWN_EFFECT = "Its effect is unknown to this toolkit"


def _affected_tasks(
    old: SplitHistory, new: SplitHistory, run: Any, start: int,
    acts: Callable[[SplitHistory, int, bool], bool],
) -> list[int]:  # fmt: skip
    """Tasks from ``start`` to the verdict's point where the flag can act, on either side."""
    failure = getattr(run, "failure", None)
    last = failure.task if failure is not None else max(len(old.tasks), len(new.tasks))
    return [
        index
        for index in range(start, last + 1)
        if (index <= len(old.tasks) and acts(old, index, True))
        or (index <= len(new.tasks) and acts(new, index, False))
    ]


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
    lang = sdk_of(old)[0] or sdk_of(new)[0]
    run, note = move_terminal_commands(old, new, run, model, dotnet_reorder=lang == "dotnet")
    notes = [note] if note else []
    for flag, task in sorted(_first_difference(old, new, _core).items()):
        if flag in _MODELLED_CORE or not _matters(run, task):
            continue
        notes.append(
            f"sdk-core flag {flag} ({CORE_FLAGS.get(flag, 'unknown to this toolkit')}) differs "
            f"between the two histories from task {task}; its effect is not modelled"
        )
    names = LANG_FLAGS.get(lang or "", {})

    def one_way(flag: int) -> bool:
        # Counted only where the new run has it, unless the new run could not have shown it.
        opt_in = (lang, flag) in _OPT_IN
        return not opt_in and not reads_without_recording(lang, flag, new.sdk_version)

    for flag, task in sorted(_first_difference(old, new, _lang_flags, one_way).items()):
        if (lang, flag) in _MODELLED_LANG or not _matters(run, task):
            continue
        if _new_sdk_predates(new, flag):
            continue  # that SDK never reads the flag (see _rejected_flag_notes)
        scope = _LANG_SCOPE.get((lang, flag))
        affected = _affected_tasks(old, new, run, task, scope) if scope else []
        if scope and not affected:
            continue  # no activation where the flag can act
        recorded = "records" if flag in _lang_flags(old, old.tasks[task - 1], True) else "lacks"
        if recorded == "records" and ignores_when_replaying(lang, flag, new.sdk_version):
            continue  # the new code's release predates the flag: it replays as its own run went
        where = f" (at task(s) {', '.join(map(str, affected))})" if affected else ""
        name = names.get(
            flag, "unknown to this toolkit" if lang else "neither history names its SDK"
        )
        notes.append(
            f"{lang or 'language'} SDK flag {flag} ({name})"
            f": the recorded history {recorded} it from task {task}, the new code's history does "
            f"not agree. {_LANG_EFFECT.get((lang, flag), _UNKNOWN_EFFECT)}{where}: not modelled"
        )
    return run, (*notes, *_rejected_flag_notes(old, new, run))


def _matters(run: Any, task: int) -> bool:
    """Whether a flag differing from ``task`` on can change the verdict of ``run``."""
    failure = getattr(run, "failure", None)
    return failure is None or failure.task >= task


def history_flags(history: SplitHistory) -> Mapping[str, Any]:
    """The flags a split history records at its last task: for reports and tests."""
    last = history.tasks[-1] if history.tasks else None
    lang, version = sdk_of(history)
    return {
        "sdk": lang,
        "sdk_version": history.sdk_version or (".".join(map(str, version)) if version else None),
        "core": sorted(last.core_flags) if last else [],
        "lang": sorted(last.lang_flags) if last else [],
    }
