"""The whole recorded event in sdk-core's message, where a machine prints it with ``{:?}``.

The model writes such a message (``Child workflow machine does not handle this event:
HistoryEvent { ... }``) with the event abbreviated; the recorded history holds the event itself,
and :mod:`toolkit.replay.rust_debug` writes it as sdk-core does. The text is claimed exact when
the new code's history names this interpreter's temporalio (whose API is the one its sdk-core
prints) and no map in the event has two or more entries (prost keeps maps in a ``HashMap``).
"""

from __future__ import annotations

import dataclasses
from importlib import metadata

import pandas as pd

from toolkit.replay.core_model import ModelRun
from toolkit.replay.rust_debug import debug_text
from toolkit.replay.tasks import SplitHistory

__all__ = ["apply_debug_events"]

_ABBREVIATED = "HistoryEvent { event_id: "


def apply_debug_events(
    recorded: pd.DataFrame, new: SplitHistory, run: ModelRun
) -> tuple[ModelRun, tuple[str, ...]]:
    """``run`` with an abbreviated ``HistoryEvent { ... }`` in its message written out whole.

    Parameters
    ----------
    recorded
        The recorded history's events frame (one history).
    new
        The new code's history, split (its SDK says which API sdk-core prints).
    run
        The model's run.

    Returns
    -------
    tuple
        The run and notes (why the text is not claimed exact, where it is not).
    """
    from toolkit.histories.write import to_history

    failure = run.failure
    if failure is None or failure.exact or _ABBREVIATED not in failure.message:
        return run, ()
    rows = recorded[recorded["event_id"] == failure.event.get("event_id")]
    if len(rows) != 1:
        return run, ()
    text, certain = debug_text(to_history(rows).events[0])
    message = failure.message.split("HistoryEvent {", 1)[0] + text
    installed = metadata.version("temporalio")
    same_api = "python" in (new.sdk_name or "") and new.sdk_version == installed
    notes = []
    if not certain:
        notes.append("the event holds a map of several entries, which sdk-core prints in an "
                     "order of its own: the text shows one order")  # fmt: skip
    if not same_api:
        notes.append(f"the event is written with the fields of temporalio {installed}'s API; "
                     f"the new code's SDK ({new.sdk_name or 'unnamed'} "
                     f"{new.sdk_version or ''}) may print other fields")  # fmt: skip
    exact = certain and same_api
    replaced = dataclasses.replace(failure, message=message, exact=exact)
    return dataclasses.replace(run, failure=replaced), tuple(notes)
