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

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Forecast", "Growth", "continue_as_new_calls", "continue_as_new_many", "fit_growth",
           "fit_growth_many",
           "fit_history_growth", "forecast_limits", "forecast_many", "projected_history"]

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


#: The most calls a run may have to be fitted with the others in one set of arrays (padded to the
#: longest); a longer run is fitted on its own, so one long run never pads the rest.
_PADDED_CALLS = 512


def fit_growth_many(history_bytes: np.ndarray, events: np.ndarray, inputs: np.ndarray,
                    lows: list[int], highs: list[int]) -> list[Growth | None]:  # fmt: skip
    """:func:`fit_growth` of many runs at once: run ``r``'s calls are ``lows[r]`` to ``highs[r]``
    of the three int64 arrays. The same floats to the last bit: every sum is a running sum in
    the scalar code's order (``np.cumsum`` after a 0.0, as ``sum()`` starts), every product
    and quotient the same operation; only the other bytes' spread, whose squares the scalar
    code takes with ``**`` (libm's ``pow``, not always ``x * x`` to the last bit), is summed in
    Python."""
    out: list[Growth | None] = [None] * len(lows)
    sizes = np.asarray(highs, np.int64) - np.asarray(lows, np.int64)
    padded = np.flatnonzero((sizes >= MIN_CALLS) & (sizes <= _PADDED_CALLS))
    for run in np.flatnonzero(sizes > _PADDED_CALLS).tolist():
        low, high = lows[run], highs[run]
        out[run] = fit_growth(history_bytes[low:high].tolist(), events[low:high].tolist(),
                              inputs[low:high].tolist())  # fmt: skip
    if not len(padded):
        return out
    n = sizes[padded]
    width = int(n.max())
    column = np.arange(width)
    inside = column < n[:, None]
    at = np.asarray(lows, np.int64)[padded][:, None] + np.where(inside, column, 0)
    y = np.where(inside, inputs[at], 0)
    nf = n.astype(np.float64)
    x_mean = (nf - 1) / 2
    y_mean = y.sum(axis=1).astype(np.float64) / nf  # whole numbers: the sum is exact
    dx = np.where(inside, column - x_mean[:, None], 0.0)
    # Squares of halves and whole numbers are exact, and so is their sum, in any order.
    sxx = (dx * dx).sum(axis=1)
    increment = _running_sum(np.where(inside, dx * (y - y_mean[:, None]), 0.0)) / sxx
    base = y_mean - increment * x_mean
    residual = np.where(inside, y - (base[:, None] + increment[:, None] * column), 0.0)
    dof = n - 2
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.where(dof > 0, np.sqrt(_running_sum(residual * residual) / dof), 0.0)
        var_increment = sd * sd / sxx
    cov_bi = -x_mean * var_increment
    cov_00 = sd * sd / nf + x_mean * x_mean * var_increment
    h = np.where(inside, history_bytes[at], 0)
    other = np.where(inside[:, 1:], h[:, 1:] - h[:, :-1] - y[:, 1:], 0)
    other_mean = other.sum(axis=1).astype(np.float64) / (nf - 1)
    first_events = events[at[:, 0]]
    last = at[np.arange(len(padded)), n - 1]
    per_call = (events[last] - first_events).astype(np.float64) / (nf - 1)
    columns = [padded.tolist(), n.tolist(), base.tolist(), increment.tolist(),
               other_mean.tolist(), per_call.tolist(), sd.tolist(), cov_00.tolist(),
               cov_bi.tolist(), var_increment.tolist(), dof.tolist()]
    history_list, events_list, inputs_list = (a.tolist() for a in (history_bytes, events, inputs))
    for run, count, b, inc, mean, step, spread, c00, cbi, vinc, free in zip(*columns, strict=True):
        low, high = lows[run], highs[run]
        others = [history_list[k] - history_list[k - 1] - inputs_list[k]
                  for k in range(low + 1, high)]  # fmt: skip
        other_sd = (math.sqrt(sum([(v - mean) ** 2 for v in others]) / (len(others) - 1))
                    if len(others) > 1 else 0.0)  # fmt: skip
        out[run] = Growth(
            calls=count, base=b, increment=inc, other=mean, events_per_call=step,
            history_bytes=history_list[high - 1], events=events_list[high - 1],
            input_bytes=inputs_list[high - 1], input_sd=spread, other_sd=other_sd,
            _cov=((c00, cbi), (cbi, vinc)) if free > 0 else None,
            _observed=(tuple(history_list[low:high]), tuple(events_list[low:high]),
                       tuple(inputs_list[low:high])),
        )  # fmt: skip
    return out


def _running_sum(terms: np.ndarray) -> np.ndarray:
    """Each row's sum added up left to right from 0.0, as Python's ``sum()`` of a list does
    (numpy's own sum pairs the terms: other floats)."""
    if not terms.shape[1]:
        return np.zeros(len(terms))
    return np.cumsum(np.concatenate([np.zeros((len(terms), 1)), terms], axis=1), axis=1)[:, -1]


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


