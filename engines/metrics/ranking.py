"""Bradley-Terry scores from pairwise labels (A / B / Tie), per group, z-normalised.

Pure functions over hashable item ids. A tie counts as half a win each way.
The fit is iterative Luce spectral ranking (ILSR, as choix's
`ilsr_pairwise_dense`): each step takes the stationary distribution of a Markov
chain whose rates depend on the current strengths, until they stop changing.
With the regularisation `alpha` (a rate between every two items of a group of
n) the stationary distribution π solves one linear system,

    (alpha·n + r_i)·π_i − Σ_j C_ij·π_j = alpha·n,   C_ij = wins[i, j] / (w_i + w_j),  r_i = Σ_j C_ji,

whose solution already sums to n. Groups of up to `DENSE_GROUP_LIMIT` items
(a topic's arguments) are solved dense, all groups of
similar size in one batched `numpy.linalg.solve` per step; larger groups (tens
of thousands of items, each compared a few times) are solved sparse and
iteratively, which stays linear in the comparisons.
"""

from __future__ import annotations

from itertools import chain
from typing import Hashable, Iterable, Mapping, Sequence, TypeVar

import numpy as np

ItemT = TypeVar("ItemT", bound=Hashable)
GroupT = TypeVar("GroupT", bound=Hashable)

# Regularisation of the spectral estimator: keeps items that never win (or
# never lose) finite. 0.0005 reproduces the published Webis-ArgQuality-20 scores
# best (Spearman >= 0.996 per dimension, see benchmarks/bench_bt.py).
DEFAULT_ALPHA = 0.0005
# Above this many items a group's dense n×n solves cost more than the sparse iterative ones.
DENSE_GROUP_LIMIT = 256
MAX_ITERATIONS = 100
# Convergence as choix's: the L1 change of the centred log-strengths at most TOLERANCE per item.
TOLERANCE = 1e-8

WIN_SHARE = {"A": 1.0, "B": 0.0, "Tie": 0.5}


def bradley_terry(
    comparisons: Iterable[tuple[ItemT, ItemT, str]], alpha: float = DEFAULT_ALPHA
) -> dict[ItemT, float]:
    """Log-strengths (mean 0) of every item in `comparisons` of (a, b, label in A/B/Tie).

    Other labels (e.g. None for an invalid judgment) carry no preference and are ignored;
    callers count them as invalid.
    """
    fitted = _fit_groups(((None, a, b, label) for a, b, label in comparisons), alpha)
    return {item: score for (_, item), score in fitted.items()}


def z_normalise(scores: Mapping[ItemT, float]) -> dict[ItemT, float]:
    """(x - mean) / sd over all items; a constant vector maps to zeros."""
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=float, count=len(scores))
    sd = values.std()
    if sd == 0:
        return dict.fromkeys(scores, 0.0)
    return dict(zip(scores, ((values - values.mean()) / sd).tolist()))


def grouped_bradley_terry(
    comparisons: Iterable[tuple[GroupT, ItemT, ItemT, str]], alpha: float = DEFAULT_ALPHA
) -> dict[tuple[GroupT, ItemT], float]:
    """BT per group (e.g. per topic), centred within each group, then z-normalised over all.

    This is how Webis-ArgQuality-20 publishes its scores: one BT model per topic,
    scores on one z scale across topics.
    """
    return z_normalise(_fit_groups(comparisons, alpha))


def _fit_groups(
    comparisons: Iterable[tuple[GroupT, ItemT, ItemT, str]], alpha: float
) -> dict[tuple[GroupT, ItemT], float]:
    """Log-strengths per (group, item), centred within each group; one BT model per group."""
    if alpha <= 0:
        raise ValueError(f"alpha must be positive (got {alpha}): it keeps never-winning items finite")
    rows = [row for row in comparisons if row[3] in WIN_SHARE]
    if not rows:
        return {}
    # Column-wise and through C-level maps: a Python loop per comparison would cost more than the fit.
    groups, firsts, seconds, labels = zip(*rows)
    keys_a, keys_b = list(zip(groups, firsts)), list(zip(groups, seconds))
    # items numbered in order of first appearance, so the scores come back in that order
    position = {key: i for i, key in enumerate(dict.fromkeys(chain.from_iterable(zip(keys_a, keys_b))))}
    group_codes = {group: i for i, group in enumerate(dict.fromkeys(groups))}
    theta = log_strengths(
        np.fromiter((group_codes[group] for group, _ in position), dtype=np.intp, count=len(position)),
        np.fromiter(map(position.__getitem__, keys_a), dtype=np.intp, count=len(rows)),
        np.fromiter(map(position.__getitem__, keys_b), dtype=np.intp, count=len(rows)),
        np.fromiter(map(WIN_SHARE.__getitem__, labels), dtype=float, count=len(rows)),
        alpha,
    )
    return dict(zip(position, theta.tolist()))


