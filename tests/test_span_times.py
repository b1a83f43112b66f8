"""The spans' time texts and durations written from nanoseconds equal pandas' own text of the
timestamp and seconds of the duration (the spans' equality on data/ and the corpus is in
``test_traces_columnwise``)."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from toolkit.traces.span_rows import _seconds, _stamp_text

LOWEST, HIGHEST = pd.Timestamp.min.value, pd.Timestamp.max.value


@pytest.mark.parametrize("nanos", [
    LOWEST, HIGHEST, 0, -1, 1, 999, 1000, 999_999, 1_000_000, 10**9, -(10**9), 86_400 * 10**9,
    -86_400 * 10**9 + 1, 1_700_000_000_123_000_000, 1_700_000_000_000_000_001,
    1_700_000_000_000_123_000, 951_782_400 * 10**9,  # 2000-02-29
])  # fmt: skip
def test_a_time_text_is_the_timestamps(nanos: int) -> None:
    assert _stamp_text(nanos) == str(pd.Timestamp(nanos, tz="UTC"))


def test_time_texts_at_random_resolutions() -> None:
    draw = random.Random(24)
    for scale in (1, 1000, 10**6, 10**9):
        for _ in range(3000):
            nanos = draw.randint(LOWEST // scale, HIGHEST // scale) * scale
            assert _stamp_text(nanos) == str(pd.Timestamp(nanos, tz="UTC")), nanos


def test_seconds_are_the_durations() -> None:
    draw = random.Random(25)
    fixed = [0, 1, -1, 999_999_999, 10**9, -(10**9) - 1, 5_501_322_950, LOWEST + 1, HIGHEST]
    for scale in (1, 1000, 10**6):
        drawn = [draw.randint(-(10**15) // scale, 10**15 // scale) * scale for _ in range(20000)]
        drawn += [draw.randint(0, 10**10) for _ in range(5000)]
        for nanos in fixed + drawn:
            assert _seconds(nanos) == pd.Timedelta(nanos).total_seconds(), nanos


def test_time_texts_of_times_close_together() -> None:
    """Times that share their minute (a run's activities), across minute and day ends (a leap
    day's end too): each minute's text is written once and then reused."""
    draw = random.Random(26)
    for start in (0, 1_703_980_740 * 10**9, -(10**9) * 90, 951_868_740 * 10**9):
        nanos = start
        for _ in range(2000):
            nanos += draw.choice((1, 1000, 10**6, 10**9, 7 * 10**9 + 123_456))
            assert _stamp_text(nanos) == str(pd.Timestamp(nanos, tz="UTC")), nanos
