"""The replay verdict for a recorded history and new code, and how sure it is.

Two ways to ask, one answer type:

- **history mode** — ``replayed`` is a history the new code produced under the same inputs. The
  answer is modelled (:func:`toolkit.replay.core_model.model_replay`). It is *exact* when the two
  histories determine it; where they cannot (a ``patched()`` old branch, an update the new code
  rejected without a trace) it says ``confidence="assumed"`` and names the assumption. Ids the new
  code drew from ``workflow.uuid4()`` are re-derived for the recorded run's seed first
  (:mod:`toolkit.replay.run_random`), and a task the new code failed by raising on the same
  deliveries makes the verdict ``error``.
- **code mode** — ``replayed`` is the new workflow code (a class or a list of classes). The
  ``Replayer`` runs it on the recorded history (:mod:`toolkit.replay.code_replay`): verdict and
  message are the Replayer's own (``confidence="replayer"``), and the commands the code issued are
  fed to the same matching model, whose agreement is reported (``model_agrees``).
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from toolkit.errors import HistoryFormatError
from toolkit.replay.commands import events_frame, identity_label, iter_histories
from toolkit.replay.core_model import CoreFailure, model_replay
from toolkit.replay.debug_events import apply_debug_events
from toolkit.replay.derived_ids import rebase_workflow_id
from toolkit.replay.divergence import Divergence, aligned_commands, go_message, java_message
from toolkit.replay.divergence_messages import core_message_matches
from toolkit.replay.flags import apply_flags
from toolkit.replay.messages import parse_nondeterminism
from toolkit.replay.old_core_messages import apply_old_core_messages
from toolkit.replay.patch_layouts import apply_patch_layouts
from toolkit.replay.run_random import reseed_ids
from toolkit.replay.tasks import CodeFailure, SplitHistory, Task, split_history

__all__ = [
    "InexactVerdictWarning", "ReplayVerdict", "code_replay_verdict", "first_divergence_of",
    "replay_verdict", "split_recorded",
]  # fmt: skip


class InexactVerdictWarning(UserWarning):
    """``first_divergence`` returned None, but the histories could not settle that."""


@dataclass(frozen=True)
class ReplayVerdict:
    """Whether replaying a recorded history against new code succeeds, and how sure that is.

    Attributes
    ----------
    outcome : str
        ``ok``, ``nondeterminism`` or ``error`` (the workflow task fails for another reason).
    divergence : Divergence or None
        Where and why it fails (None for ``ok``).
    exact : bool
        Verdict and message are the ones the ``Replayer`` prints (see :class:`Divergence`).
    confidence : str
        ``replayer``, ``histories`` or ``assumed``.
    assumptions : tuple of str
        What the verdict rests on that the histories cannot show.
    notes : tuple of str
        Exact inferences made on the way.
    model_agrees : bool or None
        Code mode: whether the matching model, fed the commands the code really issued, reaches
        the Replayer's verdict and message (None in history mode, or when the code raised).
    aligned : pandas.DataFrame
        Recorded commands next to the new code's
        (:func:`toolkit.replay.divergence.aligned_commands`).
    """

    outcome: str
    divergence: Divergence | None
    exact: bool
    confidence: str
    assumptions: tuple[str, ...]
    notes: tuple[str, ...]
    model_agrees: bool | None
    aligned: pd.DataFrame = field(repr=False, compare=False)


def split_recorded(source: Any, role: str = "recorded") -> SplitHistory:
    """One history (an events frame or anything :func:`toolkit.read_history` reads) split
    into its workflow tasks; ``role`` names it in errors."""
    return _split(source, role)


def _split(source: Any, role: str) -> SplitHistory:
    frame = events_frame(source)
    histories = list(iter_histories(frame))
    name = _source_name(frame)
    if len(histories) != 1:
        raise HistoryFormatError(
            name,
            f"{role} holds {len(histories)} histories",
            expected="exactly one history (select one with events[events.history == i])",
        )
    history, one = histories[0]
    if one.empty:
        raise HistoryFormatError(name, f"{role} has no events", expected="events")
    return split_history(history, one)


def _source_name(frame: pd.DataFrame) -> str:
    if "source" in frame.columns and len(frame) and frame["source"].iloc[0] is not None:
        return str(frame["source"].iloc[0])
    return "<events frame>"


def is_workflow_code(value: Any) -> bool:
    """Whether ``value`` is a workflow class or a non-empty list/tuple of classes."""
    if isinstance(value, type):
        return True
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(item, type) for item in value)
    )


def _divergence(
    failure: CoreFailure,
    recorded: list[Task],
    replayed: list[Task],
    aligned: pd.DataFrame | None = None,
    **fields: Any,
) -> Divergence:
    return Divergence(
        event_id=int(failure.event["event_id"]) if failure.event.get("event_id") else None,
        check=failure.check,
        expected=failure.expected,
        actual=failure.actual,
        recorded_event=failure.event,
        command=failure.command,
        core_message=failure.message,
        core_message_exact=failure.exact,
        go_message=go_message(recorded, replayed) or "",
        java_message=java_message(failure),
        task=failure.task,
        id_type_checks=failure.checks_on,
        aligned=aligned_commands(recorded, replayed) if aligned is None else aligned,
        **fields,
    )


def _error_divergence(
    message: str, failure_type: str | None, task: int, aligned: pd.DataFrame, **fields: Any
) -> Divergence:
    """The code raises during replay: a workflow task failure that is no nondeterminism."""
    return Divergence(
        event_id=None, check="workflow_task_failure", expected=None, actual=failure_type,
        recorded_event={}, command=None, core_message=message, core_message_exact=True,
        go_message="", java_message="", task=task, id_type_checks=False, aligned=aligned,
        outcome="error", **fields,
    )  # fmt: skip


def _history_verdict(recorded: Any, replayed: Any) -> ReplayVerdict:
    old_frame, new_frame = events_frame(recorded), events_frame(replayed)
    old, new = _split(old_frame, "recorded"), _split(new_frame, "replayed")
    rows = [row for task in new.tasks for row in task.commands]
    notes = reseed_ids(rows, new.run_id, old.run_id)
    notes += rebase_workflow_id(rows, new.workflow_id, old.workflow_id)
    for row in rows:
        row["identity"] = identity_label(row)
    run, flag_notes = apply_flags(old, new, model_replay)
    run, layout_notes = apply_patch_layouts(old_frame, new_frame, old, new, run)
    run, debug_notes = apply_debug_events(_one_history(old_frame), new, run)
    run, wording = apply_old_core_messages(new, run)
    notes += [*debug_notes, *wording]
    assumptions = run.assumptions + flag_notes + layout_notes
    confidence = "assumed" if assumptions else "histories"
    aligned = aligned_commands(old.tasks, new.tasks)
    common = {"confidence": confidence, "assumptions": assumptions, "notes": tuple(notes)}
    if run.code_error is not None:
        error: CodeFailure = run.code_error
        note = f"the new code raised on the same deliveries in its own run (event {error.event_id})"
        common["notes"] = (*common["notes"], note)
        found = _error_divergence(
            error.message or "", error.failure_type, _task_at(old.tasks, error), aligned,
            exact=not assumptions, **common,
        )  # fmt: skip
        return ReplayVerdict("error", found, not assumptions, confidence, assumptions,
                             found.notes, None, aligned)  # fmt: skip
    if run.failure is None:
        return ReplayVerdict("ok", None, not assumptions, confidence, assumptions,
                             tuple(notes), None, aligned)  # fmt: skip
    exact = not assumptions and run.failure.exact
    found = _divergence(run.failure, old.tasks, new.tasks, aligned, exact=exact, **common)
    return ReplayVerdict("nondeterminism", found, exact, confidence, assumptions,
                         tuple(notes), None, aligned)  # fmt: skip


def _one_history(frame: pd.DataFrame) -> pd.DataFrame:
    """The recorded frame's only history (``_split`` has checked there is one)."""
    return next(iter(iter_histories(frame)))[1]


