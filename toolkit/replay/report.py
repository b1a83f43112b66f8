"""Replay matrices as tables, and the divergence model checked against them pair by pair.

The lab replays every recorded history with temporalio's real ``Replayer`` against every version
of the workflow code and stores one row per pair (``data/<dataset>/replay_matrix.csv``). This
module reads such a matrix into uniform columns, summarises it per (recorded, replayer) cell, and
asks :func:`toolkit.first_divergence` the same question for every pair, so that a notebook can show
the model's verdict and words next to the real ones.

Examples
--------
>>> matrix = read_replay_matrix("data/go_twin/replay_matrix.csv")          # doctest: +SKIP
>>> replay_cells(matrix)                                                   # doctest: +SKIP
>>> check_against_matrix(matrix, "data/go_twin")                           # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.errors import ToolkitError
from toolkit.histories.reading.read import read_history
from toolkit.replay.divergence import first_divergence
from toolkit.replay.divergence_messages import core_message_matches
from toolkit.replay.messages import parse_nondeterminism

__all__ = ["check_against_matrix", "core_text", "read_replay_matrix", "replay_cells"]

_REQUIRED = ("history", "outcome", "message")
_MODEL_COLUMNS = (
    "counterpart", "model_outcome", "model_event_id", "model_check", "model_message",
    "go_message", "java_message", "agrees",
)  # fmt: skip


def core_text(message: Any) -> str | None:
    """The ``[TMPRL1100] ...`` line inside a replay failure's text (None when there is none).

    The Python ``Replayer`` wraps sdk-core's message in ``Workflow activation completion failed:
    Failure { failure: Some(Failure { message: "..." ...``; this returns the quoted message.
    """
    if not isinstance(message, str) or not message:
        return None
    parsed = parse_nondeterminism(message)
    return None if parsed is None else parsed.get("message")


def read_replay_matrix(path: str | Path) -> pd.DataFrame:
    """Read a lab replay matrix (``replay_matrix.csv``) into uniform columns.

    Parameters
    ----------
    path
        A CSV with ``history``, ``outcome``, ``message`` and one ``recorded_*`` and one
        ``replayer_*`` column (``recorded_env``/``replayer_env`` for the Python ADK lab,
        ``recorded_variant``/``replayer_variant`` for the Go plugin twin).

    Returns
    -------
    pandas.DataFrame
        Every row of the file, every original column, plus ``scenario`` (the history file's
        stem), ``recorded`` and ``replayer`` (copies of the two version columns) and
        ``core_message`` (the ``[TMPRL1100]`` text inside ``message``, or None).

    Raises
    ------
    toolkit.errors.ToolkitError
        When the file is missing or lacks the columns above.
    """
    path = Path(path)
    if not path.is_file():
        raise ToolkitError(f"{path}: no such replay matrix; expected a CSV written by the lab")
    matrix = pd.read_csv(path, dtype=str, keep_default_na=False)
    recorded = [c for c in matrix.columns if c.startswith("recorded_")]
    replayer = [c for c in matrix.columns if c.startswith("replayer_")]
    missing = [c for c in _REQUIRED if c not in matrix.columns]
    if missing or len(recorded) != 1 or len(replayer) != 1:
        raise ToolkitError(
            f"{path}: columns {list(matrix.columns)}; expected {list(_REQUIRED)} and exactly one "
            "recorded_* and one replayer_* column"
        )
    out = matrix.copy()
    out["scenario"] = [Path(h).stem for h in out["history"]]
    out["recorded"] = out[recorded[0]]
    out["replayer"] = out[replayer[0]]
    out["core_message"] = [core_text(m) for m in out["message"]]
    return out


def replay_cells(matrix: pd.DataFrame) -> pd.DataFrame:
    """One row per (recorded, replayer) cell: how many histories replayed and how many failed.

    Columns: ``recorded``, ``replayer``, ``histories``, ``failed``, ``scenarios_failed`` (sorted
    scenario names that failed), ``messages`` (the distinct ``core_message`` texts, sorted).
    """
    rows = []
    for (recorded, replayer), cell in matrix.groupby(["recorded", "replayer"], sort=True):
        failing = cell[cell["outcome"] != "ok"]
        rows.append(
            {
                "recorded": recorded,
                "replayer": replayer,
                "histories": len(cell),
                "failed": len(failing),
                "scenarios_failed": sorted(failing["scenario"]),
                "messages": sorted({m for m in failing["core_message"] if m}),
            }
        )
    return pd.DataFrame(
        rows,
        columns=["recorded", "replayer", "histories", "failed", "scenarios_failed", "messages"],
    )


def _same_words(modelled: Any, core_message: str | None, message: str) -> bool:
    """Whether the model's message is the one the Replayer printed (anywhere in its text)."""
    if modelled.core_message_exact:
        return modelled.core_message == core_message
    event_type = modelled.recorded_event.get("event_type")
    return core_message_matches(
        modelled.core_message, message, modelled.event_id, event_type, anywhere=True
    )


def check_against_matrix(
    matrix: pd.DataFrame,
    root: str | Path,
    *,
    counterparts: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Ask :func:`toolkit.first_divergence` about every pair of a replay matrix.

    For the row "history H recorded by A, replayed by B" the model compares H with the history
    B's code recorded under the same inputs: ``<root>/<B>/<same file name>``.

    Parameters
    ----------
    matrix
        :func:`read_replay_matrix` output.
    root
        The directory the matrix's ``history`` paths are relative to.
    counterparts
        File name of H -> file name of the history with the same inputs, where they differ
        (e.g. a rolling-upgrade history whose inputs are those of ``two_turns.json``).

    Returns
    -------
    pandas.DataFrame
        Every matrix row (same order and index) plus ``counterpart`` (the path compared
        with, or None when B recorded no such history), ``model_outcome``
        (``ok``/``nondeterminism``, None when not comparable), ``model_event_id``,
        ``model_check``, ``model_message`` (sdk-core's wording), ``go_message``,
        ``java_message`` and ``agrees`` (verdict equal and, on failure, the same message;
        ``<NA>`` when not comparable: no counterpart, or the Replayer failed for a reason
        other than nondeterminism).
    """
    root = Path(root)
    counterparts = dict(counterparts or {})
    cache: dict[Path, pd.DataFrame] = {}

    def events(path: Path) -> pd.DataFrame:
        if path not in cache:
            cache[path] = read_history(path)
        return cache[path]

    rows: list[dict[str, Any]] = []
    for row in matrix.to_dict("records"):
        recorded = root / row["history"]
        name = counterparts.get(recorded.name, recorded.name)
        replayed = root / row["replayer"] / name
        found: dict[str, Any] = dict.fromkeys(_MODEL_COLUMNS)
        if replayed.is_file() and row["outcome"] in {"ok", "nondeterminism"}:
            divergence = first_divergence(events(recorded), events(replayed))
            found["counterpart"] = str(replayed.relative_to(root))
            if divergence is None:
                found["model_outcome"] = "ok"
                found["agrees"] = row["outcome"] == "ok"
            else:
                found.update(
                    model_outcome="nondeterminism",
                    model_event_id=divergence.event_id,
                    model_check=divergence.check,
                    model_message=divergence.core_message,
                    go_message=divergence.go_message,
                    java_message=divergence.java_message,
                    agrees=row["outcome"] == "nondeterminism"
                    and _same_words(divergence, row.get("core_message"), row["message"]),
                )
        rows.append({**row, **found})
    out = pd.DataFrame(rows, columns=[*matrix.columns, *_MODEL_COLUMNS], index=matrix.index)
    out["model_event_id"] = out["model_event_id"].astype("Int64")
    out["agrees"] = out["agrees"].astype("boolean")
    return out
