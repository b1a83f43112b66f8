"""Why a history fails replay with the new code, in a sentence, from what the code really did.

The Replayer's failure says *that* replay broke and sdk-core's one line of *what*; the commands
the code issued during that very replay (recorded by the worker, see
:mod:`toolkit.replay.check_worker`) are matched against the recorded history by the model of
sdk-core (:func:`toolkit.replay.verdict.code_replay_verdict`), which gives the event, the
recorded command, the new code's command in its place and what differs. Nothing is replayed
twice, and the words stay the Replayer's: where the model does not reach the Replayer's message,
the explanation is read off the message alone and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from toolkit.errors import ToolkitError
from toolkit.replay.check_worker import Replayed
from toolkit.replay.code_replay import code_replay_of
from toolkit.replay.messages import parse_nondeterminism

__all__ = ["Explanation", "explain"]


@dataclass(frozen=True)
class Explanation:
    """What differs, for one failed replay.

    Attributes
    ----------
    text : str
        One or two sentences for people.
    check : str or None
        What was compared (``activity_type``, ``kind``, ``missing_command``, ...), or
        ``workflow_task_failure`` when the code raised.
    expected, actual : object
        The recorded value and the new code's.
    event_id : int or None
        The recorded event where replay fails.
    event_type : str or None
        Its type.
    recorded, issued : str or None
        The recorded command and the new code's command in its place (identity labels).
    task : int or None
        The recorded workflow task being matched.
    model_agrees : bool or None
        Whether the model, fed the code's own commands, reached the Replayer's message.
    divergence : toolkit.Divergence or None
        The full answer (aligned commands, Go's and Java's wording).
    """

    text: str
    check: str | None
    expected: Any
    actual: Any
    event_id: int | None
    event_type: str | None
    recorded: str | None
    issued: str | None
    task: int | None
    model_agrees: bool | None
    divergence: Any = None


def _sentence(divergence: Any) -> str:
    if divergence.outcome == "error":
        raised = divergence.actual or "an error"
        return (f"The new code raises {raised} in workflow task {divergence.task}: "
                f"{divergence.core_message}")  # fmt: skip
    event = divergence.recorded_event or {}
    where = f"event {divergence.event_id}" if divergence.event_id else "a recorded event"
    kind = f" ({event.get('event_type')}, workflow task {divergence.task})" if event else ""
    recorded = event.get("identity")
    head = f"At {where}{kind} the history has {recorded}" if recorded else f"At {where}{kind}"
    if divergence.command is None:
        return f"{head}; the new code issues no matching command there."
    issued = divergence.command.get("identity")
    differs = (
        f" ({divergence.check}: {divergence.expected!r} recorded, {divergence.actual!r} now)"
        if divergence.check not in {"kind", "missing_command"} else ""
    )  # fmt: skip
    return f"{head}; the new code issues {issued} in its place{differs}."


def _from_message(message: str | None) -> Explanation | None:
    parsed = parse_nondeterminism(message or "")
    if not parsed:
        return None
    check = (parsed.get("check") or {}).get("field") or parsed.get("kind")
    return Explanation(
        f"{parsed.get('message')} (read off the Replayer's message)", check,
        parsed.get("expected"), parsed.get("actual"), parsed.get("event_id"),
        parsed.get("event_type"), None, None, None, None,
    )  # fmt: skip


def explain(recorded: pd.DataFrame, replayed: Replayed) -> Explanation | None:
    """Explain a failed replay of ``recorded`` (the events frame of the history as replayed,
    trimmed as it was); None for a replay that did not fail or cannot be explained (a timeout,
    a crashed worker)."""
    if replayed.outcome == "ok":
        return None
    from toolkit.replay.verdict import code_replay_verdict, split_recorded

    if not replayed.activations:
        return _from_message(replayed.message)
    try:
        verdict = code_replay_verdict(split_recorded(recorded), code_replay_of(replayed))
    except (ToolkitError, KeyError, ValueError, IndexError):
        return _from_message(replayed.message)  # the model could not read this history
    divergence = verdict.divergence
    if divergence is None:
        return _from_message(replayed.message)
    event = divergence.recorded_event or {}
    command = divergence.command or {}
    text = _sentence(divergence)
    if verdict.model_agrees is False and divergence.outcome != "error":
        text += " (the model did not reach the Replayer's message; read off the message)"
    return Explanation(
        text, divergence.check, divergence.expected, divergence.actual, divergence.event_id,
        event.get("event_type"), event.get("identity"), command.get("identity"),
        divergence.task, verdict.model_agrees, divergence,
    )  # fmt: skip
