"""A model call read off a raw JSON history's cells (each payload and the summary decoded once,
:mod:`toolkit.agents.model_cells`) equals the one read through the cells' decoded values, on
every lab recording, the public agent histories and the corpus."""

from __future__ import annotations

import base64
import binascii
import itertools
import random
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pytest

import toolkit as tk
from toolkit.agents import model_cells
from toolkit.agents.activity_turns import activity_turns
from toolkit.agents.model_cells import (
    _typed_values_and_bytes,
    payload_value,
    payload_values,
    payload_values_and_bytes,
    raw_payloads,
    raw_summary_field,
)
from toolkit.agents.model_io import model_call_of_cells, payload_bytes, summary_of
from toolkit.histories.columns.lazy import LazyCell, LazyPayloads
from toolkit.histories.payloads import decode_payload, decode_payloads
from toolkit.traces.spans import with_run_columns

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "histories"
FOLDERS = [*sorted(p for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "venvs"),
           ROOT / "tests" / "fixtures" / "agent_histories", CORPUS]  # fmt: skip
CELLS = ("input", "extra", "attributes", "activity_type")


def _value(cell: Any) -> Any:
    """A cell as the plain value it stands for (what a frame built by hand holds)."""
    return cell.value if isinstance(cell, LazyCell) else cell


def _at(frame: pd.DataFrame, name: str, row: int) -> Any:
    return frame[name].iloc[row] if row >= 0 and name in frame.columns else None


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_model_calls_off_raw_cells_equal_those_off_values(folder: Path) -> None:
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (the shared corpus is not laid out here)")
    events = with_run_columns(tk.read_histories(folder, progress=False).events)
    found = activity_turns(events, "auto")
    # Every scheduled activity, not the model calls alone: each shape, and none, is read alike.
    rows = found.positions["scheduled"]
    closing = found.positions["closed"]
    fast = 0
    for scheduled, closed in zip(rows.tolist(), closing.tolist(), strict=True):
        cells = [_at(events, name, scheduled) for name in CELLS]
        after = [_at(events, name, closed) for name in ("event_type", "result", "attributes")]
        fast += raw_payloads(cells[0], cells[2]) is not None
        expected = model_call_of_cells(*map(_value, cells), *map(_value, after))
        assert model_call_of_cells(*cells, *after) == expected, (folder, scheduled)
    if len(rows) and all(isinstance(c, LazyCell) for c in events["attributes"]):
        assert fast  # raw JSON histories: the shortcut was taken, not only the general route


def test_the_summary_field_is_the_extra_cells_own() -> None:
    events = tk.read_histories(ROOT / "data" / "openai_agents", progress=False).events
    extra = events["extra"].to_numpy(dtype=object)
    summaries = 0
    for cell in extra[np.flatnonzero(events["event_type"] == "ActivityTaskScheduled")]:
        read, field = raw_summary_field(cell)
        assert read and field == cell.value.get("userMetadata")
        summaries += field is not None
        if field is not None and isinstance(field.get("summary"), dict):  # its one payload
            assert summary_of(cell) == decode_payload(field["summary"])
    assert summaries  # temporalio >= 1.16 records the agent in the summary
    assert raw_summary_field({"userMetadata": {}}) == (False, None)


