"""Elo ratings of students against the opponent levels.

The usual Elo scale: a student rated 400 points above an opponent is expected to score 10 to 1
against it (`expected`). After a debate both sides move by `K_FACTOR` times the difference
between the result (1 the student won, 0 the bot did) and the expectation (`elo_update`):
K = 32, the value chess gives players with few games, so a student's rating moves visibly after
each debate. A new student starts at 1000. Each opponent level starts where its work per reply
puts it: level 0 (the best retrieved counter-argument, no model) at 1000, an even match for a new
student; level 1 (one adapted reply) at 1150, which a new student is expected to beat about 30%
of the time; level 2 (the five steps) at 1300, about 15%. A level is rated like a player: every
student's result against it moves it (with 1 − the student's score), so its rating says how hard
it proved for the students of this database. One result per debate: `record_result` stores it
with the debate, and a second call returns it.
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.errors import ArgtuiError
from store.db import Database, StoreError
from store.debates import DebateRepository
from store.students import RatingEvent, StudentRepository

START_STUDENT = 1000.0
LEVEL_START = {0: 1000.0, 1: 1150.0, 2: 1300.0}
K_FACTOR = 32.0
SCALE = 400.0  # rating points for 10:1 odds


def expected(rating: float, opponent: float) -> float:
    """The score `rating` is expected to make against `opponent`, in [0, 1]."""
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / SCALE))


def elo_update(rating: float, opponent: float, score: float, k: float = K_FACTOR) -> float:
    """`rating` after scoring `score` (1 win, 0 loss) against `opponent`."""
    return rating + k * (score - expected(rating, opponent))


@dataclass(frozen=True)
class RatingChange:
    student: str  # the student's name
    level: int
    score: float  # 1 the student won, 0 lost
    student_before: float
    student_after: float
    level_before: float
    level_after: float


def student_rating(db: Database, student_id: int) -> float:
    """The student's rating after their latest result (START_STUDENT before any)."""
    events = StudentRepository(db).rating_events(student_id=student_id)
    return events[-1].student_after if events else START_STUDENT


def level_rating(db: Database, level: int) -> float:
    """The level's starting rating moved by every student's results against it."""
    if level not in LEVEL_START:
        raise ArgtuiError(f"no opponent level {level} (levels: {', '.join(map(str, LEVEL_START))})")
    events = StudentRepository(db).rating_events(level=level)
    return events[-1].level_after if events else LEVEL_START[level]


def record_result(db: Database, debate_id: int, student_won: bool) -> RatingChange | None:
    """Rate the debate's student and level by its result; None when no student argued it.
    A debate is counted once: asked again, this returns the change stored the first time."""
    debate = DebateRepository(db).get(debate_id)
    if debate is None:
        raise ArgtuiError(f"no debate with id {debate_id} (argtui debate --list shows them)")
    if debate.student_id is None:
        return None
    students = StudentRepository(db)
    student = students.by_id(debate.student_id)
    assert student is not None  # the debate's foreign key
    stored = _event_of(students, debate.student_id, debate_id)
    if stored is None:
        score = 1.0 if student_won else 0.0
        student_before, level_before = student_rating(db, debate.student_id), level_rating(db, debate.level)
        event = RatingEvent(
            student_id=debate.student_id, debate_id=debate_id, level=debate.level, score=score,
            student_before=student_before, student_after=elo_update(student_before, level_before, score),
            level_before=level_before, level_after=elo_update(level_before, student_before, 1.0 - score),
        )
        try:
            stored = students.add_rating_event(event)
        except StoreError:  # recorded by another process meanwhile: that result counts
            stored = _event_of(students, debate.student_id, debate_id)
            if stored is None:
                raise
    return RatingChange(
        student=student.name, level=stored.level, score=stored.score,
        student_before=stored.student_before, student_after=stored.student_after,
        level_before=stored.level_before, level_after=stored.level_after,
    )


def _event_of(students: StudentRepository, student_id: int, debate_id: int) -> RatingEvent | None:
    return next((e for e in students.rating_events(student_id=student_id) if e.debate_id == debate_id), None)
