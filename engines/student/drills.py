"""Drills on a student's weak skills, brought back on a spaced-repetition schedule (FSRS).

A weak skill (an InspireScore dimension or a Grice maxim, `engines.student.progress.WeakSpot`)
becomes a drill of one kind (`SKILL_KINDS`):

====================  ==================  ==========================================================
skill                 kind                the student ...; judged by
====================  ==================  ==========================================================
relevance             rebut               rebuts an argument of the argument base that attacks their
emotional_appeal      rebut               side; the InspireScore of the answer (the inspire task's
supported_by_base     rebut               judge, stored): mean of topic relevance and logical validity
relation              rebut
logical_validity      valid_derivation    makes an invalid derivation valid (their own, as the Coach
                                          formalised it, else a classic fallacy); the logic checker,
                                          no model: valid scores 1, anything else 0 (circular too:
                                          a conclusion one premise gives by itself)
arrangement           missing_premise     adds the premise their own argument leaves unstated; the
quality               missing_premise     logic check of argument + premise (InspireScore's S_LV)
clarity               quantity_rewrite    rewrites a reply so it makes one clear point; the Grice
manner                quantity_rewrite    judge's Quantity question (the grice task's judge, stored):
quantity              quantity_rewrite    P(yes)
====================  ==================  ==========================================================

The judged score in [0, 1] becomes an FSRS rating (`grade_of`): at least 0.85 Easy, 0.6 Good,
0.35 Hard, else Again; no score (the judge's answer unreadable, the answer unparsed) is Again.
The scheduler (`SCHEDULER`) then moves the drill's due date: a failed drill comes back in ten
minutes, a good first answer the next day, later ones further apart. Fuzzing is off, so the same
answers give the same dates.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from fsrs import Card, Rating, Scheduler

from engines.debate.messages import count_words
from engines.debate.settings import DebateSettings
from engines.errors import ArgtuiError
from engines.grice import DEFAULT_STRATEGY, GriceContext
from engines.inspire.explain import derivation_sentence, verdict_sentence
from engines.inspire.logic import (
    MEASURED,
    FormulaError,
    WrittenDerivation,
    check_derivation,
    parse_derivation_line,
    parse_formula,
)
from engines.inspire.score import (
    DIMENSION_TITLES,
    LOGICAL,
    DerivationRecord,
    InspireScore,
    LogicResult,
    check_logic,
)
from engines.judging.judge_one import judge_one
from engines.judging.task import TaskContext, TaskItem, default_options
from engines.llm.client import LLMClient
from engines.retrieval.types import Retriever
from engines.tasks.inspire_turns import InspireItem, InspireOptions, turn_judgment
from store.db import Database
from store.debates import DebateRepository
from store.drills import DrillCard, DrillRepository, DrillReview, as_utc

if TYPE_CHECKING:
    from engines.student.progress import WeakSpot

DRILL_KINDS = ("rebut", "missing_premise", "quantity_rewrite", "valid_derivation")
KIND_TITLES = {
    "rebut": "Rebut an argument", "missing_premise": "Add the missing premise",
    "quantity_rewrite": "Rewrite for Quantity", "valid_derivation": "Make the derivation valid",
}
PROMPTS = {
    "rebut": "Rebut this argument in a few sentences: answer its point, stay on the topic, and make your "
             "conclusion follow from your reasons.",
    "missing_premise": "This argument leaves a premise unstated. Write the premise that makes its conclusion "
                       "follow.",
    "quantity_rewrite": "Rewrite this message so that it makes at least one argument, and at most one attack "
                        "and one defence: one point, said clearly.",
    "valid_derivation": "This derivation is not valid. Write a valid one with the same conclusion, on one line: "
                        "premise ; premise |- conclusion (formula syntax of `argtui logic check`).",
}
SKILL_KINDS = {
    "relevance": "rebut", "emotional_appeal": "rebut", "supported_by_base": "rebut", "relation": "rebut",
    "logical_validity": "valid_derivation",
    "arrangement": "missing_premise", "quality": "missing_premise",
    "clarity": "quantity_rewrite", "manner": "quantity_rewrite", "quantity": "quantity_rewrite",
}
MODEL_FREE = frozenset({"valid_derivation"})  # judged without a model
# Classic invalid derivations, for a student whose own could not be read from the stored scores.
FALLACIES = (
    "forall x. (Uniform(x) -> Cheap(x)) ; Cheap(school) |- Uniform(school)",  # affirming the consequent
    "BanCars -> CleanAir ; ~BanCars |- ~CleanAir",  # denying the antecedent
    "exists x. (City(x) & BansCars(x)) |- forall x. (City(x) -> BansCars(x))",  # hasty generalisation
    "TaxesRise -> PricesRise |- PricesRise",  # a premise missing
)
GRADE_FLOORS = ((0.85, Rating.Easy), (0.6, Rating.Good), (0.35, Rating.Hard))
SCHEDULER = Scheduler(
    learning_steps=(timedelta(minutes=10), timedelta(days=1)), relearning_steps=(timedelta(minutes=10),),
    enable_fuzzing=False,
)
DRILL_ITEM = "drill:"  # item keys of judged drill answers: drill:<card id>/<answer number>
QUANTITY = "quantity"


@dataclass(frozen=True)
class Drill:
    id: int
    student_id: int
    kind: str
    skill: str  # a dimension or maxim
    prompt: str  # what the student is asked, plain text
    material: str  # the argument / reply / derivation given
    due: datetime
    topic: str = ""  # the claim debated where the material comes from

    @property
    def title(self) -> str:
        return KIND_TITLES[self.kind]

    @property
    def skill_title(self) -> str:
        return DIMENSION_TITLES.get(self.skill, self.skill)

    @property
    def needs_model(self) -> bool:
        return self.kind not in MODEL_FREE


@dataclass(frozen=True)
class DrillResult:
    drill: Drill
    grade: int  # fsrs Rating 1..4
    score: float | None
    feedback: str
    next_due: datetime

    @property
    def grade_name(self) -> str:
        return Rating(self.grade).name


@dataclass(frozen=True)
class Judged:
    """A judge's word on one answer: the score in [0, 1] (None when none came) and why."""

    score: float | None
    feedback: str


