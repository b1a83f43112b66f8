"""The spans' time texts and durations written from nanoseconds equal pandas' own text of the
timestamp and seconds of the duration (the spans' equality on data/ and the corpus is in
``test_traces_columnwise``)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from toolkit.traces.span_rows import _seconds, _stamp_text
from toolkit.traces.spans import _first_last_rows

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


def _grouped(times: pd.Series, run: np.ndarray) -> tuple[list, list]:
    grouped = times.groupby(run, sort=True)
    return ([None if pd.isna(t) else t.value for t in grouped.min().tolist()],
            [None if pd.isna(t) else t.value for t in grouped.max().tolist()])  # fmt: skip


def test_run_times_by_segment_equal_the_groupby() -> None:
    from toolkit.traces.spans import _run_times

    draw = random.Random(27)
    for case in range(300):
        sizes = [draw.randint(1, 6) for _ in range(draw.randint(1, 12))]
        run = np.repeat(np.arange(len(sizes)), sizes)
        nanos = [draw.choice([None, LOWEST, HIGHEST, draw.randint(LOWEST, HIGHEST)])
                 if case % 3 == 0 else draw.randint(0, 10**18) for _ in run]  # fmt: skip
        times = pd.Series(pd.array([pd.NaT if n is None else pd.Timestamp(n, tz="UTC")
                                    for n in nanos], dtype="datetime64[ns, UTC]"))  # fmt: skip
        first_row = np.unique(run, return_index=True)[1]
        assert _run_times(times, run, first_row) == _grouped(times, run)
        shuffled = draw.sample(range(len(run)), len(run))  # runs apart: the groupby itself
        run_apart = run[shuffled]
        first_apart = np.unique(run_apart, return_index=True)[1]
        assert _run_times(times, run_apart, first_apart) == _grouped(times, run_apart)


def test_each_runs_first_and_last_rows_are_np_uniques() -> None:
    draw = np.random.default_rng(5)
    cases = [np.array([], dtype=np.int64), np.array([0]), np.array([0, 0, 0]),
             np.array([0, 1, 1, 2]), np.array([3, 3, 5]), np.array([1, 0, 1])]  # fmt: skip
    cases += [np.sort(draw.integers(0, 40, 500)) for _ in range(20)]  # together, in order
    cases += [draw.integers(0, 40, 500) for _ in range(20)]  # apart
    for run in cases:
        first, last = _first_last_rows(run)
        assert first.tolist() == np.unique(run, return_index=True)[1].tolist()
        assert last.tolist() == (len(run) - 1 - np.unique(run[::-1], return_index=True)[1]).tolist()
        assert first.dtype == last.dtype == np.intp


def test_turn_ends_are_each_turns_latest_time() -> None:
    from toolkit.traces.span_columns import turn_ends

    draw = random.Random(11)

    def time() -> int | None:
        return None if draw.random() < 0.2 else draw.randrange(-5, 50)

    for together in (True, False):
        for _ in range(200):
            keys = [(draw.randrange(3), draw.randrange(4)) for _ in range(draw.randrange(30))]
            if together:  # each turn's activities one after another, as the spans read them
                keys.sort()
            codes, turns = [k[0] for k in keys], [k[1] for k in keys]
            scheduled, started, closed = ([time() for _ in keys] for _ in range(3))
            expected: dict[tuple[int, int], int] = {}
            for key, *times in zip(keys, scheduled, started, closed, strict=True):
                present = [t for t in times if t is not None]
                if present:
                    expected[key] = max(expected.get(key, max(present)), max(present))
            assert turn_ends(codes, turns, scheduled, started, closed) == expected
