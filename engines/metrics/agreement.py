"""Agreement between score vectors and between label sets (pure functions, no I/O).

Scores: Pearson, Spearman, Kendall, MAE, RMSE, with bootstrap intervals for
the correlations. Labels: Cohen's κ, Krippendorff's α (nominal) and percent
agreement. An invalid judgment (label None) is never dropped: it becomes the
category "invalid", which agrees with nothing but another invalid.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Hashable, Mapping, Sequence

import numpy as np

from engines.metrics.bootstrap import Interval, bootstrap_intervals
from engines.metrics.classification import INVALID

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


# Computed with numpy (the values of scipy's pearsonr, spearmanr and kendalltau, τ-b): importing
# scipy.stats costs a report half a second, and a report without bootstrap intervals needs no more.
CORRELATIONS = ("pearson", "spearman", "kendall")


def _correlations(x: np.ndarray, y: np.ndarray) -> list[float]:
    """Pearson, Spearman and Kendall; NaN where undefined (fewer than 2 items or a constant vector)."""
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return [NAN] * len(CORRELATIONS)
    return [float(r) for r in _PairedScores(x, y).correlations(np.arange(len(x))[None, :])[0]]


def score_agreement(x: Sequence[float], y: Sequence[float]) -> ScoreAgreement:
    """Agreement of two paired score vectors (e.g. a judge's BT scores vs the experts')."""
    x, y = _paired(x, y)
    return _score_agreement(x, y, _correlations(x, y))


def score_agreement_with_intervals(
    x: Sequence[float], y: Sequence[float], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[ScoreAgreement, dict[str, Interval]]:
    """`score_agreement` and `correlation_intervals` of the same vectors, the correlations computed
    once: they are the intervals' estimates."""
    x, y = _paired(x, y)
    intervals = correlation_intervals(x, y, resamples=resamples, level=level, seed=seed)
    estimates = [intervals[name].estimate for name in CORRELATIONS] if len(x) >= 2 else [NAN] * len(CORRELATIONS)
    return _score_agreement(x, y, estimates), intervals


def _paired(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"score vectors differ in length: {len(x)} vs {len(y)}")
    return x, y


def _score_agreement(x: np.ndarray, y: np.ndarray, correlations: Sequence[float]) -> ScoreAgreement:
    diff = x - y
    pearson, spearman, kendall = correlations
    return ScoreAgreement(
        n=len(x),
        pearson=pearson,
        spearman=spearman,
        kendall=kendall,
        mae=float(np.mean(np.abs(diff))) if len(x) else NAN,
        rmse=float(np.sqrt(np.mean(diff**2))) if len(x) else NAN,
    )


