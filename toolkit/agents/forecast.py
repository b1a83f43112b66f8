"""When a run will reach a server limit, forecast from its first model calls.

The model: a durable agent's model call ``k`` sends the conversation so far, so its input grows
by about the same amount at every call, ``input(k) = base + increment * (k - 1)``; everything
else a call adds to the history (its output, the tool calls it asks for, workflow tasks) is about
constant, ``other``. The history right after call ``k`` is scheduled is then the size after the
last call seen plus, for every later call, ``input(j) + other``: it grows quadratically, as the
public reports show (temporalio/sdk-python#1890: model inputs were 99.8% of a 50 MB history).

A size limit is checked when the next change after the one that crossed it is written, so call
``k`` completes if the history is within the limit once ``k`` is scheduled; calls complete while
that holds. The same rule gives the event count limit (events per call about constant), the
payload limit (the input itself, once it exceeds ``payload_bytes``, cannot be scheduled) and the
task-completion limit (the scheduling task's request carries the input).

How sure: the input line is fitted by least squares; ``low`` and ``high`` come from 400 draws of
the fitted line and of ``other`` within their standard errors (a 90% interval). Two calls fit a
line exactly and give no spread, so a forecast from two calls is ``low`` confidence, from three to
five ``medium`` at best (the budget's ``confidence`` also weighs the spread).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Forecast", "Growth", "continue_as_new_calls", "fit_growth", "forecast_limits",
           "projected_history"]

#: How far ahead a forecast looks, in model calls; a limit further away is "not reached".
HORIZON = 100_000
MIN_CALLS = 2


@dataclass(frozen=True)
class Growth:
    """A run's fitted growth per model call.

    Attributes
    ----------
    calls : int
        Model calls it was fitted on.
    base, increment : float
        The first call's input bytes and what each later call's input adds.
    other : float
        Bytes each call adds to the history besides its input (output, tool calls, tasks).
    events_per_call : float
        Events each call adds.
    history_bytes, events : int
        The history's size and event count once the last fitted call was scheduled.
    input_bytes : int
        That call's input.
    input_sd, other_sd : float
        Standard deviations of the inputs around the line and of ``other``.
    """

    calls: int
    base: float
    increment: float
    other: float
    events_per_call: float
    history_bytes: int
    events: int
    input_bytes: int
    input_sd: float
    other_sd: float
    _cov: tuple[tuple[float, float], tuple[float, float]] | None = None
    _observed: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] = ((), (), ())

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "base": round(self.base), "increment": round(self.increment),
                "other": round(self.other), "events_per_call": round(self.events_per_call, 2),
                "input_sd": round(self.input_sd), "other_sd": round(self.other_sd)}  # fmt: skip


def fit_growth(
    history_bytes: list[int], events: list[int], inputs: list[int]
) -> Growth | None:
    """Fit :class:`Growth` to the first calls of a run (per call: the history size and event
    count right after it was scheduled, its input bytes). None with fewer than two calls."""
    n = len(history_bytes)
    if n < MIN_CALLS:
        return None
    k = np.arange(1, n + 1, dtype=float)
    x = np.asarray(inputs, dtype=float)
    design = np.column_stack([np.ones(n), k - 1])
    coef, *_ = np.linalg.lstsq(design, x, rcond=None)
    residual = x - design @ coef
    dof = n - 2
    sd = float(np.sqrt(residual @ residual / dof)) if dof > 0 else 0.0
    cov = None
    if dof > 0:
        inverse = np.linalg.inv(design.T @ design)
        cov = tuple(map(tuple, (sd * sd) * inverse))  # type: ignore[assignment]
    h = np.asarray(history_bytes, dtype=float)
    other = np.diff(h) - x[1:]
    e = np.diff(np.asarray(events, dtype=float))
    return Growth(
        calls=n, base=float(coef[0]), increment=float(coef[1]), other=float(other.mean()),
        events_per_call=float(e.mean()), history_bytes=int(h[-1]), events=int(events[-1]),
        input_bytes=int(x[-1]), input_sd=sd,
        other_sd=float(other.std(ddof=1)) if len(other) > 1 else 0.0, _cov=cov,
        _observed=(tuple(history_bytes), tuple(events), tuple(inputs)),
    )  # fmt: skip


@dataclass(frozen=True)
class Forecast:
    """Model calls that complete before each limit stops the run, by the fitted growth."""

    calls_before: dict[str, int | None]  # limit -> completed calls (None: beyond the horizon)
    first_limit: str | None
    calls: int | None
    low: int | None
    high: int | None


def _first_over(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The smallest whole ``m >= 1`` with ``a m^2 + b m + c > 0`` (elementwise), as a float
    array; ``inf`` where there is none within the horizon (growth that never gets there)."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, c)))
    out = np.full(a.shape, np.inf)
    already = c + a + b > 0  # m = 1
    out[already] = 1.0
    quad = (a > 1e-12) & ~already
    disc = b[quad] ** 2 - 4 * a[quad] * c[quad]
    root = (-b[quad] + np.sqrt(np.maximum(disc, 0))) / (2 * a[quad])
    m = np.floor(root) + 1
    # Floating point: step to the first integer that really is over.
    m = np.where(a[quad] * m**2 + b[quad] * m + c[quad] > 0, m, m + 1)
    out[quad] = np.maximum(m, 1)
    lin = (np.abs(a) <= 1e-12) & ~already & (b > 0)
    out[lin] = np.maximum(np.floor(-c[lin] / b[lin]) + 1, 1)
    out[out > HORIZON] = np.inf
    return out


def _calls_before(growth: Growth, limits: dict[str, int], base: Any, increment: Any,
                  other: Any) -> dict[str, np.ndarray]:  # fmt: skip
    """Completed model calls before each error limit (``inf``: not within the horizon), for one
    growth or for arrays of them.

    With ``m`` the number of calls after the last one seen (``n``): the history after call
    ``n + m`` is ``H + m (base + other) + increment (m n + m (m - 1) / 2)``, its events
    ``E + m e``, its input ``base + increment (n + m - 1)``; call ``n + m`` does not complete
    when that is over the limit, so ``n + m - 1`` do.
    """
    n = growth.calls
    seen = _seen_over(growth, limits)
    g = np.asarray(increment, dtype=float)
    first = {
        "history_bytes": _first_over(
            g / 2, base + other + g * n - g / 2, growth.history_bytes - limits["history_bytes"]
        ),
        "history_events": _first_over(
            0.0, growth.events_per_call, growth.events - limits["history_events"]
        ),
        "payload_bytes": _first_over(0.0, g, base + g * (n - 1) - limits["payload_bytes"]),
        # The task that schedules a call carries its input, and a little more for the command.
        "task_completion_bytes": _first_over(
            0.0, g, base + 512 + g * (n - 1) - limits["task_completion_bytes"]
        ),
    }
    return {name: (seen[name] if seen[name] is not None else n + m - 1)
            for name, m in first.items()}  # fmt: skip


def _seen_over(growth: Growth, limits: dict[str, int]) -> dict[str, int | None]:
    """Per limit, the calls completed before the first call seen over it (None: none was)."""
    history, events, inputs = (np.asarray(v, dtype=float) for v in growth._observed)
    values = {"history_bytes": history, "history_events": events, "payload_bytes": inputs,
              "task_completion_bytes": inputs + 512}  # fmt: skip
    out: dict[str, int | None] = {}
    for name, observed in values.items():
        over = np.flatnonzero(observed > limits[name])
        out[name] = int(over[0]) if len(over) else None
    return out


def forecast_limits(growth: Growth, limits: dict[str, int], *, draws: int = 400) -> Forecast:
    """How many model calls complete before each error limit, and which limit comes first.

    ``low``/``high``: the 5th and 95th percentiles of the first limit's count over ``draws``
    draws of the growth within its standard errors (the same as the point forecast when the
    fit has no spread). The draws use a fixed seed: the same history gives the same answer.
    """
    point = {
        name: (None if np.isinf(v) else int(v))
        for name, v in _calls_before(
            growth, limits, growth.base, growth.increment, growth.other
        ).items()
    }
    reached = {k: v for k, v in point.items() if v is not None}
    if not reached:
        return Forecast(point, None, None, None, None)
    first = min(reached, key=lambda name: reached[name])
    calls = reached[first]
    if growth._cov is None and growth.other_sd == 0:
        return Forecast(point, first, calls, calls, calls)
    rng = np.random.default_rng(0)
    mean = np.array([growth.base, growth.increment])
    lines = (rng.multivariate_normal(mean, np.array(growth._cov), size=draws)
             if growth._cov is not None else np.tile(mean, (draws, 1)))  # fmt: skip
    se_other = growth.other_sd / np.sqrt(max(growth.calls - 1, 1))
    others = rng.normal(growth.other, se_other, size=draws)
    drawn = _calls_before(growth, limits, lines[:, 0], lines[:, 1], others)
    counts = np.min(np.broadcast_arrays(*[np.minimum(v, HORIZON) for v in drawn.values()]), axis=0)
    low, high = np.percentile(counts, [5, 95])
    return Forecast(point, first, calls, int(np.floor(low)), int(np.ceil(high)))


def projected_history(growth: Growth, calls: np.ndarray) -> np.ndarray:
    """The history size right after each of ``calls`` (numbers > ``growth.calls``) is
    scheduled, by the fitted growth (for the forecast line of a chart)."""
    m = np.asarray(calls, dtype=float) - growth.calls
    g, n = growth.increment, growth.calls
    return growth.history_bytes + m * (growth.base + growth.other) + g * (m * n + m * (m - 1) / 2)


def continue_as_new_calls(growth: Growth, limits: dict[str, int]) -> int | None:
    """Model calls completed when the server would first suggest continue-as-new: the history
    is at ``continue_as_new_bytes`` (or events) once a call has been scheduled, so the task
    started after that call completes carries the suggestion. None beyond the horizon."""
    history, events, _ = (np.asarray(v, dtype=float) for v in growth._observed)
    seen = np.flatnonzero((history >= limits["continue_as_new_bytes"])
                          | (events >= limits["continue_as_new_events"]))  # fmt: skip
    if len(seen):
        return int(seen[0]) + 1
    n, g = growth.calls, growth.increment
    by_size = _first_over(g / 2, growth.base + growth.other + g * n - g / 2,
                          growth.history_bytes - limits["continue_as_new_bytes"] + 0.5)  # fmt: skip
    by_count = _first_over(0.0, growth.events_per_call,
                           growth.events - limits["continue_as_new_events"] + 0.5)  # fmt: skip
    first = float(min(by_size.item(), by_count.item()))
    return None if np.isinf(first) else n + int(first)
