"""InspireScore of one text (a debate turn) and of a debate.

Six dimensions, each in [0, 1] or None when it cannot be measured:
emotional appeal, clarity, arrangement and topic relevance (`subjective`),
logical validity S_LV (`logic`: the model translates the text into derivations,
a solver checks each) and support by the argument base S_FA (`facts`: claims checked
against the argument base, or a fact source apart from it; the turn's own evidence
excluded). `overall` is the unweighted mean of the dimensions that have a value;
`weakest` is the lowest of them, explained in one sentence. Two texts (or a debate's
two sides) are ranked by `compare`: only on the dimensions both have.

`score_text` is what the Debate screen's Coach panel calls after each student
message; `inspire_scores_by_debate` gives the debate list each stored debate's
overall score from the judgments stored under the `inspire` task.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass
from typing import Awaitable, Callable, Collection, Mapping, Sequence, TypeVar

from pydantic import BaseModel, ConfigDict, computed_field
from sqlmodel import select

from engines.inspire.facts import ARGUMENT_BASE, FactCheck, check_facts, extraction_messages
from engines.inspire.grounding import grounded
from engines.inspire.logic import (
    MEASURED,
    CounterModel,
    Derivation,
    DerivationCheck,
    Status,
    check_derivations,
    derivation_words,
    is_prompt_example,
    logical_validity,
    translate,
)
from engines.inspire.logic_prompts import logic_messages
from engines.inspire.subjective import (
    DIMENSIONS as SUBJECTIVE,
    TITLES,
    SubjectiveScores,
    subjective_messages,
    subjective_scores,
)
from engines.judging.shown_text import shown, unmeant
from engines.llm.client import LLMClient, Message
from engines.llm.types import Usage, UsageMeter
from engines.retrieval.types import Retriever
from engines.timing import Stopwatch
from store.db import Database
from store.judgments import Judgment

TASK_NAME = "inspire"  # the judgment store's task of stored InspireScores
# Stored verdicts keep the FactCheck, not this key: those stored under the former key
# "factual_truthfulness" read as this dimension.
LOGICAL, SUPPORTED = "logical_validity", "supported_by_base"
DIMENSIONS = (*SUBJECTIVE, LOGICAL, SUPPORTED)
# `FactCheck.title` names a configured fact source instead of the argument base.
DIMENSION_TITLES = {**TITLES, LOGICAL: "logical validity", SUPPORTED: "supported by the argument base"}
NOT_MEASURED = "not measured for this turn"  # what a dimension without a score reads as
STORED_DEBATE = "debate:"  # item keys of stored debates' turns: debate:<id>/<position>
SCORE_PARTS = ("subjective", "logic", "facts")  # what `score_text` runs at once, each told as it finishes
T = TypeVar("T")


@dataclass(frozen=True)
class ScoreProgress:
    """A part of a text's InspireScore finished (`SCORE_PARTS`): `done` of `total` are."""

    part: str
    done: int
    total: int = len(SCORE_PARTS)


class DerivationRecord(BaseModel):
    """One derivation of a text's translation and what the solver found."""

    model_config = ConfigDict(frozen=True)

    premises: tuple[str, ...]
    conclusion: str
    text: str = ""
    status: Status
    error: str | None = None
    seconds: float = 0.0
    counter_model: CounterModel | None = None  # invalid: a world where the premises hold and the conclusion not


class LogicResult(BaseModel):
    """The checked derivations, or why the translation could not be read (`error`, `raw`)."""

    model_config = ConfigDict(frozen=True)

    checks: tuple[DerivationRecord, ...] = ()
    score: float | None = None  # S_LV
    error: str | None = None
    raw: str = ""
    dropped: int = 0  # derivations not about the text (echoes of the prompt's examples), left out before any check

    @property
    def valid(self) -> bool:
        return self.error is None

    def count(self, status: str) -> int:
        return sum(check.status == status for check in self.checks)


