"""Percentile bootstrap confidence intervals over resampled units (items, positions, topics)."""

from __future__ import annotations

import warnings
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
    if n_units < 1:
        raise ValueError("bootstrap needs at least one unit")
    units = np.arange(n_units)
    estimate = float(statistic(units[None, :])[0] if vectorized else statistic(units))
    if resamples < 1:
        return Interval(estimate, float("nan"), float("nan"), level, resamples)
    if n_units == 1:  # scipy needs two units; every resample of one unit is that unit
        return Interval(estimate, estimate, estimate, level, resamples)
    from scipy import stats  # imported here: it takes half a second, and the app starts without it

    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        # scipy warns when NaN resamples make its interval NaN (they are left out below)
        # and when a single resample leaves its standard error (unused here) undefined
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.filterwarnings("ignore", "Degrees of freedom", RuntimeWarning)
        result = stats.bootstrap(
            (units,), (lambda indices, axis: statistic(indices)) if vectorized else statistic,
            n_resamples=resamples, vectorized=vectorized, confidence_level=level,
            method="percentile", rng=np.random.default_rng(seed),
        )
    low, high = result.confidence_interval
    if np.isnan(low) or np.isnan(high):
        low, high = stats.quantile(
            result.bootstrap_distribution, [(1 - level) / 2, (1 + level) / 2], nan_policy="omit"
        )
    return Interval(estimate, float(low), float(high), level, resamples)
