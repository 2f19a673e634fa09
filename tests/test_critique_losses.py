"""The seed-002 losses and the random judge on hand-computed fixtures."""

from __future__ import annotations

import math

import pytest

from engines.critiques.baseline import random_judge_baseline
from engines.critiques.losses import custom_weighted_loss, item_custom_loss, pairwise_ranking_error

# P1: three critiques, one reversed pair, one reversed pair, one model tie.
# P2: a human tie (not ordered, not counted). P3: one critique (skipped).
# P4: every critique tied by the human (no ordered pair: skipped).
POSITION_OF = {
    "a": "P1", "b": "P1", "c": "P1",
    "x": "P2", "y": "P2", "z": "P2",
    "single": "P3",
    "t1": "P4", "t2": "P4",
}
HUMAN = {"a": 0.9, "b": 0.5, "c": 0.1, "x": 0.5, "y": 0.5, "z": 0.2, "single": 0.7, "t1": 0.4, "t2": 0.4}
MODEL = {"a": 0.2, "b": 0.6, "c": 0.6, "x": 0.1, "y": 0.9, "z": 0.3, "single": 0.1, "t1": 0.9, "t2": 0.1,
         "model-only": 0.5}


def test_weighted_ranking_error_by_hand():
    result = pairwise_ranking_error(HUMAN, MODEL, POSITION_OF)
    # P1: (a,b) reversed 0.4; (a,c) reversed 0.8; (b,c) model tie -> half of 0.4 = 0.2.
    assert result.per_position["P1"] == pytest.approx((0.4 + 0.8 + 0.2) / 3)
    # P2: (x,y) human tie, not counted; (x,z) reversed 0.3; (y,z) same order 0.
    assert result.per_position["P2"] == pytest.approx(0.3 / 2)
    assert result.value == pytest.approx(((1.4 / 3) + 0.15) / 2)
    assert result.pairs == 5 and result.positions == 2
    assert result.skipped_single == 1 and result.skipped_tied == 1


