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


def _float_of_bits(bits: int) -> float:
    import struct

    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def test_payload_values_are_written_as_orjson_writes_them() -> None:
    """msgspec writes the payloads' values (as orjson.loads gives them) byte for byte as
    orjson.dumps does: floats at random bit patterns and at every power of ten (those in
    exponent notation left to orjson), every code point, integers at the 64-bit bounds, nesting."""
    import math
    import random

    from toolkit.datasets.json_cells import _dumped, _encode

    rng = random.Random(7)
    floats = [_float_of_bits(rng.getrandbits(64)) for _ in range(200_000)]
    floats += [m * 10.0**e for e in range(-300, 300) for m in (1.0, 1.5, 9.999999999999998)]
    floats += [0.0, -0.0, 5e-324, 1.7976931348623157e308, 0.1, 1 / 3, 2.0**53, 100.0, 1e16]
    floats += [rng.uniform(-1e6, 1e6) for _ in range(50_000)]
    floats = [f for f in floats if math.isfinite(f)]
    texts = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts += ["a\x00b\x1f\x7f\"\\/\t\n\r\b\f", "1e5 in a text", "<>&\u2028\u2029"]
    integers = [0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 10**18, rng.getrandbits(63)]
    nested = [{"a": [1, None, True, False, {}], "b": [], "é": {"x": [1.5, "y", -2e-7]}}]
    exponent = 0
    for value in [*floats, *texts, *integers, *nested]:
        values = [orjson.loads(orjson.dumps(value))]  # as a payload's data decodes
        assert _dumped(values) == orjson.dumps(values), repr(value)
        exponent += _encode(values) != orjson.dumps(values)
    assert exponent > 10_000  # floats msgspec writes otherwise were met, and left to orjson


def test_payload_data_decoded_by_msgspec_equals_the_text_decoded_by_b64decode() -> None:
    """Whatever base64 msgspec accepts, ``base64.b64decode(validate=True)`` decodes to the same
    bytes (strings at random and every short one over a part of the alphabet, padding, blanks
    and other alphabets' characters), so a payload cell's JSON text is the one decoding its data
    as text gives: for valid, non-canonical, wrongly padded or no base64 alike."""
    import base64
    import binascii
    import itertools
    import random

    import msgspec

    from toolkit.datasets import json_cells

    decoder = msgspec.json.Decoder(json_cells._DecodedPayload)
    rng = random.Random(5)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    strings = ["".join(t) for n in range(4) for t in itertools.product("AQRw+/=-", repeat=n)]
    strings += ["".join(rng.choice(alphabet) if rng.random() < 0.9 else rng.choice("=-_ \n.")
                        for _ in range(rng.randint(0, 16))) for _ in range(50_000)]  # fmt: skip
    for raw in (rng.randbytes(rng.randint(0, 20)) for _ in range(20_000)):
        text = base64.b64encode(raw).decode()
        strings += [text, text[:-1], text + "=", text.rstrip("="), text[:-1] + rng.choice("AQw")]
    accepted = 0
    for text in strings:
        try:
            found = decoder.decode(orjson.dumps({"metadata": {}, "data": text})).data
        except msgspec.DecodeError:
            continue  # refused: the cell is read with its data as text, as before
        accepted += 1
        try:
            assert found == base64.b64decode(text, validate=True), repr(text)
        except (binascii.Error, ValueError) as refused:
            message = f"msgspec accepted {text!r}, b64decode(validate=True) does not"
            raise AssertionError(message) from refused
    assert 10_000 < accepted < len(strings)

    def cell(data: str, encoding: str = "json/plain") -> LazyPayloads:
        metadata = {"encoding": base64.b64encode(encoding.encode()).decode()}
        payloads = {"payloads": [{"metadata": metadata, "data": data}]}
        return LazyPayloads(orjson.dumps(payloads), None)

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    cells = [cell(b64('{"a": [1, 2.5e-7, "x"]}')), cell(b64("1") + "\n"), cell("MQ==MQ=="),
             cell("MR=="), cell(b64("not json")), cell("!!", "binary/plain"), cell(b64("[]"))]
    cells += [cell(rng.choice(strings)) for _ in range(2_000)]
    for one in cells:
        text = json_cells._json_plain_text_piece(one._raw)
        assert json_cells._json_plain_piece(one) == text
