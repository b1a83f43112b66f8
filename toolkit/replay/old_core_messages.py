"""The text of sdk-core's message when the new code runs on an sdk-core from before 2025.

The model writes sdk-core's messages as the sdk-core of temporalio 1.35 prints them, e.g.
``HistoryEvent(id: 5, ActivityTaskScheduled)``. Older sdk-cores print the event type wrapped:
``HistoryEvent(id: 5, Some(MarkerRecorded))`` (temporalio 1.1.0) and ``HistoryEvent(id: 5,
Ok(ActivityTaskScheduled))`` (1.6.0), as the lab's flag pairs (data/flag_pairs) recorded. Those
sdk-cores also predate sdk-core PR #864 ("Write sdk name & version to WFT completes", January
2025; temporalio 1.11.0), so a new code's history that names no SDK marks a replaying core whose
message may read differently: the verdict stands, its message is not claimed exact.
"""

from __future__ import annotations

import dataclasses

from toolkit.replay.core_model import ModelRun
from toolkit.replay.tasks import SplitHistory

__all__ = ["apply_old_core_messages"]


def apply_old_core_messages(new: SplitHistory, run: ModelRun) -> tuple[ModelRun, tuple[str, ...]]:
    """``run`` with its failure's message marked inexact when ``new`` names no SDK.

    Returns
    -------
    tuple
        The run and a note saying why (empty when nothing changed).
    """
    failure = run.failure
    if (
        failure is None
        or not failure.exact
        or new.sdk_name
        or "HistoryEvent(" not in failure.message
    ):
        return run, ()
    note = (
        "the new code's history names no SDK (an sdk-core before 2025): such cores print the "
        "event type in HistoryEvent(...) wrapped, as Some(<type>) or Ok(<type>), so the core "
        "message is the current sdk-core's wording"
    )
    return dataclasses.replace(run, failure=dataclasses.replace(failure, exact=False)), (note,)
