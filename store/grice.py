"""Grice judgments of bot turns and the cached Analyzer stage-1 reasons.

A judgment row is one metric of one turn under a `scope`: a batch run
(`run:<id>`) or any other owner of turns (e.g. a debate). The four metrics of
a turn are written in one transaction, so a turn is either fully stored or not
at all, and a resumed run skips exactly the stored turns.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, Session, SQLModel, select

from store.db import Database


def _now() -> datetime:
    return datetime.now(timezone.utc)


class GriceReason(SQLModel, table=True):
    __tablename__ = "grice_reason"
    __table_args__ = (UniqueConstraint("metric", "k", "judge_model", "pool_digest"),)

    id: int | None = Field(default=None, primary_key=True)
    metric: str
    k: int
    judge_model: str
    pool_digest: str
    reasons_yes: str
    reasons_no: str
    raw: str = ""
    created_at: datetime = Field(default_factory=_now)


class GriceJudgmentRow(SQLModel, table=True):
    __tablename__ = "grice_judgment"
    __table_args__ = (UniqueConstraint("scope", "debate_id", "turn_index", "metric"),)

    id: int | None = Field(default=None, primary_key=True)
    scope: str = Field(index=True, description="run:<batch run id>, or another owner of turns")
    debate_id: str
    turn_index: int
    metric: str
    method: str
    answer: str | None = None  # "yes" / "no"; None when invalid
    p_yes: float | None = None
    rationale: str = ""
    raw: str = ""
    source: str = ""
    error: str | None = None
    calls: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    created_at: datetime = Field(default_factory=_now)

    @property
    def valid(self) -> bool:
        return self.answer is not None


@dataclass(frozen=True)
class MetricValues:
    """One metric's judgment as plain values (the store does not know the engine's types)."""

    metric: str
    method: str
    answer: str | None
    p_yes: float | None
    rationale: str
    raw: str
    source: str
    error: str | None
    calls: int
    seconds: float
    prompt_tokens: int
    completion_tokens: int


class GriceRepository:
    def __init__(self, db: Database):
        self._db = db

    # Analyzer stage-1 reasons (the engine's ReasonStore protocol)

    @staticmethod
    def _reason_row(session: Session, metric: str, k: int, judge_model: str, pool_digest: str) -> GriceReason | None:
        return session.exec(
            select(GriceReason).where(
                GriceReason.metric == metric, GriceReason.k == k,
                GriceReason.judge_model == judge_model, GriceReason.pool_digest == pool_digest,
            )
        ).first()

    def get_reasons(self, metric: str, k: int, judge_model: str, pool_digest: str) -> tuple[str, str] | None:
        with self._db.session() as session:
            row = self._reason_row(session, metric, k, judge_model, pool_digest)
            return (row.reasons_yes, row.reasons_no) if row else None

    def put_reasons(
        self, metric: str, k: int, judge_model: str, pool_digest: str, reasons_yes: str, reasons_no: str, raw: str
    ) -> None:
        with self._db.session() as session:
            row = self._reason_row(session, metric, k, judge_model, pool_digest) or GriceReason(
                metric=metric, k=k, judge_model=judge_model, pool_digest=pool_digest,
                reasons_yes=reasons_yes, reasons_no=reasons_no,
            )
            row.reasons_yes, row.reasons_no, row.raw = reasons_yes, reasons_no, raw
            session.add(row)

    def reasons_count(self) -> int:
        with self._db.session() as session:
            return len(session.exec(select(GriceReason.id)).all())

    # Judgments

    def save_turn(self, scope: str, debate_id: str, turn_index: int, metrics: list[MetricValues]) -> None:
        """All metrics of a turn in one transaction; a turn stored again replaces the old rows."""
        with self._db.session() as session:
            for old in session.exec(
                select(GriceJudgmentRow).where(
                    GriceJudgmentRow.scope == scope,
                    GriceJudgmentRow.debate_id == debate_id,
                    GriceJudgmentRow.turn_index == turn_index,
                )
            ):
                session.delete(old)
            session.flush()
            for values in metrics:
                session.add(GriceJudgmentRow(scope=scope, debate_id=debate_id, turn_index=turn_index, **vars(values)))

    def stored_turns(self, scope: str) -> set[tuple[str, int]]:
        with self._db.session() as session:
            rows = session.exec(
                select(GriceJudgmentRow.debate_id, GriceJudgmentRow.turn_index).where(GriceJudgmentRow.scope == scope)
            ).all()
            return {(debate_id, turn_index) for debate_id, turn_index in rows}

    def judgments(self, scope: str) -> list[GriceJudgmentRow]:
        with self._db.session() as session:
            return list(
                session.exec(
                    select(GriceJudgmentRow)
                    .where(GriceJudgmentRow.scope == scope)
                    .order_by(GriceJudgmentRow.debate_id, GriceJudgmentRow.turn_index, GriceJudgmentRow.metric)
                )
            )
