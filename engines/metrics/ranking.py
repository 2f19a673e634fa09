"""Bradley-Terry scores from pairwise labels (A / B / Tie), per group, z-normalised.

Pure functions over hashable item ids. A tie counts as half a win each way.
The fit is choix's iterative Luce spectral ranking on the dense win matrix
(`wins[i, j]` = how often i beat j, ties adding 0.5 both ways): one topic has
at most a few hundred arguments, and the dense form is vectorised, so all of
Webis-ArgQuality-20 fits in well under a second.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Iterable, Mapping, Sequence, TypeVar

import numpy as np

ItemT = TypeVar("ItemT", bound=Hashable)
GroupT = TypeVar("GroupT", bound=Hashable)

# Regularisation of choix's spectral estimator: keeps items that never win (or
# never lose) finite. 0.0005 reproduces the published Webis-ArgQuality-20 scores
# best (Spearman >= 0.996 per dimension, see benchmarks/bench_bt.py).
DEFAULT_ALPHA = 0.0005


def bradley_terry(
    comparisons: Iterable[tuple[ItemT, ItemT, str]], alpha: float = DEFAULT_ALPHA
) -> dict[ItemT, float]:
    """Log-strengths (mean 0) of every item in `comparisons` of (a, b, label in A/B/Tie).

    Other labels (e.g. None for an invalid judgment) carry no preference and are ignored;
    callers count them as invalid.
    """
    index: dict[ItemT, int] = {}
    outcomes: list[tuple[int, int, str]] = []
    for a, b, label in comparisons:
        if label not in ("A", "B", "Tie"):
            continue
        outcomes.append((index.setdefault(a, len(index)), index.setdefault(b, len(index)), label))
    if not index:
        return {}
    if len(index) == 1:
        return {next(iter(index)): 0.0}
    wins = np.zeros((len(index), len(index)))
    for i, j, label in outcomes:
        if label == "A":
            wins[i, j] += 1.0
        elif label == "B":
            wins[j, i] += 1.0
        else:
            wins[i, j] += 0.5
            wins[j, i] += 0.5
    import choix  # imported here: it loads scipy.stats, half a second the app's start-up need not pay

    params = choix.ilsr_pairwise_dense(wins, alpha=alpha)
    params = params - params.mean()
    return {item: float(params[i]) for item, i in index.items()}


def z_normalise(scores: Mapping[ItemT, float]) -> dict[ItemT, float]:
    """(x - mean) / sd over all items; a constant vector maps to zeros."""
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=float, count=len(scores))
    sd = values.std()
    mean = values.mean()
    if sd == 0:
        return {item: 0.0 for item in scores}
    return {item: float((value - mean) / sd) for item, value in scores.items()}


def grouped_bradley_terry(
    comparisons: Iterable[tuple[GroupT, ItemT, ItemT, str]], alpha: float = DEFAULT_ALPHA
) -> dict[tuple[GroupT, ItemT], float]:
    """BT per group (e.g. per topic), centred within each group, then z-normalised over all.

    This is how Webis-ArgQuality-20 publishes its scores: one BT model per topic,
    scores on one z scale across topics.
    """
    by_group: dict[GroupT, list[tuple[ItemT, ItemT, str]]] = defaultdict(list)
    for group, a, b, label in comparisons:
        by_group[group].append((a, b, label))
    raw: dict[tuple[GroupT, ItemT], float] = {}
    for group, rows in by_group.items():
        for item, score in bradley_terry(rows, alpha).items():
            raw[(group, item)] = score
    return z_normalise(raw)


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
