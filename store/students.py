"""Student profiles (a name; several per database) and their rating events: one per debate a
student finished, with both sides' ratings before and after it (`engines.student.ratings`
computes them). A debate names its student (`Debate.student_id`)."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel, select

from store.db import Database, StoreError
from store.debates import Debate


def _now() -> datetime:
    return datetime.now(timezone.utc)


class Student(SQLModel, table=True):
    __tablename__ = "student"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True, description="the profile's name, as the student gave it")
    created_at: datetime = Field(default_factory=_now)


class RatingEvent(SQLModel, table=True):
    """A finished debate's result and what it did to both ratings."""

    __tablename__ = "rating_event"

    id: int | None = Field(default=None, primary_key=True)
    student_id: int = Field(foreign_key="student.id", index=True)
    debate_id: int = Field(foreign_key="debate.id", unique=True, description="one result per debate")
    level: int = Field(description="the opponent level played")
    score: float = Field(description="1: the student won, 0: the student lost")
    student_before: float
    student_after: float
    level_before: float
    level_after: float
    created_at: datetime = Field(default_factory=_now)


class StudentRepository:
    def __init__(self, db: Database):
        self._db = db

    def add(self, name: str) -> Student:
        """A new profile; StoreError when the name is blank or taken."""
        name = name.strip()
        if not name:
            raise StoreError("a student needs a name")
        with self._db.session() as session:
            if session.exec(select(Student).where(Student.name == name)).first() is not None:
                raise StoreError(f"a student named {name!r} exists already")
            student = Student(name=name)
            session.add(student)
            try:
                session.flush()
            except IntegrityError:  # another process added the name since the check
                raise StoreError(f"a student named {name!r} exists already") from None
            session.refresh(student)
            return student

    def get(self, name: str) -> Student | None:
        with self._db.read() as session:
            return session.exec(select(Student).where(Student.name == name.strip())).first()

    def by_id(self, student_id: int) -> Student | None:
        with self._db.read() as session:
            return session.get(Student, student_id)

    def list(self) -> list[Student]:
        """Every student, by name."""
        with self._db.read() as session:
            return list(session.exec(select(Student).order_by(Student.name)))

    def get_or_add(self, name: str) -> Student:
        found = self.get(name)
        if found is not None:
            return found
        try:
            return self.add(name)
        except StoreError:
            found = self.get(name)  # added by another process meanwhile
            if found is None:
                raise
            return found

    def rating_events(self, student_id: int | None = None, level: int | None = None) -> list[RatingEvent]:
        """The events of one student, of one level, or all of them: oldest first."""
        query = select(RatingEvent)
        if student_id is not None:
            query = query.where(RatingEvent.student_id == student_id)
        if level is not None:
            query = query.where(RatingEvent.level == level)
        with self._db.read() as session:
            return list(session.exec(query.order_by(RatingEvent.id)))

    def add_rating_event(self, event: RatingEvent) -> RatingEvent:
        """Store a debate's result; StoreError when the debate has one already."""
        taken = f"debate {event.debate_id} already has a rating result"
        with self._db.session() as session:
            if session.exec(select(RatingEvent.id).where(RatingEvent.debate_id == event.debate_id)).first():
                raise StoreError(taken)
            session.add(event)
            try:
                session.flush()
            except IntegrityError as exc:
                message = str(exc.orig).lower()
                if "unique" in message or "duplicate" in message:  # another process stored it since the check
                    raise StoreError(taken) from None
                raise StoreError(f"no student {event.student_id} or no debate {event.debate_id} to rate") from None
            session.refresh(event)
            return event

    def debates_of(self, student_id: int) -> list[Debate]:
        """The student's debates, oldest first."""
        with self._db.read() as session:
            return list(session.exec(
                select(Debate).where(Debate.student_id == student_id).order_by(Debate.created_at, Debate.id)
            ))
