"""New code on an sdk-core that cannot read the recorded history's patch markers.

sdk-core writes a ``core_patch`` marker's details as one JSON payload under ``patch-data`` since
its PR #520 ("Make patch markers renderable in UI", March 2023: temporalio 1.2.0, the first
Python release that also records SDK flags); it reads that layout and the older one (``patch_id``
and ``deprecated`` as ``binary/plain`` bytes). The sdk-cores before it write and read only the
older layout and record no SDK flags. A history whose markers use the older layout and which
records no sdk-core flag therefore shows that its code ran on such a core; that core, replaying
a history with ``patch-data`` markers, does not see them: ``patched()`` is False, the code takes
its old branch (which neither history shows), and the first command that branch issues meets
the marker event. The upsert of ``TemporalChangeVersion`` that sdk-core flag 2
(``UpsertSearchAttributeOnPatch``) adds after the marker is unknown to it as well. Measured with
the lab's flag pairs (data/flag_pairs): temporalio 1.1.0 replaying 1.2.0's history fails with
``Activity machine does not handle this event: HistoryEvent(id: 5, Some(MarkerRecorded))``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from toolkit.replay.core_model import CoreFailure, ModelRun
from toolkit.replay.divergence_messages import CORE_PREFIX, core_history_event
from toolkit.replay.tasks import SplitHistory

__all__ = ["NEW_LAYOUT", "OLD_LAYOUT", "apply_patch_layouts", "patch_layouts"]

NEW_LAYOUT, OLD_LAYOUT = "patch-data", "patch_id"
_ID_AND_TYPE_CHECKS = 1


def patch_layouts(frame: pd.DataFrame) -> dict[int, str]:
    """Event id -> layout (:data:`NEW_LAYOUT` or :data:`OLD_LAYOUT`) of each ``core_patch``
    marker in an events frame."""
    if "marker_name" not in frame.columns or "details" not in frame.columns:
        return {}
    markers = frame[frame["marker_name"] == "core_patch"]
    layouts: dict[int, str] = {}
    for event_id, details in zip(markers["event_id"], markers["details"], strict=True):
        details = getattr(details, "value", details)  # a lazily decoded cell, or the dict
        if not isinstance(details, Mapping):
            continue
        if NEW_LAYOUT in details:
            layouts[int(event_id)] = NEW_LAYOUT
        elif OLD_LAYOUT in details:
            layouts[int(event_id)] = OLD_LAYOUT
    return layouts


def _marker_row(history: SplitHistory, event_id: int) -> tuple[int, dict[str, Any], bool] | None:
    for task in history.tasks:
        for row in task.commands:
            if row.get("event_id") is not None and int(row["event_id"]) == event_id:
                return task.index, row, _ID_AND_TYPE_CHECKS in task.core_flags
    return None


def apply_patch_layouts(
    old_frame: pd.DataFrame,
    new_frame: pd.DataFrame,
    old: SplitHistory,
    new: SplitHistory,
    run: ModelRun,
) -> tuple[ModelRun, tuple[str, ...]]:
    """The modelled run corrected for new code on an sdk-core before ``patch-data`` markers.

    Parameters
    ----------
    old_frame, new_frame
        Events of the recorded history and of the new code's history.
    old, new
        The two histories, split.
    run
        What :func:`toolkit.replay.flags.apply_flags` made of the two histories.

    Returns
    -------
    tuple
        The run (failing at the recorded history's first ``patch-data`` marker when the new
        code's markers all use the older layout, it records no sdk-core flag, and nothing
        failed before it) and the assumption that adds (empty when nothing changed).
    """
    new_layouts = set(patch_layouts(new_frame).values())
    # A core that records flags (from temporalio 1.2.0) writes and reads `patch-data`; a history
    # rewritten into the old layout by hand keeps its flags and is read by a current core.
    flagged = any(task.core_flags for task in new.tasks)
    if new_layouts != {OLD_LAYOUT} or flagged or run.code_error is not None:
        return run, ()
    unreadable = sorted(e for e, layout in patch_layouts(old_frame).items() if layout == NEW_LAYOUT)
    found = _marker_row(old, unreadable[0]) if unreadable else None
    if found is None:
        return run, ()
    task, row, checks_on = found
    if run.failure is not None and int(run.failure.event["event_id"]) < unreadable[0]:
        return run, ()
    patch_id = row.get("patch_id")
    text = (
        "(not predictable from the histories) the replaying sdk-core reads only the old "
        f"patch-marker layout, so patched('{patch_id}') is False and the command of the code's "
        f"old branch meets {core_history_event(unreadable[0], 'MarkerRecorded')}"
    )
    failure = CoreFailure(
        dict(row), None, "patch_marker_layout", patch_id, None, CORE_PREFIX + text, False,
        task, checks_on,
    )  # fmt: skip
    note = (
        f"the new code's history writes patch markers in sdk-core's layout from before "
        f"`patch-data` (temporalio < 1.2.0): that core cannot read the recorded marker at event "
        f"{unreadable[0]} nor knows sdk-core flag 2 (UpsertSearchAttributeOnPatch), so "
        f"patched('{patch_id}') is False on replay; the old branch is taken to issue a command "
        "there (it is in neither history)"
    )
    return dataclasses.replace(run, failure=failure, stopped_at=None), (note,)
