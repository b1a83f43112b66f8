"""The compiled payload-cell scanner (``toolkit/histories/_cellscan.c``) gives what the pure
paths give: cell by cell on every payload cell of data/ and the corpus, on cells of unusual
shapes, and in whole budgets; its base64 decoder and buffer comparisons against binascii and
numpy on random and damaged inputs.
"""

from __future__ import annotations

import base64
import binascii
import random
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd
import pytest
from google.protobuf import json_format
from temporalio.api.history.v1 import History

import toolkit as tk
from toolkit.agents import resent
from toolkit.histories import payload_cells
from toolkit.histories.columns.lazy import LazyPayloads

ROOT = Path(__file__).resolve().parents[1]
compiled = pytest.mark.skipif(
    payload_cells._cellscan is None, reason="built without a C compiler: only the pure paths exist"
)


def _pure(cells: list[Any]) -> tuple[Any, Any, Any]:
    original = payload_cells._cellscan
    payload_cells._cellscan = None
    try:
        return payload_cells.measure_payload_cells(cells)
    finally:
        payload_cells._cellscan = original


def _plain(text: Any) -> Any:
    return None if text is None else (bytes(text[0]), text[1])


def _assert_same(cells: list[Any]) -> None:
    sizes, inexact, texts = payload_cells.measure_payload_cells(cells)
    pure_sizes, pure_inexact, pure_texts = _pure(cells)
    assert sizes.tolist() == pure_sizes.tolist()
    assert inexact.tolist() == pure_inexact.tolist()
    for index, cell in enumerate(cells):
        assert _plain(texts[index]) == _plain(pure_texts[index]), cell
        if cell is not None:  # and the pure batch is the single-cell measure
            single, text = payload_cells.measure_payload_cell(cell)
            assert (0, True) if single is None else single == (
                pure_sizes[index], not pure_inexact[index])
            assert _plain(text) == _plain(pure_texts[index])


@compiled
def test_every_payload_cell_of_data_and_the_corpus(corpus: Path) -> None:
    checked = 0
    for folder in (ROOT / "data", corpus / "histories"):
        events = tk.read_histories(folder, progress=False)[0]
        for column in ("input", "result", "details"):
            cells = events[column].tolist()
            _assert_same(cells)
            checked += sum(cell is not None for cell in cells)
    assert checked > 5_000


def _cell(text: str) -> LazyPayloads:
    """A payload cell as the JSON reader makes it (its raw proto-JSON)."""
    return LazyPayloads(_raw=msgspec.Raw(text.encode()))


JSON = base64.b64encode(b"json/plain").decode()
NULL = base64.b64encode(b"binary/null").decode()
DATA = base64.b64encode(b'{"messages": ["hi"]}').decode()

SHAPES = [
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}"}},"data":"{DATA}"}}]}}',
    f'{{ "payloads" : [ {{ "metadata" : {{ "encoding" : "{JSON}" }} , "data" : "{DATA}" }} ] }}\n',
    f'{{\n  "payloads": [\n    {{\n      "metadata": {{\n        "encoding": "{JSON}"\n      }},\n'
    f'      "data": "{DATA}"\n    }}\n  ]\n}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}"}},"data":"{DATA}"}},'
    f'{{"metadata":{{"encoding":"{NULL}"}}}}]}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{NULL}"}}}},'
    f'{{"metadata":{{"encoding":"{JSON}"}},"data":"{DATA}"}}]}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}"}},"data":"{DATA}"}},'
    f'{{"metadata":{{"encoding":"{JSON}"}},"data":"{DATA}"}}]}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{NULL}"}},"data":""}}]}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{NULL}"}}}}]}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}"}}}}]}}',  # data stripped by an exporter
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}"}},"data":""}}]}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}"}},"data":null}}]}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}"}},"data":"ab\\/cd=="}}]}}',
    '{"payloads":[{"metadata":{"encoding":"json/plain"},"data":"{\\"a\\": 1}"}]}',  # decoded
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}","messageType":"eA=="}},"data":"{DATA}"}}]}}',
    f'{{"payloads":[{{"data":"{DATA}","metadata":{{"encoding":"{JSON}"}}}}]}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}"}},"data":"{DATA}","extra":1}}]}}',
    f' {{"payloads":[{{"metadata":{{"encoding":"{JSON}"}},"data":"{DATA}"}}]}}',
    f'{{"payloads":[{{"metadata":{{"encoding":"{JSON}"}},"data":"{DATA}"}},'
    f'{{"metadata":{{"encoding":"{NULL}"}}}},{{"metadata":{{"encoding":"{NULL}"}}}}]}}',
    '{"payloads":[]}',
    '{"payloads":null}',
    f'{{"metadata":{{"encoding":"{JSON}"}},"data":"{DATA}"}}',  # a bare Payload (Nexus)
]


