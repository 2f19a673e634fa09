"""Drills on a student's weak skills: one card per drill, with its spaced-repetition state, and
every answer given to it.

The card's scheduling state is JSON text (`card_json`): the engine side
(`engines.student.drills`) owns its shape (an FSRS card) and keeps `due` beside it, so the
drills due are found by an indexed query. Times are UTC (SQLite keeps them without a zone).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Sequence

from sqlmodel import Field, SQLModel, select

from store.db import Database, StoreError


def _now() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    """A stored time with its zone: SQLite gives it back without one, and it was written in UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class DrillCard(SQLModel, table=True):
    __tablename__ = "drill_card"

    id: int | None = Field(default=None, primary_key=True)
    student_id: int = Field(foreign_key="student.id", index=True)
    kind: str = Field(description="rebut | missing_premise | quantity_rewrite | valid_derivation")
    skill: str = Field(description="the InspireScore dimension or Grice maxim it trains")
    topic: str = Field(default="", description="the claim debated where the material comes from")
    prompt: str = Field(description="what the student is asked")
    material: str = Field(description="the argument, reply or derivation the student works on")
    card_json: str = Field(description="the spaced-repetition card")
    due: datetime = Field(index=True)
    created_at: datetime = Field(default_factory=_now)


class DrillReview(SQLModel, table=True):
    __tablename__ = "drill_review"

    id: int | None = Field(default=None, primary_key=True)
    card_id: int = Field(foreign_key="drill_card.id", index=True)
    answer: str
    grade: int = Field(description="1 again, 2 hard, 3 good, 4 easy")
    score: float | None = Field(default=None, description="the judged score in [0, 1]; None when none came")
    feedback: str = ""
    reviewed_at: datetime = Field(default_factory=_now)


class DrillRepository:
    def __init__(self, db: Database):
        self._db = db

    def add_new(self, cards: Sequence[DrillCard]) -> list[DrillCard]:
        """The cards the student has none like yet (the same skill and material), added in one
        transaction; those already there are left out of the result."""
        added = []
        with self._db.session() as session:
            for card in cards:
                existing = session.exec(
                    select(DrillCard.id).where(
                        DrillCard.student_id == card.student_id, DrillCard.skill == card.skill,
                        DrillCard.material == card.material,
                    )
                ).first()
                if existing is None:
                    session.add(card)
                    session.flush()  # the id, and the next card of the batch sees this one
                    added.append(card)
        return added

    def get(self, card_id: int) -> DrillCard | None:
        with self._db.read() as session:
            return session.get(DrillCard, card_id)

    def cards(self, student_id: int) -> list[DrillCard]:
        """Every card of the student, the soonest due first."""
        with self._db.read() as session:
            return list(session.exec(
                select(DrillCard).where(DrillCard.student_id == student_id).order_by(DrillCard.due, DrillCard.id)
            ))

    def due(self, student_id: int, now: datetime) -> list[DrillCard]:
        """The student's cards due at `now`, the longest overdue first."""
        with self._db.read() as session:
            return list(session.exec(
                select(DrillCard)
                .where(DrillCard.student_id == student_id, DrillCard.due <= now)
                .order_by(DrillCard.due, DrillCard.id)
            ))

    def record_review(self, card_id: int, card_json: str, due: datetime, review: DrillReview) -> DrillReview:
        """The answer and the card's new schedule, in one transaction."""
        with self._db.session() as session:
            card = session.get(DrillCard, card_id)
            if card is None:
                raise StoreError(f"no drill with id {card_id}")
            card.card_json, card.due = card_json, due
            review.card_id = card_id
            session.add(card)
            session.add(review)
        return review

    def reviews(self, card_id: int) -> list[DrillReview]:
        """The answers given to a card, oldest first."""
        with self._db.read() as session:
            return list(session.exec(
                select(DrillReview).where(DrillReview.card_id == card_id).order_by(DrillReview.reviewed_at, DrillReview.id)
            ))
