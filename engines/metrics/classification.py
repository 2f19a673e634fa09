"""Classification metrics: per-class precision/recall/F1, macro and weighted F1, confusion matrix.

Predictions may be None (an invalid model output): it counts as wrong for
every class and appears in the confusion matrix's `invalid` column, never
dropped. Gold labels that are None (unlabelled) are excluded, as the
official Touché evaluator does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

INVALID = "invalid"


@dataclass(frozen=True)
class ClassScores:
    precision: float
    recall: float
    f1: float
    support: int  # gold items of this class


@dataclass
class ClassificationReport:
    labels: list
    per_class: dict[Hashable, ClassScores]
    macro_f1: float
    weighted_f1: float
    accuracy: float
    confusion: dict[Hashable, dict[Hashable, int]]  # gold -> predicted (labels + "invalid") -> count
    n: int
    invalid: int
    excluded: int = 0  # items without a gold label
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "labels": [str(label) for label in self.labels],
            "per_class": {
                str(label): vars(scores) for label, scores in self.per_class.items()
            },
            "macro_f1": self.macro_f1,
            "weighted_f1": self.weighted_f1,
            "accuracy": self.accuracy,
            "confusion": {str(g): {str(p): c for p, c in row.items()} for g, row in self.confusion.items()},
            "n": self.n,
            "invalid": self.invalid,
            "excluded": self.excluded,
        }


def _safe_div(a: float, b: float) -> float:
    return a / b if b else 0.0


def classification_report(
    gold: Sequence[Hashable | None], predicted: Sequence[Hashable | None], labels: Sequence[Hashable]
) -> ClassificationReport:
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    pairs = [(g, p) for g, p in zip(gold, predicted) if g is not None]
    excluded = len(gold) - len(pairs)
    unknown = {g for g, _ in pairs} - set(labels)
    if unknown:
        raise ValueError(f"gold labels outside {list(labels)}: {sorted(map(str, unknown))}")
    confusion = {g: {p: 0 for p in [*labels, INVALID]} for g in labels}
    for g, p in pairs:
        confusion[g][p if p in labels else INVALID] += 1
    per_class = {}
    for label in labels:
        tp = confusion[label][label]
        predicted_as = sum(confusion[g][label] for g in labels)
        support = sum(confusion[label].values())
        precision, recall = _safe_div(tp, predicted_as), _safe_div(tp, support)
        f1 = _safe_div(2 * precision * recall, precision + recall)
        per_class[label] = ClassScores(precision, recall, f1, support)
    n = len(pairs)
    macro = _safe_div(sum(s.f1 for s in per_class.values()), len(labels))
    weighted = _safe_div(sum(s.f1 * s.support for s in per_class.values()), n)
    correct = sum(confusion[label][label] for label in labels)
    invalid = sum(row[INVALID] for row in confusion.values())
    return ClassificationReport(
        list(labels), per_class, macro, weighted, _safe_div(correct, n), confusion, n, invalid, excluded
    )


def positive_class_scores(
    gold: Sequence[int | None], scores: Sequence[float | None], threshold: float = 0.5
) -> ClassScores:
    """Precision/recall/F1 of the positive class with score >= threshold meaning yes.

    An invalid (None) score predicts nothing: it can only be a missed positive.
    """
    pairs = [(g, s) for g, s in zip(gold, scores) if g is not None]
    tp = sum(1 for g, s in pairs if g == 1 and s is not None and s >= threshold)
    fp = sum(1 for g, s in pairs if g == 0 and s is not None and s >= threshold)
    fn = sum(1 for g, s in pairs if g == 1 and (s is None or s < threshold))
    precision, recall = _safe_div(tp, tp + fp), _safe_div(tp, tp + fn)
    return ClassScores(precision, recall, _safe_div(2 * precision * recall, precision + recall), tp + fn)
