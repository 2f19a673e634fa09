"""Debates: the claim and sides, the student who argued (when one was named) and when the debate
ended, every turn with its pipeline outputs and evidence, and the analyses attached to turns
(Grice judgments of bot replies, component labels of student messages).

Outputs, evidence and analyses are JSON text: the engine side (`engines.debate.records`)
owns their shapes and round-trips them through its typed records."""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum

from sqlalchemy import func
from sqlmodel import Field, SQLModel, select

from store.db import Database


def _now() -> datetime:
    return datetime.now(timezone.utc)


class TurnState(str, Enum):
    """A turn's state: a bot turn's is its run's, a student message's that of its labelling."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Debate(SQLModel, table=True):
    __tablename__ = "debate"

    id: int | None = Field(default=None, primary_key=True)
    claim: str
    user_side: str = Field(description="pro | con: the student's side; the bot argues the other")
    backend: str = Field(default="", description="backend profile the bot used")
    # Server defaults as the schema-3 migration gives them, so fresh and migrated files agree.
    level: int = Field(default=2, sa_column_kwargs={"server_default": "2"},
                       description="the opponent's level: 0 retrieval, 1 quick, 2 the five steps")
    created_at: datetime = Field(default_factory=_now)
    updated_at: datetime = Field(default_factory=_now, index=True)
    student_id: int | None = Field(default=None, foreign_key="student.id", index=True,
                                   description="the student profile that argued (store.students); None: nobody named")
    ended_at: datetime | None = Field(default=None, description="when the student ended it (its ballot followed)")


class DebateTurn(SQLModel, table=True):
    __tablename__ = "debate_turn"

    id: int | None = Field(default=None, primary_key=True)
    debate_id: int = Field(foreign_key="debate.id", index=True)
    position: int = Field(description="0-based order within the debate")
    role: str = Field(description="user | assistant")
    content: str
    steps_json: str | None = Field(default=None, description="assistant: each pipeline step's output")
    evidence_json: str | None = Field(default=None, description="assistant: retrieved arguments and their use")
    length_action: str | None = None
    error: str | None = Field(default=None, description="assistant: why the turn failed, with the step")
    state: str = Field(default="done", sa_column_kwargs={"server_default": "done"},
                       description="running | done | failed | cancelled")
    seconds: float | None = None
    created_at: datetime = Field(default_factory=_now)


class TurnAnalysis(SQLModel, table=True):
    __tablename__ = "debate_turn_analysis"

    id: int | None = Field(default=None, primary_key=True)
    turn_id: int = Field(foreign_key="debate_turn.id", index=True)
    kind: str = Field(description="grice | components")
    method: str = Field(description="strategy or method, e.g. BEST, mad")
    judge: str = Field(default="", description="the judge's name in the judgment store (before: its backend profile)")
    result_json: str = Field(description="where the judgment store keeps the result (before: a copy of it)")
    created_at: datetime = Field(default_factory=_now)


class DebateRepository:
    def __init__(self, db: Database):
        self._db = db

    @property
    def db(self) -> Database:
        return self._db

    def create(
        self, claim: str, user_side: str, backend: str = "", level: int = 2, student_id: int | None = None,
    ) -> Debate:
        if user_side not in ("pro", "con"):
            raise ValueError(f"side must be pro or con, got {user_side!r}")
        with self._db.session() as session:
            debate = Debate(claim=claim, user_side=user_side, backend=backend, level=level, student_id=student_id)
            session.add(debate)
            session.flush()
            session.refresh(debate)
            return debate

    def get(self, debate_id: int) -> Debate | None:
        with self._db.read() as session:
            return session.get(Debate, debate_id)

    def end(self, debate_id: int) -> Debate:
        """Mark the debate ended, now; a debate ended before keeps the time it first ended."""
        with self._db.session() as session:
            debate = session.get(Debate, debate_id)
            if debate is None:
                raise KeyError(f"no debate with id {debate_id}")
            if debate.ended_at is None:
                debate.ended_at = _now()
                session.add(debate)
                session.flush()
                session.refresh(debate)
            return debate

    def list(self) -> list[tuple[Debate, int]]:
        """Debates, most recently active first, with their turn counts: a turn is a student
        message and the bot's reply, so the student's messages count the turns."""
        with self._db.read() as session:
            counts = (
                select(DebateTurn.debate_id, func.count(DebateTurn.id).label("turns"))
                .where(DebateTurn.role == "user")
                .group_by(DebateTurn.debate_id)
                .subquery()
            )
            rows = session.exec(
                select(Debate, func.coalesce(counts.c.turns, 0))
                .outerjoin(counts, counts.c.debate_id == Debate.id)
                .order_by(Debate.updated_at.desc())
            ).all()
            return [(debate, turns) for debate, turns in rows]

    def add_turn(
        self,
        debate_id: int,
        role: str,
        content: str,
        *,
        steps_json: str | None = None,
        evidence_json: str | None = None,
        length_action: str | None = None,
        error: str | None = None,
        seconds: float | None = None,
        state: str = TurnState.DONE,
    ) -> DebateTurn:
        with self._db.session() as session:
            position = session.exec(
                select(func.count(DebateTurn.id)).where(DebateTurn.debate_id == debate_id)
            ).one()
            turn = DebateTurn(
                debate_id=debate_id,
                position=position,
                role=role,
                content=content,
                steps_json=steps_json,
                evidence_json=evidence_json,
                length_action=length_action,
                error=error,
                seconds=seconds,
                state=TurnState(state).value,
            )
            session.add(turn)
            debate = session.get(Debate, debate_id)
            if debate is None:
                raise KeyError(f"no debate with id {debate_id}")
            debate.updated_at = _now()
            session.add(debate)
            session.flush()
            session.refresh(turn)
            return turn

    def update_turn(self, turn_id: int, **values) -> DebateTurn:
        """Set columns of a stored turn (a running bot turn gets its outcome in place)."""
        with self._db.session() as session:
            turn = session.get(DebateTurn, turn_id)
            if turn is None:
                raise KeyError(f"no debate turn with id {turn_id}")
            for name, value in values.items():
                if name not in DebateTurn.model_fields:
                    raise TypeError(f"debate_turn has no column {name!r}")
                setattr(turn, name, TurnState(value).value if name == "state" else value)
            session.add(turn)
            session.flush()
            session.refresh(turn)
            return turn

    def turns(self, debate_id: int) -> list[DebateTurn]:
        with self._db.read() as session:
            return list(
                session.exec(
                    select(DebateTurn).where(DebateTurn.debate_id == debate_id).order_by(DebateTurn.position)
                )
            )

    def add_analysis(self, turn_id: int, kind: str, method: str, result_json: str, judge: str = "") -> TurnAnalysis:
        with self._db.session() as session:
            analysis = TurnAnalysis(turn_id=turn_id, kind=kind, method=method, judge=judge, result_json=result_json)
            session.add(analysis)
            session.flush()
            session.refresh(analysis)
            return analysis

    def analyses(self, turn_ids: list[int]) -> list[TurnAnalysis]:
        if not turn_ids:
            return []
        with self._db.read() as session:
            return list(
                session.exec(
                    select(TurnAnalysis).where(TurnAnalysis.turn_id.in_(turn_ids)).order_by(TurnAnalysis.id)
                )
            )
