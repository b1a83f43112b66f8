"""Failures grouped by what differs, and continue-as-new chains, from a check's results."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

__all__ = ["CHAIN_COLUMNS", "GROUP_COLUMNS", "chains", "group_key", "groups", "own_ids_masked"]

#: Columns of :attr:`toolkit.replay_check.ReplayCheck.groups`.
GROUP_COLUMNS = [
    "group", "outcome", "check", "event_type", "expected", "actual", "explanation", "message",
    "histories", "open", "closed", "workflow_types", "labels", "runs", "open_runs", "chains",
    "event_ids", "example",
]  # fmt: skip
#: Columns of :attr:`toolkit.replay_check.ReplayCheck.chains`.
CHAIN_COLUMNS = [
    "chain", "workflow_id", "workflow_type", "runs", "open", "outcome", "failed_runs",
    "first_failed_run", "labels",
]  # fmt: skip

_MASKS = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b\d+(\.\d+)?\b"), "<n>"),
]
#: Ids shorter than this occur by chance inside unrelated text; they are not masked.
_SHORTEST_ID = 6
#: How bad an outcome is, for a chain's worst.
_RANK = {"nondeterminism": 0, "failed": 1, "skipped": 2, "ok": 3}


def _shape(text: Any) -> str:
    """A message with ids and numbers masked (quoted names kept: they say what differs)."""
    shown = str(text or "")
    for pattern, placeholder in _MASKS:
        shown = pattern.sub(placeholder, shown)
    return shown[:400]


def _text(value: Any) -> str:
    return "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def own_ids_masked(row: dict[str, Any], value: Any) -> Any:
    """``value`` with the run's own workflow id and run id replaced by ``<workflow_id>`` and
    ``<run_id>`` (code builds ids from them: ``order-42-reserve`` is ``<workflow_id>-reserve``
    in every run)."""
    if not isinstance(value, str):
        return value
    for column in ("workflow_id", "run_id"):
        own = row.get(column)
        if isinstance(own, str) and len(own) >= _SHORTEST_ID:
            value = value.replace(own, f"<{column}>")
    return value


def group_key(row: dict[str, Any]) -> tuple[str, ...]:
    """What a failed history's group is: the outcome and what differs (check, event type,
    recorded and new values), or the failure's message shape where nothing more is known;
    event ids, run ids and ids built from the run's own ids never split a group."""
    if row["outcome"] == "nondeterminism" and _text(row.get("check")):
        return ("nondeterminism", _text(row["check"]), _text(row.get("event_type")),
                _text(own_ids_masked(row, row.get("expected"))),
                _text(own_ids_masked(row, row.get("actual"))))  # fmt: skip
    message = own_ids_masked(row, row.get("core_message"))
    return (str(row["outcome"]), _text(row.get("error_type")), _shape(message))


def _unique(values: Any) -> list[Any]:
    out: list[Any] = []
    for value in values:
        for one in value if isinstance(value, list) else [value]:
            if one is not None and not (isinstance(one, float) and pd.isna(one)) and one not in out:
                out.append(one)
    return out


def groups(results: pd.DataFrame) -> tuple[pd.DataFrame, list[int | None]]:
    """One row per group of failed histories (:data:`GROUP_COLUMNS`), the groups with open runs
    first (those would break in production), then the largest; and each result row's group
    number (None for rows that did not fail)."""
    failed = results[results["outcome"].isin(["nondeterminism", "failed"])]
    records = failed.to_dict("records")
    keyed: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for record in records:
        keyed.setdefault(group_key(record), []).append(record)
    rows = []
    for members in keyed.values():
        first = members[0]
        open_members = [m for m in members if m["open"]]
        event_ids = sorted({int(m["event_id"]) for m in members if pd.notna(m["event_id"])})
        rows.append({
            "outcome": first["outcome"], "check": first.get("check"),
            "event_type": first.get("event_type"),
            "expected": own_ids_masked(first, first.get("expected")),
            "actual": own_ids_masked(first, first.get("actual")),
            "explanation": own_ids_masked(first, first.get("explanation")),
            "message": own_ids_masked(first, first.get("core_message") or first.get("message")),
            "histories": len(members), "open": len(open_members),
            "closed": len(members) - len(open_members),
            "workflow_types": _unique(m["workflow_type"] for m in members),
            "labels": _unique(m["label"] for m in members),
            "runs": _unique(m["run_id"] for m in members),
            "open_runs": _unique(m["run_id"] for m in open_members),
            "chains": len(_unique(m["chain"] for m in members)),
            "event_ids": event_ids, "example": first["source"],
            "_members": [m["history"] for m in members],
        })  # fmt: skip
    rows.sort(key=lambda r: (-r["open"], -r["histories"]))
    number: dict[int, int] = {}
    for index, row in enumerate(rows, 1):
        row["group"] = index
        number.update(dict.fromkeys(row.pop("_members"), index))
    table = pd.DataFrame(rows, columns=GROUP_COLUMNS)
    return table, [number.get(h) for h in results["history"]]


def chains(results: pd.DataFrame) -> pd.DataFrame:
    """One row per continue-as-new chain (runs sharing a first execution run id), each run's
    outcome folded into the chain's worst (:data:`CHAIN_COLUMNS`); ``first_failed_run`` is the
    earliest run of the chain that fails."""
    members: dict[Any, list[dict[str, Any]]] = {}
    for record in results.to_dict("records"):
        if record["chain"] is not None and not (
                isinstance(record["chain"], float) and pd.isna(record["chain"])):
            members.setdefault(record["chain"], []).append(record)
    rows = []
    for chain, runs in members.items():
        runs = sorted(runs, key=lambda r: (pd.isna(r["chain_position"]), r["chain_position"]
                                           if pd.notna(r["chain_position"]) else 0))  # fmt: skip
        failing = [r for r in runs if r["outcome"] in ("nondeterminism", "failed")]
        rows.append({
            "chain": chain, "workflow_id": runs[0]["workflow_id"],
            "workflow_type": runs[0]["workflow_type"], "runs": len(runs),
            "open": any(bool(r["open"]) for r in runs if pd.notna(r["open"])),
            "outcome": min((r["outcome"] for r in runs), key=lambda o: _RANK.get(o, 9)),
            "failed_runs": len(failing),
            "first_failed_run": failing[0]["run_id"] if failing else None,
            "labels": _unique(r["label"] for r in runs),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=CHAIN_COLUMNS)
