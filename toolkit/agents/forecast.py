"""When a run will reach a server limit, forecast from its first model calls.

The model: a durable agent's model call ``k`` sends the conversation so far, so its input grows
by about the same amount at every call, ``input(k) = base + increment * (k - 1)``; everything
else a call adds to the history (its output, the tool calls it asks for, workflow tasks) is about
constant, ``other``. The history right after call ``k`` is scheduled is then the size after the
last call seen plus, for every later call, ``input(j) + other``: it grows quadratically, as the
public reports show (temporalio/sdk-python#1890: model inputs were 99.8% of a 50 MB history).

A size limit is checked when the next change after the one that crossed it is written, so call
``k`` completes if the history is within the limit once ``k`` is scheduled; calls complete while
that holds. The event count is checked with the change's own events included (the server counts
the next event id, the size only what it has written), so call ``k`` completes if the count once
it is scheduled, plus the events of its completion (started, completed and the next workflow
task's scheduling: ``COMPLETION_EVENTS``), is within the limit; events per call are about
constant. The same rule as for the size gives the
payload limit (the input itself, once it exceeds ``payload_bytes``, cannot be scheduled) and the
task-completion limit (the scheduling task's request carries the input).

How sure: the input line is fitted by least squares; ``low`` and ``high`` are a 90% interval of
the count, from the fit's standard errors carried through the crossing point (the delta method:
the crossing's gradient in the three parameters against their covariance). Two calls fit a
line exactly and give no spread, so a forecast from two calls is ``low`` confidence, from three to
five ``medium`` at best (the budget's ``confidence`` also weighs the spread).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Forecast", "Growth", "continue_as_new_calls", "fit_growth", "fit_history_growth",
           "forecast_limits", "projected_history"]

#: Events the completion of a model call writes in one change: its activity started and
#: completed events and the workflow task scheduled for the code to see the result.
COMPLETION_EVENTS = 3
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
    inputs_known : bool
        False for a fit on the history sizes alone (:func:`fit_history_growth`): ``base`` is
        then 0 and ``other`` stands for ``base + other``.
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
    inputs_known: bool = True

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
    # Least squares of input on (k - 1), k = 1..n, in closed form.
    # Lists rather than generators into sum(): the same additions in the same order (so the
    # same floats), at a fraction of the interpreter's cost for a fleet of runs.
    xs = range(n)
    x_mean, y_mean = (n - 1) / 2, sum(inputs) / n
    sxx = sum([(x - x_mean) ** 2 for x in xs])
    increment = sum([(x - x_mean) * (y - y_mean) for x, y in zip(xs, inputs, strict=True)]) / sxx
    base = y_mean - increment * x_mean
    residual = [y - (base + increment * x) for x, y in zip(xs, inputs, strict=True)]
    dof = n - 2
    sd = math.sqrt(sum([r * r for r in residual]) / dof) if dof > 0 else 0.0
    cov = None
    if dof > 0:
        var_increment = sd * sd / sxx
        cov_bi = -x_mean * var_increment
        cov = ((sd * sd / n + x_mean * x_mean * var_increment, cov_bi),
               (cov_bi, var_increment))  # fmt: skip
    other = [history_bytes[k] - history_bytes[k - 1] - inputs[k] for k in range(1, n)]
    other_mean = sum(other) / len(other)
    other_sd = (math.sqrt(sum([(v - other_mean) ** 2 for v in other]) / (len(other) - 1))
                if len(other) > 1 else 0.0)  # fmt: skip
    return Growth(
        calls=n, base=float(base), increment=float(increment), other=float(other_mean),
        events_per_call=(events[-1] - events[0]) / (n - 1), history_bytes=int(history_bytes[-1]),
        events=int(events[-1]), input_bytes=int(inputs[-1]), input_sd=sd, other_sd=other_sd,
        _cov=cov, _observed=(tuple(history_bytes), tuple(events), tuple(inputs)),
    )  # fmt: skip


def fit_history_growth(history_bytes: list[int], events: list[int]) -> Growth | None:
    """:class:`Growth` fitted on the history sizes alone, for a run whose model inputs' sizes
    are unknown (payloads an exporter stripped or decoded; the server's recorded sizes are not).

    The model's history after call ``k`` is quadratic in ``x = k - 1``: least squares of
    ``a + b x + c x^2`` gives ``increment = 2c`` and ``base + other = b - c`` (kept in ``other``,
    ``base`` 0, ``inputs_known`` False: the payload and task-completion limits, which compare
    the input itself, are not forecast). The spread comes from the fit's covariance, the two
    parameters' own variances (their covariance is left out, as for the input line's ``other``).
    None with fewer than three calls.
    """
    n = len(history_bytes)
    if n < 3:
        return None
    x = np.arange(n, dtype=np.float64)
    design = np.column_stack([np.ones(n), x, x * x])
    observed = np.asarray(history_bytes, dtype=np.float64)
    coef, *_ = np.linalg.lstsq(design, observed, rcond=None)
    _, b, c = (float(v) for v in coef)
    dof = n - 3
    cov = None
    other_sd = 0.0
    if dof > 0:
        residual = observed - design @ coef
        params = float(residual @ residual) / dof * np.linalg.inv(design.T @ design)
        var_increment = 4 * float(params[2, 2])
        var_other = float(params[1, 1] + params[2, 2] - 2 * params[1, 2])
        cov = ((0.0, 0.0), (0.0, var_increment))
        # _count_sd reads other's variance as other_sd^2 / (calls - 1)
        other_sd = math.sqrt(max(var_other, 0.0) * (n - 1))
    return Growth(
        calls=n, base=0.0, increment=2 * c, other=b - c,
        events_per_call=(events[-1] - events[0]) / (n - 1), history_bytes=int(history_bytes[-1]),
        events=int(events[-1]), input_bytes=0, input_sd=0.0, other_sd=other_sd, _cov=cov,
        _observed=(tuple(history_bytes), tuple(events), ()), inputs_known=False,
    )  # fmt: skip


#: The limits that compare a model call's input itself (not forecast without its size).
_INPUT_LIMITS = ("payload_bytes", "task_completion_bytes")


@dataclass(frozen=True)
class Forecast:
    """Model calls that complete before each limit stops the run, by the fitted growth."""

    calls_before: dict[str, int | None]  # limit -> completed calls (None: beyond the horizon)
    first_limit: str | None
    calls: int | None
    low: int | None
    high: int | None


def _first_over_one(a: float, b: float, c: float) -> float:
    """The smallest whole ``m >= 1`` with ``a m^2 + b m + c > 0``, or ``inf`` where there is
    none within the horizon (growth that never gets there). Plain floats: a forecast for each
    run of a fleet costs microseconds."""
    if c + a + b > 0:
        return 1.0
    if a > 1e-12:
        root = (-b + math.sqrt(max(b * b - 4 * a * c, 0.0))) / (2 * a)
        m = math.floor(root) + 1
        if not a * m * m + b * m + c > 0:
            m += 1
        m = max(m, 1)
    elif b > 0:
        m = max(math.floor(-c / b) + 1, 1)
    else:
        return math.inf
    return math.inf if m > HORIZON else float(m)


def _quadratics(growth: Growth, limits: dict[str, int], base: Any, increment: Any,
                other: Any) -> dict[str, tuple[Any, Any, Any]]:  # fmt: skip
    """Per error limit, ``(a, b, c)``: call ``n + m`` does not complete when
    ``a m^2 + b m + c > 0``.

    With ``m`` the number of calls after the last one seen (``n``): the history after call
    ``n + m`` is ``H + m (base + other) + increment (m n + m (m - 1) / 2)``, its events
    ``E + m e``, its input ``base + increment (n + m - 1)``; call ``n + m`` does not complete
    when that is over the limit, so ``n + m - 1`` do.
    """
    n, g = growth.calls, increment
    return {
        "history_bytes": (g / 2, base + other + g * n - g / 2,
                          growth.history_bytes - limits["history_bytes"]),
        "history_events": (0.0, growth.events_per_call,
                           growth.events + COMPLETION_EVENTS - limits["history_events"]),
        "payload_bytes": (0.0, g, base + g * (n - 1) - limits["payload_bytes"]),
        # The task that schedules a call carries its input, and a little more for the command.
        "task_completion_bytes": (0.0, g,
                                  base + 512 + g * (n - 1) - limits["task_completion_bytes"]),
    }  # fmt: skip


def _quadratic(growth: Growth, limits: dict[str, int], name: str, base: float, increment: float,
               other: float) -> tuple[float, float, float]:  # fmt: skip
    """:func:`_quadratics`' entry for limit ``name`` alone (the forecast's spread asks for one
    limit's, six times)."""
    n, g = growth.calls, increment
    if name == "history_bytes":
        return g / 2, base + other + g * n - g / 2, growth.history_bytes - limits[name]
    if name == "history_events":
        return 0.0, growth.events_per_call, growth.events + COMPLETION_EVENTS - limits[name]
    if name == "payload_bytes":
        return 0.0, g, base + g * (n - 1) - limits[name]
    return _quadratics(growth, limits, base, increment, other)[name]