def grade_of(score: float | None) -> Rating:
    """The FSRS rating of a judged score (see the module's docstring)."""
    if score is None:
        return Rating.Again
    return next((rating for floor, rating in GRADE_FLOORS if score >= floor), Rating.Again)


def drill_of(card: DrillCard) -> Drill:
    return Drill(id=card.id, student_id=card.student_id, kind=card.kind, skill=card.skill, prompt=card.prompt,
                 material=card.material, due=as_utc(card.due), topic=card.topic)


def _now() -> datetime:
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------- planning


def _new_card(student_id: int, kind: str, skill: str, topic: str, material: str, now: datetime) -> DrillCard:
    card = Card(due=now)
    return DrillCard(student_id=student_id, kind=kind, skill=skill, topic=topic, prompt=PROMPTS[kind],
                     material=material, card_json=card.to_json(), due=now, created_at=now)


async def _opposing_argument(retriever: Retriever, text: str, claim: str, side: str) -> str | None:
    """An argument of the base against the student: one attacking what they said, else one against their side."""
    against = "attacks" if side == "pro" else "supports"
    for query, field in ((text, "attacks"), (claim, against)):
        if query.strip():
            hits = await retriever.search(query, field=field, relation=field, k=1)
            if hits:
                return hits[0].argument.text
    return None


def _record_line(record: DerivationRecord) -> str:
    return f"{' ; '.join(record.premises)} |- {record.conclusion}"


def _own_invalid_derivation(score: InspireScore | None) -> str | None:
    """The first invalid derivation the InspireScore of the student's message found, as a line."""
    checks = score.logic.checks if score is not None else ()
    return next((_record_line(record) for record in checks if record.status == "invalid"), None)


async def _material(db: Database, kind: str, spot: WeakSpot,
                    retriever: Retriever | None) -> tuple[str, str] | None:
    """(topic, material) of a drill of `kind` on the weak spot; None when there is nothing to drill on."""
    debate = DebateRepository(db).get(spot.example_debate)
    topic = debate.claim if debate else ""
    if kind == "rebut":
        if retriever is None or debate is None:
            return None
        found = await _opposing_argument(retriever, spot.example_text, debate.claim, debate.user_side)
        return (topic, found) if found else None
    if kind == "valid_derivation":
        own = _own_invalid_derivation(spot.example_score)
        # Without one of their own, a fallacy chosen by the turn: the same weak turn, the same drill.
        return topic, own or FALLACIES[(spot.example_debate + spot.example_turn - 1) % len(FALLACIES)]
    return (topic, spot.example_text) if spot.example_text.strip() else None


