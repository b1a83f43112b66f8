"""The ledger's payloads read in one compiled call (``_cellscan.plain_payloads``, behind
``model_cells.raw_data_and_bytes_of`` and ``model_io.ledger_fields_of_columns``) against the
route that reads one cell at a time (msgspec's decode with the compiled base64, msgspec's own
base64, the dict route): the same values and sizes wherever the batch reads a cell, and a
decline wherever the typed route would not read it. On every payload cell of data/, the agent
fixtures and the shared corpus, and on payloads made odd on purpose."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest

import toolkit as tk
from toolkit.agents import model_cells, model_io
from toolkit.agents.model_cells import (
    _typed_values_and_bytes,
    payload_bytes,
    payload_values_and_bytes,
    values_of_data,
)
from toolkit.agents.model_io import ledger_fields_of_cells, ledger_fields_of_columns
from toolkit.histories.columns.lazy import LazyPayloads

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "histories"
FOLDERS = [*sorted(p for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "venvs"),
           ROOT / "tests" / "fixtures" / "agent_histories"]  # fmt: skip
compiled = pytest.mark.skipif(model_cells._plain_payloads is None,
                              reason="the compiled scanner is not built")  # fmt: skip


def _b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


PLAIN, NULL = _b64("json/plain"), _b64("binary/null")


def _msgspec_route(raw: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``_typed_values_and_bytes(raw)`` with msgspec's base64 (no compiled scanner)."""
    with monkeypatch.context() as patch:
        patch.setattr(model_cells, "_cellscan", None)
        return _typed_values_and_bytes(raw)


def _batch(raws: list[Any]) -> list[Any]:
    """What the batch makes of each raw: (values, size) as the ledger takes them, or None."""
    return [None if read is None else (values_of_data(read[0]), read[1])
            for read in model_cells._plain_payloads(raws)]  # fmt: skip


def _check(raws: list[Any], monkeypatch: pytest.MonkeyPatch) -> int:
    """Asserts the batch's reads equal the typed routes' (and the dict route's), and that it
    declines what neither typed route reads; returns how many it read."""
    read = 0
    for raw, found in zip(raws, _batch(raws), strict=True):
        typed = _typed_values_and_bytes(raw)
        if found is None:
            continue
        read += 1
        assert found == typed == _msgspec_route(raw, monkeypatch), bytes(raw)[:300]
        payloads = msgspec.json.decode(raw)
        assert found == payload_values_and_bytes(payloads), bytes(raw)[:300]
        assert found[1] == payload_bytes(payloads)
    return read


def _payload_raws(folder: Path) -> list[Any]:
    events = tk.read_histories(folder, progress=False).events
    raws = []
    for name in events.columns:
        raws += [c._raw for c in events[name].to_numpy(dtype=object)
                 if type(c) is LazyPayloads and isinstance(c._raw, (bytes, msgspec.Raw))]
    return raws