def _payload_cells(events: pd.DataFrame) -> list[Any]:
    """Every payload cell of a raw JSON history in ``events`` (any column that holds them)."""
    cells = []
    for name in events.columns:
        values = events[name].to_numpy(dtype=object)
        cells += [c for c in values if type(c) is LazyPayloads
                  and isinstance(c._raw, (bytes, msgspec.Raw))]
    return cells


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_payload_values_equal_the_general_decode(folder: Path) -> None:
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (the shared corpus is not laid out here)")
    cells = _payload_cells(tk.read_histories(folder, progress=False).events)
    for cell in cells:
        payloads = msgspec.json.decode(cell._raw)
        assert payload_values(payloads) == decode_payloads(payloads) == cell.value
        values, size = payload_values_and_bytes(payloads)
        assert values == cell.value and size == payload_bytes(payloads)
        typed = _typed_values_and_bytes(cell._raw)
        assert typed is None or typed == (values, size)
    assert cells or folder.name == "terminal_commands"
    # The agent frameworks' lab payloads are all of the typed decode's kinds: its route taken.
    if folder.name in ("openai_agents", "pydantic_ai", "adk"):
        assert all(_typed_values_and_bytes(c._raw) is not None for c in cells)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize("item", [
    {"metadata": {"encoding": _b64("json/plain")}, "data": _b64('{"a": [1, 2.5, null]}')},
    {"metadata": {"encoding": _b64("json/plain")}, "data": _b64("not json")},  # the text
    {"metadata": {"encoding": _b64("json/plain")}, "data": "no base64!"},  # kept as it is
    *({"metadata": {"encoding": _b64("json/plain")}, "data": _b64(t)} for t in ("1", "12", "123")),
    {"metadata": {"encoding": _b64("json/plain")}, "data": "MTI\nz"},  # a newline: not strict
    {"metadata": {"encoding": _b64("json/plain")}, "data": "ünï"},  # no ASCII: kept
    {"metadata": {"encoding": _b64("json/plain")}, "data": "YQ"},  # bad padding: kept
    {"metadata": {"encoding": _b64("json/plain")}, "data": base64.b64encode(b"\xff").decode()},
    {"metadata": {"encoding": _b64("json/plain")}, "data": ""},  # empty data: the text ""
    {"metadata": {"encoding": _b64("json/plain")}},  # no data
    {"metadata": {"encoding": _b64("json/plain")}, "data": 3},  # a bare value
    {"metadata": {"encoding": _b64("json/plain"), "encodingDecoded": "dHJ1ZQ=="}, "data": "x"},
    {"metadata": {"encoding": "json/plain"}, "data": {"decoded": True}},  # plain metadata
    {"metadata": {"encoding": _b64("binary/null")}},
    {"metadata": {"encoding": _b64("binary/null")}, "data": ""},
    {"metadata": {"encoding": _b64("binary/null")}, "data": "x"},
    {"metadata": {"encoding": _b64("binary/plain")}, "data": _b64("bytes")},
    {"metadata": {"encoding": _b64("json/plain")}, "data": _b64("1"), "externalPayloads": []},
    {"metadata": None, "data": _b64("1")}, 5, "text", None,
])  # fmt: skip
def test_payload_values_of_every_kind_of_payload(item: Any) -> None:
    assert payload_value(item) == decode_payload(item)  # an activity summary's one payload
    for payloads in ({"payloads": [item]}, {"payloads": [item, item], "other": 1}):
        assert payload_values(payloads) == decode_payloads(payloads)
        assert payload_values_and_bytes(payloads) == (decode_payloads(payloads),
                                                      payload_bytes(payloads))  # fmt: skip
        typed = _typed_values_and_bytes(msgspec.json.encode(payloads))
        assert typed is None or typed == payload_values_and_bytes(payloads)
    for other in ({"payloads": None}, {"payloads": {}}, {"payloads": []}, {"x": {"payloads": []}},
                  [item], None):  # fmt: skip
        assert payload_values(other) == decode_payloads(other)
        try:
            expected = (decode_payloads(other), payload_bytes(other))
        except TypeError:  # payload_bytes of a list of no payloads
            with pytest.raises(TypeError):
                payload_values_and_bytes(other)
        else:
            assert payload_values_and_bytes(other) == expected


def test_typed_payloads_decode_base64_as_strict_binascii() -> None:
    """Whatever base64 msgspec decodes in a payload's ``data``, ``a2b_base64(strict_mode=True)``
    (the dict route's) accepts and decodes to the same bytes: every text of up to 5 characters
    over a part of the alphabet (padding, line breaks, URL-safe letters, bits past the end), and
    valid encodings of random bytes cut, padded and altered."""

    def typed(text: str) -> bytes | None:
        raw = msgspec.json.encode({"payloads": [{"metadata": {"encoding": _b64("json/plain")},
                                                 "data": text}]})  # fmt: skip
        found = _typed_values_and_bytes(raw)
        return None if found is None else _data_of(raw)

    def strict(text: str) -> bytes | None:
        try:
            return binascii.a2b_base64(text, strict_mode=True)
        except (binascii.Error, ValueError):
            return None

    texts = ["".join(t) for n in range(6) for t in itertools.product("AQw/+=MR\n -_", repeat=n)]
    rnd = random.Random(7)
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n -_"
    for _ in range(20_000):
        text = base64.b64encode(rnd.randbytes(rnd.randrange(12))).decode()
        cut = rnd.randrange(len(text) + 1)
        texts += [text, text[:cut], text + rnd.choice(["=", "==", "A", "\n", "A==="]),
                  text[:cut] + rnd.choice(letters) + text[cut + 1 :]]  # fmt: skip
    accepted = 0
    for text in texts:
        found = typed(text)
        if found is not None:
            accepted += 1
            assert strict(text) == found, repr(text)
    assert accepted > 10_000


