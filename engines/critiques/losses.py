"""The seed's two losses between a reference (human) rater and a compared rater or judge.

Pure functions over plain mappings; lower is closer to the reference.

*Weighted pairwise ranking error* (overall only). Within a position, for each
pair of critiques the reference orders (r_i > r_j), a compared rater that
orders them the other way costs r_i − r_j, the same order costs 0 and a tie
costs half of r_i − r_j. (The seed's worked example halves the human
difference for a model tie; its formal sentence says the model difference,
which is zero for a tie. The example is taken, as the issue and SPEC say.)
Costs are averaged within each position, then over positions. Pairs the
reference ties are not ordered and do not count. Positions with fewer than
two critiques rated by both sides are skipped and counted, as are positions
whose rated critiques the reference scores all alike. The unweighted variant
costs 1 per reversed pair and ½ per tie (Kendall-like).

*Custom weighted loss* (per critique, then averaged). If the reference's
clarity is below 0.5 only clarity and overall are compared:
0.5·|Δoverall| + 0.5·|Δclarity|. Otherwise the weighted mean absolute error of
strength×centrality (weight 4), correctness (2), clarity (2), single issue (1)
and dead weight (1), averaged with |Δoverall|.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Mapping

Values = Mapping[str, float | None]
LOW_CLARITY = 0.5
COMPONENT_WEIGHTS = {
    "strength×centrality": 4.0,
    "correctness": 2.0,
    "clarity": 2.0,
    "single_issue": 1.0,
    "dead_weight": 1.0,
}


@dataclass(frozen=True)
class RankingError:
    value: float  # NaN when no position could be used
    weighted: bool
    per_position: dict[str, float]  # position → mean cost of its ordered pairs
    pairs: int
    skipped_single: int  # positions with fewer than two critiques rated by both sides
    skipped_tied: int  # positions where the reference scores every rated critique alike

    @property
    def positions(self) -> int:
        return len(self.per_position)


@dataclass(frozen=True)
class CustomLoss:
    value: float  # NaN when no critique could be compared
    per_item: dict[str, float]
    low_clarity: int  # items scored on clarity and overall only
    incomplete: int  # items where a dimension the loss needs is missing on either side

    @property
    def items(self) -> int:
        return len(self.per_item)


def pair_cost(reference_i: float, reference_j: float, compared_i: float, compared_j: float, *, weighted: bool) -> float:
    """Cost of one pair the reference orders (reference_i > reference_j)."""
    weight = reference_i - reference_j if weighted else 1.0
    if compared_i > compared_j:
        return 0.0
    if compared_i == compared_j:
        return weight / 2
    return weight


def pairwise_ranking_error(
    reference: Mapping[str, float],
    compared: Mapping[str, float],
    position_of: Mapping[str, str],
    *,
    weighted: bool = True,
) -> RankingError:
    """Overall scores by critique id; `position_of` maps each critique to its position."""
    by_position: dict[str, list[str]] = defaultdict(list)
    for critique in sorted(reference.keys() & compared.keys()):
        by_position[position_of[critique]].append(critique)
    per_position: dict[str, float] = {}
    pairs = skipped_single = skipped_tied = 0
    for position in sorted(by_position):
        critiques = by_position[position]
        if len(critiques) < 2:
            skipped_single += 1
            continue
        costs = []
        for a, b in combinations(critiques, 2):
            if reference[a] == reference[b]:
                continue
            i, j = (a, b) if reference[a] > reference[b] else (b, a)
            costs.append(pair_cost(reference[i], reference[j], compared[i], compared[j], weighted=weighted))
        if not costs:
            skipped_tied += 1
            continue
        pairs += len(costs)
        per_position[position] = sum(costs) / len(costs)
    value = sum(per_position.values()) / len(per_position) if per_position else math.nan
    return RankingError(value, weighted, per_position, pairs, skipped_single, skipped_tied)


def item_custom_loss(reference: Values, compared: Values) -> float | None:
    """The custom weighted loss of one critique; None when a needed dimension is missing."""

    def delta(name: str) -> float | None:
        r, c = reference.get(name), compared.get(name)
        return None if r is None or c is None else abs(r - c)

    overall, clarity = delta("overall"), delta("clarity")
    if overall is None or clarity is None:
        return None
    if reference["clarity"] < LOW_CLARITY:
        return 0.5 * overall + 0.5 * clarity
    needed = ("strength", "centrality", "correctness", "single_issue", "dead_weight")
    if any(reference.get(n) is None or compared.get(n) is None for n in needed):
        return None
    components = {
        "strength×centrality": abs(
            reference["strength"] * reference["centrality"] - compared["strength"] * compared["centrality"]
        ),
        "correctness": delta("correctness"),
        "clarity": clarity,
        "single_issue": delta("single_issue"),
        "dead_weight": delta("dead_weight"),
    }
    weighted_mean = sum(COMPONENT_WEIGHTS[k] * v for k, v in components.items()) / sum(COMPONENT_WEIGHTS.values())
    return (weighted_mean + overall) / 2


def custom_weighted_loss(reference: Mapping[str, Values], compared: Mapping[str, Values]) -> CustomLoss:
    """Mean item loss over the critiques both sides rated (values by critique id)."""
    per_item: dict[str, float] = {}
    low_clarity = incomplete = 0
    for critique in sorted(reference.keys() & compared.keys()):
        loss = item_custom_loss(reference[critique], compared[critique])
        if loss is None:
            incomplete += 1
            continue
        per_item[critique] = loss
        clarity = reference[critique].get("clarity")
        low_clarity += clarity is not None and clarity < LOW_CLARITY
    value = sum(per_item.values()) / len(per_item) if per_item else math.nan
    return CustomLoss(value, per_item, low_clarity, incomplete)
