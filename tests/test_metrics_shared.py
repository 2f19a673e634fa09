"""Shared metric functions against hand-computed fixtures and independent references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from engines.metrics.bootstrap import bootstrap_ci
from engines.metrics.classification import classification_report, positive_class_scores


def test_report_matches_hand_computed_values():
    gold = ["C", "C", "P", "P", "P", "M", None]
    pred = ["C", "P", "P", "P", None, "M", "C"]
    report = classification_report(gold, pred, ["M", "C", "P"])
    assert report.n == 6 and report.excluded == 1 and report.invalid == 1
    # P: tp 2, predicted 3 (one gold C), support 3 (one invalid) -> p 2/3, r 2/3
    assert report.per_class["P"].precision == pytest.approx(2 / 3)
    assert report.per_class["P"].recall == pytest.approx(2 / 3)
    assert report.per_class["C"].f1 == pytest.approx(2 / 3)  # p 1, r 1/2
    assert report.per_class["M"].f1 == 1.0
    assert report.macro_f1 == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)
    assert report.weighted_f1 == pytest.approx((1 * 1 + 2 / 3 * 2 + 2 / 3 * 3) / 6)
    assert report.confusion["P"] == {"M": 0, "C": 0, "P": 2, "invalid": 1}
    assert report.accuracy == pytest.approx(4 / 6)


def test_unknown_gold_label_is_an_error():
    with pytest.raises(ValueError, match="X"):
        classification_report(["X"], ["A"], ["A", "B"])


def test_positive_class_threshold_and_nulls():
    gold = [1, 1, 0, 0, None, 1]
    scores = [0.9, 0.5, 0.7, 0.1, 0.99, None]
    s = positive_class_scores(gold, scores)
    # tp: 0.9, 0.5 -> 2; fp: 0.7 -> 1; fn: None -> 1
    assert (s.precision, s.recall) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert s.support == 3


def test_bootstrap_interval_brackets_the_estimate_and_matches_scipy_pearson():
    rng = np.random.default_rng(1)
    x = rng.normal(size=200)
    y = x + rng.normal(scale=0.5, size=200)
    interval = bootstrap_ci(lambda idx: stats.pearsonr(x[idx], y[idx])[0], len(x), resamples=300)
    assert interval.estimate == pytest.approx(stats.pearsonr(x, y)[0])
    assert interval.low < interval.estimate < interval.high
    assert interval.high - interval.low < 0.2


def test_bootstrap_leaves_undefined_resamples_out_and_needs_no_spread_for_one_unit():
    values = np.array([0.0, 1.0, 2.0])

    def spread(idx):  # undefined when a resample repeats a single unit
        return float(np.ptp(values[idx])) if len(set(idx)) > 1 else float("nan")

    interval = bootstrap_ci(spread, len(values), resamples=200)
    assert interval.estimate == 2.0 and 1.0 <= interval.low <= interval.high <= 2.0
    one = bootstrap_ci(lambda idx: float(values[idx].mean()), 1, resamples=50)
    assert (one.estimate, one.low, one.high, one.resamples) == (0.0, 0.0, 0.0, 50)
    unsampled = bootstrap_ci(spread, len(values), resamples=0)
    assert unsampled.estimate == 2.0 and np.isnan(unsampled.low) and np.isnan(unsampled.high)


def _scipy_percentile_interval(statistic, n_units, *, resamples, level, seed, vectorized):
    """scipy.stats.bootstrap's percentile interval, NaN resamples left out (what bootstrap_ci used to call)."""
    result = stats.bootstrap(
        (np.arange(n_units),), (lambda idx, axis: statistic(idx)) if vectorized else statistic,
        n_resamples=resamples, vectorized=vectorized, confidence_level=level, method="percentile",
        rng=np.random.default_rng(seed),
    )
    low, high = result.confidence_interval
    if np.isnan(low) or np.isnan(high):
        low, high = stats.quantile(
            result.bootstrap_distribution, [(1 - level) / 2, (1 + level) / 2], nan_policy="omit"
        )
    return float(low), float(high)


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::scipy.stats.DegenerateDataWarning")
@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("level", [0.95, 0.9, 0.68])
def test_bootstrap_intervals_are_scipys_to_the_last_digit(seed, level):
    rng = np.random.default_rng(seed + 100)
    x = np.round(rng.normal(size=40), 1)  # ties, as scores have
    y = np.round(x + rng.normal(size=40), 1)
    few = np.array([0.0, 0.0, 1.0, 2.5])  # small: many resamples repeat one value (undefined spread)

    def pearson_rows(rows):
        return np.array([np.corrcoef(x[r], y[r])[0, 1] for r in rows])

    def spread(idx):
        return float(np.std(few[idx])) if np.ptp(few[idx]) > 0 else float("nan")

    cases = [
        (lambda idx: float(x[idx].mean()), len(x), False, 500),
        (pearson_rows, len(x), True, 300),
        (spread, len(few), False, 400),
    ]
    for statistic, n_units, vectorized, resamples in cases:
        ours = bootstrap_ci(statistic, n_units, resamples=resamples, level=level, seed=seed, vectorized=vectorized)
        expected = _scipy_percentile_interval(
            statistic, n_units, resamples=resamples, level=level, seed=seed, vectorized=vectorized
        )
        assert (ours.low, ours.high) == expected