class InspireScore(BaseModel):
    """The InspireScore of one text."""

    model_config = ConfigDict(frozen=True)

    subjective: SubjectiveScores
    logic: LogicResult
    facts: FactCheck
    usage: Usage = Usage()
    seconds: float = 0.0

    @property
    def dimensions(self) -> dict[str, float | None]:
        """Every dimension's score in [0, 1], None where it could not be measured."""
        found: dict[str, float | None] = {
            name: (self.subjective.dimensions[name].score if name in self.subjective.dimensions else None)
            for name in SUBJECTIVE
        }
        found[LOGICAL] = self.logic.score
        found[SUPPORTED] = self.facts.score
        return found

    @property
    def overall(self) -> float | None:
        """The unweighted mean of the dimensions that have a score (of this text alone: two texts are
        ranked by `compare`, on the dimensions both have)."""
        present = [value for value in self.dimensions.values() if value is not None]
        return statistics.fmean(present) if present else None

    @property
    def coverage(self) -> tuple[int, int]:
        """(dimensions with a score, all dimensions)."""
        return sum(value is not None for value in self.dimensions.values()), len(DIMENSIONS)

    @property
    def weakest(self) -> str | None:
        """The lowest-scoring dimension (the first of equals, in `DIMENSIONS` order)."""
        present = [(value, name) for name, value in self.dimensions.items() if value is not None]
        return min(present, key=lambda pair: pair[0])[1] if present else None

    @property
    def weakest_explanation(self) -> str:
        """One sentence on why the weakest dimension scored as it did."""
        name = self.weakest
        if name is None:
            return "No dimension could be scored."
        return self.explanation(name)

    def explanation(self, name: str) -> str:
        """One sentence on dimension `name`, from what was said or found about that dimension only."""
        title = DIMENSION_TITLES[name]
        if self.dimensions[name] is None:
            return f"{title.capitalize()}: {NOT_MEASURED}."
        if name in SUBJECTIVE:
            reason = self.subjective.dimensions[name].reason
            shared = _same_reason(self.subjective, name)
            if shared or not reason.strip():
                also = f" (the model gave the same reason for {', '.join(DIMENSION_TITLES[d] for d in shared)})"
                return f"{title.capitalize()}: no reason specific to it came{also if shared else ''}."
            return f"{title.capitalize()}: {shown(reason)}"
        if name == LOGICAL:
            from engines.inspire.explain import verdict_sentence  # explain.py reads this module's records

            measured = [check for check in self.logic.checks if check.status in MEASURED]
            failed = next((check for check in measured if check.status != "valid"), None)
            return f"Logical validity: {self.logic.count('valid')} of {len(measured)} checked derivations hold" + (
                f"; “{_first(self.logic, failed.status)}”: {verdict_sentence(failed)}" if failed else "."
            )
        supported = sum(v.verdict == "supported" for v in self.facts.verdicts)
        unsupported = next((v for v in self.facts.verdicts if v.verdict != "supported"), None)
        return f"{self.facts.title.capitalize()}: {supported} of {len(self.facts.verdicts)} claims" + (
            f"; “{unsupported.claim}”: {unsupported.verdict or 'unreadable verdict'}." if unsupported else "."
        )

    @property
    def problems(self) -> list[str]:
        """What could not be read or did not hold: unparsed answers and translations, invalid derivations."""
        found = []
        if not self.subjective.valid:
            found.append(f"subjective scores unreadable: {self.subjective.error}")
        if not self.logic.valid:
            found.append(f"logic translation unparsed: {self.logic.error}")
        found += [f"derivation {check.status}: {check.text or check.conclusion}" + (f" ({check.error})" if check.error else "")
                  for check in self.logic.checks if check.status != "valid"]
        if not self.facts.valid:
            found.append(f"fact claims unreadable: {self.facts.error}")
        found += [f"fact verdict unreadable: {v.claim}" for v in self.facts.verdicts if not v.valid]
        return found

    def summary(self) -> str:
        """One line for tables and verdict details."""
        overall = "–" if self.overall is None else f"{self.overall:.2f}"
        scored, total = self.coverage
        parts = [f"{name} {'–' if value is None else f'{value:.2f}'}" for name, value in self.dimensions.items()]
        return f"overall {overall} ({scored} of {total} dimensions) · " + " · ".join(parts)


def _reason_words(reason: str) -> str:
    return " ".join(reason.casefold().split()).rstrip(".!")