def test_unweighted_ranking_error_counts_pairs():
    result = pairwise_ranking_error(HUMAN, MODEL, POSITION_OF, weighted=False)
    assert result.per_position["P1"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert result.per_position["P2"] == pytest.approx(0.5)
    assert result.value == pytest.approx((2.5 / 3 + 0.5) / 2)


def test_perfect_and_fully_reversed_orders():
    human = {"a": 0.9, "b": 0.5, "c": 0.1}
    where = {k: "P" for k in human}
    assert pairwise_ranking_error(human, {"a": 3, "b": 2, "c": 1}, where).value == 0
    reversed_order = pairwise_ranking_error(human, {"a": 1, "b": 2, "c": 3}, where)
    assert reversed_order.value == pytest.approx((0.4 + 0.8 + 0.4) / 3)
    all_tied = pairwise_ranking_error(human, {"a": 0.5, "b": 0.5, "c": 0.5}, where)
    assert all_tied.value == pytest.approx(reversed_order.value / 2)


def test_ranking_error_is_undefined_without_a_usable_position():
    result = pairwise_ranking_error({"single": 0.7}, {"single": 0.1}, POSITION_OF)
    assert math.isnan(result.value) and result.skipped_single == 1 and result.positions == 0


LOW_CLARITY_HUMAN = {"clarity": 0.4, "overall": 0.2, "strength": 0.9, "centrality": 0.9,
                     "correctness": 0.9, "single_issue": 1.0, "dead_weight": 0.0}
LOW_CLARITY_MODEL = {"clarity": 0.9, "overall": 0.7, "strength": 0.0, "centrality": 0.0,
                     "correctness": 0.0, "single_issue": 0.0, "dead_weight": 1.0}
CLEAR_HUMAN = {"strength": 0.8, "centrality": 0.5, "correctness": 0.9, "clarity": 0.7,
               "single_issue": 1.0, "dead_weight": 0.1, "overall": 0.5}
CLEAR_MODEL = {"strength": 0.5, "centrality": 1.0, "correctness": 0.6, "clarity": 0.7,
               "single_issue": 0.0, "dead_weight": 0.3, "overall": 0.8}


def test_low_clarity_compares_only_clarity_and_overall():
    # 0.5·|0.2−0.7| + 0.5·|0.4−0.9|; the other dimensions, however far apart, do not count.
    assert item_custom_loss(LOW_CLARITY_HUMAN, LOW_CLARITY_MODEL) == pytest.approx(0.5)


def test_weighted_components_averaged_with_overall():
    # strength×centrality 0.4 vs 0.5 (w4): 0.4; correctness 0.3 (w2): 0.6; clarity 0 (w2);
    # single issue 1 (w1): 1; dead weight 0.2 (w1): 0.2 -> 2.2 / 10 = 0.22; with |Δoverall| 0.3 -> 0.26.
    assert item_custom_loss(CLEAR_HUMAN, CLEAR_MODEL) == pytest.approx(0.26)


def test_clarity_exactly_one_half_is_not_low():
    human = {**CLEAR_HUMAN, "clarity": 0.5}
    model = {**CLEAR_MODEL, "clarity": 0.5}
    assert item_custom_loss(human, model) == pytest.approx(0.26)


def test_strength_and_centrality_enter_only_as_their_product():
    swapped = {**CLEAR_HUMAN, "strength": CLEAR_HUMAN["centrality"], "centrality": CLEAR_HUMAN["strength"]}
    assert item_custom_loss(swapped, CLEAR_MODEL) == item_custom_loss(CLEAR_HUMAN, CLEAR_MODEL)


def test_custom_loss_mean_and_counts():
    overall_only = {"overall": 0.4, **dict.fromkeys(("strength", "centrality", "correctness", "clarity",
                                                      "single_issue", "dead_weight"))}
    result = custom_weighted_loss(
        {"low": LOW_CLARITY_HUMAN, "clear": CLEAR_HUMAN, "simple": CLEAR_HUMAN, "unrated": CLEAR_HUMAN},
        {"low": LOW_CLARITY_MODEL, "clear": CLEAR_MODEL, "simple": overall_only},
    )
    assert result.value == pytest.approx((0.5 + 0.26) / 2)
    assert result.items == 2 and result.low_clarity == 1 and result.incomplete == 1


def test_random_judge_matches_its_expectation():
    # A uniform judge reverses each ordered pair with probability ½ and never ties, so the weighted
    # error's expectation is half the mean human gap; E|U − r| = (r² + (1 − r)²) / 2.
    reference = {
        "a": {**LOW_CLARITY_HUMAN, "overall": 0.9, "clarity": 0.3},
        "b": {**LOW_CLARITY_HUMAN, "overall": 0.5, "clarity": 0.1},
        "c": {**LOW_CLARITY_HUMAN, "overall": 0.1, "clarity": 0.4},
    }
    where = {k: "P" for k in reference}
    baseline = random_judge_baseline(reference, where, draws=4000, seed=1)
    assert baseline.ranking.mean == pytest.approx(0.5 * (0.4 + 0.8 + 0.4) / 3, abs=0.01)
    assert baseline.ranking_unweighted.mean == pytest.approx(0.5, abs=0.02)

    def expected_abs(r: float) -> float:
        return (r * r + (1 - r) ** 2) / 2

    custom = sum(0.5 * expected_abs(v["overall"]) + 0.5 * expected_abs(v["clarity"]) for v in reference.values()) / 3
    assert baseline.custom.mean == pytest.approx(custom, abs=0.01)
    assert baseline.ranking.low < baseline.ranking.mean < baseline.ranking.high
    again = random_judge_baseline(reference, where, draws=4000, seed=1)
    assert again == baseline  # seeded: the same numbers every time
