"""The ledger's column helpers against the general route they shortcut."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from toolkit.agents.model_records import Usage
from toolkit.agents.tokens import _at, _attempts, _usage_note

ROWS = np.array([0, 2, -1, 1, 3, 0], dtype=np.int64)


def _general(frame: pd.DataFrame, rows: np.ndarray) -> list[object]:
    return [None if a is None or pd.isna(a) else int(a) for a in _at(frame, "attempt", rows)]


@pytest.mark.parametrize("column", [
    pd.array([1, None, 3, 2**40], dtype="Int64"),  # the loader's
    pd.array([1, 2, 3, 4], dtype="Int64"),
    np.array([1, 2, 3, 4], dtype=np.int64),
    np.array([1.0, np.nan, 3.0, 4.0]),
    np.array([1, None, 3, pd.NA], dtype=object),
])  # fmt: skip
def test_attempts_as_the_general_route(column: object) -> None:
    frame = pd.DataFrame({"attempt": column})
    got = _attempts(frame, ROWS)
    assert got == _general(frame, ROWS)
    assert all(type(v) in (int, type(None)) for v in got)


def test_attempts_without_the_column() -> None:
    assert _attempts(pd.DataFrame({"x": [1]}), ROWS) == [None] * len(ROWS)


@pytest.mark.parametrize("note", [None, "", "no usage"])
@pytest.mark.parametrize("more", [(), ("the input is no x model request",), ("", "b")])
def test_usage_note_as_the_join(note: str | None, more: tuple[str, ...]) -> None:
    usage = Usage(note=note)
    assert _usage_note(usage, more) == ("; ".join(filter(None, [note, *more])) or None)
