"""What the component classifier works on and returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from engines.llm.types import Usage

LABELS: tuple[str, ...] = ("MajorClaim", "Claim", "Premise")
# vanilla, chain of thought, smart reasoning (the Judge's rules without a debate), MAD-ACC.
METHODS: tuple[str, ...] = ("vanilla", "cot", "smart", "mad")


@dataclass(frozen=True)
class Span:
    """A component's place in its text: `text[start:end] == span.text`."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Turn:
    """One message of a transcript: a debater's argument, the judge's reason, a chain of thought."""

    role: str  # "proponent" | "opponent" | "judge" | "reasoning"
    text: str
    label: str | None = None  # the label the speaker defends (debaters)


@dataclass(frozen=True)
class ComponentResult:
    """One component's label with everything that led to it.

    `label` is None when the deciding output was not a label (`raw` keeps it).
    `truncated` names the answers cut at their token limit (e.g. "proponent
    turn 1", "judge"): such a result keeps its label for live use but is
    invalid, and counts as invalid in an evaluation.
    `distribution` is the manager's (mad) or the single classifier's (vanilla,
    cot); `judge_distribution` is the judge's over its constrained verdict.
    `usage` sums every answer it took (`usage.cached_calls`: those the response
    cache gave).
    """

    span: Span
    method: str
    label: str | None
    distribution: dict[str, float] = field(default_factory=dict)
    distribution_source: str = ""
    transcript: tuple[Turn, ...] = ()
    reason: str = ""
    raw: str = ""
    proponent_label: str | None = None
    opponent_label: str | None = None
    judge_distribution: dict[str, float] = field(default_factory=dict)
    skipped: bool = False
    truncated: tuple[str, ...] = ()
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0

    @property
    def valid(self) -> bool:
        return self.label is not None and not self.truncated
