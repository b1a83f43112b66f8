"""The ledger's partial decode (``_ledgerjson.partial_values`` behind
``model_cells.ledger_values_of_data`` and ``model_io.ledger_fields_of_columns``): its check is
never sure of a data orjson refuses, what it decodes is orjson's value (long members left
unread as stand-ins), every use of a stand-in raises ``NeedFull``, and the ledger's fields off
the partial values equal those off the whole decode -- on data/, the agent fixtures, the shared
corpus, the bench folder, the odd payloads of test_tokens_ledger_fields, and random and mutated
JSON."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_payload_batch import CORPUS, FOLDERS, ROOT, _ledger_cells
from test_tokens_ledger_fields import _variants

from toolkit.agents import model_cells, model_io, model_shapes
from toolkit.agents.model_io import ledger_fields, ledger_fields_of_cells, ledger_fields_of_columns

ledgerjson = model_cells._ledgerjson
pytestmark = pytest.mark.skipif(ledgerjson is None, reason="the compiled decoder is not built")
# The recordings benchmarks/bench_otel.py copies into its folder (each copy with a new run id).
BENCH = [ROOT / "data" / name for name in ("openai_agents", "pydantic_ai", "adk")]


def _partial(data: bytes, keys: set[str] | None = None, threshold: int = 10**9) -> Any:
    return ledgerjson.partial_values([data], set() if keys is None else keys, threshold,
                                     orjson.loads)[0]  # fmt: skip


def _loads(data: bytes) -> tuple[bool, Any]:
    try:
        return True, orjson.loads(data)
    except orjson.JSONDecodeError:
        return False, None


def _same(partial: Any, full: Any, threshold: int) -> None:
    """``partial`` is ``full`` with members longer than ``threshold`` maybe left unread."""
    kind = type(partial)
    if kind is ledgerjson.UnreadObject or kind is ledgerjson.Unread:
        # An object's stand-in for a dict, the other for a list or a string (never null).
        assert type(full) in ((dict,) if kind is ledgerjson.UnreadObject else (list, str))
        return
    assert type(partial) is type(full)
    if kind is dict:
        assert list(partial) == list(full)
        for key in full:
            _same(partial[key], full[key], threshold)
    elif kind is list:
        assert len(partial) == len(full)
        for a, b in zip(partial, full, strict=True):
            _same(a, b, threshold)
    else:
        assert orjson.dumps(partial) == orjson.dumps(full)  # -0.0 and 1.0 told from 0 and 1


# -- random and mutated JSON ------------------------------------------------------------------

_TEXTS = ["", "a", "plain text", "é", "日本", "😀", "\n\t\"\\/", "\x00\x1f\x7f", "\u2028",
          "\ud7ff\ue000\uffff", "x" * 200, "é" * 80]  # fmt: skip
_NUMBERS = [0, -0, 1, -1, 7, 10**17, 10**18 - 1, 0.5, -0.0, 1e-7, 1e22, 0.1 + 0.2, 123.456]
#: Numbers the check is not sure of (19 digits and more, 3-digit exponents): now and then.
_ODD_NUMBERS = [10**18, 2**63 - 1, 2**63, 2**64, -(2**63), 10**30, 1.5e300,
                2.2250738585072014e-308]  # fmt: skip


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.01:
        return rng.choice(_ODD_NUMBERS)
    if depth > 4 or roll < 0.35:
        return rng.choice([*_TEXTS, *_NUMBERS, None, True, False])
    if roll < 0.7:
        keys = ["a", "b", "model", "usage", "config", "tools", "é", "k" * 70, "x\ny"]
        return {rng.choice(keys) + str(rng.randrange(3)): _value(rng, depth + 1)
                for _ in range(rng.randrange(6))}  # fmt: skip
    return [_value(rng, depth + 1) for _ in range(rng.randrange(6))]


_SPLICES = [
    b"\\", b'"', b"\\ud800", b"\\udc00", b"\\ud83d\\ude00", b"\\ud83d", b"\\u00e9", b"\\x",
    b"\\u12", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xff", b"\xe2\x82", b"\x00",
    b"\x1f", b"\x7f", b"1e400", b"-1e-400", b"1E+308", b"1e309", b"NaN", b"Infinity", b"-", b"01",
    b"1.", b".5", b"123456789012345678901234567890", b"18446744073709551616",
    b"9223372036854775808", b"-0", b"0." + b"0" * 30 + b"1", b",", b",]", b",}", b"[", b"]", b"{",
    b"}", b":", b" ", b"\n", b"\x0c", b"\xef\xbb\xbf", b"true", b"nul", b"//", b'{"a":1,"a":2}',
    b'"a":1,"a"',
]  # fmt: skip


def _data(rng: random.Random) -> bytes:
    value = _value(rng)
    roll = rng.random()
    if roll < 0.3:
        try:
            data = orjson.dumps(value)
        except TypeError:  # an int past 64 bits
            data = json.dumps(value).encode()
    elif roll < 0.6:  # Python's json: \uXXXX escapes, surrogate pairs for astral characters
        data = json.dumps(value).encode()
    else:
        data = json.dumps(value, ensure_ascii=False, indent=rng.choice([None, 1])).encode(
            "utf-8", "surrogatepass")  # fmt: skip
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        at = rng.randrange(len(data) + 1)
        cut = rng.choice([0, 0, 1, 2])
        data = data[:at] + rng.choice(_SPLICES) + data[at + cut:]
    return data


def test_sure_only_where_orjson_reads_and_the_values_are_orjsons() -> None:
    rng = random.Random(20261203)
    sure = refused = partial_values = 0
    for _ in range(30000):
        data = _data(rng)
        accepted, full = _loads(data)
        if ledgerjson.sure(data):
            sure += 1
            assert accepted, data
        refused += not accepted
        for keys, threshold in ((None, 10**9), (None, 8), ({"a0", "model1"}, 0)):
            partial = _partial(data, keys, threshold)
            if type(partial) is bytes:  # unsure: the data itself
                assert partial is data
                continue
            partial_values += 1
            assert accepted, data
            assert ledgerjson.sure(data)
            if threshold == 10**9:
                assert partial == full
                assert orjson.dumps(partial) == orjson.dumps(full)
            _same(partial, full, threshold)
    assert sure > 10000 and refused > 3000 and partial_values > 30000  # both sides exercised


@pytest.mark.parametrize("data", [b"{}", b"[]", b' {"a": [1, {"b": null}]} ', b'"text"', b"12",
                                  b"-0", b"1.5", b"true", b'"\\ud83d\\ude00"', b'"\\u00e9\\n"',
                                  "\"é😀\"".encode(), b'{"a": 1E5, "b": -0.0}'])  # fmt: skip
def test_sure_of_plain_json(data: bytes) -> None:
    assert ledgerjson.sure(data)
    assert _partial(data) == orjson.loads(data)


@pytest.mark.parametrize("data", [
    b"", b" ", b"1e400", b"1e100", b"18446744073709551616", b"1234567890123456789", b'"\\ud800"',
    b'"\\udc00\\ud800"', b'"\\ud83d"', b'"\\ud83dx"', b'"\xed\xa0\x80"', b'"\xf4\x90\x80\x80"',
    b'"\xc0\xaf"', b'"\xff"', b'"\xe2\x82"', b'"\x00"', b'"\\x"', b"NaN", b"[1,]", b'{"a":1,}',
    b"01", b"1.", b".5", b"-", b"\xef\xbb\xbf{}", b"{} x", b"{}\x00", b"\x0c{}", b"nul",
    b"[" * 501 + b"]" * 501, b"[" * 1025 + b"]" * 1025, b"1." + b"1" * 31,
])  # fmt: skip
def test_unsure_of_odd_json(data: bytes) -> None:
    assert not ledgerjson.sure(data)
    assert _partial(data) is data


def test_nesting_sure_to_500_deep() -> None:
    assert ledgerjson.sure(b"[" * 500 + b"]" * 500)
    assert _partial(b"[" * 500 + b"]" * 500) == orjson.loads(b"[" * 500 + b"]" * 500)


def test_duplicate_keys_decoded_are_unsure_skipped_ones_sure() -> None:
    data = b'{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}'
    assert ledgerjson.sure(data)  # orjson reads it (the last value, the first place)
    assert _partial(data) is data
    skipped = b'{"a": 1, "long": {"c": "' + b"x" * 80 + b'", "c": 2}}'
    assert type(_partial(skipped, threshold=64)["long"]) is ledgerjson.UnreadObject


def test_members_kept_sure_are_read_again_only_where_the_same_bytes() -> None:
    """A long member the check was sure of is stepped over by its bytes alone where it comes
    again: where the bytes differ (a lone surrogate, bad UTF-8, a prefix of it), they are
    checked again; where it nests deeper than it was checked at, past the bound, unsure."""
    rng = random.Random(7)
    for _ in range(300):
        member = json.dumps({"tools": [_value(rng) for _ in range(8)], "x": "y" * 300}).encode()
        first = _partial(b'{"m": ' + member + b"}", threshold=64)
        if type(first) is bytes:
            continue  # a number the check is not sure of: nothing kept
        assert type(first["m"]) is ledgerjson.UnreadObject  # kept
        at = rng.randrange(1, len(member) - 1)
        for splice in (b"\\ud800", b"\xed\xa0\x80", b"\xff", b"\x01", b"1e400", b"]", b","):
            odd = member[:at] + splice + member[at:]
            data = b'{"m": ' + odd + b"}"
            accepted, _ = _loads(data)
            if ledgerjson.sure(data) or type(_partial(data, threshold=64)) is not bytes:
                assert accepted, data
    deep = b"[" * 450 + b"]" * 450
    assert type(_partial(b'{"m": ' + deep + b"}", threshold=64)["m"]) is ledgerjson.Unread
    deeper = b'{"r": ' * 59 + b'{"m": ' + deep + b"}" + b"}" * 59  # 510 deep: past the bound
    assert _partial(deeper, {"r"}, 64) is deeper
    within = b'{"r": ' * 40 + b'{"m": ' + deep + b"}" + b"}" * 40
    assert type(_partial(within, {"r"}, 64)) is dict


# -- stand-ins --------------------------------------------------------------------------------

_USES: list[Callable[[Any], Any]] = [
    lambda x: isinstance(x, str), lambda x: isinstance(x, dict), lambda x: isinstance(x, list),
    lambda x: isinstance(x, Mapping), lambda x: isinstance(x, Sequence),
    lambda x: isinstance(x, bool), lambda x: x == "a", lambda x: "a" == x,  # noqa: SIM300 - reflected
    lambda x: x != 1,
    lambda x: x < 1, lambda x: hash(x), lambda x: bool(x), lambda x: not x, lambda x: len(x),
    lambda x: iter(x), lambda x: list(x), lambda x: "a" in x, lambda x: x["a"], lambda x: x[0],
    lambda x: str(x), lambda x: repr(x), lambda x: f"{x}", lambda x: x.get, lambda x: x.items(),
    lambda x: x.__class__, lambda x: x + "a", lambda x: "a" + x, lambda x: x + 1, lambda x: -x,
    lambda x: int(x), lambda x: x in ("a", "b"), lambda x: x in {"a"}, lambda x: {x: 1},
    lambda x: x(), lambda x: getattr(x, "a", None), lambda x: hasattr(x, "a"),
    lambda x: model_shapes._list(x), lambda x: model_shapes._str(x),
    lambda x: model_shapes.get_field(x, "a"), lambda x: model_shapes.get_field({"a": x}, "a")[0],
]  # fmt: skip


def _stand_ins() -> list[Any]:
    data = orjson.dumps({"o": {"k": "v" * 80}, "a": ["x" * 80], "s": "y" * 80})
    value = _partial(data, threshold=16)
    return [value["o"], value["a"], value["s"]]


@pytest.mark.parametrize("use", _USES)
def test_every_use_of_a_stand_in_raises_need_full(use: Callable[[Any], Any]) -> None:
    for stand_in, key in zip(_stand_ins(), "oas", strict=True):
        with pytest.raises(ledgerjson.NeedFull) as raised:
            use(stand_in)
        assert raised.value.args == (key,)


def test_mapping_of_an_unread_object_is_true_of_the_rest_raises() -> None:
    unread_object, unread_array, unread_string = _stand_ins()
    assert model_shapes._mapping(unread_object)
    for stand_in in (unread_array, unread_string):
        with pytest.raises(ledgerjson.NeedFull):
            model_shapes._mapping(stand_in)
    assert type(unread_object) is not dict and unread_object is not None  # only identity


# -- the ledger's fields ----------------------------------------------------------------------


def _partial_fields(inp: Any, res: Any, activity: Any, summary: Any, keys: set[str],
                    threshold: int, monkeypatch: pytest.MonkeyPatch) -> Any:  # fmt: skip
    """ledger_fields off the partial values of ``inp`` and ``res`` made JSON (None where it
    asks for the whole decode), with ``keys`` read and members longer than ``threshold``."""
    datas_in = [None if v is None else orjson.dumps(v) for v in inp]
    datas_res = None if res is None else [None if v is None else orjson.dumps(v) for v in res]
    with monkeypatch.context() as patch:
        patch.setattr(model_cells, "_READ_KEYS", keys)
        patch.setattr(model_cells, "_UNREAD_LONGER", threshold)
        return model_io._partial_ledger_fields(
            (datas_in, 3), None if datas_res is None else (datas_res, 4), activity, summary)


@pytest.mark.parametrize("case", _variants(), ids=lambda case: case[0])
@pytest.mark.parametrize("threshold", [0, 8, 64])
def test_partial_ledger_fields_equal_the_whole_decodes(
        case: tuple[Any, ...], threshold: int,
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Every member a stand-in (threshold 0, no key read) and fewer: the fields equal those off
    the whole values, or the whole decode is asked for; each key asked for read from then on,
    until the fields are read (then equal)."""
    _, inp, res, activity, summary = case
    if inp is None:
        return  # no input payloads: no batch read of the call
    inp = [orjson.loads(orjson.dumps(v)) for v in inp]
    res = None if res is None else [orjson.loads(orjson.dumps(v)) for v in res]
    whole = ledger_fields(inp, res, activity, summary, 3, 4 if res is not None else None,
                          plain=True)  # fmt: skip
    keys: set[str] = set()  # learnt into by _partial_ledger_fields (the module's set patched)
    for _ in range(100):
        before = len(keys)
        found = _partial_fields(inp, res, activity, summary, keys, threshold, monkeypatch)
        if found is not None:
            assert found == whole
            return
        if len(keys) == before:
            return  # no ledger reader, or one raising: read whole (as before)
    raise AssertionError("never read")