def _task_at(tasks: list[Task], error: CodeFailure) -> int:
    """The recorded task whose activation first carries the deliveries the code raised on."""
    for task in tasks:
        if error.delivered <= task.delivered:
            return task.index
    return len(tasks) + 1


def _code_verdict(
    recorded: Any, workflows: Any, workflow_id: str | None, **replayer_options: Any
) -> ReplayVerdict:
    from toolkit.replay.code_replay import replay_code  # late: imports the temporalio worker

    old = _split(recorded, "recorded")
    classes = [workflows] if isinstance(workflows, type) else list(workflows)
    result = replay_code(recorded, classes, workflow_id=workflow_id, **replayer_options)
    return code_replay_verdict(old, result)


def code_replay_verdict(old: SplitHistory, result: Any) -> ReplayVerdict:
    """The verdict of a replay the ``Replayer`` ran (a :class:`~toolkit.replay.code_replay.
    CodeReplay` of the recorded history ``old``, split by :func:`split_recorded`): its outcome
    and message, with the commands the code issued matched by the model to say where and why."""
    tasks = _activation_tasks(old, result.activations)
    aligned = aligned_commands(old.tasks, tasks)
    common: dict[str, Any] = {"confidence": "replayer", "assumptions": (), "exact": True}
    if result.outcome == "error":
        # The model can only speak about the tasks before the one the code failed.
        failed = next((i for i, a in enumerate(_answering(result.activations)) if a.failed), 0)
        before = SplitHistory(old.tasks[:failed], [], frozenset(), None)
        run = model_replay(before, SplitHistory(tasks, [], frozenset(), None), loose_parallel=False)
        agrees = run.failure is None
        found = _error_divergence(
            result.message, result.failure_type, failed + 1, aligned,
            notes=_agreement(agrees, run.failure), **common,
        )  # fmt: skip
        return ReplayVerdict("error", found, True, "replayer", (), found.notes, agrees, aligned)
    run = model_replay(old, SplitHistory(tasks, [], frozenset(), None), loose_parallel=False)
    if result.outcome == "ok":
        agrees = run.failure is None
        return ReplayVerdict("ok", None, True, "replayer", (), _agreement(agrees, run.failure),
                             agrees, aligned)  # fmt: skip
    agrees = run.failure is not None and same_core_message(run.failure, result.message)
    notes = _agreement(agrees, run.failure)
    if agrees:
        assert run.failure is not None
        exact_failure = dataclasses.replace(run.failure, message=result.message, exact=True)
        found = _divergence(exact_failure, old.tasks, tasks, aligned, notes=notes, **common)
    else:
        found = _parsed_divergence(result.message, old.tasks, aligned, notes=notes, **common)
    return ReplayVerdict("nondeterminism", found, True, "replayer", (), notes, agrees, aligned)