@compiled
@pytest.mark.parametrize("folder", [*FOLDERS, CORPUS], ids=lambda p: p.name)
def test_batch_equals_the_typed_route_on_every_payload_cell(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (../shared/corpus is not laid out here)")
    raws = _payload_raws(folder)
    read = _check(raws, monkeypatch)
    if folder.name in ("openai_agents", "pydantic_ai", "adk"):
        assert read == len(raws)  # the frameworks' payloads: all of the batch's kind
    elif folder == CORPUS:
        assert read > 150  # json/plain cells among its protobuf, search attributes, ...


def _ledger_cells(folder: Path) -> list[tuple[Any, ...]]:
    from tests.test_tokens_ledger_fields import _cells

    return _cells(folder)


@pytest.mark.parametrize("folder", [*FOLDERS, CORPUS], ids=lambda p: p.name)
def test_ledger_fields_of_columns_equal_those_of_each_call(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (../shared/corpus is not laid out here)")
    subfolders = sorted(p for p in folder.iterdir() if p.is_dir()) if folder == CORPUS else [folder]
    for path in subfolders:
        calls = _ledger_cells(path)
        if not calls:
            continue
        expected = [ledger_fields_of_cells(*cells) for cells in calls]
        columns = [list(column) for column in zip(*calls, strict=True)]
        assert ledger_fields_of_columns(*columns) == expected
        with monkeypatch.context() as patch:  # without the batch: each cell on its own route
            patch.setattr(model_cells, "_plain_payloads", None)
            assert ledger_fields_of_columns(*columns) == expected


def _payload(rng: random.Random) -> str:
    """One payload, usually of the batch's kind, often made odd."""
    value = rng.choice(['{"a": [1, 2.5, null], "b": "é"}', '"lab_agent"', "12", "[]", "{}",
                        "not json", "", "1e400", "18446744073709551616", '"\\ud800"'])
    data = _b64(value)
    if rng.random() < 0.05:
        data = _b64(b"\xff\xfe" + value.encode())  # invalid UTF-8, no JSON: its text, replaced
    odd = rng.random()
    if odd < 0.04:
        data = data.replace("/", "\\/") if "/" in data else data + "\\/"  # an escape
    elif odd < 0.07:
        data = data.rstrip("=") or "QQ"  # padding dropped
    elif odd < 0.09:
        data = data + "="  # too much padding
    elif odd < 0.11:
        data = "\\u0041" + data[1:] if data else "\\u0041"
    elif odd < 0.13:
        data = data[:-4] + "!!!!" if len(data) >= 4 else "!!!!"
    elif odd < 0.15:
        data = data[:2] + "\n" + data[2:]
    elif odd < 0.17:
        data = "QQ==" + data  # padding inside
    encoding = rng.choice([PLAIN] * 8 + [NULL, NULL, _b64("binary/plain"), _b64("json/plaiN"),
                                         "anNvbi9wbGFpbg", PLAIN + "=", "anNvbi9wbGFpbg\\u003d="])
    space = rng.choice(["", " ", "\n  ", "\t"])
    metadata = f'{{{space}"encoding"{space}:{space}"{encoding}"{space}}}'
    if rng.random() < 0.04:
        metadata = f'{{"encoding": "{encoding}", "messageType": "eA=="}}'
    members = [f'"metadata"{space}:{space}{metadata}', f'"data":{space}"{data}"']
    if encoding == NULL and rng.random() < 0.8:
        members.pop()  # binary/null: usually no data
    extra = rng.random()
    if extra < 0.04:
        members.append(rng.choice(['"externalPayloads": []', '"data": "eA=="',
                                   '"metadata": {}', '"x": 1']))  # fmt: skip
    elif extra < 0.06:
        members[-1] = rng.choice(['"data": 3', '"data": null', '"data": ["eA=="]'])
    elif extra < 0.08:
        members.pop(0)  # no metadata
    if rng.random() < 0.04:
        members.reverse()
    return "{" + space + ("," + space).join(members) + space + "}"


def _cell(rng: random.Random) -> bytes:
    items = [_payload(rng) for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 3, 5]))]
    space = rng.choice(["", " ", "\n"])
    text = '{"payloads":' + space + "[" + ("," + space).join(items) + "]" + space + "}"
    odd = rng.random()
    if odd < 0.02:
        text = " " + text
    elif odd < 0.04:
        text += rng.choice([" ", "\n", " x", "}", ","])
    elif odd < 0.06:
        text = text[:-1] + ', "other": 1}'
    elif odd < 0.07:
        text = text[: rng.randrange(len(text))]  # cut short
    elif odd < 0.08:
        text = text.replace('"payloads"', '"payloads\\u0073"' if rng.random() < 0.5
                            else '"Payloads"')  # fmt: skip
    elif odd < 0.09:
        text = text[:-1] + ', "payloads": []}'  # twice
    return text.encode()


