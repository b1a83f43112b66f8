"""The scalar forecast of toolkit.agents.forecast as it was at 9270d14 (one run at a time, plain
floats), kept as the oracle its column-wise replacement must equal to the last bit
(tests/test_forecast_columnwise.py). Import with ``from forecast_reference import ...``.
"""

from __future__ import annotations

import math
from typing import Any

from toolkit.agents.forecast import (
    _INPUT_LIMITS,
    COMPLETION_EVENTS,
    HORIZON,
    Forecast,
    Growth,
    _seen_over,  # unchanged by the column-wise forecast: shared
)


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