def _equal_on(folder: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    subfolders = sorted(p for p in folder.iterdir() if p.is_dir()) if folder == CORPUS else [folder]
    count = 0
    for path in subfolders:
        calls = _ledger_cells(path)
        if not calls:
            continue
        expected = [ledger_fields_of_cells(*cells) for cells in calls]
        columns = [list(column) for column in zip(*calls, strict=True)]
        for keys, threshold in ((model_cells._READ_KEYS, model_cells._UNREAD_LONGER),
                                (set(), 0), (set(), 64)):  # fmt: skip
            with monkeypatch.context() as patch:
                patch.setattr(model_cells, "_READ_KEYS", set(keys))
                patch.setattr(model_cells, "_UNREAD_LONGER", threshold)
                assert ledger_fields_of_columns(*columns) == expected
        with monkeypatch.context() as patch:  # the pure path: the whole decode
            patch.setattr(model_cells, "_ledgerjson", None)
            assert ledger_fields_of_columns(*columns) == expected
        count += len(calls)
    return count


@pytest.mark.parametrize("folder", [*FOLDERS, CORPUS], ids=lambda p: p.name)
def test_ledger_fields_of_columns_equal_the_whole_decodes(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    _equal_on(folder, monkeypatch)


@pytest.mark.parametrize("folder", BENCH, ids=lambda p: p.name)
def test_the_bench_folder_is_read_partially(folder: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Every model call of the recordings the bench folder copies read off its partial values
    (no whole decode asked for), nothing learnt."""
    calls = _ledger_cells(folder)
    whole = []
    real = model_io._partial_ledger_fields

    def counted(*args: Any) -> Any:
        found = real(*args)
        whole.append(found is None)
        return found

    keys = set(model_cells._READ_KEYS)
    monkeypatch.setattr(model_io, "_partial_ledger_fields", counted)
    ledger_fields_of_columns(*[list(column) for column in zip(*calls, strict=True)])
    assert whole and not any(whole)
    assert keys == model_cells._READ_KEYS
