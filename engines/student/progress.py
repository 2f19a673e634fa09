"""A student's progress over their debates: per debate the rating after it, the InspireScore
dimensions of the student's messages and the Grice maxims of the bot's replies; and the three
weakest skills, each with the student's lowest-scoring message on it as the example.

The weakest skills are InspireScore dimensions only: they score the student's own messages,
while the Grice maxims judge the bot's replies, so they say how well the opponent argued, not
what the student should practise. A message's InspireScore is the one the inspire task stored
(the Coach panel, `argtui eval inspire --debate ID`), read by `stored_message_scores`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Sequence

from engines.debate.records import DebateRecords, StoredTurn
from engines.errors import ArgtuiError
from engines.grice import METRICS
from engines.inspire.score import DIMENSION_TITLES, DIMENSIONS, InspireScore
from engines.student.ratings import START_STUDENT
from engines.tasks.inspire_turns import stored_message_scores
from store.db import Database
from store.debates import DebateRepository
from store.students import Student, StudentRepository

WEAKEST = 3  # skills the progress names


@dataclass(frozen=True)
class StudentTurn:
    """One of the student's messages and its stored InspireScore (None: not scored yet)."""

    debate_id: int
    number: int  # 1-based among the student's messages of the debate
    text: str
    score: InspireScore | None


@dataclass(frozen=True)
class DebatePoint:
    debate_id: int
    when: datetime  # when the debate ended (when it began, for one not ended), in UTC
    level: int
    rating: float  # the student's rating after the debate (the one standing then, for a debate not rated)
    dimensions: dict[str, float | None]  # InspireScore dimension -> mean over the student's scored messages
    maxims: dict[str, float | None]  # Grice maxim -> mean P(yes) over the bot's judged replies


@dataclass(frozen=True)
class WeakSpot:
    dimension: str
    title: str
    mean: float  # over every scored message of the student
    example_debate: int
    example_turn: int  # 1-based among the student's messages of that debate
    example_text: str
    example_score: InspireScore | None = None  # the example message's whole score (its derivations, its reasons)


@dataclass(frozen=True)
class Progress:
    student: Student
    points: tuple[DebatePoint, ...]  # oldest debate first
    weakest: tuple[WeakSpot, ...]  # up to WEAKEST, weakest first


def student_turns(db: Database, dialogues: Mapping[int, Sequence[StoredTurn]]) -> dict[int, list[StudentTurn]]:
    """debate id -> the student's messages of the debate's dialogue (its turns `in_dialogue`), each with
    its stored score."""
    scores = stored_message_scores(db, dialogues)
    return {
        debate_id: [StudentTurn(debate_id, number, turn.content, scores.get((debate_id, turn.position)))
                    for number, turn in enumerate((turn for turn in dialogue if turn.role == "user"), start=1)]
        for debate_id, dialogue in dialogues.items()
    }


def _mean(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.fmean(present) if present else None


def _maxims(dialogue: Sequence[StoredTurn]) -> dict[str, float | None]:
    judged = [turn.grice for turn in dialogue if turn.role == "assistant" and turn.grice is not None]
    return {
        maxim: _mean([grice.metrics[maxim].p_yes for grice in judged if maxim in grice.metrics])
        for maxim in METRICS
    }


def weakest_spots(turns: Sequence[StudentTurn], count: int = WEAKEST) -> tuple[WeakSpot, ...]:
    """The `count` dimensions with the lowest mean over the scored messages (the first of equals in
    DIMENSIONS order), each with its lowest-scoring message (the earliest of equals)."""
    spots = []
    for dimension in DIMENSIONS:
        scored = [(turn, value) for turn in turns
                  if turn.score is not None and (value := turn.score.dimensions[dimension]) is not None]
        if not scored:
            continue
        example, _ = min(scored, key=lambda pair: pair[1])
        spots.append(WeakSpot(
            dimension=dimension, title=DIMENSION_TITLES[dimension],
            mean=statistics.fmean(value for _, value in scored), example_debate=example.debate_id,
            example_turn=example.number, example_text=example.text, example_score=example.score,
        ))
    return tuple(sorted(spots, key=lambda spot: spot.mean)[:count])


def student_progress(db: Database, student_id: int) -> Progress:
    students = StudentRepository(db)
    student = students.by_id(student_id)
    if student is None:
        raise ArgtuiError(f"no student with id {student_id} (argtui students lists them)")
    after = {event.debate_id: event.student_after for event in students.rating_events(student_id=student_id)}
    records = DebateRecords(DebateRepository(db))
    debates = students.debates_of(student_id)
    dialogues = {debate.id: [turn for turn in records.turns(debate.id) if turn.in_dialogue] for debate in debates}
    turns = student_turns(db, dialogues)
    rating, points = START_STUDENT, []
    for debate in debates:
        rating = after.get(debate.id, rating)
        scored = [turn.score for turn in turns[debate.id] if turn.score is not None]
        points.append(DebatePoint(
            debate_id=debate.id, when=debate.ended_at or debate.created_at, level=debate.level, rating=rating,
            dimensions={name: _mean([score.dimensions[name] for score in scored]) for name in DIMENSIONS},
            maxims=_maxims(dialogues[debate.id]),
        ))
    every_turn = [turn for debate_turns in turns.values() for turn in debate_turns]
    return Progress(student=student, points=tuple(points), weakest=weakest_spots(every_turn))
