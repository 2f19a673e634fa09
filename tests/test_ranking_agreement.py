"""Agreement metrics against independent references: scipy, Krippendorff's published
example and hand-computed κ and α; invalid labels count as disagreement, never dropped."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from engines.metrics.agreement import (
    CORRELATIONS,
    _PairedScores,
    cohen_kappa,
    compare_judges,
    correlation_intervals,
    krippendorff_alpha_nominal,
    label_agreement,
    percent_agreement,
    run_variability,
    score_agreement,
    score_agreement_with_intervals,
)

RNG = np.random.default_rng(7)
X = RNG.normal(size=40)
Y = 0.6 * X + RNG.normal(scale=0.8, size=40)


def test_score_agreement_matches_scipy_and_numpy():
    result = score_agreement(X, Y)
    assert result.n == 40
    assert result.pearson == pytest.approx(stats.pearsonr(X, Y).statistic)
    assert result.spearman == pytest.approx(stats.spearmanr(X, Y).statistic)
    assert result.kendall == pytest.approx(stats.kendalltau(X, Y).statistic)
    assert result.mae == pytest.approx(np.mean(np.abs(X - Y)))
    assert result.rmse == pytest.approx(np.sqrt(np.mean((X - Y) ** 2)))


def test_correlations_of_a_constant_vector_are_undefined_not_an_error():
    result = score_agreement([1.0, 1.0, 1.0], [0.5, 0.2, 0.9])
    assert math.isnan(result.pearson) and math.isnan(result.spearman) and math.isnan(result.kendall)
    assert result.mae == pytest.approx((0.5 + 0.8 + 0.1) / 3)


def test_bootstrap_intervals_bracket_the_estimate():
    intervals = correlation_intervals(X, Y, resamples=300)
    for name, interval in intervals.items():
        assert interval.low <= interval.estimate <= interval.high, name
        assert interval.high - interval.low < 0.8
    assert intervals["pearson"].estimate == pytest.approx(stats.pearsonr(X, Y).statistic)


def test_cohen_kappa_by_hand():
    # 10 items: observed agreement 0.6; rater 1 A 5 / B 3 / Tie 2, rater 2 A 4 / B 4 / Tie 2.
    first = ["A", "A", "A", "A", "A", "B", "B", "B", "Tie", "Tie"]
    second = ["A", "A", "A", "B", "Tie", "B", "B", "A", "Tie", "B"]
    expected_chance = (5 * 4 + 3 * 4 + 2 * 2) / 100  # 0.36
    assert percent_agreement(first, second) == pytest.approx(0.6)
    assert cohen_kappa(first, second) == pytest.approx((0.6 - expected_chance) / (1 - expected_chance))


def test_krippendorff_nominal_reproduces_the_published_example_with_missing_values():
    # Krippendorff's own worked example for nominal values with missing ones: 4 observers, 12 units.
    observers = ["1 2 3 3 2 1 4 1 2 . . .", "1 2 3 3 2 2 4 1 2 5 . 3",
                 ". 3 3 3 2 3 4 2 2 5 1 .", "1 2 3 3 2 4 4 1 2 5 1 ."]
    rows = [[None if value == "." else value for value in observer.split()] for observer in observers]
    units = [list(unit) for unit in zip(*rows)]
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_nominal_is_undefined_without_variation_in_pairable_values():
    assert math.isnan(krippendorff_alpha_nominal([["A", "A"], ["A", "A", None]]))  # one category
    assert math.isnan(krippendorff_alpha_nominal([["A", None], ["B"], []]))  # nothing to pair
    assert math.isnan(krippendorff_alpha_nominal([["A", "A"], ["B"]]))  # B is never paired
    assert krippendorff_alpha_nominal([["A", "A"], ["B", "B"]]) == 1.0


def test_invalid_labels_are_a_category_of_their_own():
    gold = ["A", "B", "Tie", "A"]
    judge = ["A", None, "Tie", "A"]
    result = label_agreement(judge, gold)
    assert result.n == 4 and result.invalid == 1
    assert result.percent == pytest.approx(0.75)  # the invalid one is a disagreement
    # Coincidences: A-A 4, Tie-Tie 2, invalid-B 1, B-invalid 1; n = 8, sum of n_c^2 = 16 + 4 + 1 + 1.
    assert result.alpha == pytest.approx(1 - (8 - 1) * 2 / (8 * 8 - 22))
    with pytest.raises(ValueError):
        label_agreement(["A"], ["A", "B"])


def test_run_variability_counts_and_alpha_across_runs():
    runs = [("A", "A", "A"), ("A", "A", "B"), ("A", "B", "Tie"), ("Tie", "Tie", "Tie"), ("B", None, "B")]
    result = run_variability(runs)
    assert (result.items, result.runs) == (5, 3)
    assert (result.all_equal, result.some_equal, result.all_different) == (2, 2, 1)
    # Three values per unit: off-diagonal coincidences 2 + 3 + 2 (the invalid run disagrees);
    # n = 15 with A 6, B 4, Tie 4, invalid 1.
    assert result.alpha == pytest.approx(1 - (15 - 1) * 7 / (15 * 15 - (36 + 16 + 16 + 1)))


def test_judge_vs_judge_table_uses_the_shared_items():
    labels = {
        "j1": {1: "A", 2: "B", 3: "Tie", 4: "A"},
        "j2": {1: "A", 2: "A", 3: "Tie"},
        "j3": {1: "B", 4: "A"},
    }
    scores = {"j1": {"x": 1.0, "y": 2.0, "z": 3.0}, "j2": {"x": 1.0, "y": 3.0, "z": 2.0}}
    table = {(row.first, row.second): row for row in compare_judges(labels, scores)}
    assert set(table) == {("j1", "j2"), ("j1", "j3"), ("j2", "j3")}
    assert table[("j1", "j2")].labels.n == 3
    assert table[("j1", "j2")].labels.percent == pytest.approx(2 / 3)
    assert table[("j1", "j2")].scores.spearman == pytest.approx(0.5)
    assert table[("j1", "j3")].scores is None
    assert table[("j2", "j3")].labels.n == 1


@pytest.mark.parametrize("name", ["pearson", "spearman", "kendall"])
def test_all_resamples_at_once_give_scipys_correlation_of_each_resample(name):
    """Ties within x, copies of an item within a resample, and a resample of one repeated item."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 6, 40).astype(float)
    y = x + rng.integers(0, 3, 40)
    rows = rng.integers(0, 40, (60, 40))
    rows[0] = 7  # constant: undefined
    expected = [getattr(stats, {"pearson": "pearsonr", "spearman": "spearmanr", "kendall": "kendalltau"}[name])(
        x[r], y[r]).statistic if np.ptp(x[r]) and np.ptp(y[r]) else np.nan for r in rows]
    got = _PairedScores(x, y).correlations(rows)[:, CORRELATIONS.index(name)]
    assert np.isnan(got[0]) and np.isnan(expected[0])
    assert got[1:] == pytest.approx(expected[1:], abs=1e-9)


