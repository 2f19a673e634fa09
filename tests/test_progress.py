"""A student's progress over debates, read from what the debate and the judges stored: per debate
the rating, the InspireScore dimensions of the student's messages and the Grice maxims of the
bot's replies; the three weakest dimensions, each with its lowest-scoring message."""

from __future__ import annotations

import pytest

from engines.debate.opponent import BotTurn
from engines.debate.records import DebateRecords, StoredTurn, TurnSteps
from engines.grice.types import GriceContext, GriceJudgment, MetricJudgment
from engines.inspire.facts import FactCheck, FactVerdict
from engines.inspire.score import DIMENSIONS, TASK_NAME, DerivationRecord, InspireScore, LogicResult, stored_turn_key
from engines.inspire.subjective import DIMENSIONS as SUBJECTIVE, DimensionScore, SubjectiveScores
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.student.progress import student_progress
from engines.student.ratings import START_STUDENT, record_result
from engines.tasks.debate_judges import grice_item
from engines.tasks.grice import turn_verdict
from engines.tasks.inspire_turns import TurnJudgment
from store.debates import DebateRepository
from store.students import StudentRepository

CLAIM = "School uniforms should be mandatory"
INSPIRE_JUDGE = JudgeId.of("gpu", "m", "inspire")
GRICE_JUDGE = JudgeId.of("gpu", "m", "BEST")


def inspire_score(subjective: tuple[float, float, float, float], logic: float | None,
                  facts: tuple[str, ...]) -> InspireScore:
    """A score as the inspire task stores one: the four subjective dimensions, S_LV `logic`
    (None: no derivation checked) and one fact verdict per label of `facts`."""
    return InspireScore(
        subjective=SubjectiveScores(dimensions={
            name: DimensionScore(dimension=name, score=value, reason=f"about {name}", level=int(value * 4) + 1)
            for name, value in zip(SUBJECTIVE, subjective)
        }),
        logic=LogicResult(
            checks=() if logic is None else (DerivationRecord(premises=("P",), conclusion="P", status="valid"),),
            score=logic,
        ),
        facts=FactCheck(verdicts=tuple(FactVerdict(claim=f"claim {n}", verdict=label)
                                       for n, label in enumerate(facts))),
    )


def save_inspire(db, judge: JudgeId, debate_id: int, dialogue: list[StoredTurn], index: int, score: InspireScore,
                 text: str | None = None):
    """The InspireScore of the dialogue's turn `index` (of `text` instead: a turn the index held
    before), stored as the inspire task stores it."""
    turn = dialogue[index]
    text = turn.content if text is None else text
    judgment = TurnJudgment(
        debate=f"debate:{debate_id}", position=index, role=turn.role, topic=CLAIM, user_side="pro",
        dialogue=[(t.role, t.content) for t in dialogue[:index]], text=text, score=score,
    )
    item = TaskItem(stored_turn_key(debate_id, index), f"debate:{debate_id} · turn {index + 1} (student)", text)
    JudgmentStore(db, TASK_NAME).save(judge, [(item, Verdict(
        value=score.overall, data=judgment.model_dump(mode="json"), detail=score.summary()))])


def save_grice(db, debate_id: int, dialogue: list[StoredTurn], reply: StoredTurn, p_yes: dict[str, float | None]):
    """The Grice judgment of a bot reply, stored and linked as a live debate does."""
    judgment = GriceJudgment("BEST", {
        metric: MetricJudgment(metric=metric, method="ZSL", answer=None if p is None else ("yes" if p >= 0.5 else "no"),
                               p_yes=p, rationale="", raw="", error="unreadable" if p is None else None)
        for metric, p in p_yes.items()
    })
    before = dialogue[:dialogue.index(reply)]
    item = grice_item(debate_id, reply, GriceContext([(t.role, t.content) for t in before], reply.content))
    JudgmentStore(db, "grice").save(GRICE_JUDGE, [(item, turn_verdict(judgment))])
    DebateRecords(DebateRepository(db)).link_judgment(reply.id, "grice", "BEST", GRICE_JUDGE.name, "grice", [item.key])