def _seen_over(growth: Growth, limits: dict[str, int]) -> dict[str, int | None]:
    """Per limit, the calls completed before the first call seen over it (None: none was)."""
    history, events, inputs = growth._observed
    # Sizes and counts are whole numbers: ``v + extra > limit`` is ``v > limit - extra``, and a
    # series whose largest value is within the limit (most) is not looked through.
    series = (("history_bytes", history, 0), ("history_events", events, COMPLETION_EVENTS),
              ("payload_bytes", inputs, 0), ("task_completion_bytes", inputs, 512))  # fmt: skip
    out: dict[str, int | None] = {}
    for name, observed, extra in series:
        if not growth.inputs_known and name in _INPUT_LIMITS:
            out[name] = None
            continue
        limit = limits[name] - extra
        out[name] = (None if not observed or max(observed) <= limit else
                     next(k for k, v in enumerate(observed) if v > limit))  # fmt: skip
    return out


def forecast_limits(growth: Growth, limits: dict[str, int]) -> Forecast:
    """How many model calls complete before each error limit, and which limit comes first.

    ``low``/``high``: a 90% interval of the first limit's count (the same as the point
    forecast when the fit has no spread, or when the limit was crossed by a call seen).
    """
    seen = _seen_over(growth, limits)
    n = growth.calls
    point: dict[str, int | None] = {}
    for name, (a, b, c) in _quadratics(growth, limits, growth.base, growth.increment,
                                       growth.other).items():  # fmt: skip
        if seen[name] is not None:
            point[name] = seen[name]
            continue
        if not growth.inputs_known and name in _INPUT_LIMITS:
            point[name] = None  # the inputs' sizes are unknown
            continue
        m = _first_over_one(a, b, c)
        point[name] = None if math.isinf(m) else n + int(m) - 1
    reached = {k: v for k, v in point.items() if v is not None}
    if not reached:
        return Forecast(point, None, None, None, None)
    first = min(reached, key=lambda name: reached[name])
    calls = reached[first]
    spread = growth._cov is not None and (growth.input_sd > 0 or growth.other_sd > 0)
    if not spread or seen[first] is not None:
        return Forecast(point, first, calls, calls, calls)
    sd = _count_sd(growth, limits, first)
    low = max(growth.calls, math.floor(calls - 1.645 * sd))
    high = math.ceil(calls + 1.645 * sd)
    return Forecast(point, first, calls, int(low), int(min(high, HORIZON)))