@compiled
@pytest.mark.parametrize("text", SHAPES)
def test_cells_of_every_shape_are_measured_as_the_pure_path_measures_them(text: str) -> None:
    _assert_same([_cell(text), None, _cell(text)])


@compiled
def test_cells_of_a_binary_history_are_left_to_the_pure_path(tmp_path: Path) -> None:
    source = next((ROOT / "data" / "openai_agents").rglob("two_turns.json"))
    history = json_format.Parse(source.read_text(), History(), ignore_unknown_fields=True)
    binary = tmp_path / "two_turns.binpb"
    binary.write_bytes(history.SerializeToString())
    events = tk.read_history(binary)
    cells = events["input"].tolist() + events["result"].tolist()
    _assert_same(cells)
    sizes, _, _ = payload_cells.measure_payload_cells(cells)
    assert (sizes > 0).sum() > 4


@compiled
def test_b64_decode_equals_binascii_on_clean_text_and_declines_the_rest() -> None:
    rng = random.Random(25)
    decode = payload_cells._cellscan.b64_decode
    for size in [*range(40), 1000, 65536]:
        data = rng.randbytes(size)
        assert decode(base64.b64encode(data)) == data
        assert decode(memoryview(base64.b64encode(data))) == data
    alphabet = b"ABCab019+/=-_ \\\n"
    for _ in range(20_000):
        text = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 13)))
        found = decode(text)
        if found is not None:  # only where binascii decodes every character the same
            assert found == binascii.a2b_base64(text, strict_mode=True)
    assert decode(b"QR==") == binascii.a2b_base64(b"QR==")  # trailing bits, as binascii


@compiled
def test_common_ends_equal_numpy() -> None:
    rng = random.Random(24)
    for _ in range(5_000):
        shared = rng.randbytes(rng.randrange(0, 40))
        a = rng.randbytes(rng.randrange(0, 12)) + shared + rng.randbytes(rng.randrange(0, 3))
        b = rng.randbytes(rng.randrange(0, 12)) + shared + rng.randbytes(rng.randrange(0, 3))
        for x, y in ((a, b), (shared + a, shared + b), (a + shared, b + shared)):
            assert resent._common_prefix(x, y) == resent._prefix_numpy(x, y)
            assert resent._common_suffix(x, y) == resent._suffix_numpy(x, y)
            assert resent._common_suffix(memoryview(x), y) == resent._suffix_numpy(x, y)


@compiled
def test_budgets_without_the_scanner_equal_budgets_with_it(corpus: Path) -> None:
    events = pd.concat([tk.read_histories(ROOT / "data" / name, progress=False)[0]
                        for name in ("history_budget", "pydantic_ai", "openai_agents")]
                       + [tk.read_histories(corpus / "histories", progress=False)[0]],
                       ignore_index=True)  # fmt: skip
    with_it = tk.history_budget(events)
    saved = (payload_cells._cellscan, resent._cellscan, resent._common_prefix,
             resent._common_suffix)
    payload_cells._cellscan = resent._cellscan = None
    resent._common_prefix, resent._common_suffix = resent._prefix_numpy, resent._suffix_numpy
    try:
        without = tk.history_budget(events)
    finally:
        (payload_cells._cellscan, resent._cellscan, resent._common_prefix,
         resent._common_suffix) = saved
    pd.testing.assert_frame_equal(with_it, without)
    assert with_it["resent_bytes"].notna().sum() > 50


