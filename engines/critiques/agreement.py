"""Agreement tables: raters and judges against a reference rater, and each rater against the
mean of the other raters, with both losses (and the unweighted ranking variant) and
bootstrap intervals (positions resampled for the ranking losses, critiques for the custom loss).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

import numpy as np

from engines.critiques.baseline import RANDOM_JUDGE, RandomBaseline, Spread, random_judge_baseline
from engines.critiques.losses import Values, custom_weighted_loss, pairwise_ranking_error
from engines.errors import ArgtuiError
from engines.judging.verdict import JudgeId
from engines.metrics.bootstrap import bootstrap_ci
from store.critiques import DIMENSIONS, HUMAN

MEAN_OF_OTHERS = "mean of the others"


class AgreementError(ArgtuiError):
    """The requested comparison cannot be made (unknown rater, nothing rated)."""


@dataclass(frozen=True)
class Estimate:
    """A loss with its interval: a 95% bootstrap interval, or for the random judge the spread of its draws."""

    value: float
    low: float
    high: float
    units: int  # positions (ranking losses) or critiques (custom loss) behind the value

    @classmethod
    def from_spread(cls, spread: Spread, units: int) -> "Estimate":
        return cls(spread.mean, spread.low, spread.high, units)


@dataclass(frozen=True)
class Comparison:
    compared: str
    kind: str  # human, judge, random
    reference: str
    shared: int  # critiques both sides rated validly
    invalid: int  # the compared side's invalid (unparseable) ratings of reference-rated critiques
    missing: int  # reference-rated critiques the compared side has not rated
    ranking: Estimate
    ranking_unweighted: Estimate
    custom: Estimate
    pairs: int
    skipped_single: int
    skipped_tied: int
    low_clarity: int
    incomplete: int
    # invalid / (shared + invalid): the share of the compared side's ratings of reference-rated
    # critiques that could not be read, and so stand behind none of the losses (NaN: none rated)
    invalid_share: float


def invalid_share(shared: int, invalid: int) -> float:
    return invalid / (shared + invalid) if shared + invalid else math.nan


@dataclass(frozen=True)
class RaterProgress:
    rater: str
    kind: str
    rated: int
    total: int


@dataclass(frozen=True)
class AgreementReport:
    reference: str
    versus_reference: list[Comparison]  # the random judge last
    versus_others: list[Comparison]  # each human rater against the mean of the other human raters
    progress: list[RaterProgress]
    judges: Mapping[str, JudgeId] = dataclasses.field(default_factory=dict)  # the stored judges, by name


def _estimate(per_unit: Mapping[str, float], resamples: int, seed: int) -> Estimate:
    if not per_unit:
        return Estimate(math.nan, math.nan, math.nan, 0)
    values = np.array(list(per_unit.values()), dtype=float)
    interval = bootstrap_ci(lambda idx: float(values[idx].mean()), len(values), resamples=resamples, seed=seed)
    return Estimate(interval.estimate, interval.low, interval.high, len(values))


def compare(
    reference: Mapping[str, Values],
    compared: Mapping[str, Values],
    position_of: Mapping[str, str],
    *,
    compared_name: str,
    kind: str,
    reference_name: str,
    invalid: int = 0,
    resamples: int = 1000,
    seed: int = 0,
) -> Comparison:
    """Both losses of `compared` against `reference` (valid values by critique id)."""
    overall_ref = {c: v["overall"] for c, v in reference.items() if v.get("overall") is not None}
    overall_cmp = {c: v["overall"] for c, v in compared.items() if v.get("overall") is not None}
    ranking = pairwise_ranking_error(overall_ref, overall_cmp, position_of)
    unweighted = pairwise_ranking_error(overall_ref, overall_cmp, position_of, weighted=False)
    custom = custom_weighted_loss(reference, compared)
    shared = len(reference.keys() & compared.keys())
    return Comparison(
        compared=compared_name, kind=kind, reference=reference_name, shared=shared, invalid=invalid,
        missing=len(reference.keys() - compared.keys()) - invalid,
        ranking=_estimate(ranking.per_position, resamples, seed),
        ranking_unweighted=_estimate(unweighted.per_position, resamples, seed),
        custom=_estimate(custom.per_item, resamples, seed),
        pairs=ranking.pairs, skipped_single=ranking.skipped_single, skipped_tied=ranking.skipped_tied,
        low_clarity=custom.low_clarity, incomplete=custom.incomplete,
        invalid_share=invalid_share(shared, invalid),
    )


def random_comparison(
    reference: Mapping[str, Values], position_of: Mapping[str, str], reference_name: str, baseline: RandomBaseline
) -> Comparison:
    """The random judge as a table row; its intervals are the spread of its draws."""
    # It rates every critique the reference rated, so its counts are the reference's own.
    counts = compare(
        reference, reference, position_of,
        compared_name=RANDOM_JUDGE, kind=RANDOM_JUDGE, reference_name=reference_name, resamples=1,
    )
    return dataclasses.replace(
        counts,
        ranking=Estimate.from_spread(baseline.ranking, counts.ranking.units),
        ranking_unweighted=Estimate.from_spread(baseline.ranking_unweighted, counts.ranking.units),
        custom=Estimate.from_spread(baseline.custom, counts.custom.units),
    )


class Rated(Protocol):
    """One rater's rating of one critique: a stored rating, or an LLM judge's verdict."""

    @property
    def rater(self) -> str: ...
    @property
    def rater_kind(self) -> str: ...
    @property
    def critique_uid(self) -> str: ...
    @property
    def values(self) -> Values: ...
    @property
    def valid(self) -> bool: ...


def values_by_rater(ratings: Sequence[Rated]) -> tuple[dict[str, dict[str, Values]], dict[str, set[str]], dict[str, str]]:
    """(valid values by rater and critique, critiques with an invalid rating by rater, kind by rater)."""
    valid: dict[str, dict[str, Values]] = defaultdict(dict)
    invalid: dict[str, set[str]] = defaultdict(set)
    kinds: dict[str, str] = {}
    for rating in ratings:
        kinds[rating.rater] = rating.rater_kind
        if rating.valid:
            valid[rating.rater][rating.critique_uid] = rating.values
        else:
            invalid[rating.rater].add(rating.critique_uid)
    return valid, invalid, kinds


def mean_of(raters: Sequence[Mapping[str, Values]]) -> dict[str, dict[str, float | None]]:
    """Per critique and dimension, the mean over the raters that gave a value."""
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for table in raters:
        for critique, values in table.items():
            for name in DIMENSIONS:
                if values.get(name) is not None:
                    sums[critique][name].append(values[name])
    return {
        critique: {name: (sum(v) / len(v) if (v := by_dim.get(name)) else None) for name in DIMENSIONS}
        for critique, by_dim in sums.items()
    }


def agreement_report(
    ratings: Sequence[Rated],
    position_of: Mapping[str, str],
    total: int,
    reference: str,
    compared: Sequence[str] | None = None,
    *,
    resamples: int = 1000,
    random_draws: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """`ratings`: one per rater and critique (the current, or the first, of each chain)."""
    valid, invalid, kinds = values_by_rater(ratings)
    if reference not in kinds:
        known = ", ".join(sorted(kinds)) or "none yet"
        raise AgreementError(f"no ratings by {reference!r} (raters: {known})")
    for name in compared or ():
        if name not in kinds and name != RANDOM_JUDGE:
            raise AgreementError(f"no ratings by {name!r} (raters: {', '.join(sorted(kinds))})")
    ref_values = valid[reference]
    if not ref_values:
        raise AgreementError(f"{reference!r} has no valid rating to compare with")
    names = list(compared) if compared else sorted(
        (n for n in kinds if n != reference), key=lambda n: (kinds[n] != HUMAN, n)
    )
    rows = [
        compare(
            ref_values, valid[name], position_of, compared_name=name, kind=kinds[name],
            reference_name=reference, invalid=len(invalid[name] & ref_values.keys()),
            resamples=resamples, seed=seed,
        )
        for name in names
        if name != RANDOM_JUDGE
    ]
    if not compared or RANDOM_JUDGE in compared:
        baseline = random_judge_baseline(ref_values, position_of, draws=random_draws, seed=seed)
        rows.append(random_comparison(ref_values, position_of, reference, baseline))
    humans = sorted(n for n, k in kinds.items() if k == HUMAN and valid[n])
    versus_others = []
    for name in humans if len(humans) > 1 else ():
        others = mean_of([valid[other] for other in humans if other != name])
        versus_others.append(
            compare(
                others, valid[name], position_of, compared_name=name, kind=HUMAN,
                reference_name=MEAN_OF_OTHERS, resamples=resamples, seed=seed,
            )
        )
    rated = defaultdict(set)
    for rating in ratings:
        rated[rating.rater].add(rating.critique_uid)
    progress = [
        RaterProgress(name, kinds[name], len(rated[name]), total)
        for name in sorted(kinds, key=lambda n: (kinds[n] != HUMAN, n))
    ]
    return AgreementReport(reference, rows, versus_others, progress)


TABLE_COLUMNS = ("compared", "n", "ranking", "unweighted", "custom", "invalid", "pos.\n(skip)", "low\ncl.", "miss.")
TABLE_LEGEND = (
    "n: critiques both rated validly. invalid: the share (and count) of the compared side's ratings of "
    "reference-rated critiques that could not be read, so none of the losses beside it counts them. "
    "ranking: the weighted pairwise ranking error on overall (seed 002), "
    "averaged within each position, then over positions; unweighted: 1 per reversed pair "
    "(Kendall-like). pos. (skip): positions used (skipped: fewer than two critiques rated by both, "
    "or all tied by the reference). custom: the seed's custom weighted loss per critique; low cl.: "
    "critiques with reference clarity < 0.5 (only clarity and overall compared). miss.: "
    "reference-rated critiques the compared side has not rated. Intervals: 95% bootstrap over positions "
    "or critiques; for random, the spread of its draws. Lower is better."
)


def estimate_cell(estimate: Estimate) -> str:
    """The value over its interval, or a dash when the loss is undefined."""
    if math.isnan(estimate.value):
        return "–"
    return f"{estimate.value:.3f}\n{estimate.low:.3f}–{estimate.high:.3f}".replace("0.", ".")


def invalid_cell(row: Comparison) -> str:
    """The invalid share over its count, e.g. "5.9%" over "3 of 51"."""
    if math.isnan(row.invalid_share):
        return "–"
    return f"{row.invalid_share * 100:.1f}%\n{row.invalid} of {row.shared + row.invalid}"


def table_rows(rows: Sequence[Comparison]) -> list[tuple[str, ...]]:
    """Two-line cells under TABLE_COLUMNS, for any table widget."""
    return [
        (
            f"{row.compared}\n{row.kind}", str(row.shared), estimate_cell(row.ranking),
            estimate_cell(row.ranking_unweighted), estimate_cell(row.custom), invalid_cell(row),
            f"{row.ranking.units}\n({row.skipped_single + row.skipped_tied})",
            str(row.low_clarity), str(row.missing),
        )
        for row in rows
    ]


def report_as_dict(report: AgreementReport) -> dict:
    """JSON-ready: undefined losses (NaN) become null."""

    def clean(value):
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    data = dataclasses.asdict(report)
    data["judges"] = {name: judge.model_dump() for name, judge in report.judges.items()}
    return clean(data)
