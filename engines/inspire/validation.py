"""InspireScore against expert ratings: correlations and reproduced preferences (pure functions).

Everything here works on (score, expert) pairs and returns typed results. A correlation is
undefined over fewer than `MIN_VALUES` values or when one side is constant: its value is None
and `reason` says why, so a report prints "–" with the reason, never NaN. Intervals are 95%
percentile bootstrap intervals (`engines.metrics.bootstrap`), resampling the arguments (or,
for the mean over topics, the topics).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Hashable, Literal, Mapping, Sequence

import numpy as np

from engines.metrics.bootstrap import bootstrap_ci

Method = Literal["spearman", "pearson"]
METHODS: tuple[Method, ...] = ("spearman", "pearson")
MIN_VALUES = 3  # below this a correlation says nothing (two points always lie on a line)
RESAMPLES = 1000


@dataclass(frozen=True)
class Correlation:
    """One correlation with its 95% bootstrap interval; `value` None with `reason` when undefined."""

    method: Method
    n: int
    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class TopicMean:
    """The mean of the per-topic correlations of the topics where it is defined, with a 95%
    bootstrap interval over those topics; `per_topic` keeps each topic's own."""

    method: Method
    topics: int  # topics with a defined correlation: what the mean is over
    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None
    per_topic: tuple[tuple[str, Correlation], ...] = ()


@dataclass(frozen=True)
class PreferenceAgreement:
    """Expert preference pairs (the preferred argument first) against a score of both arguments."""

    pairs: int  # pairs whose two arguments both have a score
    reproduced: int  # the expert-preferred argument scores higher
    reversed: int  # it scores lower
    tied: int  # both score the same: counted apart, neither reproduced nor reversed
    share: float | None  # reproduced / pairs
    low: float | None = None
    high: float | None = None
    reason: str | None = None

    @property
    def decisive_share(self) -> float | None:
        """reproduced / (reproduced + reversed): the share over the pairs the score does not tie."""
        decisive = self.reproduced + self.reversed
        return self.reproduced / decisive if decisive else None


Undefined = Literal["few", "score", "expert"]  # too few values, the score constant, the expert score constant


def _undefined(scores: np.ndarray, experts: np.ndarray) -> Undefined | None:
    if len(scores) < MIN_VALUES:
        return "few"
    if np.ptp(scores) == 0:
        return "score"
    return "expert" if np.ptp(experts) == 0 else None


def _reason(kind: Undefined, scores: np.ndarray, experts: np.ndarray, score_name: str, expert_name: str) -> str:
    if kind == "few":
        count = f"{len(scores)} value{'s' if len(scores) > 1 else ''}" if len(scores) else "no value"
        return f"{count}; needs at least {MIN_VALUES}"
    name, values = (score_name, scores) if kind == "score" else (expert_name, experts)
    return f"{name} is constant ({values[0]:.3f} for all {len(values)})"


def _topics_reason(kinds: Sequence[Undefined], score_name: str, expert_name: str) -> str:
    """Why no topic has a correlation, counted by cause."""
    causes = {"few": f"fewer than {MIN_VALUES} values", "score": f"{score_name} constant",
              "expert": f"{expert_name} constant"}
    counts = ", ".join(f"{causes[kind]} in {kinds.count(kind)}" for kind in causes if kind in kinds)
    return f"no topic of {len(kinds)} has a correlation: {counts}" if kinds else "no value in any topic"


def _rowwise(method: Method, scores: np.ndarray, experts: np.ndarray) -> np.ndarray:
    """The correlation of each row of `scores` with the same row of `experts` (NaN for a constant row)."""
    from scipy import stats  # imported here: it takes half a second, and the app starts without it

    if method == "spearman":  # Pearson of the ranks, ties sharing their mean rank: scipy's spearmanr
        scores, experts = stats.rankdata(scores, axis=-1), stats.rankdata(experts, axis=-1)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return np.asarray(stats.pearsonr(scores, experts, axis=-1).statistic, dtype=float)


