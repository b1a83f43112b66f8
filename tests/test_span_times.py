"""The spans' time texts written from nanoseconds equal pandas' own text of the timestamp (the
spans' equality on data/ and the corpus is in ``test_traces_columnwise``)."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from toolkit.traces.span_rows import _stamp_text

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