def correlation_intervals(
    x: Sequence[float], y: Sequence[float], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> dict[str, Interval]:
    """Percentile bootstrap intervals for Pearson, Spearman and Kendall, resampling items (the
    three over the same resamples, as three bootstraps of the same seed would draw them)."""
    sample = _PairedScores(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    intervals = bootstrap_intervals(sample.correlations, len(sample.x), resamples=resamples, level=level, seed=seed)
    return dict(zip(CORRELATIONS, intervals))


class _PairedScores:
    """Two paired score vectors, with what their correlations on any resample share: each vector's
    groups of equal values and the signs of every pair's differences (the estimate on all items
    and the resamples use them once)."""

    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.x, self.y = x, y
        self.x_ties, self.y_ties = _Ties(x), _Ties(y)
        # the draw counts' columns are the items in x's order: each item's column, and y's order there
        self.column = np.empty(len(x), dtype=np.intp)
        self.column[self.x_ties.order] = np.arange(len(x))
        self.y_order = self.column[self.y_ties.order]
        # S[i, j]: the sign of (x_i − x_j)(y_i − y_j), items in x's order; float32 for the product
        # with the draw counts
        x_sorted, y_by_x = x[self.x_ties.order], y[self.x_ties.order]
        self.signs = (np.sign(x_sorted[:, None] - x_sorted[None, :])
                      * np.sign(y_by_x[:, None] - y_by_x[None, :])).astype(np.float32)

    def correlations(self, rows: np.ndarray) -> np.ndarray:
        """Pearson, Spearman and Kendall (the columns, in CORRELATIONS' order) on each row of indices
        (one bootstrap resample per row), all rows at once; NaN where undefined (a resample with a
        constant vector). The draw counts and the tie groups' draws are shared."""
        counts_by_x = _draw_counts(self.column[rows], len(self.x))
        x_drawn = self.x_ties.drawn(counts_by_x)
        y_drawn = self.y_ties.drawn(counts_by_x[:, self.y_order])
        return np.stack([
            _pearson(self.x[rows], self.y[rows]),
            _pearson(self.x_ties.ranks(x_drawn, rows), self.y_ties.ranks(y_drawn, rows)),  # Spearman: Pearson of the ranks
            self._kendall(counts_by_x, x_drawn, y_drawn, rows.shape[1]),
        ], axis=1)

    def _kendall(self, counts_by_x: np.ndarray, x_drawn: np.ndarray, y_drawn: np.ndarray, drawn: int) -> np.ndarray:
        """Kendall's τ-b (as scipy's) of each resample, from how often it draws each item.

        With c the draw counts, concordant minus discordant pairs are c·S·c / 2, and the tied
        pairs of x are (Σ_groups (Σ c)² − Σ c) / 2 over the groups of equal x.
        """
        # exact in float32: every sum is an integer far below 2**24
        net = ((counts_by_x.astype(np.float32) @ self.signs) * counts_by_x).sum(axis=1, dtype=np.float64) / 2
        pairs = drawn * (drawn - 1) / 2
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = net / np.sqrt((pairs - _tied_pairs(x_drawn, drawn)) * (pairs - _tied_pairs(y_drawn, drawn)))
        return np.where(np.isfinite(tau), np.clip(tau, -1.0, 1.0), NAN)


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row of x with the same row of y; NaN for a constant row."""
    x_centred = x - x.mean(axis=1, keepdims=True)
    y_centred = y - y.mean(axis=1, keepdims=True)
    constant = (np.ptp(x, axis=1) == 0) | (np.ptp(y, axis=1) == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (x_centred * y_centred).sum(axis=1) / np.sqrt((x_centred**2).sum(axis=1) * (y_centred**2).sum(axis=1))
    return np.where(constant, NAN, np.clip(r, -1.0, 1.0))


def _draw_counts(rows: np.ndarray, n: int) -> np.ndarray:
    """How often each resample (row) draws each of the n items."""
    flat = (np.arange(len(rows))[:, None] * n + rows).ravel()
    return np.bincount(flat, minlength=len(rows) * n).reshape(len(rows), n).astype(np.float64)


class _Ties:
    """The groups of equal values of a vector, in value order."""

    def __init__(self, values: np.ndarray):
        self.order = np.argsort(values, kind="stable")
        is_start = np.r_[True, np.diff(values[self.order]) != 0]
        self.starts = np.flatnonzero(is_start)
        self.group = np.empty(len(values), dtype=np.intp)  # each item's group
        self.group[self.order] = np.cumsum(is_start) - 1

    def drawn(self, counts: np.ndarray) -> np.ndarray:
        """How often each resample draws each group, from its draw counts of the items in value order."""
        return np.add.reduceat(counts, self.starts, axis=1)

    def ranks(self, drawn: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The ranks (scipy's rankdata: ties share their mean rank) of the values drawn by each row
        (`drawn`: its draws of each group): a drawn item ranks after the draws of smaller values,
        in the middle of the draws of its own value. No per-resample sort."""
        group_rank = np.cumsum(drawn, axis=1) - drawn + (drawn + 1) / 2
        return np.take_along_axis(group_rank, self.group[rows], axis=1)


def _tied_pairs(drawn: np.ndarray, draws: int) -> np.ndarray:
    """Each resample's pairs of draws with equal values (a copy of an item is tied with it), from
    its draws of each group."""
    return ((drawn**2).sum(axis=1) - draws) / 2


# ---------------------------------------------------------------------- labels


def _category_codes(*sequences: Sequence[Hashable | None]) -> list[np.ndarray]:
    """Each sequence as integer codes of one shared category numbering (None: "invalid")."""
    numbering: dict[Hashable, int] = {}
    return [
        np.fromiter((numbering.setdefault(_as_category(x), len(numbering)) for x in sequence),
                    dtype=np.intp, count=len(sequence))
        for sequence in sequences
    ]


def percent_agreement(first: Sequence[Hashable | None], second: Sequence[Hashable | None]) -> float:
    """Share of items with the same label (0–1)."""
    _check_paired(first, second)
    if not first:
        return NAN
    a, b = _category_codes(first, second)
    return _percent(a, b)


def _percent(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a == b))


def cohen_kappa(first: Sequence[Hashable | None], second: Sequence[Hashable | None]) -> float:
    """Cohen's κ of two raters over the same items; NaN when chance agreement is 1."""
    _check_paired(first, second)
    if not first:
        return NAN
    return _kappa(*_category_codes(first, second))


def _kappa(a: np.ndarray, b: np.ndarray) -> float:
    categories = int(max(a.max(), b.max())) + 1
    n = len(a)
    observed = _percent(a, b)
    expected = float(np.bincount(a, minlength=categories) @ np.bincount(b, minlength=categories)) / (n * n)
    if expected == 1:
        return NAN
    return (observed - expected) / (1 - expected)


def krippendorff_alpha_nominal(units: Sequence[Sequence[Hashable | None]]) -> float:
    """Krippendorff's α for nominal data. `units[u]` holds the values the raters gave unit u;
    None is a missing value here (not coded). NaN when the pairable values (those of units
    with two or more) show no variation at all, where the `krippendorff` package refuses."""
    numbering: dict[Hashable, int] = {}
    unit_ids, codes = [], []
    for u, unit in enumerate(units):
        for value in unit:
            if value is not None:
                unit_ids.append(u)
                codes.append(numbering.setdefault(value, len(numbering)))
    return _alpha_from_codes(np.asarray(unit_ids, dtype=np.intp), np.asarray(codes, dtype=np.intp))


def _alpha_from_codes(unit_ids: np.ndarray, codes: np.ndarray) -> float:
    """α from one (unit, category code) row per coded value."""
    if not len(codes):
        return NAN
    categories = int(codes.max()) + 1
    units = int(unit_ids.max()) + 1
    value_counts = np.bincount(unit_ids * categories + codes, minlength=units * categories).reshape(
        units, categories
    )
    pairable = value_counts[value_counts.sum(axis=1) > 1]
    pairable = pairable[:, pairable.sum(axis=0) > 0]
    if pairable.shape[1] < 2:
        return NAN
    import krippendorff  # here: its import costs a short run a tenth of a second

    return float(krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal"))


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
    if not first:
        return LabelAgreement(n=0, invalid=0, kappa=NAN, alpha=NAN, percent=NAN)
    a, b = _category_codes(first, second)
    items = np.arange(len(a))
    return LabelAgreement(
        n=len(a),
        invalid=sum(1 for x, y in zip(first, second) if x is None or y is None),
        kappa=_kappa(a, b),
        alpha=_alpha_from_codes(np.concatenate((items, items)), np.concatenate((a, b))),
        percent=_percent(a, b),
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
