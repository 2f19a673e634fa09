"""A judge against the experts: the seed's Table 1 per dimension (and averaged), run
variability (Table 4) and, for the swap mode, position bias.

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
    correlation_intervals,
    finite_or_none,
    label_agreement,
    run_variability,
    score_agreement,
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
        return {
            "pearson": self.scores.pearson, "spearman": self.scores.spearman,
            "kendall": self.scores.kendall, "mae": self.scores.mae, "rmse": self.scores.rmse,
            "kappa": self.labels.kappa, "alpha": self.labels.alpha, "percent": self.labels.percent,
        }

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

    @property
    def mean(self) -> dict[str, float]:
        """Table 1 metrics averaged over the dimensions (NaN where any is undefined)."""
        return {
            name: sum(d.metrics()[name] for d in self.dimensions) / len(self.dimensions)
            if self.dimensions else math.nan
            for name in TABLE_COLUMNS
        }

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
        return {"judge": self.judge, "table": self.table_rows(),
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
    result = DimensionResult(
        dimension=dimension,
        pairs=len(judged),
        invalid=sum(1 for j in judged if j.label is None),
        scores=score_agreement(judge_vector, expert_vector),
        labels=label_agreement([j.label for j in judged], [j.item.expert for j in judged]),
        judge_scores=judge_scores,
        expert_scores=expert_scores,
    )
    if resamples and len(judge_vector) > 2:
        result.intervals = correlation_intervals(judge_vector, expert_vector, resamples=resamples)
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
    return PairwiseReport(judge, [
        evaluate_dimension(corpus, d, [j for j in judged if j.item.dimension == d],
                           mode=mode, resamples=resamples)
        for d in dimensions
    ])


def judged_pair(item: PairItem, verdict: Verdict) -> JudgedPair:
    """A stored verdict on a pair as the evaluation sees it."""
    return JudgedPair(item, verdict.label, run_labels(verdict))
