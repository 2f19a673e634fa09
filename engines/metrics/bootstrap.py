"""Percentile bootstrap confidence intervals over resampled units (items, positions, topics)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    level: float
    resamples: int


def bootstrap_ci(
    statistic: Callable[[np.ndarray], float],
    n_units: int,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    vectorized: bool = False,
) -> Interval:
    """`statistic(indices)` on all units, and the percentile interval over resampled indices.

    The statistic receives an array of unit indices (with repeats), so paired or
    grouped data stay together when resampled by unit. Resamples where the
    statistic is undefined (NaN) are left out of the interval. `vectorized`: the
    statistic takes a 2-D array, one resample's indices per row, and returns one
    value per row (all resamples in one call; the same resamples as one at a time).
    """
    if vectorized:
        return bootstrap_intervals(lambda rows: np.asarray(statistic(rows))[:, None], n_units,
                                   resamples=resamples, level=level, seed=seed)[0]
    return bootstrap_intervals(
        lambda rows: np.array([[statistic(row)] for row in rows], dtype=float), n_units,
        resamples=resamples, level=level, seed=seed,
    )[0]


def bootstrap_intervals(
    statistics: Callable[[np.ndarray], np.ndarray],
    n_units: int,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> list[Interval]:
    """The intervals of several statistics over the same resamples (each as `bootstrap_ci` would
    give it alone): `statistics(rows)` takes a 2-D array, one resample's unit indices per row, and
    returns a 2-D array, one row of values per resample and one column per statistic."""
    if n_units < 1:
        raise ValueError("bootstrap needs at least one unit")
    estimates = [float(value) for value in statistics(np.arange(n_units)[None, :])[0]]
    if resamples < 1:
        return [Interval(estimate, float("nan"), float("nan"), level, resamples) for estimate in estimates]
    if n_units == 1:  # every resample of one unit is that unit
        return [Interval(estimate, estimate, estimate, level, resamples) for estimate in estimates]
    # scipy.stats.bootstrap's percentile method, step for step (the same draws from the seed, the
    # same quantile arithmetic: the same intervals, tests/test_metrics_shared.py), without
    # importing scipy.stats, which costs a report more than a second
    rows = np.random.default_rng(seed).integers(0, n_units, (resamples, n_units))
    with np.errstate(invalid="ignore"):
        values = statistics(rows)
    alpha = (1 - level) / 2
    return [
        Interval(estimate, *_percentiles(values[:, column], np.array([alpha, 1 - alpha])), level, resamples)
        for column, estimate in enumerate(estimates)
    ]


def _percentiles(values: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """scipy.stats.quantile(values, p, nan_policy="omit") with its default (linear) method, in its
    arithmetic (numpy's quantile interpolates otherwise, which moves the last digit): NaN values
    (resamples where the statistic is undefined) are left out."""
    ordered = np.sort(values[~np.isnan(values)])
    n = len(ordered)
    if n == 0:
        return float("nan"), float("nan")
    position = p * n + (1 - p)
    upper = position // 1
    weight = position % 1
    lower = upper - 1
    weight[lower < 0] = 0
    lower, upper = np.clip(lower, 0, n - 1).astype(np.int64), np.clip(upper, 0, n - 1).astype(np.int64)
    low, high = (1 - weight) * ordered[lower] + weight * ordered[upper]
    return float(low), float(high)