def _same_reason(subjective: SubjectiveScores, name: str) -> tuple[str, ...]:
    """The other subjective dimensions the model gave `name`'s reason for, word for word: such a
    reason says nothing about `name` in particular."""
    reason = _reason_words(subjective.dimensions[name].reason)
    return tuple(other for other, score in subjective.dimensions.items()
                 if reason and other != name and _reason_words(score.reason) == reason)


class ScoreComparison(BaseModel):
    """Two texts compared on the dimensions both have a score on; `a`, `b` their unweighted means
    over those, None when they share none. A dimension one text lacks (no claim to check, no
    derivation the solver could read) counts neither for nor against either text."""

    model_config = ConfigDict(frozen=True)

    dimensions: tuple[str, ...]
    a: float | None
    b: float | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def margin(self) -> float | None:
        """a − b; None when nothing is shared."""
        return None if self.a is None or self.b is None else self.a - self.b


def compare_dimensions(a: Mapping[str, float | None], b: Mapping[str, float | None]) -> ScoreComparison:
    """Two sets of dimension scores compared on the dimensions both have (in `DIMENSIONS` order)."""
    shared = tuple(name for name in DIMENSIONS if a.get(name) is not None and b.get(name) is not None)
    if not shared:
        return ScoreComparison(dimensions=(), a=None, b=None)
    return ScoreComparison(dimensions=shared, a=statistics.fmean(a[name] for name in shared),  # type: ignore[misc]
                           b=statistics.fmean(b[name] for name in shared))  # type: ignore[misc]


def compare(a: InspireScore, b: InspireScore) -> ScoreComparison:
    """The one rule for ranking two texts: compared only on the dimensions both have."""
    return compare_dimensions(a.dimensions, b.dimensions)


def _first(logic: LogicResult, status: str) -> str:
    check = next(c for c in logic.checks if c.status == status)
    return check.text or f"{'; '.join(check.premises)} ⊢ {check.conclusion}"


def _record(check: DerivationCheck) -> DerivationRecord:
    derivation = check.derivation
    return DerivationRecord(
        premises=tuple(derivation.premises), conclusion=derivation.conclusion, text=derivation.text,
        status=check.status, error=check.error, seconds=check.seconds, counter_model=check.counter_model,
    )


def _about(derivation: Derivation, text: str) -> bool:
    """Whether a derivation formalises `text`: what it quotes (else the words of its names) is
    grounded in the text, its quote is one the model meant (not a loop: the Coach shows it as the
    student's words), and it is not one of the translation prompt's examples."""
    if derivation.text and unmeant(derivation.text) is not None:
        return False
    return not is_prompt_example(derivation) and grounded(derivation.text or derivation_words(derivation), text)


async def check_logic(client: LLMClient, topic: str, text: str) -> LogicResult:
    """The text's derivations, each checked by the solver (off the event loop); those not about
    the text are dropped first (counted in `dropped`)."""
    translation = await translate(client, text, topic)
    if translation.value is None:
        return LogicResult(error=translation.error, raw=translation.raw)
    derivations = [d for d in translation.value.derivations if _about(d, text)]
    checks = await check_derivations(derivations)
    return LogicResult(
        checks=tuple(_record(c) for c in checks), score=logical_validity(checks), raw=translation.raw,
        dropped=len(translation.value.derivations) - len(derivations),
    )


async def score_text(
    client: LLMClient, retriever: Retriever, topic: str, text: str, dialogue: Sequence[tuple[str, str]] = (),
    exclude_evidence: Collection[str] = (), facts_source: str = ARGUMENT_BASE,
    on_part: Callable[[ScoreProgress], None] | None = None,
) -> InspireScore:
    """The InspireScore of `text` said in a debate on `topic` after `dialogue` ((role, text),
    role "user" for the student, "assistant" for the bot). Claims are checked against `retriever`
    (named `facts_source`), never with the arguments `exclude_evidence` (those the turn retrieved
    or quoted) nor the passages the text quotes as evidence. The subjective call, the logic
    translation and the fact extraction run concurrently; `on_part` is told as each finishes."""
    stopwatch = Stopwatch()
    done = 0

    async def part(name: str, work: Awaitable[T]) -> T:
        nonlocal done
        result = await work
        done += 1
        if on_part is not None:
            on_part(ScoreProgress(name, done))
        return result

    subjective_part, logic_part, facts_part = SCORE_PARTS
    with UsageMeter().counting() as meter:
        (subjective, _), logic, (facts, _) = await asyncio.gather(
            part(subjective_part, subjective_scores(client, topic, text, dialogue)),
            part(logic_part, check_logic(client, topic, text)),
            part(facts_part, check_facts(client, retriever, topic, text, exclude_evidence, facts_source)),
        )
    return InspireScore(subjective=subjective, logic=logic, facts=facts, usage=meter.usage, seconds=stopwatch.seconds)


