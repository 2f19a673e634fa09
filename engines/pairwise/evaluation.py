"""A judge against the experts: the seed's Table 1 per dimension (and averaged), run
variability (Table 4), for the swap mode position bias, and one judge against another
(Table 3: the best judge against the others).

Scores: BT per topic on the judge's labels against the published expert
scores of the same arguments (Pearson, Spearman, Kendall, MAE, RMSE), both
z-normalised over those arguments. On the whole dataset the published scores
already are such z-scores; on a subset (one topic, a --limit sample) this
keeps MAE and RMSE on the same scale. Labels: the judge's final labels against the expert labels of the
same pairs (Cohen's κ, Krippendorff's α, percent agreement); invalid judgments
count as disagreement and are reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from engines.datasets.webis import ArgumentKey, WebisCorpus
from engines.judging.verdict import Verdict
from engines.metrics.agreement import (
    LabelAgreement,
    RunVariability,
    ScoreAgreement,
    finite_or_none,
    label_agreement,
    run_variability,
    score_agreement,
    score_agreement_with_intervals,
)
from engines.metrics.bootstrap import Interval
from engines.metrics.ranking import aligned, grouped_bradley_terry, z_normalise
from engines.pairwise.judge import SWAP, run_labels
from engines.pairwise.run import PairItem

TABLE_COLUMNS = ("pearson", "spearman", "kendall", "mae", "rmse", "kappa", "alpha", "percent")
ArgumentId = tuple[int, ArgumentKey]  # (topic id, argument key)


@dataclass(frozen=True)
class JudgedPair:
    """A judgment as the evaluation sees it (`run_labels`: see `judge_pair`)."""

    item: PairItem
    label: str | None
    run_labels: tuple[str | None, ...] = ()


def expert_judgments(items: Iterable[PairItem]) -> list[JudgedPair]:
    """The experts as a judge: their own label on every pair."""
    return [JudgedPair(item, item.expert, (item.expert,)) for item in items]


@dataclass(frozen=True)
class PositionBias:
    pairs: int
    consistent: float  # share of pairs with the same verdict in both orders, once the swap is undone
    first_position: float  # share of decisive answers (A or B) that picked the argument shown first

    def as_dict(self) -> dict:
        return {"pairs": self.pairs, "consistent": finite_or_none(self.consistent),
                "first_position": finite_or_none(self.first_position)}


def position_bias(judged: Sequence[JudgedPair]) -> PositionBias:
    """From swap-mode answers: (answer in the original order, answer in the swapped order)."""
    both = [j.run_labels for j in judged if len(j.run_labels) == 2]
    consistent = sum(1 for first, second in both if first is not None and second is not None
                     and first == SWAP[second])
    answers = [label for labels in both for label in labels]
    decisive = [label for label in answers if label in ("A", "B")]
    return PositionBias(
        pairs=len(both),
        consistent=consistent / len(both) if both else math.nan,
        first_position=decisive.count("A") / len(decisive) if decisive else math.nan,
    )


def table_metrics(scores: ScoreAgreement, labels: LabelAgreement) -> dict[str, float]:
    """The Table 1 / Table 3 columns, by TABLE_COLUMNS name."""
    return {
        "pearson": scores.pearson, "spearman": scores.spearman, "kendall": scores.kendall,
        "mae": scores.mae, "rmse": scores.rmse,
        "kappa": labels.kappa, "alpha": labels.alpha, "percent": labels.percent,
    }


def mean_metrics(per_dimension: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each column averaged over the dimensions (NaN where any is undefined)."""
    return {
        name: sum(m[name] for m in per_dimension) / len(per_dimension) if per_dimension else math.nan
        for name in TABLE_COLUMNS
    }


def variability_row(name: str, v: RunVariability) -> dict:
    """The seed's Table 4 columns: shares of pairs whose runs all agree, two agree ("2 equal"),
    all differ ("all unequal"), and α across runs."""
    share = (lambda count: count / v.items) if v.items else (lambda count: math.nan)
    return {
        "dimension": name, "pairs": v.items, "runs": v.runs,
        "all_equal": finite_or_none(share(v.all_equal)), "two_equal": finite_or_none(share(v.some_equal)),
        "all_unequal": finite_or_none(share(v.all_different)), "alpha": finite_or_none(v.alpha),
    }


