"""InspireScore of one text (a debate turn) and of a debate.

Six dimensions, each in [0, 1] or None when it cannot be measured:
emotional appeal, clarity, arrangement and topic relevance (`subjective`),
logical validity S_LV (`logic`: the model translates the text into derivations,
a solver checks each) and factual truthfulness S_FA (`facts`: claims checked
against the argument base). `overall` is the mean of the dimensions that have a
value; `weakest` is the lowest of them, explained in one sentence.

`score_text` is what the Debate screen's Coach panel calls after each student
message; `inspire_scores_by_debate` gives the debate list each stored debate's
overall score from the judgments stored under the `inspire` task.
"""

from __future__ import annotations

import asyncio
import statistics
from typing import Literal, Sequence

from pydantic import BaseModel, ConfigDict
from sqlmodel import select

from engines.inspire.facts import FactCheck, check_facts
from engines.inspire.logic import DerivationCheck, check_derivations, logical_validity, translate
from engines.inspire.subjective import DIMENSIONS as SUBJECTIVE, TITLES, SubjectiveScores, subjective_scores
from engines.llm.client import LLMClient
from engines.llm.types import Usage, UsageMeter
from engines.retrieval.types import Retriever
from engines.timing import Stopwatch
from store.db import Database
from store.judgments import Judgment

TASK_NAME = "inspire"  # the judgment store's task of stored InspireScores
LOGICAL, FACTUAL = "logical_validity", "factual_truthfulness"
DIMENSIONS = (*SUBJECTIVE, LOGICAL, FACTUAL)
DIMENSION_TITLES = {**TITLES, LOGICAL: "logical validity", FACTUAL: "factual truthfulness"}
STORED_DEBATE = "debate:"  # item keys of stored debates' turns: debate:<id>/<position>


class DerivationRecord(BaseModel):
    """One derivation of a text's translation and what the solver found."""

    model_config = ConfigDict(frozen=True)

    premises: tuple[str, ...]
    conclusion: str
    text: str = ""
    status: Literal["valid", "invalid", "unparsed", "timeout"]
    error: str | None = None
    seconds: float = 0.0


class LogicResult(BaseModel):
    """The checked derivations, or why the translation could not be read (`error`, `raw`)."""

    model_config = ConfigDict(frozen=True)

    checks: tuple[DerivationRecord, ...] = ()
    score: float | None = None  # S_LV
    error: str | None = None
    raw: str = ""

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
        found[FACTUAL] = self.facts.score
        return found

    @property
    def overall(self) -> float | None:
        """The mean of the dimensions that have a score."""
        present = [value for value in self.dimensions.values() if value is not None]
        return statistics.fmean(present) if present else None

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
        title = DIMENSION_TITLES[name]
        if name in SUBJECTIVE:
            return f"{title.capitalize()}: {self.subjective.dimensions[name].reason}"
        if name == LOGICAL:
            held = self.logic.count("valid")
            return f"Logical validity: {held} of {len(self.logic.checks)} derivations hold" + (
                f"; the solver rejects “{_first(self.logic, 'invalid')}”." if self.logic.count("invalid") else "."
            )
        supported = sum(v.verdict == "supported" for v in self.facts.verdicts)
        unsupported = next((v for v in self.facts.verdicts if v.verdict != "supported"), None)
        return f"Factual truthfulness: {supported} of {len(self.facts.verdicts)} claims are supported by the argument base" + (
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
        parts = [f"{name} {'–' if value is None else f'{value:.2f}'}" for name, value in self.dimensions.items()]
        return f"overall {overall} · " + " · ".join(parts)


def _first(logic: LogicResult, status: str) -> str:
    check = next(c for c in logic.checks if c.status == status)
    return check.text or f"{'; '.join(check.premises)} ⊢ {check.conclusion}"


def _record(check: DerivationCheck) -> DerivationRecord:
    derivation = check.derivation
    return DerivationRecord(
        premises=tuple(derivation.premises), conclusion=derivation.conclusion, text=derivation.text,
        status=check.status, error=check.error, seconds=check.seconds,
    )


async def check_logic(client: LLMClient, topic: str, text: str) -> LogicResult:
    """The text's derivations, each checked by the solver (off the event loop)."""
    translation = await translate(client, text, topic)
    if translation.value is None:
        return LogicResult(error=translation.error, raw=translation.raw)
    checks = await check_derivations(translation.value.derivations)
    return LogicResult(checks=tuple(_record(c) for c in checks), score=logical_validity(checks), raw=translation.raw)


async def score_text(
    client: LLMClient, retriever: Retriever, topic: str, text: str, dialogue: Sequence[tuple[str, str]] = ()
) -> InspireScore:
    """The InspireScore of `text` said in a debate on `topic` after `dialogue` ((role, text),
    role "user" for the student, "assistant" for the bot). The subjective call, the logic
    translation and the fact extraction run concurrently."""
    stopwatch = Stopwatch()
    with UsageMeter().counting() as meter:
        (subjective, _), logic, (facts, _) = await asyncio.gather(
            subjective_scores(client, topic, text, dialogue),
            check_logic(client, topic, text),
            check_facts(client, retriever, topic, text),
        )
    return InspireScore(subjective=subjective, logic=logic, facts=facts, usage=meter.usage, seconds=stopwatch.seconds)


# ---------------------------------------------------------------- a debate


class DimensionMean(BaseModel):
    model_config = ConfigDict(frozen=True)

    dimension: str
    mean: float | None
    scored: int  # turns with a score on this dimension


class DebateInspireScore(BaseModel):
    """A debate's InspireScore: per dimension the mean over the turns scored on it, for every
    turn and per side; `overall` the mean of the turns' overall scores."""

    model_config = ConfigDict(frozen=True)

    turns: int
    overall: float | None
    dimensions: tuple[DimensionMean, ...]
    student: float | None  # mean overall of the student's turns
    bot: float | None  # mean overall of the bot's turns


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def debate_score(turns: Sequence[tuple[str, InspireScore]]) -> DebateInspireScore:
    """The aggregate of (role, score) per turn; role "user" is the student's."""
    scores = [score for _, score in turns]
    return DebateInspireScore(
        turns=len(turns),
        overall=_mean([s.overall for s in scores]),
        dimensions=tuple(
            DimensionMean(dimension=name, mean=_mean([s.dimensions[name] for s in scores]),
                          scored=sum(s.dimensions[name] is not None for s in scores))
            for name in DIMENSIONS
        ),
        student=_mean([s.overall for role, s in turns if role == "user"]),
        bot=_mean([s.overall for role, s in turns if role == "assistant"]),
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
