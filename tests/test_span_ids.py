"""The spans' ids hashed in C (``toolkit.traces._spanids``) equal hashlib's, its time texts
``_stamp_text``'s, and the spans made without it are the same; the activities' queue times
rounded column-wise equal Python's round (the spans' equality to the row-wise reference is in
``test_traces_columnwise``)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.traces import span_columns
from toolkit.traces.span_columns import hashed, hashed_python, queue_milliseconds, stamp_texts
from toolkit.traces.span_rows import _seconds, _stamp_text, span_ids
from toolkit.traces.spans import trace_spans

ROOT = Path(__file__).resolve().parents[1]


def _texts(draw: random.Random, count: int) -> list[str]:
    """Texts of every length around BLAKE2b's 128-byte blocks, ASCII and not."""
    alphabets = ["abcdef-0123456789\x1f", "é中\U0001f600ß\x00\x7f"]
    return [
        "".join(draw.choice(alphabets[index % 2]) for _ in range(index % 300))
        for index in range(count)
    ]


@pytest.mark.skipif(span_columns._spanids is None, reason="the C hasher is not built")
@pytest.mark.parametrize("size", [1, 8, 16, 33, 64])
def test_the_compiled_digests_are_hashlibs(size: int) -> None:
    keys = [*_texts(random.Random(size), 700), "", "x" * 128, "x" * 129, "y" * 256, "z" * 10_000]
    expected = [hashlib.blake2b(key.encode(), digest_size=size).hexdigest() for key in keys]
    assert span_columns._spanids.digests(keys, size) == expected
    assert hashed(keys, size) == expected == hashed_python(keys, size)


@pytest.mark.skipif(span_columns._spanids is None, reason="the C hasher is not built")
def test_a_key_only_python_reads_goes_the_pure_way() -> None:
    assert span_columns._spanids.digests(["run", "lone \ud800"], 8) is None
    assert span_columns._spanids.digests(["run", b"bytes"], 8) is None  # type: ignore[list-item]
    with pytest.raises(UnicodeEncodeError):  # as hashing it in Python always raised
        hashed(["lone \ud800"])
    with pytest.raises(ValueError):
        span_columns._spanids.digests(["run"], 65)


def test_the_ids_are_span_ids() -> None:
    trace, span = span_ids("default", "run-1", 7, "activity")
    assert hashed(["default\x1frun-1"], 16) == [trace]
    assert hashed(["default\x1frun-1\x1f7\x1factivity"]) == [span]


def test_spans_without_the_compiled_hasher_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    events = tk.read_histories(ROOT / "data" / "openai_agents", progress=False).events
    expected = trace_spans(events, content=True)
    monkeypatch.setattr(span_columns, "_spanids", None)
    pd.testing.assert_frame_equal(trace_spans(events, content=True), expected)


def test_queue_times_are_pythons_rounding() -> None:
    draw = random.Random(24)
    queues: list[int | None] = [None, 0, 1, -1, 499, 500, 501, 1500, 2500, -500, -1500,
                                999_999_999, 10**18, -(10**18), 2**62, 2**63 - 1]  # fmt: skip
    queues += [draw.randrange(-10**12, 10**12) for _ in range(20_000)]
    # halves of the last digit kept (a microsecond), and a nanosecond either side of them
    queues += [draw.randrange(0, 10**9) * 500 + draw.choice([-1, 0, 1]) for _ in range(20_000)]
    queues += [draw.randrange(0, 10**6) for _ in range(5_000)]
    expected = [None if q is None else round(_seconds(q) * 1000, 3) for q in queues]
    assert [repr(ms) for ms in queue_milliseconds(queues)] == [repr(ms) for ms in expected]
    # beyond int64: each one by Python
    assert queue_milliseconds([10**30, None]) == [round(_seconds(10**30) * 1000, 3), None]


@pytest.mark.skipif(span_columns._spanids is None, reason="the C writer is not built")
def test_the_compiled_time_texts_are_stamp_texts() -> None:
    draw = random.Random(7)
    lowest, highest = pd.Timestamp.min.value, pd.Timestamp.max.value
    times: list[int | None] = [None, lowest, highest, -(2**63), 2**63 - 1, 0, -1, 1, 999,
                               1000, 999_999, 1_000_000, 10**9, -(10**9),
                               951_782_400 * 10**9]  # fmt: skip
    for scale in (1, 1000, 10**6, 10**9):  # every resolution the text has
        times += [draw.randrange(lowest // scale, highest // scale) * scale for _ in range(3000)]
    expected = ["" if t is None else _stamp_text(t) for t in times]
    assert span_columns._spanids.stamp_texts(times) == expected == stamp_texts(times)
    # beyond int64, or no int: the pure path's
    assert span_columns._spanids.stamp_texts([2**64]) is None
    assert span_columns._spanids.stamp_texts([1.5]) is None
    assert stamp_texts([2**64]) == [_stamp_text(2**64)]


@pytest.mark.skipif(span_columns._spanids is None, reason="the C hasher is not built")
@pytest.mark.parametrize("size", [1, 8, 16, 63, 64])
def test_keys_hashed_four_at_a_time_are_hashed_as_alone(size: int) -> None:
    # Keys of one block (at most 128 bytes) go four to AVX2's lanes, longer ones alone between
    # them: every count about four, lengths about the block's end, the two kinds mixed.
    draw = random.Random(size + 100)
    texts = _texts(draw, 400) + ["a" * n for n in (0, 1, 127, 128, 129, 255, 256, 257)]
    for count in [*range(10), 37, len(texts)]:
        keys = draw.sample(texts, count)
        expected = [hashlib.blake2b(key.encode(), digest_size=size).hexdigest() for key in keys]
        assert span_columns._spanids.digests(keys, size) == expected
        assert span_columns._spanids.digests(keys, size, False) == expected