async def plan_drills(db: Database, student_id: int, weak: Sequence[WeakSpot],
                      retriever: Retriever | None) -> list[Drill]:
    """A drill for each weak spot the student has none like yet, due now; the new ones are returned.
    Rebuttals need the argument base (`retriever`): without it their weak spots get none."""
    now = _now()
    cards = []
    for spot in weak:
        kind = SKILL_KINDS.get(spot.dimension)
        found = await _material(db, kind, spot, retriever) if kind else None
        if found is not None:
            cards.append(_new_card(student_id, kind, spot.dimension, *found, now))
    return [drill_of(card) for card in await asyncio.to_thread(DrillRepository(db).add_new, cards)]


def due_drills(db: Database, student_id: int, now: datetime | None = None) -> list[Drill]:
    """The student's drills due at `now` (default: now), the longest overdue first."""
    return [drill_of(card) for card in DrillRepository(db).due(student_id, now or _now())]


def student_drills(db: Database, student_id: int) -> list[Drill]:
    """Every drill of the student, the soonest due first."""
    return [drill_of(card) for card in DrillRepository(db).cards(student_id)]


# ---------------------------------------------------------------- judging


def _premise_alone(derivation: WrittenDerivation) -> int | None:
    """The index of the first premise that entails the conclusion by itself (z3), if any."""
    return next((
        index for index, premise in enumerate(derivation.premises)
        if check_derivation(WrittenDerivation(premises=(premise,), conclusion=derivation.conclusion)).valid
    ), None)


def judge_derivation(material: str, answer: str) -> Judged:
    """The logic checker's verdict on the answer to a valid_derivation drill (no model; it blocks
    while z3 solves): valid with the material's conclusion scores 1, anything else 0; an answer that
    does not parse has no score. A drill asks for premises that give the conclusion together: one
    that entails it alone (`~CleanAir & BanCars |- ~CleanAir`) hides the conclusion inside it, and
    the derivation counts as circular."""
    try:
        derivation = parse_derivation_line(answer.strip(), "your derivation")
        conclusion = parse_derivation_line(material).conclusion
        if parse_formula(derivation.conclusion, "your conclusion") != parse_formula(conclusion):
            return Judged(0.0, f"Keep the conclusion {conclusion}: yours is {derivation.conclusion}.")
    except FormulaError as exc:
        return Judged(None, f"Not a derivation the checker can read: {exc}")
    check = check_derivation(derivation)
    record = DerivationRecord(premises=tuple(derivation.premises), conclusion=derivation.conclusion,
                              status=check.status, error=check.error, counter_model=check.counter_model)
    if check.status == "unparsed":
        return Judged(None, f"Not a derivation the checker can read: {check.error}")
    if check.status == "timeout":
        return Judged(None, f"The checker could not decide in time ({check.error}).")
    if check.valid and (alone := _premise_alone(derivation)) is not None:
        circular = record.model_copy(update={"status": "circular"})
        return Judged(0.0, f"{verdict_sentence(circular)} Premise {alone + 1} ({derivation.premises[alone]}) gives "
                           "the conclusion by itself: write premises that give it only together.")
    return Judged(1.0 if check.valid else 0.0, verdict_sentence(record))


def _logic_feedback(result: LogicResult) -> str:
    if not result.valid:
        return f"The argument with your premise could not be formalised: {result.error}"
    measured = [c for c in result.checks if c.status in MEASURED]
    if not measured:
        return "No step of the argument with your premise could be checked."
    failed = next((c for c in measured if c.status != "valid"), None)
    held = f"{result.count('valid')} of {len(measured)} checked steps hold"
    return f"{held}; {derivation_sentence(failed)} {verdict_sentence(failed)}" if failed else f"{held}."


async def _judge_missing_premise(ctx: TaskContext, client: LLMClient, drill: Drill, answer: str,
                                 number: int) -> Judged:
    result = await check_logic(client, drill.topic, f"{drill.material.strip()} {answer.strip()}")
    return Judged(result.score, _logic_feedback(result))


async def _judge_rebut(ctx: TaskContext, client: LLMClient, drill: Drill, answer: str, number: int) -> Judged:
    """The inspire task's judge on the answer as a reply to the argument, stored as its turns are."""
    # The task loads numpy and the retriever's checks: imported with the first rebuttal judged.
    from engines.tasks.inspire import TASK as INSPIRE, VARIANT

    turn = InspireItem(f"{DRILL_ITEM}{drill.id}", number, "user", drill.topic, answer.strip(),
                       (("assistant", drill.material),))
    item = TaskItem(key=f"{DRILL_ITEM}{drill.id}/{number}", title=f"drill {drill.id} · answer {number}",
                    body=f"Topic: {drill.topic}\nArgument: {drill.material}\n\n» Student: {answer.strip()}",
                    payload=turn)
    judged = await judge_one(ctx, INSPIRE, client, VARIANT, InspireOptions(), item)
    score = turn_judgment(judged.verdict).score
    counted = {name: score.dimensions[name] for name in ("relevance", LOGICAL) if score.dimensions[name] is not None}
    if not counted:
        return Judged(score.overall, score.weakest_explanation)
    shown = " · ".join(f"{DIMENSION_TITLES[name]} {value:.2f}" for name, value in counted.items())
    weakest = min(counted, key=counted.__getitem__)
    return Judged(statistics.fmean(counted.values()), f"{shown}. {score.explanation(weakest)}")