def test_label_agreement_matches_the_krippendorff_package_and_a_direct_kappa():
    import krippendorff

    rng = np.random.default_rng(8)
    labels = np.array(["A", "B", "Tie", None], dtype=object)
    first = list(labels[rng.integers(0, 4, 500)])
    second = [a if rng.random() < 0.6 else labels[rng.integers(0, 4)] for a in first]
    result = label_agreement(first, second)
    codes = {"A": 0, "B": 1, "Tie": 2, None: 3}  # None is the category "invalid" here
    data = np.array([[codes[a] for a in first], [codes[b] for b in second]], dtype=float)
    assert result.alpha == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    observed = np.mean(data[0] == data[1])
    chance = sum(np.mean(data[0] == c) * np.mean(data[1] == c) for c in range(4))
    assert result.kappa == pytest.approx((observed - chance) / (1 - chance))
    assert result.percent == pytest.approx(observed)
    assert result.invalid == sum(1 for a, b in zip(first, second) if a is None or b is None)


def test_a_report_without_bootstrap_intervals_imports_no_scipy_stats():
    """Correlations are computed with numpy: scipy.stats costs a short run half a second."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from engines.pairwise.evaluation import evaluate, expert_judgments\n"
        "from engines.pairwise.run import load_corpus, select_items\n"
        "corpus = load_corpus()\n"
        "report = evaluate(corpus, 'experts', expert_judgments(select_items(corpus, limit=50)), resamples=0)\n"
        "assert all(d.scores.n > 2 and d.scores.kendall == d.scores.kendall for d in report.dimensions)\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False"]


@pytest.mark.parametrize("n", [2, 3, 17, 400])
def test_point_estimates_with_ties_match_scipy(n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 4, n).astype(float)
    x[:2] = [0.0, 3.0]  # never constant
    y = np.round(x + rng.normal(size=n), 1)
    y[:2] = [0.0, 5.0]
    result = score_agreement(x, y)
    assert result.pearson == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert result.spearman == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert result.kendall == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)


@pytest.mark.parametrize("n", [2, 3, 40])
def test_agreement_with_intervals_is_the_agreement_and_the_intervals_computed_apart(n):
    """The correlations are computed once, as the intervals' estimates: the same values to the last digit."""
    rng = np.random.default_rng(n + 1)
    x = np.round(rng.normal(size=n), 1)
    y = np.round(0.5 * x + rng.normal(size=n), 1)
    for first, second in ((x, y), (x, np.ones(n))):  # a constant vector: undefined correlations
        scores, intervals = score_agreement_with_intervals(first, second, resamples=200, seed=3)
        assert str(scores) == str(score_agreement(first, second))  # str: NaN equals NaN
        assert str(intervals) == str(correlation_intervals(first, second, resamples=200, seed=3))
    with pytest.raises(ValueError):
        score_agreement_with_intervals(x, y[:-1])