def debate_of(db, student_id: int, level: int, messages: list[str], failed_after_first: bool = False) -> int:
    """A debate of the student: each message answered by the bot; `failed_after_first`: the bot's
    first reply failed (not dialogue) and the student wrote again."""
    repository = DebateRepository(db)
    records = DebateRecords(repository)
    debate = repository.create(CLAIM, "pro", backend="gpu", level=level, student_id=student_id)
    for number, message in enumerate(messages):
        records.add_message(debate.id, message)
        if failed_after_first and number == 0:
            repository.add_turn(debate.id, "assistant", "", error="step strategy: invalid", state="failed")
            continue
        reply = f"Reply {number + 1} to: {message}"
        records.add_reply(debate.id, BotTurn(reply=reply, words=len(reply.split()), length_action=None, evidence=[],
                                             steps=TurnSteps(level=level), level=level))
    return debate.id


def dialogue_of(db, debate_id: int) -> list[StoredTurn]:
    return [t for t in DebateRecords(DebateRepository(db)).turns(debate_id) if t.in_dialogue]


@pytest.fixture
def three_debates(db):
    """Ann's three debates (levels 0, 1, 2), the first won, the second lost, the third not rated;
    Ben's one debate, scored low everywhere."""
    students = StudentRepository(db)
    ann, ben = students.add("Ann"), students.add("Ben")
    first = debate_of(db, ann.id, 0, ["Uniforms cost money.", "Families pay for them every year."])
    second = debate_of(db, ann.id, 1, ["Uniforms stop bullying.", "Bullies pick on clothes."], failed_after_first=True)
    third = debate_of(db, ann.id, 2, ["Uniforms save time.", "Mornings are quicker."])
    scores = {  # (debate, dialogue index of the message): emotional, clarity, arrangement, relevance; S_LV; facts
        (first, 0): inspire_score((0.5, 0.75, 0.5, 1.0), 0.0, ("no evidence",)),
        (first, 2): inspire_score((0.25, 0.75, 0.5, 1.0), 1.0, ("supported", "no evidence")),
        # the failed reply is no dialogue: the second message is the dialogue's turn 1
        (second, 0): inspire_score((0.5, 1.0, 0.25, 0.75), None, ()),
        (second, 1): inspire_score((0.75, 0.5, 0.5, 1.0), 0.5, ("supported",)),
        (third, 0): inspire_score((0.5, 0.75, 0.75, 1.0), 0.0, ("supported",)),
        # the third debate's second message was never scored
    }
    for (debate_id, index), score in scores.items():
        save_inspire(db, INSPIRE_JUDGE, debate_id, dialogue_of(db, debate_id), index, score)
    # Another judge scored one message, differently: the judge that scored more turns counts.
    save_inspire(db, JudgeId.of("cpu", "small", "inspire"), first, dialogue_of(db, first), 0,
                 inspire_score((1.0, 1.0, 1.0, 1.0), 1.0, ("supported",)))
    first_replies = [t for t in dialogue_of(db, first) if t.role == "assistant"]
    save_grice(db, first, dialogue_of(db, first), first_replies[0],
               {"quantity": 0.8, "quality": 0.4, "relation": 0.9, "manner": 0.6})
    save_grice(db, first, dialogue_of(db, first), first_replies[1],
               {"quantity": 0.6, "quality": 0.2, "relation": 0.7, "manner": None})
    [second_reply] = [t for t in dialogue_of(db, second) if t.role == "assistant"]
    save_grice(db, second, dialogue_of(db, second), second_reply,
               {"quantity": 1.0, "quality": 0.5, "relation": 0.5, "manner": 0.5})
    bens = debate_of(db, ben.id, 0, ["Uniforms are bad."])
    save_inspire(db, INSPIRE_JUDGE, bens, dialogue_of(db, bens), 0,
                 inspire_score((0.0, 0.0, 0.0, 0.0), 0.0, ("no evidence",)))
    DebateRepository(db).end(first)
    won = record_result(db, first, student_won=True)
    DebateRepository(db).end(second)
    lost = record_result(db, second, student_won=False)
    return ann, (first, second, third), (won, lost)