def correlation(
    method: Method, pairs: Sequence[tuple[float, float]], *, score_name: str = "the score",
    expert_name: str = "the expert score", resamples: int = RESAMPLES, seed: int = 0,
) -> Correlation:
    """Spearman's ρ or Pearson's r of (score, expert) pairs, with its interval over resampled pairs."""
    data = np.asarray(pairs, dtype=float).reshape(-1, 2)
    scores, experts = data[:, 0], data[:, 1]
    kind = _undefined(scores, experts)
    if kind is not None:
        return Correlation(method, len(data), None, reason=_reason(kind, scores, experts, score_name, expert_name))
    interval = bootstrap_ci(
        lambda rows: _rowwise(method, scores[rows], experts[rows]),
        len(data), resamples=resamples, seed=seed, vectorized=True,
    )
    return Correlation(method, len(data), interval.estimate, _finite(interval.low), _finite(interval.high))


def topic_mean(
    method: Method, by_topic: Mapping[str, Sequence[tuple[float, float]]], *, score_name: str = "the score",
    expert_name: str = "the expert score", resamples: int = RESAMPLES, seed: int = 0,
) -> TopicMean:
    """The mean of the per-topic correlations (each topic's without its own interval), with an
    interval that resamples the topics where it is defined."""
    per_topic = tuple(
        (topic, correlation(method, pairs, score_name=score_name, expert_name=expert_name, resamples=0))
        for topic, pairs in sorted(by_topic.items())
    )
    values = np.asarray([c.value for _, c in per_topic if c.value is not None], dtype=float)
    if len(values) == 0:
        kinds = [_undefined(*np.asarray(pairs, dtype=float).reshape(-1, 2).T) for pairs in by_topic.values()]
        reason = _topics_reason([kind for kind in kinds if kind is not None], score_name, expert_name)
        return TopicMean(method, 0, None, reason=reason, per_topic=per_topic)
    if len(values) == 1:  # one topic: a mean, but no spread to resample
        return TopicMean(method, 1, float(values[0]), per_topic=per_topic)
    interval = bootstrap_ci(
        lambda rows: values[rows].mean(axis=-1), len(values), resamples=resamples, seed=seed, vectorized=True,
    )
    return TopicMean(method, len(values), interval.estimate, _finite(interval.low), _finite(interval.high),
                     per_topic=per_topic)


def preference_agreement(
    pairs: Sequence[tuple[float, float]], *, resamples: int = RESAMPLES, seed: int = 0,
) -> PreferenceAgreement:
    """(score of the expert-preferred argument, score of the other) per pair: how often the
    preferred one scores higher, lower, the same; the share reproduced with its interval over pairs."""
    data = np.asarray(pairs, dtype=float).reshape(-1, 2)
    if len(data) == 0:
        return PreferenceAgreement(0, 0, 0, 0, None, reason="no expert pair has both arguments scored")
    margin = data[:, 0] - data[:, 1]
    reproduced = (margin > 0).astype(float)
    interval = bootstrap_ci(
        lambda rows: reproduced[rows].mean(axis=-1), len(data), resamples=resamples, seed=seed, vectorized=True,
    )
    return PreferenceAgreement(
        len(data), int((margin > 0).sum()), int((margin < 0).sum()), int((margin == 0).sum()),
        interval.estimate, _finite(interval.low), _finite(interval.high),
    )


def grouped(rows: Sequence[tuple[Hashable, float | None, float | None]]) -> dict[str, list[tuple[float, float]]]:
    """(topic, score, expert) rows as each topic's (score, expert) pairs, rows missing either left out."""
    found: dict[str, list[tuple[float, float]]] = {}
    for topic, score, expert in rows:
        if score is not None and expert is not None:
            found.setdefault(str(topic), []).append((score, expert))
    return found


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
