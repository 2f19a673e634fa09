"""The four subjective InspireScore dimensions: one schema-constrained call per text, each
dimension a 1–5 level with a one-sentence reason, mapped to [0, 1].

Where the backend sends top logprobs, P(level) is read at the token that wrote each score
(`label_distribution`) and the dimension's score is the probability-weighted level,
Σ P(level) · level (G-Eval's rule): a model that emits level 1 for almost every text still ranks
texts by how sure it is. The emitted (argmax) level is kept beside it, and is the score when no
distribution could be read (`unread` says why)."""

from __future__ import annotations

import re
from typing import Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from engines.inspire import prompts
from engines.llm.budget import max_tokens_for
from engines.llm.client import MAX_TOP_LOGPROBS, LLMClient, Message, json_schema_constraint
from engines.llm.parsing import label_distribution, parse_structured
from engines.llm.profile import Sampling
from engines.llm.types import Completion, Usage

DIMENSIONS = ("emotional_appeal", "clarity", "arrangement", "relevance")
TITLES = {
    "emotional_appeal": "emotional appeal", "clarity": "clarity", "arrangement": "arrangement",
    "relevance": "topic relevance",
}
LEVELS = ("1", "2", "3", "4", "5")
REASON_CHARS = 160  # one sentence; bounds max_tokens
# A reason as asked: one sentence (its end only as its last character) of plain characters, none a JSON
# string escapes, which a grammar made from a pattern would write unescaped. Unbounded, the embedded
# model repeated its sentence up to REASON_CHARS in every reason (185 tokens an answer, 120 so).
REASON_PATTERN = rf"^[A-Za-z0-9 ,;:'()%/&-]{{1,{REASON_CHARS - 1}}}[.!?]?$"
TEMPERATURE = 0.0  # greedy, so a rerun gives the cached answer and the emitted level is the likeliest


class DimensionAnswer(BaseModel):
    score: Literal[1, 2, 3, 4, 5]
    reason: str = Field(max_length=REASON_CHARS)


class SubjectiveAnswer(BaseModel):
    """What the model writes: the fields in `DIMENSIONS` order."""

    emotional_appeal: DimensionAnswer
    clarity: DimensionAnswer
    arrangement: DimensionAnswer
    relevance: DimensionAnswer


# The answer's schema as sent: each reason one sentence (`REASON_PATTERN`). Answers are read with
# `SubjectiveAnswer`, as those stored before and those of a backend without constraints are.
class OneSentenceReason(DimensionAnswer):
    reason: str = Field(pattern=REASON_PATTERN)


ASKED_ANSWER = create_model(
    "SubjectiveAnswer", __base__=SubjectiveAnswer, **{name: (OneSentenceReason, ...) for name in DIMENSIONS}
)


class DimensionScore(BaseModel):
    """One subjective dimension of a text: `score` in [0, 1], by `rule` "expected" (the
    probability-weighted level, when logprobs came) or "argmax" (the emitted `level`)."""

    model_config = ConfigDict(frozen=True)

    dimension: str
    score: float
    reason: str
    level: int  # the emitted level, 1..5
    rule: Literal["expected", "argmax"] = "argmax"
    probability: float | None = None  # P(the emitted level) from logprobs; None when none was read
    distribution: dict[str, float] = {}  # P(level) over 1..5; empty when none was read
    unread: str | None = None  # why no distribution was read (rule "argmax")

    @model_validator(mode="before")
    @classmethod
    def _stored_level(cls, data: object) -> object:
        """A score stored before levels were kept beside it was the emitted level's: read it back."""
        if isinstance(data, dict) and "level" not in data and isinstance(data.get("score"), (int, float)):
            return {**data, "level": round(data["score"] * (len(LEVELS) - 1)) + 1}
        return data


class SubjectiveScores(BaseModel):
    """The four dimensions, or why the answer could not be read (`error`, `raw`)."""

    model_config = ConfigDict(frozen=True)

    dimensions: dict[str, DimensionScore] = {}
    error: str | None = None
    raw: str = ""

    @property
    def valid(self) -> bool:
        return self.error is None


def level_score(level: int) -> float:
    """A 1–5 level on [0, 1]."""
    return (level - 1) / (len(LEVELS) - 1)


def expected_score(distribution: dict[str, float]) -> float:
    """Σ P(level) · level on [0, 1]: the mean of the levels' scores weighted by their probability."""
    return sum(probability * level_score(int(level)) for level, probability in distribution.items())


def _score_offset(raw: str, dimension: str) -> int:
    match = re.search(rf'"{dimension}"\s*:\s*\{{\s*"score"\s*:\s*(\d)', raw)
    return match.start(1) if match else -1


def read_answer(completion: Completion) -> SubjectiveScores:
    """The parsed answer with each level's distribution read at its own score token."""
    result = parse_structured(SubjectiveAnswer, completion)
    if result.value is None:
        return SubjectiveScores(error=result.error, raw=result.raw)
    dimensions = {}
    for dimension in DIMENSIONS:
        answer: DimensionAnswer = getattr(result.value, dimension)
        offset = _score_offset(result.raw, dimension)
        reading = label_distribution(LEVELS, completion, str(answer.score), offset, greedy=TEMPERATURE == 0)
        distribution = reading.distribution
        dimensions[dimension] = DimensionScore(
            dimension=dimension, reason=" ".join(answer.reason.split()), level=answer.score,
            score=expected_score(distribution) if distribution else level_score(answer.score),
            rule="expected" if distribution else "argmax",
            probability=distribution.get(str(answer.score)) if distribution else None, distribution=distribution,
            unread=reading.unread,
        )
    return SubjectiveScores(dimensions=dimensions, raw=result.raw)


def subjective_messages(topic: str, text: str, dialogue: Sequence[tuple[str, str]] = ()) -> list[Message]:
    return [{"role": "user", "content": prompts.subjective_prompt(topic, text, dialogue)}]


async def subjective_scores(
    client: LLMClient, topic: str, text: str, dialogue: Sequence[tuple[str, str]] = ()
) -> tuple[SubjectiveScores, Usage]:
    """The four dimensions of `text` in one call."""
    [completion] = await client.samples(
        subjective_messages(topic, text, dialogue), 1,
        Sampling(temperature=TEMPERATURE, max_tokens=max_tokens_for(ASKED_ANSWER)),
        top_logprobs=MAX_TOP_LOGPROBS, constraint=json_schema_constraint(ASKED_ANSWER),
    )
    return read_answer(completion), completion.usage
