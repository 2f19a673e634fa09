"""Agreement between score vectors and between label sets (pure functions, no I/O).

Scores: Pearson, Spearman, Kendall, MAE, RMSE, with bootstrap intervals for
the correlations. Labels: Cohen's κ, Krippendorff's α (nominal) and percent
agreement. An invalid judgment (label None) is never dropped: it becomes the
category "invalid", which agrees with nothing but another invalid.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Hashable, Mapping, Sequence

import krippendorff
import numpy as np

from engines.metrics.bootstrap import Interval, bootstrap_ci
from engines.metrics.classification import INVALID


def _stats():
    """scipy.stats, imported on first use: it takes half a second, and the app starts without it."""
    from scipy import stats

    return stats

NAN = float("nan")


def _as_category(label: Hashable | None) -> Hashable:
    return INVALID if label is None else label


# ---------------------------------------------------------------------- scores


@dataclass(frozen=True)
class ScoreAgreement:
    n: int
    pearson: float
    spearman: float
    kendall: float
    mae: float
    rmse: float

    def as_dict(self) -> dict:
        return asdict(self)


CORRELATIONS = {
    "pearson": lambda x, y: _stats().pearsonr(x, y).statistic,
    "spearman": lambda x, y: _stats().spearmanr(x, y).statistic,
    "kendall": lambda x, y: _stats().kendalltau(x, y).statistic,
}


def _correlation(name: str, x: np.ndarray, y: np.ndarray) -> float:
    """NaN where undefined (fewer than 2 items or a constant vector)."""
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return NAN
    return float(CORRELATIONS[name](x, y))


def score_agreement(x: Sequence[float], y: Sequence[float]) -> ScoreAgreement:
    """Agreement of two paired score vectors (e.g. a judge's BT scores vs the experts')."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"score vectors differ in length: {len(x)} vs {len(y)}")
    diff = x - y
    return ScoreAgreement(
        n=len(x),
        pearson=_correlation("pearson", x, y),
        spearman=_correlation("spearman", x, y),
        kendall=_correlation("kendall", x, y),
        mae=float(np.mean(np.abs(diff))) if len(x) else NAN,
        rmse=float(np.sqrt(np.mean(diff**2))) if len(x) else NAN,
    )


def correlation_intervals(
    x: Sequence[float], y: Sequence[float], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> dict[str, Interval]:
    """Percentile bootstrap intervals for Pearson, Spearman and Kendall, resampling items."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return {
        name: bootstrap_ci(
            lambda idx, name=name: _correlation(name, x[idx], y[idx]),
            len(x), resamples=resamples, level=level, seed=seed,
        )
        for name in CORRELATIONS
    }


# ---------------------------------------------------------------------- labels


def percent_agreement(first: Sequence[Hashable | None], second: Sequence[Hashable | None]) -> float:
    """Share of items with the same label (0–1)."""
    _check_paired(first, second)
    if not first:
        return NAN
    return sum(_as_category(a) == _as_category(b) for a, b in zip(first, second)) / len(first)


def cohen_kappa(first: Sequence[Hashable | None], second: Sequence[Hashable | None]) -> float:
    """Cohen's κ of two raters over the same items; NaN when chance agreement is 1."""
    _check_paired(first, second)
    if not first:
        return NAN
    a = [_as_category(x) for x in first]
    b = [_as_category(x) for x in second]
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[c] * count_b[c] for c in count_a) / (n * n)
    if expected == 1:
        return NAN
    return (observed - expected) / (1 - expected)


def krippendorff_alpha_nominal(units: Sequence[Sequence[Hashable | None]]) -> float:
    """Krippendorff's α for nominal data. `units[u]` holds the values the raters gave unit u;
    None is a missing value here (not coded). NaN when the pairable values (those of units
    with two or more) show no variation at all, where the `krippendorff` package refuses."""
    pairable = [coded for coded in ([v for v in unit if v is not None] for unit in units) if len(coded) > 1]
    categories = list(dict.fromkeys(value for unit in pairable for value in unit))
    if len(categories) < 2:
        return NAN
    value_counts = [[unit.count(category) for category in categories] for unit in pairable]
    return float(krippendorff.alpha(value_counts=value_counts, level_of_measurement="nominal"))


@dataclass(frozen=True)
class LabelAgreement:
    n: int
    invalid: int  # items where either side is invalid (counted as disagreement)
    kappa: float
    alpha: float
    percent: float

    def as_dict(self) -> dict:
        return asdict(self)


def label_agreement(first: Sequence[Hashable | None], second: Sequence[Hashable | None]) -> LabelAgreement:
    """κ, α (nominal, two raters) and percent agreement; invalid labels are their own category."""
    _check_paired(first, second)
    units = [(_as_category(a), _as_category(b)) for a, b in zip(first, second)]
    return LabelAgreement(
        n=len(units),
        invalid=sum(1 for a, b in zip(first, second) if a is None or b is None),
        kappa=cohen_kappa(first, second),
        alpha=krippendorff_alpha_nominal(units),
        percent=percent_agreement(first, second),
    )


@dataclass(frozen=True)
class JudgeComparison:
    first: str
    second: str
    labels: LabelAgreement
    scores: ScoreAgreement | None


def compare_judges(
    labels: Mapping[str, Mapping[Hashable, Hashable | None]],
    scores: Mapping[str, Mapping[Hashable, float]] | None = None,
) -> list[JudgeComparison]:
    """Every pair of judges on the items both judged (and both scored)."""
    scores = scores or {}
    table = []
    for first, second in combinations(labels, 2):
        shared = [item for item in labels[first] if item in labels[second]]
        label_part = label_agreement(
            [labels[first][item] for item in shared], [labels[second][item] for item in shared]
        )
        score_part = None
        if first in scores and second in scores:
            scored = [item for item in scores[first] if item in scores[second]]
            score_part = score_agreement(
                [scores[first][item] for item in scored], [scores[second][item] for item in scored]
            )
        table.append(JudgeComparison(first, second, label_part, score_part))
    return table


# ---------------------------------------------------------------------- run variability


@dataclass(frozen=True)
class RunVariability:
    """How repeated runs of one judge agree, item by item (seed §6.2).

    With 3 runs `some_equal` is the seed's "2 equal" and `all_different` its
    "all unequal". `alpha` is Krippendorff's α with runs as raters.
    """

    items: int
    runs: int
    all_equal: int
    some_equal: int
    all_different: int
    alpha: float

    def as_dict(self) -> dict:
        return asdict(self)


def run_variability(run_labels: Sequence[Sequence[Hashable | None]]) -> RunVariability:
    """`run_labels[i]` are the labels of item i's runs; an invalid run is the label None."""
    all_equal = some_equal = all_different = 0
    runs = max((len(labels) for labels in run_labels), default=0)
    units = []
    for labels in run_labels:
        values = [_as_category(label) for label in labels]
        units.append(values)
        distinct = len(set(values))
        if distinct == 1:
            all_equal += 1
        elif distinct == len(values):
            all_different += 1
        else:
            some_equal += 1
    alpha = krippendorff_alpha_nominal(units) if runs > 1 else NAN
    return RunVariability(len(run_labels), runs, all_equal, some_equal, all_different, alpha)


def _check_paired(first: Sequence, second: Sequence) -> None:
    if len(first) != len(second):
        raise ValueError(f"label sequences differ in length: {len(first)} vs {len(second)}")


def finite_or_none(value: float) -> float | None:
    """For JSON: NaN (undefined) becomes null."""
    return None if value is None or math.isnan(value) else value