def shared_prompts() -> tuple[list[Message], ...]:
    """How the three calls of `score_text` begin for every text of every debate (their instructions,
    and the logic translation's worked examples), for a backend's prefix cache to hold before the
    first turn. The claim list is asked of a one-sentence message, the most common."""
    return subjective_messages("", ""), logic_messages("", ""), extraction_messages("", "", 1)


# ---------------------------------------------------------------- a debate


class DimensionMean(BaseModel):
    model_config = ConfigDict(frozen=True)

    dimension: str
    mean: float | None
    scored: int  # turns with a score on this dimension


class DebateInspireScore(BaseModel):
    """A debate's InspireScore: per dimension the mean over the turns scored on it, for every
    turn and per side; `overall` the mean of the turns' overall scores. The sides are compared
    as two texts are (`compare`): `student` and `bot` are the means of a side's dimension means
    over the dimensions both sides have (`shared`), None when they share none."""

    model_config = ConfigDict(frozen=True)

    turns: int
    overall: float | None
    dimensions: tuple[DimensionMean, ...]
    student_dimensions: tuple[DimensionMean, ...]
    bot_dimensions: tuple[DimensionMean, ...]
    shared: tuple[str, ...]
    student: float | None
    bot: float | None


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _dimension_means(scores: Sequence[InspireScore]) -> tuple[DimensionMean, ...]:
    return tuple(
        DimensionMean(dimension=name, mean=_mean([s.dimensions[name] for s in scores]),
                      scored=sum(s.dimensions[name] is not None for s in scores))
        for name in DIMENSIONS
    )


def debate_score(turns: Sequence[tuple[str, InspireScore]]) -> DebateInspireScore:
    """The aggregate of (role, score) per turn; role "user" is the student's."""
    scores = [score for _, score in turns]
    student = _dimension_means([s for role, s in turns if role == "user"])
    bot = _dimension_means([s for role, s in turns if role == "assistant"])
    sides = compare_dimensions({m.dimension: m.mean for m in student}, {m.dimension: m.mean for m in bot})
    return DebateInspireScore(
        turns=len(turns), overall=_mean([s.overall for s in scores]), dimensions=_dimension_means(scores),
        student_dimensions=student, bot_dimensions=bot, shared=sides.dimensions, student=sides.a, bot=sides.b,
    )


def stored_turn_key(debate_id: int, position: int) -> str:
    """The judgment store's item key of a stored debate's turn."""
    return f"{STORED_DEBATE}{debate_id}/{position}"


def inspire_scores_by_debate(db: Database) -> dict[int, float]:
    """Each stored debate's overall score: the mean of its turns' latest overall scores
    (stored by `argtui eval inspire --debate ID` or the Coach panel); debates without one are absent."""
    latest: dict[str, float | None] = {}
    with db.read() as session:
        rows = session.exec(
            select(Judgment.item, Judgment.verdict)
            .where(Judgment.task == TASK_NAME, Judgment.item.startswith(STORED_DEBATE))  # type: ignore[attr-defined]
            .order_by(Judgment.created_at, Judgment.id)
        )
        for item, verdict in rows:
            latest[item] = verdict.get("value")
    by_debate: dict[int, list[float]] = {}
    for item, value in latest.items():
        debate, _, _ = item.removeprefix(STORED_DEBATE).partition("/")
        if value is not None and debate.isdigit():
            by_debate.setdefault(int(debate), []).append(value)
    return {debate: statistics.fmean(values) for debate, values in by_debate.items()}