@compiled
def test_resent_in_c_equals_the_python_loop(corpus: Path) -> None:
    from toolkit.agents.growth import calls_of, runs_of

    events = pd.concat([tk.read_histories(folder, progress=False)[0]
                        for folder in (ROOT / "data", corpus / "histories")],
                       ignore_index=True)  # fmt: skip
    runs = 0
    for run in runs_of(events):
        inputs = [run.payload_json(call.position) for call in calls_of(run)[0]]
        if len(inputs) < 2 or any(found is None for found in inputs):
            continue
        kinds = {b64 for _, b64 in inputs}
        found = payload_cells._cellscan.resent([text for text, _ in inputs], kinds.pop())
        assert found is not None and found[0] == resent._resent_of_texts(inputs)[0]
        runs += 1
    assert runs > 40
    # Texts with characters plain base64 lacks are left to the Python loop (decoded leniently);
    # plain ones and raw bytes give its numbers, however they differ.
    rng = random.Random(21)
    alphabet = b"ABCD0123+/="
    for _ in range(3_000):
        common = bytes(rng.choice(alphabet[:-1]) for _ in range(rng.randrange(0, 9) * 4))
        texts = []
        for _ in range(rng.randrange(1, 5)):
            middle = bytes(rng.choice(b"ABab12-_ " if rng.random() < 0.1 else alphabet[:-1])
                           for _ in range(rng.randrange(0, 3) * 4))  # fmt: skip
            texts.append(common + middle + common[: rng.randrange(0, len(common) + 1) // 4 * 4])
        for b64 in (True, False):
            found = payload_cells._cellscan.resent(texts, b64)
            expected = resent._resent_of_texts([(text, b64) for text in texts])
            if found is None:
                assert b64 and any(resent._cellscan.b64_decode(t) is None for t in texts)
            else:
                assert found[0] == expected[0]


@compiled
@pytest.mark.parametrize("scanned", [False, True], ids=["decoded", "scanned"])
def test_events_split_off_as_far_as_needed_equal_the_whole_split(
    corpus: Path, scanned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.histories.reading import json_scan
    from toolkit.histories.reading.dialects import split_histories
    from toolkit.histories.reading.sources import open_source

    if scanned:  # every document read by the compiled scanner, whose spans are then used
        if not json_scan.compiled():
            pytest.skip("built without the JSON scanner")
        monkeypatch.setattr(json_scan, "SCAN_FROM_BYTES", 0)

    documents = spans = 0
    for folder in (ROOT / "data", corpus / "histories"):
        for path in sorted(folder.rglob("*.json")):
            if ".meta." in path.name:
                continue
            try:
                source = open_source(path)
                histories = split_histories(source)
                whole = [again.json_events for again in split_histories(source)]
            except tk.ToolkitError:
                continue
            for history, events in zip(histories, whole, strict=True):
                documents += history.document is not None
                spans += history.event_spans is not None
                order = list(range(len(events)))
                random.Random(len(events)).shuffle(order)  # out of order, as cells ask
                for index in [0, 1, *order]:
                    if index < len(events):
                        assert bytes(history.json_event(index)) == bytes(events[index])
    assert documents > 100
    assert (spans > 100) == scanned


def _plain_cell(data: bytes, encoding: str = "anNvbi9wbGFpbg==") -> bytes:
    return (b'{"payloads":[{"metadata":{"encoding":"' + encoding.encode() + b'"},"data":"'
            + data + b'"}]}')  # fmt: skip


@compiled
def test_shares_read_while_scanning_equal_resent_of_each_group() -> None:
    """payload_spans with groups finds each group's re-sent share as resent() does over the
    group's texts, and leaves to the pure path a group with an input of another kind, text
    that is not plain base64, or one met again after another group."""
    import numpy as np

    rng = random.Random(5)
    scan = payload_cells._cellscan
    for _ in range(400):
        cells: list[Any] = []
        groups: list[int] = []
        texts: dict[int, list[bytes]] = {}
        broken: set[int] = set()
        order = list(range(rng.randrange(1, 5)))
        if rng.random() < 0.1 and len(order) > 1:
            order.append(order[0])  # a group met twice
            broken.add(order[0])
        common = base64.b64encode(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))))
        for group in order:
            for _ in range(rng.randrange(1, 5)):
                if rng.random() < 0.3:  # a cell of no group between the inputs
                    cells.append(_plain_cell(b"AAAA"))
                    groups.append(-1)
                kind = rng.random()
                added = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 9)))
                grown = base64.b64encode(base64.b64decode(common) + added)
                if kind < 0.05:
                    cells.append(_plain_cell(grown, "YmluYXJ5L3BsYWlu"))  # binary/plain
                    broken.add(group)
                elif kind < 0.1:
                    cells.append(_plain_cell(grown[:-1] + b"-"))  # base64 the scan declines
                    texts.setdefault(group, []).append(grown[:-1] + b"-")
                elif kind < 0.12:
                    cells.append(None)
                    broken.add(group)
                else:
                    cells.append(_plain_cell(grown))
                    texts.setdefault(group, []).append(grown)
                groups.append(group)
        _, _, shares = scan.payload_spans(cells, np.array(groups, np.int64))
        shared, total, read = np.frombuffer(shares, np.int64).reshape(3, -1)
        for group in set(order):
            expected = scan.resent(texts.get(group, []), True)
            if group in broken or expected is None:
                assert read[group] == -1
            else:
                assert read[group] == len(texts[group])
                assert (shared[group], total[group]) == expected


