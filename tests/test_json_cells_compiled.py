"""The compiled JSON text of lazy cells (``toolkit/histories/columns/_jsoncells.c``) is the pure
path's, byte for byte: on every payload cell and every event of data/ and the corpus, in whole
columns and batches, and on payload data of every shape the C declines or rewrites (blanks,
escapes, floats, big integers, duplicate keys, surrogates, damaged UTF-8 and base64). Its text
columns are pyarrow's conversion of the same values.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import orjson
import pyarrow as pa
import pytest

import toolkit as tk
from toolkit.datasets import arrow, json_cells
from toolkit.datasets.arrow import json_text
from toolkit.histories.columns.event_fields import event_fields, shared_event_fields
from toolkit.histories.columns.lazy import LazyAttributes, LazyExtra, LazyPayloads
from toolkit.histories.tables import attribute_views

DATA = Path(__file__).resolve().parents[1] / "data"
compiled = pytest.mark.skipif(
    json_cells._jsoncells is None, reason="built without a C compiler: only the pure path exists"
)
pytestmark = compiled
_PLAIN = base64.b64encode(b"json/plain").decode()


@pytest.fixture
def pure() -> Iterator[None]:
    """Inside it, json_cells runs without its compiled parts."""
    saved = (json_cells._jsoncells, json_cells._c_extra_piece, attribute_views._attribute_raws,
             arrow._text_buffers)  # fmt: skip
    json_cells._jsoncells = json_cells._c_extra_piece = attribute_views._attribute_raws = None
    arrow._text_buffers = None
    try:
        yield
    finally:
        (json_cells._jsoncells, json_cells._c_extra_piece, attribute_views._attribute_raws,
         arrow._text_buffers) = saved  # fmt: skip


def _events(where: str, request: pytest.FixtureRequest) -> Any:
    root = DATA if where == "lab" else request.getfixturevalue("corpus") / "histories"
    files = [p for p in sorted(root.rglob("*.json")) if not p.name.endswith(".meta.json")]
    return tk.read_histories(files, progress=False, workers=1).events


def _python_piece(cell: LazyPayloads) -> bytes | None:
    saved = json_cells._jsoncells
    json_cells._jsoncells = None
    try:
        return json_cells._json_plain_piece(cell)
    finally:
        json_cells._jsoncells = saved


@pytest.mark.parametrize("where", ["lab", "corpus"])
def test_every_payload_and_extra_cell_of_data_and_the_corpus(
    where: str, request: pytest.FixtureRequest
) -> None:
    events = _events(where, request)
    cells = [v for c in ("input", "result", "details") for v in events[c]
             if type(v) is LazyPayloads and v._codec is None and v._raw is not None]  # fmt: skip
    rewritten = plain = 0
    for cell in cells:
        found, expected = json_cells._jsoncells.plain_payloads(cell._raw), _python_piece(cell)
        plain += expected is not None  # default json/plain payloads
        if found is not None:
            rewritten += 1
            assert found == expected, bytes(cell._raw)
    assert len(cells) > 200 and rewritten > 0.5 * plain
    joined = 0
    with shared_event_fields():  # each history's fields decoded once
        for cell in events["extra"]:
            if type(cell) is not LazyExtra:
                continue
            fields = event_fields(cell._history)
            if fields is None:
                continue
            one = fields[cell._index]
            found = json_cells._c_extra_piece(one, cell._key)
            assert found == json_cells._extra_piece(one, cell._key)
            joined += found is not None
    assert joined > 1_000


@pytest.mark.parametrize("where", ["lab", "corpus"])
def test_columns_equal_those_of_the_pure_path(
    where: str, request: pytest.FixtureRequest, pure: None
) -> None:
    events = _events(where, request)
    columns = ("attributes", "extra", "input", "result", "details")

    def texts() -> dict[str, list[str | None]]:
        with shared_event_fields():
            return {c: json_cells.json_array(events[c].to_numpy(dtype=object), json_text, {})
                    .to_pylist() for c in columns}  # fmt: skip

    def fields() -> list[Any]:  # the attribute views of each event type's cells
        cells = events["attributes"].to_numpy(dtype=object)
        names = ("startToCloseTimeout", "retryPolicy", "failure", "attempt", "taskQueue")
        with shared_event_fields():
            found = [attribute_views.attribute_fields(cells, names)]
            for kind in events["event_type"].unique():
                found.append(attribute_views.attribute_fields(
                    cells[(events["event_type"] == kind).to_numpy()], names))  # fmt: skip
        return [{k: v.tolist() for k, v in one.items()} for one in found]

    expected, expected_fields = texts(), fields()
    _compiled_parts()
    assert json_cells._jsoncells is not None and attribute_views._attribute_raws is not None
    assert texts() == expected
    assert fields() == expected_fields


def _compiled_parts() -> None:
    from toolkit.histories.columns import _jsoncells

    json_cells._jsoncells, json_cells._c_extra_piece = _jsoncells, _jsoncells.extra_piece
    attribute_views._attribute_raws = _jsoncells.attribute_raws
    arrow._text_buffers = _jsoncells.text_buffers


def _cell(*datas: str, encoding: str = _PLAIN, blank: str = "") -> LazyPayloads:
    payloads = ",".join(
        f'{blank}{{"metadata":{blank}{{"encoding":"{encoding}"}},{blank}"data":{blank}"{d}"}}'
        for d in datas
    )
    return LazyPayloads(f'{{"payloads":{blank}[{payloads}]{blank}}}'.encode(), None)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _values(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(10 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 7, 10**17, -(10**18) + 1, 10**18, 2**63, 2**64, 10**30])
    if kind == 2:
        return rng.choice([0.5, -0.0, 1e16, 2.5e-7, 3.0, 1e300])
    if kind < 6:
        alphabet = ["a", "é", "\u00b0", "\x00", "\x1f", "\x7f", '"', "\\", "/", "\n", "\t",
                    "\u2028", "\ufeff", "😀", "\uffff", " ", "1e5"]  # fmt: skip
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if kind < 8:
        return [_values(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(_values(rng, 5)): _values(rng, depth + 1) for _ in range(rng.randrange(4))}


def _texts(rng: random.Random, value: Any) -> Iterator[bytes]:
    """Spellings of ``value``: compact, ASCII-escaped, indented, with blanks."""
    yield json.dumps(value, separators=(",", ":")).encode()
    yield json.dumps(value).encode()  # ", " and ": ", non-ASCII as \\uXXXX
    yield json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    yield json.dumps(value, indent=rng.choice([1, "\t"]), ensure_ascii=False).encode()
    yield b" \r\n" + json.dumps(value, separators=(",", ":")).encode() + b"\n"


def _damaged(rng: random.Random, text: bytes) -> bytes:
    at = rng.randrange(len(text) + 1)
    return rng.choice([
        text[:at],  # truncated
        text[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
                                b"\\", b"\\u12", b"\\ud800", b"\\udc00", b'"', b",", b"]", b"01",
                                b"-", b"\\ud83d\\u0041", b"\\x", b"\x01"]) + text[at:],
        text + text,
        b'{"a":1,"a":2}', b'{"a":1,"\\u0061":2}', b"[" * 70 + b"]" * 70, b"-0", b"[-0]",
        b"1.0", b"1E2", b"123456789012345678", b"1234567890123456789", b"",
        b"{" + b",".join(b'"k%d":1' % i for i in range(70)) + b"}",
    ])  # fmt: skip


def test_payload_data_of_every_shape_is_rewritten_as_the_pure_path_writes_it() -> None:
    rng = random.Random(11)
    cells: list[LazyPayloads] = []
    for _ in range(3_000):
        value = _values(rng)
        for text in _texts(rng, value):
            cells.append(_cell(_b64(text)))
            cells.append(_cell(_b64(_damaged(rng, text))))
        blank = rng.choice(["", " \n"])
        cells.append(_cell(_b64(json.dumps(value).encode()), _b64(b" 1 "), blank=blank))
    b64 = _b64(b'{"a":[1,"x"]}')
    cells += [
        _cell(b64[:-1]), _cell(b64 + "="), _cell(b64.rstrip("=")), _cell("MR=="), _cell("MQ=="),
        _cell("MQ==MQ=="), _cell("M\\u0051=="), _cell(b64, encoding="YmluYXJ5L3BsYWlu"),
        _cell(b64, encoding=_PLAIN + "\\n"), _cell(b64, b64, b64), _cell(""), _cell("!!!!"),
        LazyPayloads(b'{"payloads":[]}', None), LazyPayloads(b'{"payloads":"odd"}', None),
        LazyPayloads(f'{{"payloads":[{{"data":"{b64}","metadata":{{"encoding":"{_PLAIN}"}}}}]}}'
                     .encode(), None),
        LazyPayloads(f'{{"payloads":[{{"metadata":{{"encoding":"{_PLAIN}"}},"data":"{b64}"}}]}} x'
                     .encode(), None),
        LazyPayloads(msgspec.Raw(_cell(b64)._raw), None),
    ]  # fmt: skip
    rewritten = declined = 0
    for cell in cells:
        found = json_cells._jsoncells.plain_payloads(cell._raw)
        if found is None:
            declined += 1
            continue
        rewritten += 1
        expected = _python_piece(cell)
        assert found == expected, bytes(cell._raw)
        # what the general conversion of the cell gives, too
        assert found.decode() == json_text(LazyPayloads(cell._raw, None))
    assert rewritten > 5_000 and declined > 5_000


def test_extra_fields_of_every_shape_are_joined_as_msgspec_writes_them() -> None:
    raw = msgspec.Raw
    cases: list[tuple[dict[str, Any], str | None]] = [
        ({}, None),
        ({"eventId": raw(b'"1"'), "eventTime": raw(b'"t"'), "eventType": raw(b'"x"')}, "k"),
        ({"eventId": raw(b"1"), "taskId": raw(b'"5"'), "k": raw(b'{"a":1}'), "z": raw(b"[]")}, "k"),
        ({"é": raw(b"1"), "\u2028": raw(b"null"), "\x7f": raw(b"2")}, None),
        ({'a"b': raw(b"1")}, None), ({"a\\b": raw(b"1")}, None), ({"a\nb": raw(b"1")}, None),
        ({"a": raw(b"1"), "eventTyp": raw(b"2"), "eventTypes": raw(b"3")}, "eventId"),
        ({"\ud800": raw(b"1")}, None),
        ({"a": raw(b"1")}, "a"),
        ({f"k{i}": raw(b'"%s"' % (b"x" * i)) for i in range(200)}, "k3"),  # past the stack buffer
        ({"big": raw(b"[" + b"1," * 5_000 + b"1]"), "eventId": raw(b"1")}, None),
    ]  # fmt: skip
    for fields, key in cases:
        found = json_cells._c_extra_piece(fields, key)
        try:
            expected = json_cells._extra_piece(fields, key)
        except UnicodeEncodeError:  # a lone surrogate: msgspec refuses, the C declines
            assert found is None
            continue
        assert found is None or found == expected, (fields, key)
    assert json_cells._c_extra_piece({"a": 1}, None) is None  # a value that is no buffer


def test_a_batch_encodes_alike_with_and_without_the_compiled_parts(pure: None) -> None:
    files = [p for p in sorted((DATA / "adk").rglob("*.json")) if not p.name.endswith(".meta.json")]
    from toolkit.datasets.writer import encode_files

    chunk = [(p, "") for p in files]
    expected = encode_files(chunk, None, {})
    _compiled_parts()
    found = encode_files(chunk, None, {})
    assert expected.tables.keys() == found.tables.keys()
    for name, table in expected.tables.items():
        assert found.tables[name].equals(table, check_metadata=True), name
    assert np.array_equal(expected.facts.to_numpy(), found.facts.to_numpy())


def test_cells_the_c_loop_leaves_are_made_by_the_python_loop() -> None:
    """Cells of other kinds, histories without fields and fields the C declines, amid raw JSON
    events' cells: the column is the pure loop's, and the C leaves exactly those cells."""
    from toolkit.histories.reading.dialects import RawHistory

    key = "timerStartedEventAttributes"
    events = [{"eventId": "1", key: {"timerId": "t"}, "taskId": "9"}, {"eventId": "2", key: None},
              {"eventId": "3", 'a"b': 1}, {"eventId": "4", key: {}, "é": [1]}]  # fmt: skip
    history = RawHistory(json_array=orjson.dumps(events))
    # an array the fields decoder refuses (an event that is no object): no fields
    other = RawHistory(json_array=b'[{"eventId":"1","%s":{"timerId":"u"}},5]' % key.encode())
    cells = [LazyAttributes(history, i, key) for i in range(4)]
    cells += [LazyExtra(history, i, key) for i in range(4)]
    cells += [None, {"a": 1}, LazyAttributes(other, 0, key), _cell(_b64(b"[1]")), "text"]
    values = np.array(cells, dtype=object)
    from toolkit.histories.columns import _jsoncells

    with shared_event_fields():
        pieces, left = _jsoncells.lazy_pieces(
            values, LazyAttributes, LazyExtra, event_fields, LazyPayloads, msgspec.Raw, None
        )
        assert left == [6, 9, 10, 12]  # the extra cell of a name to escape, and the others
        assert all(pieces[i] is None for i in left)
        found = json_cells.json_texts(values, json_text)
        expected = [None if p is None else bytes(p).decode() for p in
                    json_cells._python_pieces(list(values), json_text, None)]  # fmt: skip
    assert found == expected == [json_text(v) for v in values]
    assert found[:2] == ['{"timerId":"t"}', "{}"] and found[4] == '{"taskId":"9"}'
    bits, offsets, data = _jsoncells.string_buffers([b"ab", None, msgspec.Raw(b"c"), b""])
    assert bits == bytes([0b1101]) and data == b"abc"
    assert np.frombuffer(offsets, dtype=np.int32).tolist() == [0, 2, 2, 3, 3]
    assert _jsoncells.string_buffers([b"x"])[0] is None


@pytest.mark.parametrize("where", ["lab", "corpus"])
def test_text_columns_equal_pyarrows_conversion(
    where: str, request: pytest.FixtureRequest, pure: None
) -> None:
    """Every table's columns as :func:`toolkit.to_arrow` converts them, with and without the
    C text columns, and odd columns (nulls of every kind, other types, surrogates, none)."""
    import pandas as pd

    events = _events(where, request)
    frames = [events, tk.activities(events), tk.workflow_tasks(events)]
    odd = [[], [None], ["a", None, "é", "😀", ""], ["a", float("nan")], ["a", pd.NA],
           ["\ud800"], [None, 1], [None, None, "x"], [np.str_("x")], ["x", b"y"]]  # fmt: skip
    frames.append(pd.DataFrame({f"c{i}": pd.Series(v, dtype=object) for i, v in enumerate(odd)
                                if len(v) == 1}))  # fmt: skip
    columns = [np.array(v, dtype=object) for v in odd]

    def converted() -> list[Any]:
        out: list[Any] = []
        calls = [(arrow.to_arrow, frame.drop(columns=["attributes", "extra"], errors="ignore"))
                 for frame in frames]  # fmt: skip
        for call, value in [*calls, *((arrow._text_array, values) for values in columns)]:
            try:
                out.append(call(value))  # type: ignore[operator]
            except Exception as error:  # whatever the pure path raises
                out.append(type(error))
        return out

    expected = converted()
    _compiled_parts()
    assert arrow._text_buffers is not None
    found = converted()
    assert len(found) == len(expected)
    for one, other in zip(found, expected, strict=True):
        if isinstance(other, pa.Table):
            assert one.schema == other.schema and one.equals(other)
        elif isinstance(other, pa.Array):
            assert one.type == other.type and one.equals(other)
        else:
            assert one == other


def test_payload_cells_are_kept_in_the_memo_and_found_there() -> None:
    from toolkit.histories.columns import _jsoncells

    cell, other = _cell(_b64(b"[1]")), _cell(_b64(b"[1.5]"))  # the latter left to Python
    memo: dict[int, Any] = {}
    args = (LazyAttributes, LazyExtra, event_fields, LazyPayloads, msgspec.Raw)
    pieces, left = _jsoncells.lazy_pieces([cell, other, cell], *args, memo)
    assert pieces == [b"[[1]]", None, b"[[1]]"] and left == [1] and memo == {id(cell): b"[[1]]"}
    memo = {id(cell): b"kept", id(other): None}
    assert _jsoncells.lazy_pieces([cell, other], *args, memo) == ([b"kept", None], [])
    values = np.array([cell, other, cell, None], dtype=object)
    memo = {}
    texts = json_cells.json_texts(values, json_text, memo)
    assert texts == ["[[1]]", "[[1.5]]", "[[1]]", None] and set(memo) == {id(cell), id(other)}