def _msgspec_route(raw: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``_typed_values_and_bytes(raw)`` without the compiled base64 (msgspec decodes it)."""
    with monkeypatch.context() as patch:
        patch.setattr(model_cells, "_cellscan", None)
        return _typed_values_and_bytes(raw)


@pytest.mark.skipif(model_cells._cellscan is None, reason="the compiled scanner is not built")
def test_compiled_base64_route_equals_msgspecs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Payloads whose base64 ``_cellscan.b64_decode`` decodes off the JSON text give the values
    and size msgspec's decode of the same JSON gives: every payload cell of the lab and the
    corpus, and data that is odd on purpose (escapes, padding, other values, other kinds)."""
    raws = [cell._raw for folder in FOLDERS if folder.is_dir()
            for cell in _payload_cells(tk.read_histories(folder, progress=False).events)]
    plain, null = _b64("json/plain"), _b64("binary/null")
    datas = ['"MTI="', '"MTIz"', '"MTI\\/"', '"e30\\u003d"', '"\\u004dTIz"', '""', '"YQ"',
             '"MTIz\\n"', '"QR=="', "3", "null", '["MTIz"]', '"e30="', '"bm90IGpzb24="',
             f'"{_b64("[1, 2.5, null]")}"', f'"{base64.b64encode(bytes(range(256))).decode()}"']
    for data in datas:
        for items in ([f'{{"metadata": {{"encoding": "{plain}"}}, "data": {data}}}'],
                      [f'{{"metadata": {{"encoding": "{null}"}}}}',
                       f'{{"data": {data}, "metadata": {{"encoding": "{plain}"}}}}'],
                      [f'{{"metadata": {{"encoding": "{_b64("binary/plain")}"}}, '
                       f'"data": {data}}}'],
                      [f'{{"metadata": {{"encoding": "{plain}"}}, "data": "MTI="}}',
                       f'{{"metadata": {{"encoding": "{plain}"}}, "data": {data}}}']):
            raws.append(('{"payloads": [' + ", ".join(items) + "]}").encode())
    assert len(raws) > 1000
    compiled = 0
    for raw in raws:
        found = _typed_values_and_bytes(raw)
        assert found == _msgspec_route(raw, monkeypatch), bytes(raw)[:200]
        compiled += model_cells._compiled_values_and_bytes(raw) is not model_cells._DECLINED
    assert compiled > 1000  # the compiled route taken for most


def _data_of(raw: bytes) -> bytes:
    """The one payload's data as the typed decode reads it (its size is that of the bytes)."""
    from toolkit.agents.model_cells import _PAYLOADS

    data = _PAYLOADS.decode(raw).payloads[0].data
    assert isinstance(data, bytes)
    return data


class _Events:
    """A history whose raw events are given (what a LazyExtra reads its bytes from)."""

    def __init__(self, raws: list[bytes]) -> None:
        self.json_events = [msgspec.Raw(r) for r in raws]


@pytest.mark.parametrize("raw", [
    b'{"eventId": "5", "userMetadata": {"summary": {"data": "eA=="}}, "x": {"big": [1, 2]}}',
    b'{"userMetadata": {"a": 1}, "userMetadata": {"b": 2}}',  # repeated: the last, as a dict
    b'{"userMetadata": null}', b'{"user_metadata": {"c": 3}}', b'{"UserMetadata": {"d": 4}}',
    b'{"user_metadata": {"c": 3}, "userMetadata": {"e": 5}}', b'{"eventId": "1"}', b"{}",
])  # fmt: skip
def test_the_summary_field_read_alone_equals_the_top_levels(raw: bytes) -> None:
    from toolkit.agents.model_shapes import get_field
    from toolkit.histories.columns.lazy import LazyExtra

    extra = LazyExtra(_Events([raw]), 0, None)
    found = get_field(msgspec.json.decode(raw), "userMetadata", "user_metadata")
    assert raw_summary_field(extra) == (True, found)
