"""Object columns converted to Arrow in one pass (pyarrow's inference, for text and nulls) equal
the general conversion (pandas' inference, then pyarrow's conversion to text or JSON text):
types, nulls and values, on made-up columns of every kind and on the dataset tables of the
lab's recordings and the public corpus."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import toolkit as tk
from toolkit.datasets import arrow
from toolkit.datasets.layout import TABLES
from toolkit.datasets.tables import batch_tables
from toolkit.histories.columns.event_fields import shared_event_fields
from toolkit.histories.reading.batch import find_history_files

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus" / "histories"


class _Colour(enum.StrEnum):
    RED = "red"


@contextmanager
def _general_path() -> Iterator[None]:
    """:func:`toolkit.datasets.arrow._column` without the one-pass text conversion."""
    fast = arrow._text_array
    arrow._text_array = lambda values: None  # type: ignore[assignment]
    try:
        yield
    finally:
        arrow._text_array = fast  # type: ignore[assignment]


def _same(one: pa.Array, other: pa.Array) -> None:
    assert one.type == other.type
    assert one.null_count == other.null_count
    assert one.to_pylist() == other.to_pylist()
    assert one.equals(other)


COLUMNS = {
    "text": ["a", "b", "é", ""],
    "text and nulls": [None, "a", float("nan"), pd.NA, "b", None],
    "all null": [None, None, float("nan")],
    "empty": [],
    "numpy text": [np.str_("a"), "b"],
    "str enum": [_Colour.RED, "b"],
    "text then a number": ["a", 1, None],
    "text then a dict": ["a", {"k": 1}],
    "text then bytes": ["a", b"b"],
    "text then a time": ["a", pd.NaT, pd.Timestamp("2026-01-01", tz="UTC")],
    "numbers": [1, 2.5, None],
    "dicts": [{"k": [1, 2]}, None],
    "lists": [None, [1, "a"]],
    "booleans": [True, None, False],
}


@pytest.mark.parametrize("kind", [None, "object", "str"])
@pytest.mark.parametrize("name", list(COLUMNS))
def test_object_columns_convert_as_the_general_path(name: str, kind: str | None) -> None:
    series = pd.Series(COLUMNS[name], dtype=object, name=name)
    try:
        with _general_path():
            expected = arrow._column(series, kind)
    except Exception as error:  # a column it refuses: refused alike
        with pytest.raises(type(error)):
            arrow._column(series, kind)
        return
    _same(arrow._column(series, kind), expected)


@pytest.mark.parametrize("where", ["lab", "corpus"])
def test_dataset_tables_convert_as_the_general_path(where: str) -> None:
    root = DATA if where == "lab" else CORPUS
    files = [p for p in find_history_files(root) if not p.name.endswith(".meta.json")]
    if not files:
        pytest.skip(f"no histories under {root}")
    events = tk.read_histories(files[:300], progress=False, workers=1).events
    hashes = {source: f"sha-{i}" for i, source in enumerate(events["source"].unique())}
    with shared_event_fields():
        frames = batch_tables(events, hashes, "b1", "default", ordered=True)
        fast = {name: arrow.to_arrow(frame, TABLES[name]) for name, frame in frames.items()}
        with _general_path():
            general = {name: arrow.to_arrow(frame, TABLES[name]) for name, frame in frames.items()}
    for name, table in fast.items():
        assert table.schema == general[name].schema, name
        for column in table.column_names:
            _same(table[column].combine_chunks(), general[name][column].combine_chunks())