@compiled
def test_batch_equals_the_typed_route_on_random_payloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Escapes in the base64, bad padding, other encodings, extra members, binary/null with and
    without data, data that is no JSON or no UTF-8, whitespace, texts cut or followed by more:
    what the batch reads equals the typed and dict routes', and it declines what is no JSON
    (a decline is always safe: the typed route reads the cell then)."""
    rng = random.Random(53)
    raws: list[Any] = [_cell(rng) for _ in range(6000)]
    raws += [msgspec.Raw(raw) for raw in raws[:500]]  # the loader's cells hold msgspec.Raw
    read = _check(raws, monkeypatch)
    for raw, found in zip(raws, _batch(raws), strict=True):
        try:
            msgspec.json.decode(raw)
        except msgspec.DecodeError:  # no JSON (cut short, more after it): never read
            assert found is None, bytes(raw)[:300]
    assert read > 1500  # the usual kind, most of them
    assert read < len(raws) - 1500  # and many declined


@compiled
@pytest.mark.parametrize("raw", [
    b"", b"{}", b"[]", b"null", b'{"payloads": null}', b'{"payloads": {}}', b'{"payloads": [1]}',
    b'{"payloads": [{}]}', b'{"payloads": [{"metadata": {}}]}',
    f'{{"payloads": [{{"metadata": {{"encoding": "{PLAIN}"}}}}]}}'.encode(),  # plain, no data
    f'{{"payloads": [{{"metadata": {{"encoding": "{NULL}"}}, "data": ""}}]}}'.encode(),
    f'{{"payloads": [{{"metadata": {{"encoding": "{PLAIN}"}}, "data": "eA="}}]}}'.encode(),
    f'{{"payloads": [{{"metadata": {{"encoding": "{PLAIN}"}}, "data": "eA\\u003d="}}]}}'.encode(),
    f'{{"payloads": [{{"metadata": {{"encoding": "{PLAIN}"}}, "data": "eA=="}}]}} x'.encode(),
    f'{{"payloads": [{{"metadata": {{"encoding": "{PLAIN}"}}, "data": "eA=="}},]}}'.encode(),
    f'{{"payloads": [{{"metadata": {{"encoding": "{PLAIN}"}}, "data": "eA=="'.encode(),
    bytearray(f'{{"payloads": [{{"metadata": {{"encoding": "{PLAIN}"}}, "data": "=="}}]}}',
              "ascii"),
])  # fmt: skip
def test_batch_declines_other_shapes(raw: Any) -> None:
    assert model_cells._plain_payloads([raw]) == [None]


@compiled
def test_batch_reads_buffers_and_declines_the_rest() -> None:
    one = f'{{"payloads": [{{"metadata": {{"encoding": "{PLAIN}"}}, "data": "{_b64("[1]")}"}}, '
    two = f'{{"metadata": {{"encoding": "{NULL}"}}}}]}}'
    raw = (one + two).encode()
    expected = ([b"[1]", None], 3)
    assert model_cells._plain_payloads([raw, msgspec.Raw(raw), bytearray(raw), memoryview(raw),
                                        None, raw.decode(), 5]) == [
        expected, expected, expected, expected, None, None, None]  # fmt: skip
    assert model_cells._plain_payloads([b'{"payloads": []}', b'{ "payloads" : [ ] }\n']) == [
        ([], 0), ([], 0)]  # fmt: skip
    with pytest.raises(TypeError):
        model_cells._plain_payloads((raw,))  # a list only


def test_values_of_data_as_the_typed_route_makes_them() -> None:
    datas = [b'{"a": 1}', None, b"not json", b"\xff\xfe", b"", b"18446744073709551616"]
    expected = [{"a": 1}, None, "not json", b"\xff\xfe".decode("utf-8", errors="replace"), "",
                json.loads("18446744073709551616") * 1.0]  # orjson: an int past u64 is a float
    assert values_of_data(datas) == expected
    assert values_of_data([b"[1]", None]) == [[1], None]
    assert values_of_data([]) == []


def test_ledger_fields_of_columns_reads_other_cells_each_alone() -> None:
    """Cells that are no raw JSON events' (values in a frame built by hand, no closing event)
    take each call's own route."""
    payload = {"payloads": [{"metadata": {"encoding": PLAIN},
                             "data": _b64(json.dumps({"model_request_parameters": {},
                                                      "messages": []}))}]}  # fmt: skip
    answer = {"kind": "response", "parts": [], "usage": {"input_tokens": 3, "output_tokens": 4}}
    result = {"payloads": [{"metadata": {"encoding": PLAIN}, "data": _b64(json.dumps(answer))}]}
    rows = [
        (None, None, None, "agent__a__model_request", None, None, None),
        ([{"model_request_parameters": {}, "messages": []}], None, {"input": payload},
         "agent__a__model_request", "ActivityTaskCompleted", [{"kind": "response", "parts": []}],
         {"result": result}),
        (None, None, {}, "x", "ActivityTaskFailed", None, {}),
    ]  # fmt: skip
    columns = [list(column) for column in zip(*rows, strict=True)]
    assert ledger_fields_of_columns(*columns) == [ledger_fields_of_cells(*r) for r in rows]
    assert model_io.ledger_fields_of_columns(*[[] for _ in range(7)]) == []
