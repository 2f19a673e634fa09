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
) -> Interval:
    """`statistic(indices)` on all units, and the percentile interval over resampled indices.

    The statistic receives an array of unit indices (with repeats) so any
    paired or grouped data can be resampled by unit. Resamples where the
    statistic is undefined (NaN) are left out of the interval.
    """
    if n_units < 1:
        raise ValueError("bootstrap needs at least one unit")
    rng = np.random.default_rng(seed)
    estimate = float(statistic(np.arange(n_units)))
    values = np.array(
        [statistic(rng.integers(0, n_units, n_units)) for _ in range(resamples)], dtype=float
    )
    values = values[~np.isnan(values)]
    if values.size == 0:
        return Interval(estimate, float("nan"), float("nan"), level, resamples)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Interval(estimate, float(low), float(high), level, resamples)
