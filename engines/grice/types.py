"""What a Grice judge reads (a debate turn) and what it answers (one judgment per metric)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Sequence

from engines.llm.types import Usage

Answer = Literal["yes", "no"]
YES_THRESHOLD = 0.5  # as the official evaluator: a score (P(yes)) of 0.5 or more is a yes


@dataclass(frozen=True)
class GriceContext:
    """One bot turn: the conversation so far (ending with the user's message), the bot's
    reply under judgment, and the texts of the arguments retrieved for it."""

    dialogue: Sequence[tuple[str, str]]  # (role "user" | "assistant", text), oldest first; kept as a tuple
    reply: str
    arguments: Sequence[str] = ()

    def __post_init__(self) -> None:
        # Callers pass lists; tuples keep the context hashable and immutable.
        object.__setattr__(self, "dialogue", tuple((str(role), str(text)) for role, text in self.dialogue))
        object.__setattr__(self, "arguments", tuple(self.arguments))


@dataclass(frozen=True)
class MetricJudgment:
    """The answer to one Grice question. `answer` and `p_yes` are None when the judge's
    output was invalid; `raw` keeps what it said, `error` why it is invalid. A rationale the
    model did not mean, asked again and still so, is `NO_USABLE_ANSWER` (engines.judging.shown_text),
    what the model wrote kept in `rationale_raw`."""

    metric: str
    method: str  # ZSL, FSL1, FSL2, Analyzer1/3/5
    answer: Answer | None
    p_yes: float | None
    rationale: str
    raw: str
    source: str = ""  # where P(yes) comes from: logprobs, votes or text (a point mass)
    error: str | None = None
    seconds: float = 0.0
    usage: Usage = field(default_factory=Usage)  # Analyzer stage 1 counted once, where it ran
    rationale_raw: str = ""

    @property
    def valid(self) -> bool:
        return self.answer is not None

    @property
    def calls(self) -> int:
        """LLM answers this judgment cost (cached ones included)."""
        return self.usage.calls

    def to_data(self) -> dict[str, Any]:
        """Plain JSON values, as a stored verdict keeps them (`rationale_raw` only where there is one,
        so a judgment with a meant rationale is stored as before the field was)."""
        data = asdict(self)
        if not self.rationale_raw:
            del data["rationale_raw"]
        return data

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> "MetricJudgment":
        return cls(**{**data, "usage": Usage(**data.get("usage", {}))})


@dataclass(frozen=True)
class GriceJudgment:
    strategy: str
    metrics: dict[str, MetricJudgment] = field(default_factory=dict)  # in METRICS order
    seconds: float = 0.0  # wall time of the turn (metrics run concurrently)

    @property
    def usage(self) -> Usage:
        return Usage.total(m.usage for m in self.metrics.values())

    @property
    def calls(self) -> int:
        return self.usage.calls

    @property
    def valid(self) -> bool:
        return all(m.valid for m in self.metrics.values())
