"""The OTLP JSON document written by the compiled writer (``toolkit/traces/_otlpjson.c``) is the
one orjson writes of :func:`~toolkit.traces.otlp.otlp_document`'s dicts, byte for byte: on the
spans of every lab recording, the public agent histories and the corpus, on attribute values of
every kind and strings of every code point; values it leaves to the pure path are written (or
refused) as that path does."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest

import toolkit as tk
from toolkit.traces import otlp
from toolkit.traces.otlp import otlp_document, otlp_json

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "histories"
FOLDERS = [*sorted(p for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "venvs"),
           ROOT / "tests" / "fixtures" / "agent_histories", CORPUS]  # fmt: skip
RESOURCE = {"service.name": "temporal-agent-toolkit", "openinference.project.name": "lab"}
compiled = pytest.mark.skipif(
    otlp._otlpjson is None, reason="built without a C compiler: only the pure path exists"
)


def _pure(spans: pd.DataFrame, resource: dict[str, Any]) -> bytes:
    return orjson.dumps(otlp_document(spans, resource))


def _written(spans: pd.DataFrame, resource: dict[str, Any]) -> bytes:
    """:func:`otlp_json`'s bytes, checked to come from the compiled writer itself."""
    shell = orjson.dumps(otlp._shell(resource, []))
    cut = len(shell) - len(otlp._SHELL_END)
    written = otlp._compiled(spans, shell[: cut + 1], shell[cut + 1 :])
    assert written is not None, "the compiled writer left these spans to the pure path"
    assert otlp_json(spans, resource) == written
    return written