def log_strengths(
    item_groups: np.ndarray, first: np.ndarray, second: np.ndarray, first_wins: np.ndarray, alpha: float
) -> np.ndarray:
    """Centred BT log-strengths of items 0..n-1 (`item_groups[i]`: item i's group code).

    Comparison k is `first[k]` against `second[k]` (items of one group), `first_wins[k]`
    the share the first won (1, 0 or 0.5 for a tie).
    """
    theta = np.zeros(len(item_groups))
    sizes = np.bincount(item_groups)
    # Items in group order; `local[i]` is item i's position within its group.
    order = np.argsort(item_groups, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    local = np.empty(len(item_groups), dtype=np.intp)
    local[order] = np.arange(len(item_groups)) - np.repeat(starts, sizes)
    comparison_groups = item_groups[first]
    dense = [g for g in np.flatnonzero(sizes > 1) if sizes[g] <= DENSE_GROUP_LIMIT]
    # Groups of similar size share a batch, padded to the largest of them.
    buckets: dict[int, list[int]] = {}
    for g in dense:
        buckets.setdefault(int(np.ceil(np.log2(sizes[g]))), []).append(g)
    for members in buckets.values():
        _fit_dense(np.asarray(members), sizes, local, order, starts, comparison_groups,
                   first, second, first_wins, alpha, theta)
    for g in np.flatnonzero(sizes > DENSE_GROUP_LIMIT):
        in_group = comparison_groups == g
        items = order[starts[g]:starts[g] + sizes[g]]
        theta[items] = _fit_sparse(sizes[g], local[first[in_group]], local[second[in_group]],
                                   first_wins[in_group], alpha)
    return theta


def _fit_dense(
    members: np.ndarray, sizes: np.ndarray, local: np.ndarray, order: np.ndarray, starts: np.ndarray,
    comparison_groups: np.ndarray, first: np.ndarray, second: np.ndarray, first_wins: np.ndarray,
    alpha: float, theta: np.ndarray,
) -> None:
    """ILSR for a batch of groups at once, each as an m×m block (m: the batch's largest group)."""
    m = int(sizes[members].max())
    batch = np.full(len(sizes), -1)
    batch[members] = np.arange(len(members))
    taken = batch[comparison_groups] >= 0
    slot = batch[comparison_groups[taken]]
    i, j, share = local[first[taken]], local[second[taken]], first_wins[taken]
    wins = np.zeros(len(members) * m * m)  # wins[g, i, j]: how often i beat j in group g
    np.add.at(wins, (slot * m + i) * m + j, share)
    np.add.at(wins, (slot * m + j) * m + i, 1.0 - share)
    wins = wins.reshape(len(members), m, m)
    real = np.arange(m)[None, :] < sizes[members][:, None]
    regularisation = alpha * sizes[members][:, None].astype(float)
    rhs = np.where(real, regularisation, 0.0)
    diagonal = np.arange(m)
    weights = real.astype(float)
    previous = None
    for _ in range(MAX_ITERATIONS):
        padded = np.where(real, weights, 1.0)  # padding: no wins, any nonzero weight
        rates = wins / (padded[:, :, None] + padded[:, None, :])
        system = -rates
        # padding rows are the identity with right-hand side 0, so padding gets π = 0
        system[:, diagonal, diagonal] = np.where(real, regularisation + rates.sum(axis=1), 1.0)
        weights = np.linalg.solve(system, rhs[:, :, None])[:, :, 0]
        logs = np.log(np.where(real, weights, 1.0))
        centred = (logs - logs.sum(axis=1, keepdims=True) / sizes[members][:, None]) * real
        if previous is not None and np.all(
            np.abs(centred - previous).sum(axis=1) <= TOLERANCE * sizes[members]
        ):
            break
        previous = centred
    else:
        raise RuntimeError(f"Bradley-Terry fit did not converge in {MAX_ITERATIONS} iterations")
    for position, g in enumerate(members):
        theta[order[starts[g]:starts[g] + sizes[g]]] = centred[position, :sizes[g]]


def _fit_sparse(n: int, i: np.ndarray, j: np.ndarray, share: np.ndarray, alpha: float) -> np.ndarray:
    """ILSR for one large group; each step's system is diagonally dominant, solved by BiCGSTAB."""
    from scipy import sparse
    from scipy.sparse.linalg import LinearOperator, bicgstab

    # One entry per comparison and direction: winner row, loser column, the share won.
    rows = np.concatenate((i, j))
    columns = np.concatenate((j, i))
    won = np.concatenate((share, 1.0 - share))
    regularisation = alpha * n
    rhs = np.full(n, regularisation)
    weights = np.ones(n)
    previous = None
    for _ in range(MAX_ITERATIONS):
        rates = won / (weights[rows] + weights[columns])
        diagonal = regularisation + np.bincount(columns, rates, minlength=n)
        system = sparse.diags(diagonal) - sparse.csr_matrix((rates, (rows, columns)), shape=(n, n))
        jacobi = LinearOperator((n, n), matvec=lambda x, d=diagonal: x / d)
        weights, info = bicgstab(system, rhs, x0=weights, rtol=1e-12, atol=0.0, M=jacobi, maxiter=10 * n)
        if info != 0:
            raise RuntimeError("Bradley-Terry fit: the sparse linear solve did not converge")
        logs = np.log(weights)
        centred = logs - logs.mean()
        if previous is not None and np.abs(centred - previous).sum() <= TOLERANCE * n:
            return centred
        previous = centred
    raise RuntimeError(f"Bradley-Terry fit did not converge in {MAX_ITERATIONS} iterations")


def ranking(scores: Mapping[ItemT, float]) -> list[tuple[ItemT, float]]:
    """Items best first; equal scores keep their input order."""
    return sorted(scores.items(), key=lambda pair: -pair[1])


def aligned(
    first: Mapping[ItemT, float], second: Mapping[ItemT, float]
) -> tuple[list[ItemT], np.ndarray, np.ndarray]:
    """The items scored in both mappings, with the two score vectors in that order."""
    items: Sequence[ItemT] = [item for item in first if item in second]
    return (
        list(items),
        np.array([first[item] for item in items], dtype=float),
        np.array([second[item] for item in items], dtype=float),
    )
