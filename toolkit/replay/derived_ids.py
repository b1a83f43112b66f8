"""Ids the workflow code built from its own workflow id, seen as the Replayer sees them.

Code often names its children, activities or Nexus operations after its workflow id
(``f"{workflow.info().workflow_id}-child"``). Two histories of the same code under different
workflow ids then hold different ids, yet the real Replayer runs the new code under the recorded
run's workflow id, where it builds the recorded ids. So before comparing, every id the new code
issued has its own workflow id replaced by the recorded run's (the same spirit as
:func:`toolkit.replay.run_random.reseed_ids` for ids drawn from the run-seeded random stream).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["DERIVED_ID_FIELDS", "rebase_workflow_id"]

#: Command fields the SDKs compare or show that code may build from the workflow id.
DERIVED_ID_FIELDS = (
    "activity_id", "child_workflow_id", "local_activity_id", "target_workflow_id", "update_id",
)  # fmt: skip


_SHORTEST = 6


def rebase_workflow_id(
    rows: Iterable[dict[str, Any]], own_workflow_id: str | None, recorded_workflow_id: str | None
) -> list[str]:
    """Rewrite, in place, ids holding the new code's workflow id to hold the recorded one.

    Parameters
    ----------
    rows
        The new code's command rows (``commands()`` columns); ``DERIVED_ID_FIELDS`` are
        rewritten.
    own_workflow_id
        The workflow id of the new code's own run (its started event's ``workflowId``).
    recorded_workflow_id
        The recorded run's workflow id, under which the Replayer runs the new code.

    Returns
    -------
    list of str
        One line per rewritten id: ``child_workflow_id 'wf-b-child' -> 'wf-a-child' (built
        from the workflow id)``. Nothing when either id is unknown or they are equal.
    """
    if not own_workflow_id or not recorded_workflow_id or own_workflow_id == recorded_workflow_id:
        return []
    if len(own_workflow_id) < _SHORTEST:
        return []  # a short id ("1") occurs by chance inside unrelated ids
    notes: list[str] = []
    for row in rows:
        for field in DERIVED_ID_FIELDS:
            value = row.get(field)
            if isinstance(value, str) and own_workflow_id in value:
                rebased = value.replace(own_workflow_id, recorded_workflow_id)
                row[field] = rebased
                notes.append(f"{field} {value!r} -> {rebased!r} (built from the workflow id)")
    return notes