async def _judge_quantity(ctx: TaskContext, client: LLMClient, drill: Drill, answer: str, number: int) -> Judged:
    """The grice task's judge on the Quantity question alone, stored as a live debate's replies are."""
    # The task loads the RAD readers and the example pools: imported with the first rewrite judged.
    from engines.tasks.grice import TASK as GRICE, GriceItem, metric_judgments

    context = GriceContext(dialogue=(("user", drill.topic or drill.material),), reply=answer.strip())
    item = TaskItem(key=f"{DRILL_ITEM}{drill.id}/{number}", title=f"drill {drill.id} · answer {number}",
                    body=answer.strip(), payload=GriceItem(context, (QUANTITY,), {}))
    judged = await judge_one(ctx, GRICE, client, DEFAULT_STRATEGY, default_options(GRICE), item)
    quantity = metric_judgments(judged.verdict)[QUANTITY]
    if not quantity.valid:
        return Judged(None, f"The Quantity judge's answer was unreadable: {quantity.error}")
    return Judged(quantity.p_yes, f"Quantity {quantity.answer} (P(yes) {quantity.p_yes:.2f}): {quantity.rationale}")


async def _judge_derivation(ctx: TaskContext, client: LLMClient | None, drill: Drill, answer: str,
                            number: int) -> Judged:
    return await asyncio.to_thread(judge_derivation, drill.material, answer)


JUDGES = {
    "rebut": _judge_rebut, "missing_premise": _judge_missing_premise, "quantity_rewrite": _judge_quantity,
    "valid_derivation": _judge_derivation,
}


class DrillContext(TaskContext, Protocol):
    """What judging a drill uses of the application (argtui's Runtime is one)."""

    @property
    def debate_settings(self) -> DebateSettings: ...


JUDGING_STEPS = 2  # the steps `answer_drill` reports: the judge, then the new schedule


async def answer_drill(ctx: DrillContext, client: LLMClient | None, drill: Drill, answer: str,
                       on_progress: Callable[[str], None] | None = None, now: datetime | None = None) -> DrillResult:
    """Judge the answer (by the judge of the drill's kind), store it, and reschedule the drill by
    its grade. `client` may be None for a drill judged without a model; `on_progress` hears each step.
    An answer a model judges is bounded like a debate message (`max_message_words`): it goes into
    the judge's prompt. A derivation is bounded by the logic check's line limits."""
    if not answer.strip():
        raise ArgtuiError("write an answer first")
    limit = ctx.debate_settings.max_message_words
    if drill.needs_model and (words := count_words(answer)) > limit:
        raise ArgtuiError(
            f"your answer has {words:,} words; an answer, like a debate message, may have at most {limit:,} "
            "(max_message_words under [debate] in the config file)"
        )
    if drill.needs_model and client is None:
        raise ArgtuiError(f"a {drill.title.lower()} drill is judged by a model, and none answers")
    repository = DrillRepository(ctx.db)
    card_row = await asyncio.to_thread(repository.get, drill.id)
    if card_row is None:
        raise ArgtuiError(f"no drill with id {drill.id}")
    number = len(await asyncio.to_thread(repository.reviews, drill.id)) + 1
    if on_progress is not None:
        on_progress(f"judging your answer ({drill.title.lower()})")
    judged = await JUDGES[drill.kind](ctx, client, drill, answer, number)
    grade = grade_of(judged.score)
    reviewed_at = now or _now()
    card, _ = SCHEDULER.review_card(Card.from_json(card_row.card_json), grade, reviewed_at)
    if on_progress is not None:
        on_progress("scheduling the next review")
    review = DrillReview(card_id=drill.id, answer=answer, grade=int(grade), score=judged.score,
                         feedback=judged.feedback, reviewed_at=reviewed_at)
    await asyncio.to_thread(repository.record_review, drill.id, card.to_json(), card.due, review)
    return DrillResult(drill=drill, grade=int(grade), score=judged.score, feedback=judged.feedback,
                       next_due=card.due)
