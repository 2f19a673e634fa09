"""Pairwise argument-quality judgments: one row per (judge, variant, dimension, pair).

`judge` names the model and the backend profile ("model@profile"); `variant`
names the prompt and mode ("few/runs3@t1"). Invalid outputs are stored too
(label NULL, the raw text kept), so every metric can count them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Sequence

from sqlalchemy import UniqueConstraint, func, insert
from sqlmodel import Field, SQLModel, select

from store.db import Database


class PairwiseJudgment(SQLModel, table=True):
    __tablename__ = "pairwise_judgment"
    __table_args__ = (UniqueConstraint("judge", "variant", "dimension", "a_uid", "b_uid"),)

    id: int | None = Field(default=None, primary_key=True)
    judge: str = Field(index=True, description="model@profile")
    variant: str = Field(description="prompt/mode@temperature, e.g. few/runs3@t1")
    dimension: str = Field(index=True)
    topic_id: int
    a_uid: str = Field(description="topic/discussion/argument of argument A")
    b_uid: str
    expert: str = Field(description="the expert label of the pair: A, B or Tie")
    label: str | None = Field(default=None, description="the judge's final label; NULL when invalid")
    run_labels_json: str = Field(default="[]", description="each run's label (null = invalid)")
    distribution_json: str = "{}"
    raw: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    run_id: int | None = Field(default=None, foreign_key="batch_run.id")
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))

    @property
    def run_labels(self) -> tuple[str | None, ...]:
        return tuple(json.loads(self.run_labels_json))

    @property
    def distribution(self) -> dict[str, float]:
        return json.loads(self.distribution_json)


@dataclass(frozen=True)
class StoredJudge:
    judge: str
    variant: str
    judgments: int
    invalid: int

    @property
    def name(self) -> str:
        return f"{self.judge} {self.variant}"


class PairwiseRepository:
    def __init__(self, db: Database):
        self._db = db
        self._table = PairwiseJudgment.__table__

    def add(
        self,
        *,
        judge: str,
        variant: str,
        dimension: str,
        topic_id: int,
        a_uid: str,
        b_uid: str,
        expert: str,
        label: str | None,
        run_labels: Sequence[str | None],
        distribution: dict[str, float],
        raw: str,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        run_id: int | None = None,
    ) -> None:
        """Store one judgment; a second judgment of the same pair by the same judge is ignored."""
        statement = insert(self._table).prefix_with("OR IGNORE").values(
            judge=judge, variant=variant, dimension=dimension, topic_id=topic_id,
            a_uid=a_uid, b_uid=b_uid, expert=expert, label=label,
            run_labels_json=json.dumps(list(run_labels)),
            distribution_json=json.dumps(distribution, sort_keys=True),
            raw=raw, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            run_id=run_id, created_at=datetime.now(timezone.utc),
        )
        with self._db.engine.begin() as conn:
            conn.execute(statement)

    def done_keys(self, judge: str, variant: str) -> set[tuple[str, str, str]]:
        """(dimension, a uid, b uid) of every pair this judge has already judged."""
        with self._db.session() as session:
            rows = session.exec(
                select(PairwiseJudgment.dimension, PairwiseJudgment.a_uid, PairwiseJudgment.b_uid).where(
                    PairwiseJudgment.judge == judge, PairwiseJudgment.variant == variant
                )
            )
            return {tuple(row) for row in rows}

    def judgments(
        self, judge: str, variant: str, dimension: str | None = None, topic_id: int | None = None
    ) -> list[PairwiseJudgment]:
        with self._db.session() as session:
            query = select(PairwiseJudgment).where(
                PairwiseJudgment.judge == judge, PairwiseJudgment.variant == variant
            )
            if dimension is not None:
                query = query.where(PairwiseJudgment.dimension == dimension)
            if topic_id is not None:
                query = query.where(PairwiseJudgment.topic_id == topic_id)
            return list(session.exec(query.order_by(PairwiseJudgment.id)))

    def judges(self) -> list[StoredJudge]:
        """Every (judge, variant) with stored judgments, most judgments first."""
        with self._db.session() as session:
            rows = session.exec(
                select(
                    PairwiseJudgment.judge,
                    PairwiseJudgment.variant,
                    func.count(),
                    func.sum(PairwiseJudgment.label.is_(None)),  # type: ignore[union-attr]
                ).group_by(PairwiseJudgment.judge, PairwiseJudgment.variant)
            )
            judges = [StoredJudge(judge, variant, count, int(invalid or 0)) for judge, variant, count, invalid in rows]
        return sorted(judges, key=lambda j: (-j.judgments, j.judge, j.variant))
