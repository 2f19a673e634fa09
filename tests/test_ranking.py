"""Bradley-Terry ranking: against an independent maximum-likelihood fit, and the experts'
own comparisons against the published Webis-ArgQuality-20 scores (the sanity anchor)."""

from __future__ import annotations

import choix
import numpy as np
import pytest
from scipy import optimize, stats

from engines.datasets.webis import DIMENSIONS, load_webis
from engines.metrics import ranking as ranking_module
from engines.metrics.ranking import (
    DEFAULT_ALPHA,
    aligned,
    bradley_terry,
    grouped_bradley_terry,
    ranking,
    z_normalise,
)

# Every item wins and loses at least once, so the unregularised MLE exists.
ROWS = [
    ("a", "b", "A"), ("a", "b", "A"), ("b", "a", "A"), ("a", "c", "A"), ("c", "a", "A"),
    ("b", "c", "Tie"), ("c", "b", "B"), ("a", "d", "A"), ("d", "a", "A"), ("d", "c", "Tie"),
    ("b", "d", "A"), ("d", "b", "A"), ("c", "d", "B"),
]


def mle_with_half_ties(rows):
    """Direct maximum likelihood: a tie is half a win each way."""
    items = sorted({x for a, b, _ in rows for x in (a, b)})
    index = {item: i for i, item in enumerate(items)}
    weighted = []
    for a, b, label in rows:
        i, j = index[a], index[b]
        if label == "A":
            weighted.append((i, j, 1.0))
        elif label == "B":
            weighted.append((j, i, 1.0))
        else:
            weighted += [(i, j, 0.5), (j, i, 0.5)]

    def negative_log_likelihood(theta):
        return -sum(w * (theta[i] - np.logaddexp(theta[i], theta[j])) for i, j, w in weighted)

    theta = optimize.minimize(negative_log_likelihood, np.zeros(len(items)), method="BFGS", tol=1e-10).x
    theta -= theta.mean()
    return {item: theta[index[item]] for item in items}


def test_bt_matches_an_independent_mle_with_ties_as_half_wins():
    fitted = bradley_terry(ROWS, alpha=1e-9)
    reference = mle_with_half_ties(ROWS)
    for item in reference:
        assert fitted[item] == pytest.approx(reference[item], abs=1e-4)
    assert abs(sum(fitted.values())) < 1e-9  # centred


def test_dense_fit_equals_choix_sparse_fit_on_doubled_data():
    """Half-weighted ties equal doubling every comparison (win twice, tie once each way)."""
    items = sorted({x for a, b, _ in ROWS for x in (a, b)})
    index = {item: i for i, item in enumerate(items)}
    doubled = []
    for a, b, label in ROWS:
        i, j = index[a], index[b]
        doubled += {"A": [(i, j), (i, j)], "B": [(j, i), (j, i)], "Tie": [(i, j), (j, i)]}[label]
    sparse = choix.ilsr_pairwise(len(items), doubled, alpha=0.02)
    sparse -= sparse.mean()
    fitted = bradley_terry(ROWS, alpha=0.01)
    assert [fitted[item] for item in items] == pytest.approx(list(sparse), abs=1e-6)


def test_clear_winner_ranks_first_and_ties_only_give_equal_scores():
    chain = [("x", "y", "A"), ("y", "z", "A"), ("x", "z", "A")]
    order = [item for item, _ in ranking(bradley_terry(chain))]
    assert order == ["x", "y", "z"]
    tied = bradley_terry([("p", "q", "Tie"), ("q", "p", "Tie")])
    assert tied["p"] == pytest.approx(tied["q"]) == pytest.approx(0.0)


def test_invalid_labels_carry_no_preference():
    assert bradley_terry([("x", "y", None), ("x", "y", "A")]) == bradley_terry([("x", "y", "A")])
    assert bradley_terry([("x", "y", None)]) == {}


