"""Property: random mixes of formats and envelopes never lose or duplicate a line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from toolkit.logs import read_logs

FIXTURES = Path(__file__).parent / "fixtures" / "logs"
POOL = sorted({
    line
    for path in FIXTURES.glob("*.log")
    if path.name not in ("utf16_bom.log", "crlf_invalid_utf8.log")
    for line in path.read_text(encoding="utf-8").split("\n")
})
ENVELOPES = [
    lambda s: s,
    lambda s: json.dumps({"log": s + "\n", "stream": "stdout", "time": "2026-09-27T10:00:00Z"}),
    lambda s: json.dumps({"log": s, "stream": "stderr"}),  # partial: joined with the next
    lambda s: f"2026-09-27T10:00:00.000000001Z stdout F {s}",
    lambda s: f"2026-09-27T10:00:00.000000001Z stderr P {s}",
    lambda s: f"\x1b[36magent-1  |\x1b[0m {s}",
    lambda s: f"mcp_1    | {s}",
    lambda s: f"2026-09-27T10:00:00.123456789Z {s}",
    lambda s: f"Sep 27 10:00:00 node-1 agent[42]: {s}",
    lambda s: f"[pod/agent-1/agent] {s}",
]
LINE = st.one_of(
    st.sampled_from(POOL),
    st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=40),
    st.sampled_from(["{", "}", "[", "{\"a\":", "\t", "", "  at x.y(Z.java:1)", "goroutine 1 ["]),
)
WRAPPED = st.tuples(LINE, st.integers(0, len(ENVELOPES) - 1)).map(
    lambda pair: ENVELOPES[pair[1]](pair[0]))


def _as_utf8(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(WRAPPED, min_size=1, max_size=40))
@example(["\ud800", "mcp_1    | x\udcff"])
def test_every_line_lands_in_exactly_one_record(lines: list[str]) -> None:
    logs = read_logs(lines)
    assert logs["lines"].sum() == len(lines)
    raws = [part for raw, n in zip(logs["raw"], logs["lines"], strict=True) if n
            for part in raw.split("\n")]
    # Lone surrogates cannot be UTF-8 (Arrow's strings): read_logs keeps them as escapes.
    assert Counter(raws) == Counter(_as_utf8(line) for line in lines)
    starts = logs.loc[logs["lines"] > 0, "line"]
    assert starts.is_unique and starts.between(1, len(lines)).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(POOL), min_size=1, max_size=60))
def test_text_source_matches_list_source(lines: list[str]) -> None:
    as_text = read_logs("\n".join(lines) + "\n")
    as_list = read_logs(lines)
    assert as_text["lines"].sum() == len(lines)
    assert as_text.drop(columns="source").equals(as_list.drop(columns="source"))