@compiled
def test_budgets_with_shares_read_while_scanning_equal_shares_read_per_run(corpus: Path) -> None:
    from toolkit.agents import frame_sizes

    events = pd.concat([tk.read_histories(folder, progress=False)[0]
                        for folder in (ROOT / "data", corpus / "histories")],
                       ignore_index=True)  # fmt: skip
    found: list[Any] = []
    original = frame_sizes._run_shares
    frame_sizes._run_shares = lambda *args: found.append(original(*args)) or found[-1]
    try:
        scanned = tk.history_budget(events)
        frame_sizes._run_shares = lambda *args: None
        apart = tk.history_budget(events)
    finally:
        frame_sizes._run_shares = original
    pd.testing.assert_frame_equal(scanned, apart)
    assert sum(share is not None for share in found[0]) > 100


@compiled
def test_b64_decode_of_every_byte_at_every_position_equals_binascii() -> None:
    """The decoder's vector blocks (32 digits at a time, where the CPU has AVX2) and its scalar
    tail agree with binascii's strict decoding whatever byte stands anywhere in the text."""
    rng = random.Random(7)
    text = base64.b64encode(bytes(rng.randrange(256) for _ in range(150)))  # 200 digits
    for position in range(len(text)):
        for value in range(256):
            damaged = text[:position] + bytes([value]) + text[position + 1 :]
            try:
                expected = binascii.a2b_base64(damaged, strict_mode=True)
            except binascii.Error:
                expected = None
            assert payload_cells._cellscan.b64_decode(damaged) == expected, (position, value)


@compiled
def test_vector_and_scalar_base64_give_the_same_budgets() -> None:
    """TOOLKIT_NO_AVX2 turns the vector decoder off: the budget (whose re-sent share decodes
    the inputs' tails) is the same either way."""
    import os
    import subprocess
    import sys

    script = ("import sys, toolkit as tk; b = tk.history_budget(sys.argv[1]); "
              "print(b[['run_id', 'resent_bytes', 'history_bytes']].to_json())")  # fmt: skip
    plain = {k: v for k, v in os.environ.items() if k != "TOOLKIT_NO_AVX2"}
    found = [subprocess.run([sys.executable, "-c", script, str(ROOT / "data" / "history_budget")],
                            capture_output=True, text=True, check=True, env=env).stdout
             for env in (plain, {**plain, "TOOLKIT_NO_AVX2": "1"})]  # fmt: skip
    assert found[0] == found[1] and '"resent_bytes"' in found[0]



