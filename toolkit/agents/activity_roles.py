"""The roles of the runs and of their activities, for :func:`toolkit.agents.activity_turns`.

A fleet's runs schedule a few activity types over and over, under one framework: each run's
roles are resolved once per distinct set of its types (its types as codes, no set of names made
per run), and each activity's role once per distinct (roles, type) pair, then taken by code.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.roles import Roles, detect_roles, resolve_roles
from toolkit.errors import ToolkitError

__all__ = ["LETTER", "activity_roles", "roles_index", "run_roles", "text_take"]

LETTER = {"model": "M", "listing": "L", "tool_call": "C", "other": "o"}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _RoleCache:
    """Roles resolved per run; runs with the same activity types share the detection."""

    def __init__(self, roles: str | Roles, frame: pd.DataFrame, run: np.ndarray):
        self.roles, self.frame, self.run = roles, frame, run
        self.known: dict[tuple[str, ...], Roles] = {}

    def resolve(self, code: int, types: list[Any], source: Any) -> Roles:
        if isinstance(self.roles, Roles):
            return self.roles
        names = tuple(sorted({t for t in types if isinstance(t, str)}))
        found = self.known.get(names)
        if found is not None:
            return found
        where = _text(source) or "<events>"
        if self.roles == "auto" and names and detect_roles(names) is None:
            # Inferred from what this run's activities return: its own events are needed.
            one = self.frame[self.run == code].sort_values("event_id", kind="stable")
            return resolve_roles(self.roles, names, where, one)
        found = resolve_roles(self.roles, names, where)
        self.known[names] = found
        return found


def run_roles(
    roles: str | Roles,
    frame: pd.DataFrame,
    run: np.ndarray,
    runs: list[tuple[Hashable, int]],
    activity_run: np.ndarray,
    type_code: np.ndarray,
    type_names: list[Any],
) -> tuple[dict[int, Roles], dict[tuple[Hashable, int], ToolkitError]]:
    """Each run's roles (by run code), and the error of each run (by key) none were found in.

    Parameters
    ----------
    roles, frame
        As given to :func:`~toolkit.agents.activity_turns.activity_turns`.
    run, runs
        Each frame row's run code; the run keys by code.
    activity_run, type_code, type_names
        Per scheduled activity: its run code and its type's code in ``type_names`` (-1: none).
    """
    signatures, types_of = _type_sets(len(runs), activity_run, type_code, len(type_names))
    cache = _RoleCache(roles, frame, run)
    by_types: dict[Hashable, Roles] = {}  # a run's set of types -> the roles they resolved to
    resolved: dict[int, Roles] = {}
    errors: dict[tuple[Hashable, int], ToolkitError] = {}
    for code, key in enumerate(runs):
        signature = signatures[code]
        found = by_types.get(signature)
        if found is not None:
            resolved[code] = found
            continue
        names = [type_names[t] for t in types_of(code) if t >= 0]
        try:
            found = resolved[code] = cache.resolve(code, names, key[0])
        except ToolkitError as error:
            errors[key] = error  # raised again for the next such run: it names its source
            continue
        if tuple(sorted(n for n in names if isinstance(n, str))) in cache.known:
            by_types[signature] = found  # not inferred from this run's own events: shared
    return resolved, errors


def _type_sets(count: int, activity_run: np.ndarray, type_code: np.ndarray,
               types: int) -> tuple[list[Hashable], Any]:  # fmt: skip
    """Per run code, a key of the set of its activities' type codes (-1: no type), and a
    function: run code -> those codes, ascending. The key is a bit mask where the codes fit
    in one (a fleet's few types), else the codes' bytes."""
    if types < 62:
        masks = np.zeros(count, dtype=np.int64)
        np.bitwise_or.at(masks, activity_run, np.left_shift(1, type_code + 1))
        keys: list[Hashable] = masks.tolist()

        def bits(code: int) -> list[int]:
            mask = keys[code]
            return [t - 1 for t in range(types + 1) if mask >> t & 1]  # type: ignore[operator]

        return keys, bits
    width = types + 1
    pairs = np.unique(activity_run * width + type_code + 1)  # by run, then type code
    pair_run, pair_type = pairs // width, pairs % width - 1
    bounds = np.searchsorted(pair_run, np.arange(count + 1)).tolist()
    listed = [pair_type[bounds[c]:bounds[c + 1]] for c in range(count)]
    return [t.tobytes() for t in listed], lambda code: listed[code].tolist()


def activity_roles(resolved: dict[int, Roles], activity_run: np.ndarray, type_code: np.ndarray,
                   type_names: list[Any]) -> tuple[np.ndarray, list[str]]:  # fmt: skip
    """Per activity, the code of its role in the list returned with them (``role_of`` of its
    type under its run's roles); ``activity_run`` holds codes of ``resolved`` runs only."""
    if not len(activity_run):
        return np.zeros(0, dtype=np.int64), []
    of_run, distinct = roles_index([resolved.get(code)
                                    for code in range(int(activity_run.max()) + 1)])  # fmt: skip
    width = len(type_names) + 1
    pairs, where = np.unique(of_run[activity_run] * width + type_code + 1, return_inverse=True)
    names = ["model", "listing", "tool_call", "other"]
    code_of = {name: i for i, name in enumerate(names)}
    pair_roles = [
        code_of[distinct[pair // width].role_of(
            _text(type_names[pair % width - 1]) if pair % width else None)]
        for pair in pairs.tolist()
    ]  # fmt: skip
    return np.array(pair_roles, dtype=np.int64)[where.reshape(-1)], names


def roles_index(roles: list[Roles | None]) -> tuple[np.ndarray, list[Roles]]:
    """Per run code, the index of its roles among the distinct ones returned with them (-1
    where it has none): runs share a few :class:`Roles`, compared as objects."""
    index: dict[int, int] = {}
    distinct: list[Roles] = []
    of_run: list[int] = []
    for found in roles:
        if found is None:
            of_run.append(-1)
            continue
        at = index.get(id(found))
        if at is None:
            at = index[id(found)] = len(distinct)
            distinct.append(found)
        of_run.append(at)
    return np.array(of_run, dtype=np.int64), distinct


def text_take(values: list[Any], codes: np.ndarray, objects: np.ndarray | None = None) -> Any:
    """``values[codes]`` (None where a code is -1) as a frame column: pandas' text array taken
    from ``values`` where they are all text and one is taken (the dtype a frame infers from
    the objects, at the cost of the few values), else ``objects`` (the same, as objects) or the
    objects taken."""
    if len(codes) and all(type(v) is str for v in values) and bool((codes >= 0).any()):
        return pd.array(values, dtype="str").take(codes, allow_fill=True)
    if objects is not None:
        return objects
    held = np.empty(len(values), dtype=object)
    held[:] = values  # objects as they are, a tuple not made a row of an array
    out = np.full(len(codes), None, dtype=object)
    present = codes >= 0
    out[present] = held[codes[present]]
    return out