def _agreement(agrees: bool | None, failure: CoreFailure | None) -> tuple[str, ...]:
    if agrees is None:
        return ()
    if agrees:
        return ("the matching model, fed the code's own commands, agrees with the Replayer",)
    said = "no failure" if failure is None else repr(failure.message)
    return (f"the matching model, fed the code's own commands, says {said}",)


def same_core_message(failure: CoreFailure, message: str) -> bool:
    """Whether a modelled failure's message is the one sdk-core printed.

    Where sdk-core prints a whole protobuf struct (``{:?}``) the model abbreviates it: the head
    and the identifying fields must then match (:func:`core_message_matches`).
    """
    if failure.exact:
        return failure.message == message
    event = failure.event
    return core_message_matches(
        failure.message, message, event.get("event_id"), event.get("event_type")
    )


def _answering(activations: list[Any]) -> list[Any]:
    """Activations that answer a workflow task: cache evictions and queries do not, and one
    that only resolves local activities continues the task before it (merged into it)."""
    out: list[Any] = []
    for activation in activations:
        if not set(activation.jobs) - {"remove_from_cache", "query_workflow"}:
            continue
        if activation.local_resolutions_only and out:
            merged = copy.copy(out[-1])
            merged.commands = [*out[-1].commands, *activation.commands]
            merged.failed = out[-1].failed or activation.failed
            out[-1] = merged
        else:
            out.append(activation)
    return out