def _span_marks(text: bytes, marks: tuple[bytes, ...], spans: list[int]) -> list[int]:
    """span_marks' reference: the first span spelling each mark, by bytes.find."""
    pairs = range(len(spans) // 2)
    return [next((k for k in pairs if mark in text[max(spans[2 * k], 0):max(spans[2 * k + 1], 0)]),
                 -1) for mark in marks]  # fmt: skip


@compiled
def test_span_marks_equal_a_search_of_each_span() -> None:
    """The first span spelling each mark (all marks looked for at once, 32 places at a time
    with AVX2, each mark's two rarest bytes compared, then memcmp; the tail place by place)
    is the one ``bytes.find`` says: on random texts of few letters (near misses, marks
    overlapping each other and the spans' and blocks' ends), spans empty, reversed or past
    the text, and on the events of data/ with the ledger's marks and marks of one byte."""
    from toolkit.agents.ledger_labels import _MARKS_AND_ESCAPE, _marks_each

    rng = random.Random(11)
    for _ in range(6000):
        text = bytes(rng.choice(b'ab\\u"Cy') for _ in range(rng.randrange(0, 200)))
        marks = tuple(bytes(rng.choice(b'ab\\u"Cy') for _ in range(rng.randrange(1, 6)))
                      for _ in range(rng.randrange(1, 9)))  # fmt: skip
        spans = [rng.randrange(-2, len(text) + 3) for _ in range(2 * rng.randrange(0, 6))]
        expected = _span_marks(text, marks, spans)
        assert payload_cells._cellscan.span_marks(text, marks, spans) == expected
        assert _marks_each(text, marks, spans) == expected
    for path in sorted((ROOT / "data").rglob("*.json"))[:80]:
        text = path.read_bytes()
        starts = sorted(rng.randrange(len(text)) for _ in range(20))
        spans = [x for start in starts for x in (start, start + rng.randrange(1, 3000))]
        for marks in (_MARKS_AND_ESCAPE, (b"{", b'"', b"eventType"), (text[-40:],)):
            expected = _span_marks(text, marks, spans)
            assert payload_cells._cellscan.span_marks(text, marks, spans) == expected
            assert payload_cells._cellscan.span_marks(text, marks, [0, len(text)]) == [
                0 if mark in text else -1 for mark in marks]  # fmt: skip
    with pytest.raises(TypeError):
        payload_cells._cellscan.span_marks(b"text", (b"",), [0, 4])
    with pytest.raises(TypeError):
        payload_cells._cellscan.span_marks(b"text", ("t",), [0, 4])
    with pytest.raises(ValueError):
        payload_cells._cellscan.span_marks(b"text", (b"t",) * 9, [0, 4])


class _Cell:
    """A task cell as run_marks reads it: its history and its event's number."""

    __slots__ = ("_history", "_index")

    def __init__(self, history: Any, index: Any) -> None:
        self._history, self._index = history, index


def _placer(histories: list[Any], places: dict[int, Any], calls: list[int]) -> Any:
    """A run_marks place: each history's (document, spans), each call's top noted."""

    def place(history: Any, top: int) -> Any:
        calls.append(top)
        return places[histories.index(history)]

    return place


@compiled
def test_run_marks_equal_span_marks_of_each_run() -> None:
    """All runs searched in one call equal the pure twin and span_marks of each run's spans: on
    random documents and runs, with cells of another type, of two histories, numbered past the
    split or below 0, histories placed nowhere or oddly, empty runs and runs past the cells;
    and each history placed once per run at most (a run reusing the place before it)."""
    from toolkit.agents.ledger_labels import _MARKS_AND_ESCAPE, _runs_each

    rng = random.Random(17)
    for _ in range(1500):
        texts = [bytes(rng.choice(b'ab\\u"Cy') for _ in range(rng.randrange(0, 300)))
                 for _ in range(3)]  # fmt: skip
        places: dict[int, Any] = {}
        for number, text in enumerate(texts):
            cuts = sorted(rng.randrange(-1, len(text) + 2) for _ in range(2 * rng.randrange(0, 8)))
            places[number] = rng.choice([(text, cuts)] * 6 + [None, (text,), (text, tuple(cuts))])
        histories = [object() for _ in texts]
        count = rng.randrange(0, 14)
        cells: list[Any] = [
            _Cell(histories[0 if rng.random() < 0.8 else rng.randrange(3)],
                  rng.choice([rng.randrange(0, 5)] * 8 + [-1, 9, "1", True])) if rng.random() < 0.95
            else ("not", "a", "cell") for _ in range(count)]  # fmt: skip
        starts = [rng.randrange(-1, count + 2) for _ in range(rng.randrange(0, 5))]
        ends = [start + rng.randrange(-1, 6) for start in starts]
        marks = tuple(bytes(rng.choice(b'ab\\u"Cy') for _ in range(rng.randrange(1, 5)))
                      for _ in range(rng.randrange(1, 9)))  # fmt: skip

        ours: list[int] = []
        theirs: list[int] = []
        expected = _runs_each(cells, starts, ends, marks, _Cell,
                              _placer(histories, places, theirs))  # fmt: skip
        assert payload_cells._cellscan.run_marks(cells, starts, ends, marks, _Cell,
                                                 _placer(histories, places, ours)) == expected
        assert len(ours) <= len(theirs)
        for start, end, found in zip(starts, ends, expected, strict=True):
            mine = cells[max(start, 0) : max(end, 0)]
            if found is not None:
                text, spans = places[histories.index(mine[0]._history)]
                pairs = [x for cell in mine for x in spans[2 * cell._index : 2 * cell._index + 2]]
                assert found == _span_marks(text, marks, pairs)
            elif mine and all(type(c) is _Cell and c._history is mine[0]._history for c in mine):
                got = places[histories.index(mine[0]._history)]
                indices = [c._index for c in mine]
                assert (not all(type(i) is int and i >= 0 for i in indices) or got is None
                        or len(got) != 2 or type(got[1]) is not list
                        or 2 * max(indices) + 1 >= len(got[1]))  # fmt: skip
    cell = _Cell(None, 0)
    for run_marks in (payload_cells._cellscan.run_marks, _runs_each):
        assert run_marks([cell], [0], [1], _MARKS_AND_ESCAPE, _Cell,
                         lambda h, t: (b"xbuildIdx", [0, 9])) == [[-1, 0, -1, -1, -1, -1]]
        assert run_marks([_Cell(None, True)], [0], [1], (b"b",), _Cell,
                         lambda h, t: (b"b", [0, 1])) == [None]  # (a bool is no event number)
    with pytest.raises(ZeroDivisionError):
        payload_cells._cellscan.run_marks([cell], [0], [1], (b"a",), _Cell, lambda h, t: 1 / 0)
    with pytest.raises(ValueError):
        payload_cells._cellscan.run_marks([cell], [0], [1], (b"t",) * 9, _Cell, print)
    with pytest.raises(TypeError):
        payload_cells._cellscan.run_marks([cell], [0], [1], (b"",), _Cell, print)


@compiled
def test_span_marks_and_element_spans_without_avx2_equal_with_it() -> None:
    """TOOLKIT_NO_AVX2 keeps span_marks' and the strings' scalar loops: the same results."""
    import os
    import subprocess
    import sys

    script = ("import hashlib, random, sys\n"
              "from pathlib import Path\n"
              "from toolkit.histories import _cellscan as c\n"
              "g, h = random.Random(3), hashlib.sha256()\n"
              "for _ in range(3000):\n"
              "    t = bytes(g.choice(b'abuC') for _ in range(g.randrange(0, 150)))\n"
              "    m = tuple(bytes(g.choice(b'abuC') for _ in range(g.randrange(1, 5)))"
              " for _ in range(g.randrange(1, 8)))\n"
              "    s = [g.randrange(-2, len(t) + 2) for _ in range(2 * g.randrange(0, 5))]\n"
              "    h.update(repr(c.span_marks(t, m, s)).encode())\n"
              "for _ in range(3000):\n"
              "    body = ''.join(g.choice(['a', '\\\\\\\\', '\\\\\"', 'x' * g.randrange(70),"
              " '{}]']) for _ in range(g.randrange(12)))\n"
              "    d = ('[' + ', '.join(['{\"k\": \"%s\", \"n\": [1]}' % body] * 3)"
              " + ']').encode()\n"
              "    spans, at, done = c.element_spans(d, 1, 10)\n"
              "    h.update(bytes(spans) + repr((at, done)).encode())\n"
              "for p in sorted(Path(sys.argv[1]).rglob('*.json'))[:200]:\n"
              "    d = p.read_bytes()\n"
              "    if d.lstrip()[:1] == b'[':\n"
              "        h.update(bytes(c.element_spans(d, d.index(b'[') + 1, 5000)[0]))\n"
              "print(h.hexdigest())")  # fmt: skip
    plain = {k: v for k, v in os.environ.items() if k != "TOOLKIT_NO_AVX2"}
    found = [subprocess.run([sys.executable, "-c", script, str(ROOT / "data")],
                            capture_output=True, text=True, env=env)
             for env in (plain, {**plain, "TOOLKIT_NO_AVX2": "1"})]  # fmt: skip
    assert found[0].returncode == 0, found[0].stderr
    assert found[0].stdout == found[1].stdout and len(found[0].stdout.strip()) == 64


@compiled
def test_element_spans_equal_msgspec_on_random_json() -> None:
    """The spans of a JSON array's elements (inside objects and arrays only their strings,
    braces and brackets stop the scan) are msgspec's raw elements: on random nested values
    with escapes, numbers, literals and indentation, written compact and pretty."""
    import json

    rng = random.Random(9)

    def value(depth: int) -> Any:
        kind = rng.randrange(7 if depth < 4 else 4)
        if kind == 0:
            return "".join(rng.choice(['a', '"', "\\", "]", "}", "{", "é", " ", "\n"])
                           for _ in range(rng.randrange(0, 12)))  # fmt: skip
        if kind == 1:
            return rng.choice([0, -1.5, 12345678901234, 1e-7, True, False, None])
        if kind == 2:
            return rng.randrange(-1000, 1000)
        if kind == 3:
            return "x" * rng.randrange(0, 80)
        if kind in (4, 5):
            return {f"k{i}\\"[: rng.randrange(2, 4)]: value(depth + 1)
                    for i in range(rng.randrange(0, 5))}  # fmt: skip
        return [value(depth + 1) for _ in range(rng.randrange(0, 5))]

    for _ in range(800):
        elements = [value(0) for _ in range(rng.randrange(1, 8))]
        for indent in (None, 2):
            text = json.dumps(elements, indent=indent, ensure_ascii=rng.random() < 0.5).encode()
            spans, _, done = payload_cells._cellscan.element_spans(text, 1, 100)
            spans = memoryview(spans).cast("q").tolist()
            expected = [bytes(raw) for raw in msgspec.json.decode(text, type=list[msgspec.Raw])]
            assert done
            assert [text[spans[k] : spans[k + 1]] for k in range(0, len(spans), 2)] == expected


@compiled
def test_element_spans_equal_msgspec_across_blocks_of_backslashes_and_quotes() -> None:
    """Objects read 64 bytes a step (where the CPU has AVX2 and carry-less multiplication):
    runs of backslashes and escaped quotes of every length, at every offset, across the
    blocks' edges, with braces and brackets inside their strings; the spans are msgspec's."""
    import json

    rng = random.Random(17)
    for _ in range(3000):
        text = "".join(rng.choice(["\\", "\\" * rng.randrange(1, 9), '"', "{", "]", "x",
                                   "é"]) for _ in range(rng.randrange(0, 60)))  # fmt: skip
        pad = "p" * rng.randrange(0, 70)
        elements = [{pad: text, "n": [1, {"t": text[::-1]}]}, [text, {}], 5]
        document = json.dumps(elements, ensure_ascii=rng.random() < 0.5).encode()
        spans, _, done = payload_cells._cellscan.element_spans(document, 1, 10)
        spans = memoryview(spans).cast("q").tolist()
        expected = [bytes(raw) for raw in msgspec.json.decode(document, type=list[msgspec.Raw])]
        assert done
        assert [document[spans[k] : spans[k + 1]] for k in range(0, len(spans), 2)] == expected
