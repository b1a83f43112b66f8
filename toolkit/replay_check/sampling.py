"""Which runs a check replays when asked for a sample: every open run (up to a cap), and the
most recent closed runs of each workflow type and version."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["sample_items"]


def _recent_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def when(row: dict[str, Any]) -> float:
        start = row.get("start")
        return -pd.Timestamp(start).timestamp() if start is not None and pd.notna(start) else 0.0

    return sorted(rows, key=when)


def sample_items(
    rows: list[dict[str, Any]], sample: int | None, max_open: int | None
) -> list[dict[str, Any]]:
    """The rows to check, in their own order.

    Parameters
    ----------
    rows
        One dict per run with ``workflow_type``, ``label`` (version label or build id),
        ``open`` and ``start``; rows without a ``workflow_type`` (unreadable) are always kept,
        as they must be reported.
    sample
        Closed runs kept per (``workflow_type``, ``label``), the most recent first; None: all.
    max_open
        Open runs kept in all, the most recent first; None: all. Open runs are what a deploy
        breaks first, so they are never left out for the sample's sake.
    """
    if sample is None and max_open is None:
        return rows
    keep: set[int] = {id(r) for r in rows if r.get("workflow_type") is None}
    open_rows = [r for r in rows if r.get("workflow_type") is not None and r.get("open")]
    chosen = _recent_first(open_rows)
    keep |= {id(r) for r in (chosen if max_open is None else chosen[:max_open])}
    closed = [r for r in rows if r.get("workflow_type") is not None and not r.get("open")]
    if sample is None:
        keep |= {id(r) for r in closed}
    else:
        per_group: dict[tuple[Any, Any], int] = {}
        for row in _recent_first(closed):
            key = (row.get("workflow_type"), row.get("label"))
            if per_group.get(key, 0) < sample:
                per_group[key] = per_group.get(key, 0) + 1
                keep.add(id(row))
    return [r for r in rows if id(r) in keep]
