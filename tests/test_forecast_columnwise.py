"""The forecast made for many runs at once (arrays) gives, to the last bit, what the scalar
forecast it replaced gives run by run (tests/forecast_reference.py): on the growth of every run of
data/ and the corpus fitted on every prefix, and on random growths that reach the edges (two
calls and no spread, inputs unknown, no growth, limits already crossed, beyond the horizon).
The growths fitted for many runs at once (``fit_growth_many``) are :func:`fit_growth`'s, float
for float, on the same prefixes and on random calls (runs too long to pad included)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from forecast_reference import continue_as_new_calls as reference_continue_as_new
from forecast_reference import forecast_limits as reference_forecast

import toolkit as tk
from toolkit.agents.forecast import (
    Growth,
    continue_as_new_many,
    fit_growth,
    fit_growth_many,
    fit_history_growth,
    forecast_many,
)
from toolkit.agents.growth import calls_of, runs_of
from toolkit.histories.server_limits import resolve_limits

ROOT = Path(__file__).resolve().parents[1]
LIMITS = [resolve_limits(None), resolve_limits("cloud"),
          resolve_limits({"history_bytes": 200_000, "history_events": 400,
                          "payload_bytes": 50_000, "task_completion_bytes": 60_000})]  # fmt: skip


def _assert_same(growths: list[Growth]) -> None:
    for limits in LIMITS:
        many = forecast_many(growths, limits)
        ahead = continue_as_new_many(growths, limits)
        for growth, found, at in zip(growths, many, ahead, strict=True):
            assert found == reference_forecast(growth, limits), growth
            assert at == reference_continue_as_new(growth, limits), growth


def _recorded_growths(corpus: Path) -> list[Growth]:
    events = pd.concat([tk.read_histories(folder, progress=False)[0]
                        for folder in (ROOT / "data", corpus / "histories")],
                       ignore_index=True)  # fmt: skip
    growths = []
    for run in runs_of(events):
        calls, _ = calls_of(run)
        for end in range(2, len(calls) + 1):
            used = calls[:end]
            history, counts = [c.history_bytes for c in used], [c.events for c in used]
            for growth in (fit_growth(history, counts, [c.input_bytes for c in used]),
                           fit_history_growth(history, counts)):  # fmt: skip
                if growth is not None:
                    growths.append(growth)
    return growths


def test_forecasts_of_every_recorded_run_and_prefix_equal_the_scalar_forecast(corpus) -> None:
    growths = _recorded_growths(corpus)
    assert len(growths) > 1000
    _assert_same(growths)


@pytest.mark.parametrize("seed", range(4))
def test_forecasts_of_random_growths_equal_the_scalar_forecast(seed: int) -> None:
    rng = random.Random(seed)
    growths = []
    for _ in range(1500):
        n = rng.choice([2, 2, 3, 4, 7, 30])
        base = rng.choice([0, rng.randrange(1, 5_000), rng.randrange(10**5, 10**7)])
        step = rng.choice([0, 0, rng.randrange(1, 300), rng.randrange(1_000, 3 * 10**6),
                           -rng.randrange(1, 500)])  # fmt: skip
        inputs = [max(0, base + step * k + rng.randrange(-50, 51) * (step != 0))
                  for k in range(n)]  # fmt: skip
        history, events, size = [], [], rng.randrange(500, 3 * 10**7)
        for k in range(n):
            size += inputs[k] + rng.randrange(0, 40_000)
            history.append(size)
            events.append(4 + 7 * k + rng.randrange(0, 3))
        for growth in (fit_growth(history, events, inputs), fit_history_growth(history, events)):
            if growth is not None:
                growths.append(growth)
    _assert_same(growths)


def _assert_fitted_alike(history: list[int], events: list[int], inputs: list[int],
                         segments: list[tuple[int, int]]) -> None:  # fmt: skip
    arrays = [np.array(values, np.int64) for values in (history, events, inputs)]
    many = fit_growth_many(*arrays, [low for low, _ in segments], [high for _, high in segments])
    for (low, high), growth in zip(segments, many, strict=True):
        one = fit_growth(history[low:high], events[low:high], inputs[low:high])
        # repr tells every float apart to the last bit (and -0.0 from 0.0), == the rest
        assert growth == one and repr(growth) == repr(one), (low, high)


def test_growths_fitted_together_are_those_fitted_one_by_one_on_recorded_runs(corpus) -> None:
    events = pd.concat([tk.read_histories(folder, progress=False)[0]
                        for folder in (ROOT / "data", corpus / "histories")],
                       ignore_index=True)  # fmt: skip
    history, counts, inputs, segments = [], [], [], []
    for run in runs_of(events):
        calls, _ = calls_of(run)
        low = len(history)
        history += [c.history_bytes for c in calls]
        counts += [c.events for c in calls]
        inputs += [c.input_bytes for c in calls]
        segments += [(low, low + end) for end in range(len(calls) + 1)]  # every prefix
    assert len(segments) > 1000
    _assert_fitted_alike(history, counts, inputs, segments)


@pytest.mark.parametrize("seed", range(3))
def test_growths_fitted_together_are_those_fitted_one_by_one_on_random_calls(seed: int) -> None:
    rng = random.Random(seed)
    history, events, inputs, segments = [], [], [], []
    for _ in range(400):
        n = rng.choice([0, 1, 2, 3, 5, 9, 40, 200, 513, 700])  # over 512: fitted on its own
        base = rng.choice([0, rng.randrange(1, 5_000), rng.randrange(10**5, 10**9)])
        step = rng.choice([0, rng.randrange(1, 300), rng.randrange(1_000, 3 * 10**6),
                           -rng.randrange(1, 500)])  # fmt: skip
        low, size = len(history), rng.randrange(500, 3 * 10**7)
        for k in range(n):
            inputs.append(max(0, base + step * k + rng.randrange(-10**4, 10**4)))
            size += inputs[-1] + rng.randrange(0, 40_000)
            history.append(size)
            events.append(4 + 7 * k + rng.randrange(0, 3))
        segments.append((low, low + n))
    _assert_fitted_alike(history, events, inputs, segments)