@dataclass
class DimensionResult:
    dimension: str
    pairs: int
    invalid: int
    scores: ScoreAgreement
    labels: LabelAgreement
    judge_scores: dict[ArgumentId, float]
    expert_scores: dict[ArgumentId, float]
    intervals: dict[str, Interval] = field(default_factory=dict)
    variability: RunVariability | None = None
    position_bias: PositionBias | None = None

    def metrics(self) -> dict[str, float]:
        return table_metrics(self.scores, self.labels)

    def as_dict(self, scores: bool = True) -> dict:
        """JSON-ready; `scores` adds every argument's judge and expert score."""
        data = {
            "dimension": self.dimension,
            "pairs": self.pairs,
            "invalid": self.invalid,
            "arguments": self.scores.n,
            **{name: finite_or_none(value) for name, value in self.metrics().items()},
            "intervals": {
                name: {"low": finite_or_none(i.low), "high": finite_or_none(i.high), "level": i.level}
                for name, i in self.intervals.items()
            },
            "run_variability": self.variability.as_dict() if self.variability else None,
            "position_bias": self.position_bias.as_dict() if self.position_bias else None,
        }
        if scores:
            data["scores"] = [
                {"argument": f"{topic}/{key[0]}/{key[1]}",
                 "judge": self.judge_scores[(topic, key)], "expert": self.expert_scores.get((topic, key))}
                for topic, key in sorted(self.judge_scores)
            ]
        return data


@dataclass
class PairwiseReport:
    judge: str
    dimensions: list[DimensionResult]
    variability: RunVariability | None = None  # over every dimension's pairs (runs mode)

    @property
    def mean(self) -> dict[str, float]:
        """Table 1 metrics averaged over the dimensions (NaN where any is undefined)."""
        return mean_metrics([d.metrics() for d in self.dimensions])

    def variability_rows(self) -> list[dict]:
        """Table 4: one row per dimension with runs, then all pairs together."""
        rows = [variability_row(d.dimension, d.variability) for d in self.dimensions if d.variability]
        if len(rows) > 1 and self.variability:
            rows.append(variability_row("all", self.variability))
        return rows

    def table_rows(self) -> list[dict]:
        """The seed's Table 1 columns: one row per dimension, then their mean."""
        rows = [
            {"judge": self.judge, "dimension": d.dimension, "pairs": d.pairs, "invalid": d.invalid,
             **{k: finite_or_none(v) for k, v in d.metrics().items()}}
            for d in self.dimensions
        ]
        if len(self.dimensions) > 1:
            rows.append({
                "judge": self.judge, "dimension": "mean",
                "pairs": sum(d.pairs for d in self.dimensions),
                "invalid": sum(d.invalid for d in self.dimensions),
                **{k: finite_or_none(v) for k, v in self.mean.items()},
            })
        return rows

    def as_dict(self, scores: bool = True) -> dict:
        return {"judge": self.judge, "table": self.table_rows(), "variability": self.variability_rows(),
                "dimensions": [d.as_dict(scores) for d in self.dimensions]}


def evaluate_dimension(
    corpus: WebisCorpus,
    dimension: str,
    judged: Sequence[JudgedPair],
    *,
    mode: str | None = None,
    resamples: int = 0,
) -> DimensionResult:
    """One dimension's judgments against the experts; `resamples` > 0 adds bootstrap intervals."""
    judge_scores = grouped_bradley_terry(
        (j.item.topic_id, j.item.a, j.item.b, j.label) for j in judged if j.label is not None
    )
    expert_scores = {
        argument: scores[dimension]
        for argument in judge_scores
        if (scores := corpus.argument(*argument).scores) is not None
    }
    _, judge_vector, expert_vector = aligned(judge_scores, z_normalise(expert_scores))
    if resamples and len(judge_vector) > 2:
        scores, intervals = score_agreement_with_intervals(judge_vector, expert_vector, resamples=resamples)
    else:
        scores, intervals = score_agreement(judge_vector, expert_vector), {}
    result = DimensionResult(
        dimension=dimension,
        pairs=len(judged),
        invalid=sum(1 for j in judged if j.label is None),
        scores=scores,
        labels=label_agreement([j.label for j in judged], [j.item.expert for j in judged]),
        judge_scores=judge_scores,
        expert_scores=expert_scores,
        intervals=intervals,
    )
    if mode == "runs" and any(len(j.run_labels) > 1 for j in judged):
        result.variability = run_variability([j.run_labels for j in judged])
    if mode == "swap":
        result.position_bias = position_bias(judged)
    return result


