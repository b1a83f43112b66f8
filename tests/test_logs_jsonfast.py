"""The JSON fast path reads exactly what the line-by-line assembler reads.

``read_logs`` decodes runs of JSON lines a block at a time (header keys only, ``fields`` left
lazy). These tests read the same lines with the fast path switched off and compare whole frames.
"""

from __future__ import annotations

import json
import pickle
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import toolkit.logs.jsonfast as jsonfast
import toolkit.logs.jsonlayout as jsonlayout
import toolkit.logs.read as read_module
import toolkit.logs.sources as sources
from toolkit.logs import read_logs
from toolkit.logs.cells import LazyFields
from toolkit.logs.formats.jsonlog import SIGNATURE_KEYS

FIXTURES = Path(__file__).parent / "fixtures" / "logs"
POOL = sorted({
    line
    for path in FIXTURES.glob("*.log")
    if path.name not in ("utf16_bom.log", "crlf_invalid_utf8.log")
    for line in path.read_text(encoding="utf-8").split("\n")
})
KEYS = [*sorted(SIGNATURE_KEYS), "caller", "error", "attempt", "workflow_id"]
LEVEL_SPELLINGS = ["INFO", "info", "WARN", "warning", "ERROR", "Error", "E", "DEBUG+2", "x", ""]
VALUES = st.one_of(
    st.sampled_from(LEVEL_SPELLINGS),
    st.sampled_from(["2026-09-27T10:00:00Z", "2026-09-27 10:00:00,123", "not a time"]),
    st.text(max_size=6),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["message", "a", "level"]), st.text(max_size=3), max_size=2),
)
OBJECTS = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6).map(
    lambda d: json.dumps(d, separators=(",", ":")))
# Runs of one layout (what real logs look like), layout changes, odd lines between them.
LINE = st.one_of(
    OBJECTS,
    OBJECTS.map(lambda s: " " + s),
    st.sampled_from(POOL),
    st.sampled_from(['{"time":"2026-09-27T10:00:00Z","level":"INFO","msg":"a","k":1}',
                     '{"ts":1727431200.5,"level":"error","msg":"zap","caller":"x.go:1"}',
                     '{"msg":"deep","x":1e400}', "  at x.y(Z.java:1)", "Traceback (most recent"
                     " call last):", "{", "}"]),
)


