"""Grice judgments in the official Sub-Task 2 shapes, and scores against labels.

Run file (what the official evaluator reads): one JSON line per debate, in the
order of the labels file, `{"userTurnsEvaluations": [{"Quantity": {"score": s},
"Quality": …, "Relation": …, "Manner": …}, …]}` with one object per user turn.
The evaluator requires a number for every score, so an invalid judgment is
written as 0.0 (a "no"): that is exactly how our own scores count it (it can
only be a missed positive), and the run's summary reports how many there were.
Lines also carry the debate `id` and each score an `explanation` (the
rationale); the evaluator ignores fields it does not know.

Scores: precision, recall and F1 of the positive class per metric, a score of
0.5 or more meaning yes; turns whose label is null are left out (as the
official evaluator does); macro averages are plain means over the four metrics.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Sequence

from engines.grice.questions import METRICS, QUESTIONS
from engines.grice.types import YES_THRESHOLD
from engines.metrics.classification import positive_class_scores
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
class MetricScores:
    precision: float
    recall: float
    f1: float
    positives: int  # labelled yes
    labelled: int  # turns with a 0/1 label
    unlabelled: int  # null labels, left out
    invalid: int  # labelled turns whose judgment was invalid (counted as "no")


@dataclass(frozen=True)
class GriceReport:
    metrics: dict[str, MetricScores]
    macro_precision: float
    macro_recall: float
    macro_f1: float

    def as_dict(self) -> dict:
        return {
            "threshold": YES_THRESHOLD,
            "metrics": {metric: asdict(scores) for metric, scores in self.metrics.items()},
            "macro": {"precision": self.macro_precision, "recall": self.macro_recall, "f1": self.macro_f1},
        }


def grice_report(
    gold: dict[str, Sequence[int | None]], scores: dict[str, Sequence[float | None]]
) -> GriceReport:
    """Per metric: parallel lists of labels (0/1/None) and scores (P(yes), None when invalid)."""
    per_metric = {}
    for metric in METRICS:
        labels, predicted = list(gold[metric]), list(scores[metric])
        if len(labels) != len(predicted):
            raise ValueError(f"{metric}: {len(labels)} labels but {len(predicted)} scores")
        result = positive_class_scores(labels, predicted, YES_THRESHOLD)
        per_metric[metric] = MetricScores(
            precision=result.precision,
            recall=result.recall,
            f1=result.f1,
            positives=result.support,
            labelled=sum(label is not None for label in labels),
            unlabelled=sum(label is None for label in labels),
            invalid=sum(label is not None and s is None for label, s in zip(labels, predicted)),
        )
    count = len(per_metric)
    return GriceReport(
        per_metric,
        macro_precision=sum(s.precision for s in per_metric.values()) / count,
        macro_recall=sum(s.recall for s in per_metric.values()) / count,
        macro_f1=sum(s.f1 for s in per_metric.values()) / count,
    )