def evaluate(
    corpus: WebisCorpus,
    judge: str,
    judged: Sequence[JudgedPair],
    *,
    mode: str | None = None,
    resamples: int = 0,
) -> PairwiseReport:
    """Every dimension present in `judged`, in the dataset's dimension order."""
    dimensions = [d for d in corpus.comparisons if any(j.item.dimension == d for j in judged)]
    pooled = None
    if mode == "runs" and any(len(j.run_labels) > 1 for j in judged):
        pooled = run_variability([j.run_labels for j in judged])
    return PairwiseReport(judge, [
        evaluate_dimension(corpus, d, [j for j in judged if j.item.dimension == d],
                           mode=mode, resamples=resamples)
        for d in dimensions
    ], pooled)


# ---------------------------------------------------------------------- Table 3: judge vs judge


@dataclass(frozen=True)
class VersusDimension:
    """Two judges on the pairs of one dimension both judged: BT scores and labels."""

    dimension: str
    pairs: int
    scores: ScoreAgreement
    labels: LabelAgreement

    def metrics(self) -> dict[str, float]:
        return table_metrics(self.scores, self.labels)


@dataclass(frozen=True)
class VersusRow:
    """One judge against the reference judge (Table 3's row), per dimension and averaged."""

    judge: str
    dimensions: tuple[VersusDimension, ...]

    @property
    def pairs(self) -> int:
        return sum(d.pairs for d in self.dimensions)

    @property
    def mean(self) -> dict[str, float]:
        return mean_metrics([d.metrics() for d in self.dimensions])

    def as_dict(self) -> dict:
        return {
            "judge": self.judge, "pairs": self.pairs,
            **{name: finite_or_none(value) for name, value in self.mean.items()},
            "dimensions": [
                {"dimension": d.dimension, "pairs": d.pairs,
                 **{name: finite_or_none(value) for name, value in d.metrics().items()}}
                for d in self.dimensions
            ],
        }


def versus_dimension(dimension: str, reference: Sequence[JudgedPair], other: Sequence[JudgedPair]) -> VersusDimension:
    """`other` against `reference` on the pairs both judged: BT per topic fitted on those pairs
    for each judge (z-normalised by the fit, so MAE and RMSE read like Table 1's), and their labels."""
    by_key = {j.item.key: j for j in other}
    shared = [(j, by_key[j.item.key]) for j in reference if j.item.key in by_key]

    def fit(side: int) -> dict[ArgumentId, float]:
        return grouped_bradley_terry(
            (pair[side].item.topic_id, pair[side].item.a, pair[side].item.b, pair[side].label)
            for pair in shared if pair[side].label is not None
        )

    _, reference_vector, other_vector = aligned(fit(0), fit(1))
    return VersusDimension(
        dimension, len(shared),
        score_agreement(reference_vector, other_vector),
        label_agreement([r.label for r, _ in shared], [o.label for _, o in shared]),
    )


def versus(reference: Sequence[JudgedPair], other: Sequence[JudgedPair], judge: str) -> VersusRow:
    """`other` (named `judge`) against `reference`, dimension by dimension."""
    dimensions = list(dict.fromkeys(j.item.dimension for j in reference))
    return VersusRow(judge, tuple(
        versus_dimension(d, [j for j in reference if j.item.dimension == d],
                         [j for j in other if j.item.dimension == d])
        for d in dimensions
    ))


def mean_correlation(report: PairwiseReport) -> float:
    """How the seed picks its best judge: the mean of Pearson, Spearman and Kendall over the
    dimensions (-inf when undefined, so such a judge is never the best)."""
    mean = report.mean
    value = (mean["pearson"] + mean["spearman"] + mean["kendall"]) / 3
    return -math.inf if math.isnan(value) else value


def judged_pair(item: PairItem, verdict: Verdict) -> JudgedPair:
    """A stored verdict on a pair as the evaluation sees it."""
    return JudgedPair(item, verdict.label, run_labels(verdict))
