"""The random judge: every dimension drawn uniformly from [0, 1], independently per critique.

Its losses against a reference are averaged over many seeded draws; the
spread of the draws (2.5th–97.5th percentile) says how far one random judge
may land from that expectation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from engines.critiques.losses import Values, custom_weighted_loss, pairwise_ranking_error
from store.critiques import DIMENSIONS

RANDOM_JUDGE = "random"


@dataclass(frozen=True)
class Spread:
    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class RandomBaseline:
    ranking: Spread
    ranking_unweighted: Spread
    custom: Spread
    draws: int


def random_ratings(critiques: Iterable[str], rng: np.random.Generator) -> dict[str, dict[str, float]]:
    critiques = list(critiques)
    values = rng.random((len(critiques), len(DIMENSIONS)))
    return {c: dict(zip(DIMENSIONS, map(float, row))) for c, row in zip(critiques, values)}


def _spread(samples: list[float]) -> Spread:
    finite = np.array([s for s in samples if not math.isnan(s)])
    if finite.size == 0:
        return Spread(math.nan, math.nan, math.nan)
    low, high = np.percentile(finite, [2.5, 97.5])
    return Spread(float(finite.mean()), float(low), float(high))


def random_judge_baseline(
    reference: Mapping[str, Values],
    position_of: Mapping[str, str],
    *,
    draws: int = 1000,
    seed: int = 0,
) -> RandomBaseline:
    rng = np.random.default_rng(seed)
    overall = {c: v["overall"] for c, v in reference.items() if v.get("overall") is not None}
    ranking, unweighted, custom = [], [], []
    for _ in range(draws):
        judge = random_ratings(sorted(reference), rng)
        judge_overall = {c: v["overall"] for c, v in judge.items()}
        ranking.append(pairwise_ranking_error(overall, judge_overall, position_of).value)
        unweighted.append(pairwise_ranking_error(overall, judge_overall, position_of, weighted=False).value)
        custom.append(custom_weighted_loss(reference, judge).value)
    return RandomBaseline(_spread(ranking), _spread(unweighted), _spread(custom), draws)