def _activation_tasks(old: SplitHistory, activations: list[Any]) -> list[Task]:
    """The code's commands as tasks of a history: answering activation n answers recorded
    task n (see :func:`_answering`)."""
    groups = [list(activation.commands) for activation in _answering(activations)]
    tasks = []
    for index, commands in enumerate(groups):
        if index < len(old.tasks):
            delivered, completed = old.tasks[index].delivered, old.tasks[index].completed_event_id
        else:
            delivered, completed = old.delivered, 1 << 62
        tasks.append(Task(index + 1, completed, delivered, commands))
    return tasks


def _parsed_divergence(
    message: str, recorded: list[Task], aligned: pd.DataFrame, **fields: Any
) -> Divergence:
    """A divergence read off the Replayer's message alone (the model disagreed)."""
    parsed = parse_nondeterminism(message) or {}
    event_id = parsed.get("event_id")
    rows = {row["event_id"]: (task, row) for task in recorded for row in task.commands}
    task, event = rows.get(event_id, (None, {}))
    check = (parsed.get("check") or {}).get("field") or parsed.get("kind") or "unknown"
    return Divergence(
        event_id=event_id, check=str(check), expected=parsed.get("expected"),
        actual=parsed.get("actual"), recorded_event=dict(event), command=None,
        core_message=message, core_message_exact=True, go_message="", java_message="",
        task=task.index if task is not None else 0, id_type_checks=False, aligned=aligned,
        **fields,
    )  # fmt: skip


def replay_verdict(
    recorded: Any, replayed: Any, *, workflow_id: str | None = None, **replayer_options: Any
) -> ReplayVerdict:
    """Whether replaying ``recorded`` against new code succeeds, why not, and how sure that is.

    Parameters
    ----------
    recorded
        One recorded history (events frame, path, bytes, ...; code mode also takes a
        ``temporalio.client.WorkflowHistory``).
    replayed
        A history the new code produced under the same inputs, or the new workflow code (a
        class or a list of classes).
    workflow_id
        Code mode only: the workflow id the code sees (exported histories do not carry it;
        default: the frame's ``workflow_id`` if known, else the file name).
    **replayer_options
        Code mode only: passed to ``temporalio.worker.Replayer``.

    Raises
    ------
    toolkit.errors.HistoryFormatError
        When a history is not exactly one non-empty history.
    toolkit.errors.ToolkitError
        When ``replayer_options`` are given in history mode.
    """
    if is_workflow_code(replayed):
        return _code_verdict(recorded, replayed, workflow_id, **replayer_options)
    if replayer_options or workflow_id is not None:
        from toolkit.errors import ToolkitError

        raise ToolkitError(
            f"replayer options {sorted(replayer_options) or ['workflow_id']} given, but replayed "
            "is a history; "
            "expected workflow classes as replayed to replay with the Replayer"
        )
    return _history_verdict(recorded, replayed)


def first_divergence_of(recorded: Any, replayed: Any, **replayer_options: Any) -> Divergence | None:
    """:func:`toolkit.first_divergence` (see there); warns when a None is not certain."""
    verdict = replay_verdict(recorded, replayed, **replayer_options)
    if verdict.divergence is None and not verdict.exact:
        warnings.warn(
            "replay modelled as succeeding, but the histories cannot settle it: "
            + "; ".join(verdict.assumptions)
            + " (pass the new workflow classes as replayed for the Replayer's own verdict)",
            InexactVerdictWarning,
            stacklevel=3,
        )
    return verdict.divergence
