"""The dataset's JSON text of lazy cells, cut from the source's bytes, equals the general
conversion cell by cell, on real histories (lab recordings and the public corpus)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pytest

import toolkit as tk
from toolkit.datasets.arrow import json_text
from toolkit.datasets.json_cells import Piece, json_array, json_texts
from toolkit.histories.columns.event_fields import shared_event_fields
from toolkit.histories.columns.lazy import LazyAttributes, LazyPayloads
from toolkit.histories.reading.dialects import RawHistory

DATA = Path(__file__).resolve().parents[1] / "data"
_CELLS = ("attributes", "extra", "input", "result", "details")


def _histories(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*.json")) if not p.name.endswith(".meta.json")]


@pytest.mark.parametrize("where", ["lab", "corpus"])
def test_column_texts_equal_the_cell_by_cell_texts(
    where: str, request: pytest.FixtureRequest
) -> None:
    root = DATA if where == "lab" else request.getfixturevalue("corpus") / "histories"
    events = tk.read_histories(_histories(root), progress=False, workers=1).events
    assert len(events) > 1_000
    memo: dict[int, Piece] = {}
    with shared_event_fields():  # as the writer converts a batch: fields decoded once
        shared = {c: json_array(events[c].to_numpy(dtype=object), json_text, memo) for c in _CELLS}
    for column in _CELLS:
        values = events[column].to_numpy(dtype=object)
        expected = [json_text(v) for v in values]
        assert json_texts(values, json_text) == expected, column
        assert shared[column].type == pa.string() and shared[column].to_pylist() == expected


def test_payloads_that_are_not_default_json_take_the_general_path() -> None:
    def payloads(*items: dict[str, object]) -> LazyPayloads:
        return LazyPayloads(orjson.dumps({"payloads": list(items)}), None)

    def b64(text: str) -> str:
        import base64

        return base64.b64encode(text.encode()).decode()

    cells = np.array([
        payloads({"metadata": {"encoding": b64("json/plain")}, "data": b64('{"a": 1}')}),
        payloads({"metadata": {"encoding": b64("json/plain")}, "data": b64("not json")}),
        payloads({"metadata": {"encoding": b64("binary/encrypted")}, "data": b64("xyz")}),
        payloads({"metadata": {"encoding": b64("json/plain"), "x": "y"}, "data": b64("1")}),
        # base64 that a validating decoder refuses (a line break, padding inside)
        payloads({"metadata": {"encoding": b64("json/plain")}, "data": b64("[1, 2]") + "\n"}),
        payloads({"metadata": {"encoding": b64("json/plain")}, "data": "MQ==MQ=="}),
        LazyPayloads(orjson.dumps({"payloads": "odd"}), None),
        None,
    ], dtype=object)  # fmt: skip
    texts = json_texts(cells, json_text)
    assert texts == [json_text(v) for v in cells] == json_array(cells, json_text).to_pylist()
    assert texts[0] == '[{"a":1}]' and texts[1] == '["not json"]' and texts[-1] is None
    assert '"encoding":"binary/encrypted"' in texts[2]


def test_activities_with_payload_cells_hold_the_same_values() -> None:
    events = tk.read_histories(_histories(DATA / "adk"), progress=False, workers=1).events
    plain = tk.activities(events)
    cells = tk.activities(events, payload_cells=True)
    assert len(plain) > 50
    for column in ("input", "result"):
        assert any(isinstance(v, LazyPayloads) for v in cells[column])
        values = [v.value if isinstance(v, LazyPayloads) else v for v in cells[column]]
        assert values == list(plain[column]), column
    others = plain.columns.drop(["input", "result"])
    pd.testing.assert_frame_equal(cells[others], plain[others])


def test_attributes_null_absent_or_blank_are_an_empty_object() -> None:
    key = "timerStartedEventAttributes"
    events = [{"eventId": "1", key: {"timerId": "t"}}, {"eventId": "2", key: None},
              {"eventId": "3"}, {"eventId": "4", key: {}}]  # fmt: skip
    history = RawHistory(json_array=orjson.dumps(events))
    cells = np.array([LazyAttributes(history, i, key) for i in range(4)], dtype=object)
    assert json_array(cells, json_text).to_pylist() == ['{"timerId":"t"}', "{}", "{}", "{}"]
    assert json_texts(cells, json_text) == [json_text(cell) for cell in cells]