def _line_by_line(lines: list[str], monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame:
    with monkeypatch.context() as patch:
        patch.setattr(read_module, "JSON_FAST_PATH", False)
        return read_logs(lines)


def _same(fast: pd.DataFrame, slow: pd.DataFrame) -> None:
    assert list(fast.columns) == list(slow.columns)
    for name in fast.columns:
        assert fast[name].dtype == slow[name].dtype, name
        assert fast[name].equals(slow[name]), (name, fast[name].tolist(), slow[name].tolist())


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(runs=st.lists(st.tuples(LINE, st.integers(1, 4)), min_size=1, max_size=25))
def test_fast_path_equals_line_by_line(runs: list[tuple[str, int]],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [line for line, times in runs for _ in range(times)]
    fast = read_logs(lines)
    _same(fast, _line_by_line(lines, monkeypatch))
    assert fast["lines"].sum() == len(lines)


def test_runs_across_blocks_and_sub_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small blocks: runs end at block ends, continuation lines open the next block."""
    rng = random.Random(11)
    layouts = [
        '{{"time":"2026-09-27T10:00:{s:02d}Z","level":"{lv}","msg":"m{i}","attempt":{i}}}',
        '{{"ts":{i}.5,"level":"{lv}","msg":"zap {i}","caller":"a.go:{i}"}}',
        '{{"message":"ts sdk {i}","taskQueue":"q","namespace":"default","level":"{lv}"}}',
        '{{"event":"e{i}","level":"{lv}","logger":"x","timestamp":"2026-09-27T10:00:00Z"}}',
    ]
    odd = ["  File \"x.py\", line 1, in <module>", "plain text", "", '{"log":"in\\n"}',
           "2026-09-27 10:00:00,123 - agent - WARNING - slow"]
    lines: list[str] = []
    layout = layouts[0]
    while len(lines) < 3000:
        roll = rng.random()
        if roll < 0.02:
            layout = rng.choice(layouts)
        if roll > 0.97:
            lines.append(rng.choice(odd))
            continue
        lines.append(layout.format(i=len(lines), s=len(lines) % 60,
                                   lv=rng.choice(["INFO", "info", "WARN", 30])))
    monkeypatch.setattr(sources, "BLOCK", 500)
    monkeypatch.setattr(jsonfast, "_SUB_BLOCK", 64)
    fast = read_logs(lines)
    _same(fast, _line_by_line(lines, monkeypatch))
    assert fast["lines"].sum() == len(lines)


def test_json_fields_are_lazy_mappings_equal_to_dicts() -> None:
    lines = ['{"time":"2026-09-27T10:00:00Z","level":"INFO","msg":"a","k":1,"n":{"x":[1]}}'] * 3
    fields = read_logs(lines)["fields"]
    cell = fields.iloc[0]
    assert isinstance(cell, LazyFields) and isinstance(cell, Mapping)
    expected = {"k": 1, "n": {"x": [1]}}
    assert cell == expected and expected.__eq__(cell) is NotImplemented  # dict defers to cell
    assert cell.value == {"k": 1, "n": {"x": [1]}} and cell["n"]["x"] == [1]
    assert dict(cell) == cell.copy() == {**cell} and cell.get("missing", 5) == 5
    assert repr(cell) == repr({"k": 1, "n": {"x": [1]}})
    assert pickle.loads(pickle.dumps(cell)) == {"k": 1, "n": {"x": [1]}}
    assert type(pickle.loads(pickle.dumps(cell))) is dict
    assert cell != {"k": 2}


def test_numbers_beyond_double_range_keep_the_line_a_json_record() -> None:
    """orjson refuses 1e400; such a line is still read as JSON (the value becomes inf)."""
    lines = ['{"msg":"big","x":1e400,"level":"info"}'] * 2
    logs = read_logs(lines)
    assert logs["format"].tolist() == ["json", "json"]
    assert logs["message"].tolist() == ["big", "big"]
    fields: Any = logs["fields"].iloc[0]
    assert fields == {"x": float("inf")}


# -- the bytes path: files and bytes are cut into blocks of UTF-8 lines, JSON runs decoded as is --

def _as_bytes(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _same_but_source(fast: pd.DataFrame, slow: pd.DataFrame) -> None:
    _same(fast.drop(columns="source"), slow.drop(columns="source"))


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(runs=st.lists(st.tuples(LINE, st.integers(1, 4)), min_size=1, max_size=25),
       block_bytes=st.sampled_from([64, 300, 1 << 20]))
def test_bytes_path_equals_line_by_line(runs: list[tuple[str, int]], block_bytes: int,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks end inside lines (small reads), runs cross blocks, odd lines sit between runs."""
    lines = [line for line, times in runs for _ in range(times)]
    # A list keeps a trailing CR and lone surrogates; a file cannot hold them as such.
    assume(not any(re.search("[\r\ud800-\udfff]", line) for line in lines))
    with monkeypatch.context() as patch:
        patch.setattr(sources, "BLOCK_BYTES", block_bytes)
        fast = read_logs(_as_bytes(lines))
    _same_but_source(fast, _line_by_line(lines, monkeypatch))


def test_bytes_path_reads_json_runs_from_the_bytes(tmp_path: Path) -> None:
    """A JSON log file takes the bytes path: ``fields`` point into the block's Arrow array."""
    lines = [f'{{"time":"2026-09-27T10:00:{i % 60:02d}Z","level":"INFO","msg":"m{i}","k":{i}}}'
             for i in range(1000)]
    path = tmp_path / "agent.log"
    path.write_bytes(_as_bytes(lines))
    logs = read_logs(path)
    cell = logs["fields"].iloc[500]
    assert isinstance(cell, LazyFields) and cell.index >= 0 and cell == {"k": 500}
    assert logs["raw"].dtype == "str" and logs["raw"].tolist() == lines
    assert logs["message"].iloc[999] == "m999" and logs["lines"].sum() == 1000


@pytest.mark.parametrize("tail", [
    ['{"time":"2026-09-27T10:00:00Z","level":"INFO","msg":"two"}{"msg":"values"}'],
    ['{"time":"2026-09-27T10:00:00Z","level":"INFO","msg":"a","x":',
     '{"y":1}}', '{"time":"t","level":"INFO","msg":"b"}{"time":"t","level":"INFO","msg":"c"}'],
    ['{"time":"2026-09-27T10:00:00Z","level":"INFO","msg":"trailing blank"} '],
    ['{"time":"2026-09-27T10:00:00Z","level":"INFO","msg":"caf\u00e9 \u2603"}'],
    [" " + "[" * 1100 + "]" * 1100, "{" + '"a":' * 0 + '"msg":' + "[" * 1100 + "]" * 1100 + "}"],
])
def test_batches_refuse_what_is_not_one_record_per_line(tail: list[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Two values on a line, a value spanning lines (which, with two values on another line,
    gives as many values as lines), trailing blanks, non-ASCII, deep nesting."""
    head = [f'{{"time":"2026-09-27T10:00:0{i}Z","level":"INFO","msg":"m{i}"}}' for i in range(5)]
    lines = head + tail + head
    slow = _line_by_line(lines, monkeypatch)
    _same_but_source(read_logs(_as_bytes(lines)), slow)
    _same(read_logs(lines), slow)  # the same checks on a list of lines


@pytest.mark.parametrize("encode", [
    lambda text: text.encode().replace(b"\n", b"\r\n"),           # CRLF: read as text
    lambda text: b"\xef\xbb\xbf" + text.encode(),                  # UTF-8 byte-order mark
    lambda text: text.encode().replace(b"m3", b"m\xff3"),          # invalid UTF-8 in a run
    lambda text: text.encode().rstrip(b"\n"),                      # no final newline
])
def test_bytes_path_encodings(encode: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [f'{{"time":"2026-09-27T10:00:0{i}Z","level":"INFO","msg":"m{i}"}}' for i in range(8)]
    data = encode("\n".join(lines) + "\n")
    expected = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
    slow = _line_by_line(expected.replace("\r\n", "\n").rstrip("\n").split("\n"), monkeypatch)
    for block_bytes in (40, 1 << 20):
        with monkeypatch.context() as patch:
            patch.setattr(sources, "BLOCK_BYTES", block_bytes)
            _same_but_source(read_logs(data), slow)


def test_level_spellings_learned_and_widened(monkeypatch: pytest.MonkeyPatch) -> None:
    """Levels are decoded as the spellings met so far; a new spelling widens, then narrows."""
    # (loggers are learned the same way: test_numeric_times_and_learned_loggers)
    built: list[Any] = []
    original = jsonlayout.build_layout

    def recording(order: Any, strict: bool, literals: Any = (None, None, None),
                  numeric_ts: bool = False) -> Any:
        built.append(literals[0])
        return original(order, strict, literals, numeric_ts)

    spellings = ["INFO"] * 700 + ["WARN", "INFO"] * 300 + ["error", "DEBUG", "INFO"] * 300
    lines = [f'{{"time":"2026-09-27T10:00:{i % 60:02d}Z","level":"{lv}","msg":"m{i}"}}'
             for i, lv in enumerate(spellings)]
    monkeypatch.setattr(jsonlayout, "build_layout", recording)
    monkeypatch.setattr(jsonfast, "_SUB_BLOCK", 64)
    for source in (lines, _as_bytes(lines)):
        built.clear()
        fast = read_logs(source)
        _same_but_source(fast, _line_by_line(lines, monkeypatch))
        assert frozenset({"INFO"}) in built and frozenset({"INFO", "WARN"}) in built
        assert frozenset({"INFO", "WARN", "error", "DEBUG"}) in built


def test_messages_learned_until_they_keep_changing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A few constant messages are decoded as Literals; a vocabulary that keeps growing stops
    being learned after a couple of refused batches (each refusal decodes a batch twice)."""
    built: list[Any] = []
    original = jsonlayout.build_layout

    def recording(order: Any, strict: bool, literals: Any = (None, None, None),
                  numeric_ts: bool = False) -> Any:
        built.append(literals[2])
        return original(order, strict, literals, numeric_ts)

    constant = [f'{{"time":"2026-09-27T10:00:{i % 60:02d}Z","level":"INFO","msg":"m{i % 3}"}}'
                for i in range(600)]
    growing = [f'{{"time":"2026-09-27T10:00:{i % 60:02d}Z","level":"INFO","msg":"g{i // 50}"}}'
               for i in range(3000)]
    monkeypatch.setattr(jsonlayout, "build_layout", recording)
    monkeypatch.setattr(jsonfast, "_SUB_BLOCK", 64)
    for lines, most in ((constant, 1), (growing, 3)):  # 1 + jsonfast._MESSAGE_MISSES
        for source in (lines, _as_bytes(lines)):
            built.clear()
            _same_but_source(read_logs(source), _line_by_line(lines, monkeypatch))
            learned = [texts for texts in built if texts is not None]
            assert 1 <= len(learned) <= most, learned


@pytest.mark.parametrize("stamp", [
    "1727431200", "1727431200.123456", "1727431200123", "1727431200123.5", "1727431200123456",
    "1727431200123456789", "-1.5", "0", "1e12", "99999999999999999", "100000000000000000",
    "9300000000", "9300000000.0", "1e400", "18446744073709551615", "true", "null",
])
def test_numeric_times_and_learned_loggers(stamp: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """zap's epoch times (s, ms, µs, ns; ints and floats) read a column at a time, loggers as
    Literals; every odd number (overflow, not finite, bool, null) as the line-by-line path."""
    lines = [f'{{"level":"info","ts":{1727431200 + i}.25,"logger":"agent.{i % 3}","msg":"m{i}"}}'
             for i in range(300)]
    lines[150] = f'{{"level":"info","ts":{stamp},"logger":"agent.0","msg":"odd"}}'
    lines += [f'{{"level":"warn","ts":{stamp},"logger":"x{i}","msg":"n"}}' for i in range(50)]
    monkeypatch.setattr(jsonfast, "_SUB_BLOCK", 64)
    slow = _line_by_line(lines, monkeypatch)
    _same(read_logs(lines), slow)
    _same_but_source(read_logs(_as_bytes(lines)), slow)
