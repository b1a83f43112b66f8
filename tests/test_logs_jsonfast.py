"""The JSON fast path reads exactly what the line-by-line assembler reads.

``read_logs`` decodes runs of JSON lines a block at a time (header keys only, ``fields`` left
lazy). These tests read the same lines with the fast path switched off and compare whole frames.
"""

from __future__ import annotations

import json
import pickle
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolkit.logs.jsonfast as jsonfast
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
