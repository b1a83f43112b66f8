"""Values as a reader reads them (toolkit.text), on the times, durations and cells of real runs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import toolkit as tk
from toolkit.text import count, duration, is_missing, listing, shown, span, when

DATA = Path(__file__).resolve().parents[1] / "data"
ROLLING = DATA / "adk" / "adk-1.28.1" / "rolling_upgrade_to_adk-1.29.0.json"
_RAW = re.compile(r"\bNaT\b|\bNone\b|\bnan\b|\[\]|<NA>|days \d\d:|\+00:00|:\d\d\.\d{4,}")


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0 s"), (0.00085, "850 µs"), (0.0123, "12 ms"), (0.9996, "1 s"), (3.24, "3.2 s"),
    (3.0, "3 s"), (12.4, "12 s"), (59.6, "1 min"), (250.4, "4 min 10 s"), (3600, "1 h"),
    (7500, "2 h 5 min"), (3 * 86400 + 4 * 3600 + 5, "3 d 4 h"), (-4.5, "-4.5 s"),
])  # fmt: skip
def test_durations_in_words(seconds: float, text: str) -> None:
    assert duration(seconds) == text
    assert duration(pd.Timedelta(seconds=seconds)) == text


def test_times_of_real_events_to_the_millisecond_in_utc() -> None:
    events = tk.read_history(ROLLING)
    for stamp in events["event_time"]:
        text = when(stamp)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{3})? UTC", text), text
        back = pd.Timestamp(text.removesuffix(" UTC"), tz="UTC")
        assert abs((back - stamp).total_seconds()) <= 0.0005
    first, last = events["event_time"].min(), events["event_time"].max()
    written = span(first, last)
    assert written.startswith(when(first, zone=False)) and written.endswith(
        f"{when(last, date=False)} ({duration(last - first)})"
    )  # one date for two times on the same day
    assert when(pd.NaT) == "unknown time" and when(None, missing="still open") == "still open"
    assert span(first, None) == when(first)


def test_counts_lists_and_unknowns() -> None:
    assert (count(1, "run"), count(0, "run"), count(1204, "run")) == ("1 run", "0 runs",
                                                                      "1,204 runs")
    assert count(2, "delivery", "deliveries") == "2 deliveries"
    assert listing([]) == "none" and listing(["a", None, "b"]) == "a and b"
    assert listing(list("abcdefg"), limit=3) == "a, b, c and 4 more"
    for value in (None, np.nan, pd.NaT, pd.NA, [], "", np.array([])):
        assert is_missing(value) and shown(value) == "unknown"
    assert shown(3.0) == "3" and shown([1, None, 2]) == "1, 2" and shown(True) == "yes"


def test_no_cell_of_real_runs_reads_as_a_raw_value(corpus: Path) -> None:
    """Every cell of the runs and findings of the public corpus, shown, reads as words."""
    found = tk.investigate(corpus / "histories")
    for frame in (found.runs, found.findings.drop(columns=["evidence"])):
        for column in frame.columns:
            for value in frame[column]:
                text = shown(value)
                assert not _RAW.search(text), (column, value, text)