def _crossing(growth: Growth, limits: dict[str, int], name: str, base: float, increment: float,
              other: float) -> float:  # fmt: skip
    """Where ``name``'s quadratic crosses zero, as a real number of calls after the last seen."""
    a, b, c = _quadratic(growth, limits, name, base, increment, other)
    if a > 1e-12:
        return (-b + math.sqrt(max(b * b - 4 * a * c, 0.0))) / (2 * a)
    return -c / b if b > 0 else math.inf


def _count_sd(growth: Growth, limits: dict[str, int], name: str) -> float:
    """Standard deviation of the forecast count, by the delta method: the crossing's gradient
    in (base, increment, other), by central differences, against their covariance (the
    input line's from the fit; ``other``'s standard error, independent of it)."""
    theta = [growth.base, growth.increment, growth.other]
    steps = [max(abs(v) * 1e-4, 1e-3) for v in theta]
    gradient = []
    for i, step in enumerate(steps):
        up, down = list(theta), list(theta)
        up[i] += step
        down[i] -= step
        high = _crossing(growth, limits, name, *up)
        low = _crossing(growth, limits, name, *down)
        if math.isinf(high) or math.isinf(low):
            return 0.0
        gradient.append((high - low) / (2 * step))
    (vb, cbi), (_, vi) = growth._cov or ((0.0, 0.0), (0.0, 0.0))
    vo = (growth.other_sd / math.sqrt(max(growth.calls - 1, 1))) ** 2
    gb, gi, go = gradient
    variance = gb * gb * vb + 2 * gb * gi * cbi + gi * gi * vi + go * go * vo
    return math.sqrt(max(variance, 0.0))


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
    history, events, _ = growth._observed
    for k, (size, count) in enumerate(zip(history, events, strict=True)):
        if size >= limits["continue_as_new_bytes"] or count >= limits["continue_as_new_events"]:
            return k + 1
    n, g = growth.calls, growth.increment
    by_size = _first_over_one(g / 2, growth.base + growth.other + g * n - g / 2,
                              growth.history_bytes - limits["continue_as_new_bytes"] + 0.5)
    by_count = _first_over_one(0.0, growth.events_per_call,
                               growth.events - limits["continue_as_new_events"] + 0.5)
    first = min(by_size, by_count)
    return None if math.isinf(first) else n + int(first)
