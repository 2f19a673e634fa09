"""Grice judgments in the official Sub-Task 2 shapes, and scores against labels.

Run file (what the official evaluator reads): one JSON line per debate, in the
order of the labels file, `{"userTurnsEvaluations": [{"Quantity": {"score": s},
"Quality": …, "Relation": …, "Manner": …}, …]}` with one object per user turn.
The evaluator requires a number for every score, so an invalid judgment is
written as 0.0 (a "no"): that is exactly how our own scores count it (it can
only be a missed positive), and the run's summary reports how many there were.
Lines also carry the debate `id` and each score an `explanation` (the
rationale); the evaluator ignores fields it does not know.

Scores per metric, a score of 0.5 or more meaning yes and turns whose label
is null left out (as the official evaluator does): precision, recall and F1
of the positive class (what the official evaluator reports), and the
two-class macro precision, recall and F1 (the mean over the yes and the no
class: what the paper reports); then plain means of both over the four
metrics. Reference judges scored on the same turns: always yes (the
organisers' baseline) and a seeded random judge.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Sequence

from engines.grice.questions import METRICS, QUESTIONS
from engines.grice.types import YES_THRESHOLD
from engines.metrics.classification import classification_report, positive_class_scores
from engines.output import write_text_file

INVALID_SCORE = 0.0


def official_turn(scores: dict[str, float | None], explanations: dict[str, str] | None = None) -> dict:
    """One element of `userTurnsEvaluations`, keyed by the dimension names."""
    turn = {}
    for metric in METRICS:
        score = scores.get(metric)
        entry: dict = {"score": INVALID_SCORE if score is None else float(score)}
        if explanations and explanations.get(metric):
            entry["explanation"] = explanations[metric]
        turn[QUESTIONS[metric].dimension] = entry
    return turn


def write_official_run(path: Path, debates: Iterable[tuple[str, list[dict]]]) -> int:
    """Writes (debate id, official turns) as the run file; returns the number of lines."""
    lines = [
        json.dumps({"id": debate_id, "userTurnsEvaluations": turns}, ensure_ascii=False)
        for debate_id, turns in debates
    ]
    write_text_file(path, "".join(line + "\n" for line in lines), make_parents=True)
    return len(lines)


@dataclass(frozen=True)
class PRF:
    precision: float
    recall: float
    f1: float

    @classmethod
    def mean(cls, values: Sequence["PRF"]) -> "PRF":
        count = len(values)
        return cls(*(sum(getattr(v, name) for v in values) / count for name in ("precision", "recall", "f1")))


@dataclass(frozen=True)
class MetricScores:
    positive_class: PRF  # the yes class, as the official evaluator scores a run
    two_class_macro: PRF  # the mean of the yes and the no class, as the paper reports
    positives: int  # labelled yes
    labelled: int  # turns with a 0/1 label
    unlabelled: int  # null labels, left out
    invalid: int  # labelled turns whose judgment was invalid (counted as "no")


@dataclass(frozen=True)
class GriceReport:
    metrics: dict[str, MetricScores]
    mean_positive_class: PRF  # plain means over the four metrics
    mean_two_class_macro: PRF

    def as_dict(self) -> dict:
        return {
            "threshold": YES_THRESHOLD,
            "metrics": {metric: asdict(scores) for metric, scores in self.metrics.items()},
            "mean": {"positive_class": asdict(self.mean_positive_class),
                     "two_class_macro": asdict(self.mean_two_class_macro)},
        }


def _two_class_macro(labels: Sequence[int | None], scores: Sequence[float | None]) -> PRF:
    # An invalid score is a "no", as in the run file.
    predicted = [1 if s is not None and s >= YES_THRESHOLD else 0 for s in scores]
    report = classification_report(labels, predicted, (1, 0))
    return PRF(
        sum(c.precision for c in report.per_class.values()) / 2,
        sum(c.recall for c in report.per_class.values()) / 2,
        report.macro_f1,
    )


def grice_report(
    gold: dict[str, Sequence[int | None]], scores: dict[str, Sequence[float | None]]
) -> GriceReport:
    """Per metric: parallel lists of labels (0/1/None) and scores (P(yes), None when invalid)."""
    per_metric = {}
    for metric in METRICS:
        labels, predicted = list(gold[metric]), list(scores[metric])
        if len(labels) != len(predicted):
            raise ValueError(f"{metric}: {len(labels)} labels but {len(predicted)} scores")
        positive = positive_class_scores(labels, predicted, YES_THRESHOLD)
        per_metric[metric] = MetricScores(
            positive_class=PRF(positive.precision, positive.recall, positive.f1),
            two_class_macro=_two_class_macro(labels, predicted),
            positives=positive.support,
            labelled=sum(label is not None for label in labels),
            unlabelled=sum(label is None for label in labels),
            invalid=sum(label is not None and s is None for label, s in zip(labels, predicted)),
        )
    return GriceReport(
        per_metric,
        PRF.mean([s.positive_class for s in per_metric.values()]),
        PRF.mean([s.two_class_macro for s in per_metric.values()]),
    )


def always_yes_scores(turns: int) -> dict[str, list[float]]:
    """The organisers' baseline: a score of 1 on every metric of every turn."""
    return {metric: [1.0] * turns for metric in METRICS}


def random_scores(turns: int, seed: int) -> dict[str, list[float]]:
    """A random judge: a uniform score per turn and metric, drawn turn by turn with `seed`."""
    rng = random.Random(seed)
    drawn = [[rng.random() for _ in METRICS] for _ in range(turns)]
    return {metric: [row[number] for row in drawn] for number, metric in enumerate(METRICS)}