def test_progress_over_three_debates_from_the_stored_records(db, three_debates):
    ann, (first, second, third), (won, lost) = three_debates
    progress = student_progress(db, ann.id)
    assert progress.student.name == "Ann"
    assert [(p.debate_id, p.level) for p in progress.points] == [(first, 0), (second, 1), (third, 2)]
    # The rating after each debate; the third was not rated: the one standing then.
    assert [p.rating for p in progress.points] == [won.student_after, lost.student_after, lost.student_after]
    assert won.student_after == 1016.0  # 1000 beat level 0 at 1000: 1000 + 32 × (1 − 0.5)
    ended = DebateRepository(db).get(first).ended_at
    assert progress.points[0].when == ended
    assert progress.points[0].when.tzinfo is not None and progress.points[2].when.tzinfo is not None
    by_debate = [p.dimensions for p in progress.points]
    assert set(by_debate[0]) == set(DIMENSIONS)
    assert by_debate[0] == pytest.approx({"emotional_appeal": 0.375, "clarity": 0.75, "arrangement": 0.5,
                                          "relevance": 1.0, "logical_validity": 0.5, "supported_by_base": 0.25})
    # Logical validity and the facts: only the second message had any.
    assert by_debate[1] == pytest.approx({"emotional_appeal": 0.625, "clarity": 0.75, "arrangement": 0.375,
                                          "relevance": 0.875, "logical_validity": 0.5, "supported_by_base": 1.0})
    assert by_debate[2] == pytest.approx({"emotional_appeal": 0.5, "clarity": 0.75, "arrangement": 0.75,
                                          "relevance": 1.0, "logical_validity": 0.0, "supported_by_base": 1.0})
    # The bot's replies: mean P(yes) per maxim over the judged replies (an unreadable one left out).
    assert progress.points[0].maxims == pytest.approx({"quantity": 0.7, "quality": 0.3, "relation": 0.8, "manner": 0.6})
    assert progress.points[1].maxims == pytest.approx({"quantity": 1.0, "quality": 0.5, "relation": 0.5, "manner": 0.5})
    assert progress.points[2].maxims == {"quantity": None, "quality": None, "relation": None, "manner": None}


def test_the_three_weakest_dimensions_with_the_lowest_scoring_message_each(db, three_debates):
    ann, (first, second, third), _ = three_debates
    weakest = student_progress(db, ann.id).weakest
    # Over Ann's five scored messages: logical validity (0 + 1 + 0.5 + 0) / 4 = 0.375; emotional appeal
    # (0.5 + 0.25 + 0.5 + 0.75 + 0.5) / 5 = 0.5 and arrangement (0.5 + 0.5 + 0.25 + 0.5 + 0.75) / 5 = 0.5,
    # equal: in DIMENSIONS order. Supported by the base (0.625), clarity (0.75), relevance (0.95) are stronger.
    assert [(w.dimension, w.mean) for w in weakest] == [
        ("logical_validity", pytest.approx(0.375)), ("emotional_appeal", pytest.approx(0.5)),
        ("arrangement", pytest.approx(0.5)),
    ]
    logic, emotional, arrangement = weakest
    assert logic.title == "logical validity"
    # S_LV 0 in the first and the third debate: the earliest is the example.
    assert (logic.example_debate, logic.example_turn, logic.example_text) == (first, 1, "Uniforms cost money.")
    assert (emotional.example_debate, emotional.example_turn, emotional.example_text) == (
        first, 2, "Families pay for them every year.")
    assert (arrangement.example_debate, arrangement.example_turn, arrangement.example_text) == (
        second, 1, "Uniforms stop bullying.")


def test_a_student_without_scored_messages_has_points_and_no_weak_spot(db):
    cem = StudentRepository(db).add("Cem")
    debate_id = debate_of(db, cem.id, 0, ["Uniforms are fine."])
    # A score stored under the message's key, of another text: not the message's.
    save_inspire(db, INSPIRE_JUDGE, debate_id, dialogue_of(db, debate_id), 0,
                 inspire_score((0.0, 0.0, 0.0, 0.0), 0.0, ()), text="An earlier message.")
    progress = student_progress(db, cem.id)
    [point] = progress.points
    assert point.debate_id == debate_id and point.rating == START_STUDENT
    assert set(point.dimensions.values()) == {None} and progress.weakest == ()
