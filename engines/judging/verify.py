"""Recomputing stored verdicts (`argtui runs verify`): every stored verdict is read again from the
answer it was made of, with today's readers, and checked against the invariants its numbers keep.

The checks common to every task are here (a distribution's probabilities in [0, 1] and summing to
at most 1, its label among its labels); a task adds its own by overriding `TaskBase.verify`:
re-reading its answers kept in the response cache (`StoredAnswers`), where the emitted label or level
of a greedy answer is the most probable one, its scores in range, its combination of scores the
documented one, the turns it cites present. A verdict whose answer is not kept, or not found by its
text alone, is counted as not recomputable with the reason, never as a mismatch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol, TypeVar

from engines.judging.verdict import Verdict
from engines.llm.cache_codec import completion_from_cache
from engines.llm.types import Completion
from store.judgments import StoredJudgment

TOLERANCE = 1e-9  # what recomputing the same floating-point sums in the same order may differ by

R = TypeVar("R")


@dataclass(frozen=True)
class Mismatch:
    """One check a stored verdict fails: what was checked, the value stored and the one expected."""

    check: str
    stored: str
    expected: str


@dataclass(frozen=True)
class Verification:
    """What checking one stored verdict found: its mismatches, whether it was recomputed from its
    answer, or why it could not be (`not_recomputable`; its invariants are checked all the same)."""

    mismatches: tuple[Mismatch, ...] = ()
    recomputed: bool = False
    not_recomputable: str | None = None

    def __add__(self, other: "Verification") -> "Verification":
        """Both parts' findings: recomputed when every part that could be was, the first reason otherwise."""
        return Verification(
            self.mismatches + other.mismatches,
            (self.recomputed or other.recomputed) and not (self.not_recomputable or other.not_recomputable),
            self.not_recomputable or other.not_recomputable,
        )


class AnswerLookup(Protocol):
    def answers_spelling(self, text: str) -> list[dict]: ...


class StoredAnswers:
    """The answers the response cache keeps, found by their text: a verdict keeps the text it was
    read from, the cache the whole answer with its logprobs."""

    def __init__(self, cache: AnswerLookup):
        self._cache = cache

    def spelling(self, text: str) -> list[Completion]:
        return [completion_from_cache(data, 0) for data in self._cache.answers_spelling(text)] if text else []

    def reread(self, check: str, text: str, stored: R, read: Callable[[Completion], R],
               agree: Callable[[R, R], bool]) -> Verification:
        """`stored` against what `read` makes today of the kept answer spelling `text`: recomputed and
        right when it is what one of them reads as (an answer as short as "yes" is kept for many
        requests, and the verdict does not say which of them it was read from)."""
        readings = [read(completion) for completion in self.spelling(text)]
        if not readings:
            return Verification(not_recomputable="the response cache keeps no answer with the text it was read from")
        if any(agree(stored, reading) for reading in readings):
            return Verification(recomputed=True)
        expected = " or ".join(dict.fromkeys(shown(reading) for reading in readings))
        return Verification((Mismatch(check, shown(stored), expected),), recomputed=True)


def shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {shown(v)}" for k, v in value.items()) + "}"
    return "–" if value is None else str(value)


def close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)


def same_distribution(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(close(a[key], b[key]) for key in a)


def compared(check: str, stored: object, expected: object, equal: bool | None = None) -> list[Mismatch]:
    """[] when `stored` is `expected` (or `equal` says they agree), else the one mismatch."""
    agree = equal if equal is not None else (
        close(stored, expected) if isinstance(stored, float) or isinstance(expected, float) else stored == expected
    )
    return [] if agree else [Mismatch(check, shown(stored), shown(expected))]


def argmax_holds(where: str, distribution: dict[str, float], emitted: str) -> list[Mismatch]:
    """A greedy answer's emitted label is (one of) the most probable of its distribution."""
    if not distribution:
        return []
    top = max(distribution.values())
    return compared(f"{where}: the emitted label of a greedy answer is the most probable",
                    emitted, max(distribution, key=distribution.__getitem__),
                    equal=distribution.get(emitted, -1.0) >= top * (1 - TOLERANCE))


def distribution_holds(where: str, distribution: dict[str, float]) -> list[Mismatch]:
    """Probabilities in [0, 1] summing to at most 1 (below 1 where invalid votes count for no label)."""
    problems = [Mismatch(f"{where}: P({label}) in [0, 1]", shown(p), "in [0, 1]")
                for label, p in distribution.items() if not 0 <= p <= 1]
    total = sum(distribution.values())
    if distribution and total > 1 + 1e-6:
        problems.append(Mismatch(f"{where}: probabilities sum to at most 1", shown(total), "≤ 1"))
    return problems


def in_range(where: str, value: float | None, low: float = 0.0, high: float = 1.0) -> list[Mismatch]:
    if value is None or low <= value <= high:
        return []
    return [Mismatch(f"{where} in [{low:g}, {high:g}]", shown(value), f"in [{low:g}, {high:g}]")]


def verdict_holds(verdict: Verdict) -> list[Mismatch]:
    """What every task's verdict keeps: a distribution of probabilities, holding its label."""
    problems = distribution_holds("distribution", verdict.distribution)
    if verdict.distribution and verdict.label is not None and verdict.label not in verdict.distribution:
        problems.append(Mismatch("the label is one of the distribution's", verdict.label,
                                 " or ".join(verdict.distribution)))
    return problems


@dataclass(frozen=True)
class Finding:
    judgment: StoredJudgment
    verification: Verification


@dataclass
class VerifyReport:
    findings: list[Finding] = field(default_factory=list)

    @property
    def mismatches(self) -> list[tuple[StoredJudgment, Mismatch]]:
        return [(f.judgment, m) for f in self.findings for m in f.verification.mismatches]

    @property
    def recomputed(self) -> int:
        return sum(f.verification.recomputed for f in self.findings)

    @property
    def not_recomputable(self) -> list[tuple[StoredJudgment, str]]:
        return [(f.judgment, f.verification.not_recomputable) for f in self.findings
                if f.verification.not_recomputable]


class VerdictChecker(Protocol):
    def __call__(self, judgment: StoredJudgment, verdict: Verdict) -> Verification: ...


def verify_all(judgments: Iterable[tuple[StoredJudgment, dict]], check: VerdictChecker) -> VerifyReport:
    """Every stored judgment (with its verdict's JSON) checked: a verdict the model no longer
    reads is a mismatch of its own."""
    report = VerifyReport()
    for judgment, data in judgments:
        try:
            verdict = Verdict.model_validate(data)
        except ValueError as error:
            first = str(error).splitlines()[0]
            report.findings.append(Finding(judgment, Verification((Mismatch("the stored verdict reads", first, "a verdict"),))))
            continue
        found = check(judgment, verdict)
        report.findings.append(Finding(judgment, Verification(tuple(verdict_holds(verdict))) + found))
    return report