@compiled
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_document_is_orjsons_on_recorded_spans(folder: Path) -> None:
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (the shared corpus is not laid out here)")
    events = tk.read_histories(folder, progress=False).events
    for content in (False, True):  # with contents: long texts, every character they hold
        spans = tk.to_otel(events, content=content).spans
        assert len(spans)
        assert _written(spans, RESOURCE) == _pure(spans, RESOURCE)
        assert _written(spans, {}) == _pure(spans, {})
        batch = spans.iloc[: len(spans) // 2]  # what send(encoding="json") writes of a batch
        assert _written(batch, RESOURCE) == _pure(batch, RESOURCE)


def test_to_otel_writes_the_pure_document(tmp_path: Path) -> None:
    folder = ROOT / "data" / "openai_agents"
    done = tk.to_otel(folder, path=tmp_path / "traces.json", project="lab")
    resource = {"service.name": "temporal-agent-toolkit", "openinference.project.name": "lab"}
    assert (tmp_path / "traces.json").read_bytes() == _pure(done.spans, resource)


def _spans(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A spans table of ``rows`` (each a few of the columns; the rest as a lab span has them)."""
    path = ROOT / "data" / "openai_agents" / "oa-0.22.3" / "two_turns.json"
    spans = tk.to_otel(path).spans.iloc[:1]
    spans = pd.concat([spans] * len(rows), ignore_index=True)
    for index, row in enumerate(rows):
        for column, value in row.items():
            spans.at[index, column] = value
    return spans


_FLOATS = [0.0, -0.0, 1.0, -1.5, 0.1, 1e-7, 1e16, 1e22, 1e23, 123456789012345678.0, 5e-324,
           1.7976931348623157e308, 2.2250738585072014e-308, float("nan"), float("inf"),
           float("-inf"), 3.0e-5, 12345.678, 1 / 3]  # fmt: skip


@compiled
@pytest.mark.parametrize("attributes", [
    {"s": "", "e": [], "t": (), "n": [[], [1, "a"], (True, 2.5)], "": "no key"},
    {"b": True, "f": False, "i": 0, "neg": -1, "min": -(1 << 63), "max": (1 << 63) - 1,
     "big": 1 << 64, "small": -(1 << 70), "ten": 10**30},
    {f"f{i}": value for i, value in enumerate(_FLOATS)},
    {"text": "ünïcödé \N{SNOWMAN} \U0001f600", "quote": 'a"b\\c/d', "ctl": "\x00\x01\x1f\x7f",
     "ws": "\b\t\n\f\r", "sep": "\u2028\u2029\ufeff", "same": 1, "again": True},
    {"deep": [[[[["x", 1.5, [False]]]]]], "mixed": ("a", 1, 2.0, True, [])},
    {},
])  # fmt: skip
def test_every_kind_of_value_is_written_as_orjson_writes_it(attributes: dict) -> None:
    spans = _spans([
        {"attributes": attributes},
        # no parent, no name, an empty and a written status message, events of every kind
        {"attributes": attributes, "parent_span_id": None, "name": "", "status_message": "",
         "events": [{"time": pd.Timestamp(0, tz="UTC"), "name": "", "attributes": {}}]},
        {"attributes": attributes, "parent_span_id": "", "status": "ERROR",
         "status_message": "it \"failed\"\n\tbadly", "kind": "SERVER",
         "events": [{"time": pd.Timestamp("2026-12-02T10:00:00.123456789Z"), "name": "exception",
                     "attributes": attributes}] * 2},
    ])  # fmt: skip
    assert _written(spans, RESOURCE) == _pure(spans, RESOURCE)


@compiled
def test_random_floats_and_ints_are_written_as_orjson_writes_them() -> None:
    generator = random.Random(20261202)
    floats = [struct.unpack("<d", generator.randbytes(8))[0] for _ in range(2000)]
    floats += [generator.uniform(-1e6, 1e6) for _ in range(2000)]
    ints = [generator.randrange(-(1 << 80), 1 << 80) for _ in range(1000)]
    ints += [generator.randrange(-1000, 1000) for _ in range(1000)]
    spans = _spans([{"attributes": {f"v{i}": v for i, v in enumerate(floats)}},
                    {"attributes": {f"v{i}": v for i, v in enumerate(ints)}}])  # fmt: skip
    assert _written(spans, RESOURCE) == _pure(spans, RESOURCE)


@compiled
def test_strings_of_every_code_point_are_written_as_orjson_writes_them() -> None:
    points = [p for p in range(0x110000) if not 0xD800 <= p <= 0xDFFF]  # lone surrogates: below
    texts = ["".join(map(chr, points[i : i + 512])) for i in range(0, len(points), 512)]
    spans = _spans([{"attributes": {text: text for text in texts}, "name": texts[0],
                     "status_message": texts[-1], "trace_id": texts[1]}])  # fmt: skip
    assert _written(spans, RESOURCE) == _pure(spans, RESOURCE)


@compiled
def test_strings_repeated_across_spans_are_written_as_orjson_writes_them() -> None:
    # The writer copies a str object's writing from where it last wrote it (as a bare string,
    # an attribute's key, a string value): the same objects in every role, with characters to
    # escape, over enough spans and distinct objects that its slots are shared and overwritten.
    rng = random.Random(7)
    pool = [f"text {i} \" \\ \n \x01 é 😀 " * rng.randint(0, 3) + str(i) for i in range(20000)]
    rows = []
    for _ in range(600):
        picked = rng.sample(pool, 12)
        attributes = {picked[i]: picked[(i + 3) % 12] for i in range(8)}
        attributes[picked[8]] = [picked[9], picked[0]]
        rows.append({"attributes": attributes, "name": picked[1], "trace_id": picked[2],
                     "span_id": picked[3], "status_message": picked[10],
                     "parent_span_id": picked[11]})
    spans = _spans(rows)
    assert _written(spans, RESOURCE) == _pure(spans, RESOURCE)


class _Text(str):
    pass


@compiled
@pytest.mark.parametrize("row", [
    {"attributes": {"none": None}},
    {"attributes": {"np_int": np.int64(3)}},
    {"attributes": {"np_float": np.float64(1.5)}},
    {"attributes": {"np_bool": np.bool_(True)}},
    {"attributes": {"dict": {"a": 1}}},
    {"attributes": {"subclass": _Text("x")}},
    {"attributes": {"in a list": [None]}},
    {"attributes": {1: "a key no str"}},
    {"name": _Text("a name of a str subclass")},
    {"status_message": float("nan")},
    {"parent_span_id": 12},
])  # fmt: skip
def test_values_left_to_the_pure_path_are_written_by_it(row: dict[str, Any]) -> None:
    spans = _spans([{}, row])
    shell = orjson.dumps(otlp._shell(RESOURCE, []))
    cut = len(shell) - len(otlp._SHELL_END)
    try:
        expected = _pure(spans, RESOURCE)
    except (TypeError, orjson.JSONEncodeError) as error:  # orjson refuses the value
        with pytest.raises(type(error)):
            otlp_json(spans, RESOURCE)
    else:
        assert otlp_json(spans, RESOURCE) == expected
    assert otlp._compiled(spans, shell[: cut + 1], shell[cut + 1 :]) is None


@pytest.mark.parametrize("row", [
    {"attributes": {"bad": "\ud800"}},
    {"trace_id": "\udfff"},
    {"kind": "NO SUCH KIND"},
    {"status": None},
    {"status_message": pd.NA},
])  # fmt: skip
def test_a_value_the_pure_path_refuses_is_refused_as_before(row: dict[str, Any]) -> None:
    spans = _spans([{}, row])
    with pytest.raises(Exception) as expected:
        _pure(spans, RESOURCE)
    with pytest.raises(type(expected.value)):
        otlp_json(spans, RESOURCE)


def test_no_spans_give_the_empty_document() -> None:
    spans = _spans([{}]).iloc[:0]
    assert otlp_json(spans, RESOURCE) == _pure(spans, RESOURCE)
    assert b'"spans":[]' in otlp_json(spans, {})


def test_without_the_compiled_writer_the_document_is_the_pure_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spans = tk.to_otel(ROOT / "data" / "pydantic_ai").spans
    expected = _pure(spans, RESOURCE)
    monkeypatch.setattr(otlp, "_otlpjson", None)
    assert otlp_json(spans, RESOURCE) == expected


def test_an_event_that_cannot_be_written_is_refused_as_before() -> None:
    event = {"time": pd.Timestamp(0, tz="UTC"), "name": "x", "attributes": {"v": object()}}
    spans = _spans([{}, {"events": [event]}, {"kind": "NO SUCH KIND"}])
    with pytest.raises(KeyError):  # the kind, in the span before: the pure path's error
        _pure(spans, RESOURCE)
    with pytest.raises(KeyError):
        otlp_json(spans, RESOURCE)


def _many_spans() -> pd.DataFrame:
    """The lab's spans over and over: a document of several of the file writer's chunks (of a
    megabyte), the same objects (keys, a run's values) in every one."""
    spans = tk.to_otel(ROOT / "data", content=True).spans
    copies = -(-(7 << 19) // len(otlp_json(spans, RESOURCE)))  # past 3.5 MB
    return pd.concat([spans] * copies, ignore_index=True)


def test_the_file_is_the_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spans = _many_spans()
    expected = _pure(spans, RESOURCE)
    assert len(expected) > 3 * (1 << 20)  # several chunks: copies across them are not taken
    otlp.write_otlp_json(spans, RESOURCE, tmp_path / "a.json")
    assert (tmp_path / "a.json").read_bytes() == expected
    (tmp_path / "b.json").write_bytes(b"x" * (len(expected) + 4096))  # a longer file before
    monkeypatch.setattr(otlp, "_otlpjson", None)
    otlp.write_otlp_json(spans, RESOURCE, tmp_path / "b.json")
    assert (tmp_path / "b.json").read_bytes() == expected


@compiled
def test_a_value_left_to_the_pure_path_after_chunks_rewrites_the_file(tmp_path: Path) -> None:
    spans = _many_spans()
    spans.at[len(spans) - 1, "attributes"] = {"subclass": _Text("x")}
    path = tmp_path / "traces.json"
    otlp.write_otlp_json(spans, RESOURCE, path)
    assert path.read_bytes() == _pure(spans, RESOURCE)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full to fill")
def test_a_file_that_cannot_be_written_is_an_error_naming_it() -> None:
    spans = _many_spans()
    with pytest.raises(OSError, match="/dev/full"):
        otlp.write_otlp_json(spans, RESOURCE, "/dev/full")


@compiled
def test_ascii_strings_of_every_length_and_escape_place_are_written_as_orjson_writes_them() -> None:
    # ASCII strings are copied eight bytes a step (the last step overlapping the one before)
    # unless a word holds a character to escape: every length about those steps, each such
    # character at every place, and each string as a key, a value, a name and an id.
    texts = []
    for length in range(0, 41):
        plain = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"[:length]
        texts.append(plain)
        for place in range(length):
            for special in ('"', "\\", "\n", "\x00", "\x1f", "\x7f", "/"):
                texts.append(plain[:place] + special + plain[place + 1 :])
    rows = [{"attributes": {text: text for text in texts[i : i + 50]}, "name": texts[i],
             "span_id": texts[-1 - i], "status_message": texts[i // 2]}
            for i in range(0, len(texts), 50)]  # fmt: skip
    spans = _spans(rows)
    assert _written(spans, RESOURCE) == _pure(spans, RESOURCE)


_TIMES = [0, 1, -1, 999_999_999_999_999_999, 10**18, 10**18 + 1, 1_796_190_022_761_524_269,
          (1 << 63) - 1, -(1 << 63) + 1, 1_000_000_000_000_000_001, 9_000_000_000_000_000_000]


@compiled
def test_times_of_every_size_are_written_as_orjson_writes_them() -> None:
    # start and end go to the writer as int64s (nineteen digits, since 2001, written apart)
    spans = _spans([{} for _ in _TIMES] + [{}])
    spans["start"] = pd.to_datetime([*_TIMES, None], utc=True)
    spans["end"] = pd.to_datetime([*reversed(_TIMES), 0], utc=True)
    assert _written(spans, RESOURCE) == _pure(spans, RESOURCE)


@compiled
def test_values_repeated_across_spans_are_written_as_orjson_writes_them() -> None:
    # The writer keeps a whole attribute by its key's and value's objects, a float's writing by
    # its bits, a kind's number by its name's object: the same objects and bits over and over,
    # equal values of other objects, and values of every kind beside them.
    rng = random.Random(11)
    keys = [f"key.{i}" for i in range(40)]
    values: list[Any] = [True, False, 0, 1, -1, 7, 1 << 40, 1 << 70, 0.0, -0.0, 0.044,
                         float("nan"), float("inf"), 1e16, "x", "", "a \"quoted\" one",
                         [1, "a"], ("b", 2.5), ["x" * 20]]  # fmt: skip
    rows = []
    for _ in range(3000):
        attributes = {}
        for key in rng.sample(keys, 12):
            value = rng.choice(values)
            if isinstance(value, float) and rng.random() < 0.5:
                value = float(repr(value))  # the same bits, another object
            elif type(value) is int and rng.random() < 0.3:
                value = int(str(value))  # an equal int, maybe another object
            attributes[key] = value
        rows.append({"attributes": attributes,
                     "kind": str(rng.choice(["INTERNAL", "SERVER", "CLIENT"])),
                     "status": rng.choice(["UNSET", "OK", "ERROR"])})  # fmt: skip
    spans = _spans(rows)
    assert _written(spans, RESOURCE) == _pure(spans, RESOURCE)
    assert _written(spans, {}) == _pure(spans, {})  # again, the writer's slots kept from before


_EVENT = {"time": pd.Timestamp("2026-12-02T10:00:00.123456789Z"), "name": "exception",
          "attributes": {"exception.type": "UserError", "temporal.event_id": 20, "x": 1.5}}


@compiled
@pytest.mark.parametrize("times", [
    [pd.Timestamp(0, tz="UTC"), pd.Timestamp("2026-12-02 10:00:00.5"),
     pd.Timestamp("2026-12-02", tz="Europe/Paris").as_unit("s"), pd.Timestamp(-1, tz="UTC")],
    ["2026-12-02T10:00:00Z", 1_796_190_022_761_524_269, np.datetime64("2026-12-02T10:00:00.5"),
     pd.Timestamp("2026-12-02").to_pydatetime(), pd.NaT],
])  # fmt: skip
def test_events_are_written_as_orjson_writes_them(times: list[Any]) -> None:
    rows = [{"events": [{**_EVENT, "time": time, "name": f"e{i}"}, _EVENT]}
            for i, time in enumerate(times)]  # fmt: skip
    rows += [{"events": []}, {"events": None}, {"events": ()}, {"events": [_EVENT] * 5}]
    spans = _spans(rows)
    assert _written(spans, RESOURCE) == _pure(spans, RESOURCE)


@compiled
@pytest.mark.parametrize("events", [
    ({**_EVENT},),  # not a list: written by the pure path
    [{"time": _EVENT["time"], "name": "no attributes"}],
    [{"name": "no time", "attributes": {}}],
    [{**_EVENT, "name": 5}],
    [{**_EVENT, "attributes": [("a", 1)]}],
    [{**_EVENT, "time": "no time at all"}],
    [{**_EVENT, "time": object()}],
    [{**_EVENT, "attributes": {"none": None}}],
    [pd.Series(_EVENT)],
])  # fmt: skip
def test_events_left_to_the_pure_path_are_written_or_refused_by_it(events: Any) -> None:
    spans = _spans([{}, {"events": events}])
    shell = orjson.dumps(otlp._shell(RESOURCE, []))
    cut = len(shell) - len(otlp._SHELL_END)
    assert otlp._compiled(spans, shell[: cut + 1], shell[cut + 1 :]) is None
    try:
        expected = _pure(spans, RESOURCE)
    except Exception as error:  # whatever the pure path raises, raised again
        with pytest.raises(type(error)):
            otlp_json(spans, RESOURCE)
    else:
        assert otlp_json(spans, RESOURCE) == expected


@compiled
def test_columns_of_other_dtypes_and_layouts_are_written_as_orjson_writes_them() -> None:
    spans = tk.to_otel(ROOT / "data" / "adk").spans
    expected = _pure(spans, RESOURCE)
    as_strings = spans.astype({"name": "string", "trace_id": "string", "kind": "category"})
    assert _written(as_strings, RESOURCE) == _pure(as_strings, RESOURCE) == expected
    shell = orjson.dumps(otlp._shell(RESOURCE, []))
    cut = len(shell) - len(otlp._SHELL_END)
    head, tail = shell[: cut + 1], shell[cut + 1 :]
    columns = [spans[name] for name in otlp._OBJECT_COLUMNS]
    times = [otlp._all_ints(spans["start"]), otlp._all_ints(spans["end"])]
    rest = (otlp._KIND, otlp._STATUS, orjson.dumps, pd.Timestamp, otlp._nanos_int)
    for strided in (False, True):  # lists, and arrays of every other item
        made, ints = [c.tolist() for c in columns], times
        if strided:
            made, ints = [_every_other(c, object) for c in made], [_every_other(t, np.int64)
                                                                  for t in times]  # fmt: skip
        assert _otlpjson_spans(head, tail, *made[:5], *ints, *made[5:], *rest) == expected
    with pytest.raises(TypeError):
        _otlpjson_spans(head, tail, *[np.zeros(len(spans))] * 11, *rest)


def _every_other(items: list[Any], dtype: Any) -> np.ndarray:
    """``items`` as every other item of an array (a view of strides twice the item's)."""
    array = np.empty(2 * len(items), dtype=dtype)
    array[::2] = items if dtype is not object else np.fromiter(items, object, len(items))
    return array[::2]


def _otlpjson_spans(*args: Any) -> Any:
    return otlp._otlpjson.spans(*args)  # type: ignore[union-attr]