def test_z_normalise_and_groups():
    z = z_normalise({"a": 1.0, "b": 2.0, "c": 6.0})
    values = np.array(list(z.values()))
    assert values.mean() == pytest.approx(0.0) and values.std() == pytest.approx(1.0)
    assert z_normalise({"a": 3.0, "b": 3.0}) == {"a": 0.0, "b": 0.0}
    grouped = grouped_bradley_terry([
        (1, "a", "b", "A"), (1, "b", "c", "A"), (1, "a", "c", "A"),
        (2, "a", "b", "B"), (2, "b", "c", "Tie"),
    ])
    assert set(grouped) == {(1, "a"), (1, "b"), (1, "c"), (2, "a"), (2, "b"), (2, "c")}
    assert grouped[(1, "a")] > grouped[(1, "c")]  # the same key, a different topic, another model
    assert grouped[(2, "b")] > grouped[(2, "a")]
    assert np.mean(list(grouped.values())) == pytest.approx(0.0)


def test_aligned_keeps_only_shared_items_in_order():
    items, first, second = aligned({"a": 1.0, "b": 2.0, "c": 3.0}, {"c": 30.0, "a": 10.0})
    assert items == ["a", "c"]
    assert list(first) == [1.0, 3.0] and list(second) == [10.0, 30.0]


def random_groups(sizes, comparisons_per_item, seed):
    """Labelled comparisons in groups of the given sizes, drawn from random strengths."""
    rng = np.random.default_rng(seed)
    rows = []
    for group, size in enumerate(sizes):
        strength = rng.normal(size=size)
        for _ in range(size * comparisons_per_item // 2):
            a, b = rng.choice(size, 2, replace=False)
            draw = rng.random()
            p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
            rows.append((group, f"i{a}", f"i{b}", "Tie" if draw < 0.1 else "A" if draw < 0.1 + 0.9 * p_a else "B"))
    return rows


def choix_centred(rows, alpha):
    """choix's dense ILSR on one group's rows, centred, by item."""
    items = sorted({x for _, a, b, _ in rows for x in (a, b)})
    index = {item: i for i, item in enumerate(items)}
    wins = np.zeros((len(items), len(items)))
    for _, a, b, label in rows:
        share = {"A": 1.0, "B": 0.0, "Tie": 0.5}[label]
        wins[index[a], index[b]] += share
        wins[index[b], index[a]] += 1 - share
    params = choix.ilsr_pairwise_dense(wins, alpha=alpha)
    return dict(zip(items, params - params.mean()))


@pytest.mark.parametrize("alpha", [0.0005, 0.05])
def test_batched_groups_of_different_sizes_match_choix_group_by_group(alpha):
    """Groups padded into shared batches (sizes across several batches) each fit as on their own."""
    sizes = [2, 3, 7, 30, 31, 64, 120]
    rows = random_groups(sizes, comparisons_per_item=12, seed=3)
    fitted = ranking_module._fit_groups(rows, alpha)
    for group in range(len(sizes)):
        reference = choix_centred([r for r in rows if r[0] == group], alpha)
        assert [fitted[(group, item)] for item in reference] == pytest.approx(list(reference.values()), abs=1e-6)


def test_large_groups_take_the_sparse_solver_and_get_the_same_fit(monkeypatch):
    rows = random_groups([150], comparisons_per_item=10, seed=5)
    dense = bradley_terry((a, b, label) for _, a, b, label in rows)
    monkeypatch.setattr(ranking_module, "DENSE_GROUP_LIMIT", 100)
    sparse = bradley_terry((a, b, label) for _, a, b, label in rows)
    reference = choix_centred(rows, DEFAULT_ALPHA)
    assert [sparse[item] for item in reference] == pytest.approx([dense[item] for item in reference], abs=1e-6)
    assert [sparse[item] for item in reference] == pytest.approx(list(reference.values()), abs=1e-6)


def test_alpha_must_be_positive():
    with pytest.raises(ValueError, match="alpha must be positive"):
        bradley_terry(ROWS, alpha=0.0)


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_expert_comparisons_reproduce_the_published_scores(dimension):
    corpus = load_webis()
    scores = grouped_bradley_terry((c.topic_id, c.a, c.b, c.label) for c in corpus.comparisons[dimension])
    published = {arg: corpus.argument(*arg).scores[dimension] for arg in scores}
    _, fit, reference = aligned(scores, published)
    spearman = stats.spearmanr(fit, reference).statistic
    pearson = stats.pearsonr(fit, reference).statistic
    print(f"{dimension}: Spearman {spearman:.4f}, Pearson {pearson:.4f} over {len(fit)} arguments")
    assert len(fit) >= 1266
    assert spearman >= 0.97 and pearson >= 0.95
    assert np.mean(np.abs(fit - reference)) < 0.15  # on the same z scale, not just correlated