def _first_over_one(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per run, the smallest whole ``m >= 1`` with ``a m^2 + b m + c > 0``, or ``inf`` where there
    is none within the horizon (growth that never gets there). Every operation is the one a run's
    own arithmetic would do, in the same order: the same floats, a fleet at once."""
    with np.errstate(all="ignore"):
        root = (-b + np.sqrt(np.maximum(b * b - 4 * a * c, 0.0))) / (2 * a)
        m = np.floor(root) + 1
        m = np.maximum(np.where(a * m * m + b * m + c > 0, m, m + 1), 1)
        line = np.maximum(np.floor(-c / b) + 1, 1)
    found = np.where(a > 1e-12, m, np.where(b > 0, line, np.inf))
    found = np.where(found > HORIZON, np.inf, found)
    return np.where(c + a + b > 0, 1.0, found)


#: The error limits in the order a forecast names the first of those reached at once.
_LIMIT_ORDER = ("history_bytes", "history_events", "payload_bytes", "task_completion_bytes")


class _Runs:
    """The fitted growths of many runs as arrays (floats where a run's arithmetic has floats)."""

    def __init__(self, growths: list[Growth]) -> None:
        def column(name: str) -> np.ndarray:
            return np.array([getattr(g, name) for g in growths], dtype=np.float64)

        self.n = column("calls")
        self.base, self.increment, self.other = column("base"), column("increment"), column(
            "other")  # fmt: skip
        self.events_per_call = column("events_per_call")
        self.history_bytes, self.events = column("history_bytes"), column("events")

    def quadratic(self, name: str, limits: dict[str, int], base: np.ndarray,
                  increment: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, ...]:  # fmt: skip
        """``(a, b, c)`` of limit ``name`` per run: call ``n + m`` does not complete when
        ``a m^2 + b m + c > 0``.

        With ``m`` the number of calls after the last one seen (``n``): the history after call
        ``n + m`` is ``H + m (base + other) + increment (m n + m (m - 1) / 2)``, its events
        ``E + m e``, its input ``base + increment (n + m - 1)``; call ``n + m`` does not
        complete when that is over the limit, so ``n + m - 1`` do."""
        n, g, zero = self.n, increment, np.zeros(len(self.n))
        if name == "history_bytes":
            return g / 2, base + other + g * n - g / 2, self.history_bytes - limits[name]
        if name == "history_events":
            return zero, self.events_per_call, self.events + COMPLETION_EVENTS - limits[name]
        if name == "payload_bytes":
            return zero, g, base + g * (n - 1) - limits[name]
        # The task that schedules a call carries its input, and a little more for the command.
        return zero, g, base + 512 + g * (n - 1) - limits[name]

    def crossing(self, name: str, limits: dict[str, int], base: np.ndarray,
                 increment: np.ndarray, other: np.ndarray) -> np.ndarray:  # fmt: skip
        """Where ``name``'s quadratic crosses zero, as a real number of calls after the last
        seen."""
        a, b, c = self.quadratic(name, limits, base, increment, other)
        with np.errstate(all="ignore"):
            root = (-b + np.sqrt(np.maximum(b * b - 4 * a * c, 0.0))) / (2 * a)
            line = np.where(b > 0, -c / b, np.inf)
        return np.where(a > 1e-12, root, line)


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
    return forecast_many([growth], limits)[0]


def forecast_many(growths: list[Growth], limits: dict[str, int]) -> list[Forecast]:
    """:func:`forecast_limits` of many runs at once (their quadratics solved as arrays)."""
    if not growths:
        return []
    runs = _Runs(growths)
    seen = [_seen_over(g, limits) for g in growths]
    over = {name: _first_over_one(*runs.quadratic(name, limits, runs.base, runs.increment,
                                                  runs.other)).tolist()
            for name in _LIMIT_ORDER}  # fmt: skip
    out: list[Forecast] = []
    pending: list[tuple[int, str, int]] = []  # runs whose interval needs the spread
    for k, growth in enumerate(growths):
        point: dict[str, int | None] = {}
        for name in _LIMIT_ORDER:
            if seen[k][name] is not None:
                point[name] = seen[k][name]
            elif not growth.inputs_known and name in _INPUT_LIMITS:
                point[name] = None  # the inputs' sizes are unknown
            else:
                m = over[name][k]
                point[name] = None if math.isinf(m) else growth.calls + int(m) - 1
        reached = {name: v for name, v in point.items() if v is not None}
        if not reached:
            out.append(Forecast(point, None, None, None, None))
            continue
        first = min(reached, key=lambda name: reached[name])
        calls = reached[first]
        spread = growth._cov is not None and (growth.input_sd > 0 or growth.other_sd > 0)
        out.append(Forecast(point, first, calls, calls, calls))
        if spread and seen[k][first] is None:
            pending.append((k, first, calls))
    if pending:
        sds = _count_sds(runs, growths, limits, pending)
        for (k, first, calls), sd in zip(pending, sds.tolist(), strict=True):
            low = max(growths[k].calls, math.floor(calls - 1.645 * sd))
            high = math.ceil(calls + 1.645 * sd)
            out[k] = Forecast(out[k].calls_before, first, calls, int(low),
                              int(min(high, HORIZON)))  # fmt: skip
    return out


def _count_sds(runs: _Runs, growths: list[Growth], limits: dict[str, int],
               pending: list[tuple[int, str, int]]) -> np.ndarray:  # fmt: skip
    """Per pending run, the standard deviation of its forecast count, by the delta method: the
    crossing's gradient in (base, increment, other), by central differences, against their
    covariance (the input line's from the fit; ``other``'s standard error, independent of it)."""
    at = np.array([k for k, _, _ in pending], dtype=np.int64)
    names = [name for _, name, _ in pending]
    theta = [runs.base, runs.increment, runs.other]
    steps = [np.maximum(np.abs(v) * 1e-4, 1e-3) for v in theta]
    gradient = []
    infinite = np.zeros(len(at), dtype=bool)
    chosen = {name: np.array([n == name for n in names]) for name in set(names)}
    for i, step in enumerate(steps):
        ends = []
        for sign in (1, -1):
            moved = [v + sign * step if j == i else v for j, v in enumerate(theta)]
            value = np.zeros(len(at))
            for name, mine in chosen.items():
                value[mine] = runs.crossing(name, limits, *moved)[at[mine]]
            ends.append(value)
        high, low = ends
        infinite |= np.isinf(high) | np.isinf(low)
        gradient.append((high - low) / (2 * step[at]))
    covariances = [g._cov or ((0.0, 0.0), (0.0, 0.0)) for g in (growths[k] for k in at.tolist())]
    vb = np.array([cov[0][0] for cov in covariances])
    cbi = np.array([cov[0][1] for cov in covariances])
    vi = np.array([cov[1][1] for cov in covariances])
    # A run's own arithmetic squares with pow(): kept, per run, so the floats are the same.
    vo = np.array([(growths[k].other_sd / math.sqrt(max(growths[k].calls - 1, 1))) ** 2
                   for k in at.tolist()])  # fmt: skip
    gb, gi, go = gradient
    with np.errstate(all="ignore"):
        variance = gb * gb * vb + 2 * gb * gi * cbi + gi * gi * vi + go * go * vo
    sd = np.sqrt(np.maximum(variance, 0.0))
    return np.where(infinite, 0.0, sd)


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
    return continue_as_new_many([growth], limits)[0]


def continue_as_new_many(growths: list[Growth], limits: dict[str, int]) -> list[int | None]:
    """:func:`continue_as_new_calls` of many runs at once."""
    if not growths:
        return []
    runs = _Runs(growths)
    n, g = runs.n, runs.increment
    by_size = _first_over_one(g / 2, runs.base + runs.other + g * n - g / 2,
                              runs.history_bytes - limits["continue_as_new_bytes"] + 0.5)
    by_count = _first_over_one(np.zeros(len(n)), runs.events_per_call,
                               runs.events - limits["continue_as_new_events"] + 0.5)
    first = np.minimum(by_size, by_count).tolist()
    out: list[int | None] = []
    for growth, ahead, seen in zip(growths, first, _first_seen_over(growths, limits), strict=True):
        out.append(seen if seen is not None else
                   None if math.isinf(ahead) else growth.calls + int(ahead))  # fmt: skip
    return out


def _first_seen_over(growths: list[Growth], limits: dict[str, int]) -> list[int | None]:
    """Per run, the first of its observed calls (1-based) at which the history was already at
    the continue-as-new suggestion's size or event count; None where none was."""
    lengths = np.array([len(growth._observed[0]) for growth in growths], np.int64)
    if not lengths.sum():
        return [None] * len(growths)
    history = np.fromiter(itertools.chain.from_iterable(g._observed[0] for g in growths),
                          np.int64, int(lengths.sum()))  # fmt: skip
    events = np.fromiter(itertools.chain.from_iterable(g._observed[1] for g in growths),
                         np.int64, int(lengths.sum()))  # fmt: skip
    over = (history >= limits["continue_as_new_bytes"]) | (
        events >= limits["continue_as_new_events"])  # fmt: skip
    offsets = np.cumsum(lengths) - lengths
    step = np.arange(len(over)) - np.repeat(offsets, lengths)  # each call's place in its run
    none = np.iinfo(np.int64).max
    found = np.full(len(growths), none, np.int64)
    has = lengths > 0
    found[has] = np.minimum.reduceat(np.where(over, step, none), offsets[has])
    return [None if k == none else k + 1 for k in found.tolist()]
