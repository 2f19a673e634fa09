"""Every judgment of every task: one row per (task, judge, item), the verdict as JSON.

The store does not know the engine's types: a verdict arrives as the plain
JSON object of the engine's `Verdict` and goes back the same way (the engine
validates it on the way out). `valid` mirrors the verdict so counts need no
JSON parsing. Saving a judgment again replaces it (an upsert). A long text in a
verdict (the raw answer of a runaway model) is kept once in `stored_text`, shared
with the cached answer it was made of (`store.texts`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

from sqlalchemy import JSON, Column, Text, UniqueConstraint, case, cast, func
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel, select

from store.db import Database, upsert_rows
from store.texts import decoded, shrink, store_texts


def _now() -> datetime:
    return datetime.now(timezone.utc)


def options_digest(options: dict[str, Any]) -> str:
    """A short stable digest of judge options ("" for none)."""
    if not options:
        return ""
    payload = json.dumps(options, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:8]


def judge_name(profile: str, model: str, variant: str, digest: str = "") -> str:
    """The one short name of a judge: "model@profile variant", "#digest" when options apply.

    Defined here, not in the engine, so schema migrations name old judges exactly as
    the engine names new ones."""
    base = f"{model}@{profile} {variant}"
    return f"{base} #{digest}" if digest else base


_REPLACED = ("reference", "valid", "verdict", "run_id", "created_at")


def upsert(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Write judgment rows (dicts of the table's columns), replacing the same (task, judge, item)."""
    texts: dict[str, str] = {}
    rows = [{**row, "verdict": shrink(row["verdict"], texts)} for row in rows]
    store_texts(conn, texts)
    upsert_rows(conn, Judgment.__table__, rows, ("task", "judge", "item"), _REPLACED)



class Judgment(SQLModel, table=True):
    __tablename__ = "judgment"
    __table_args__ = (UniqueConstraint("task", "judge", "item"),)

    id: int | None = Field(default=None, primary_key=True)
    task: str = Field(index=True, description="the task's registry name, e.g. pairwise")
    judge: str = Field(index=True, description="the judge's short name (JudgeId.name)")
    profile: str = ""
    model: str = ""
    variant: str = ""
    item: str = Field(description="the item's key within the task")
    reference: str | None = Field(default=None, description="the expert / gold answer, when known")
    valid: bool = True
    verdict: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    run_id: int | None = Field(default=None, foreign_key="batch_run.id")
    created_at: datetime = Field(default_factory=_now)


@dataclass(frozen=True)
class JudgeRow:
    """One judge's identity as stored, with how many items it judged and how many were invalid."""

    judge: str
    profile: str
    model: str
    variant: str
    judgments: int
    invalid: int


@dataclass(frozen=True)
class NewJudgment:
    item: str
    verdict: dict[str, Any]
    valid: bool
    reference: str | None = None


# The verdict as its JSON text: decoded by `store.texts.decoded`, which puts long texts back.
_VERDICT_JSON = cast(Judgment.verdict, Text)


class JudgmentRepository:
    def __init__(self, db: Database):
        self._db = db

    def save(
        self, task: str, judge: str, profile: str, model: str, variant: str,
        judgments: Iterable[NewJudgment], run_id: int | None = None,
    ) -> None:
        """Store judgments in one transaction, replacing earlier ones of the same items."""
        rows = [
            dict(task=task, judge=judge, profile=profile, model=model, variant=variant, item=j.item,
                 reference=j.reference, valid=j.valid, verdict=j.verdict, run_id=run_id, created_at=_now())
            for j in judgments
        ]
        with self._db.connection() as conn:
            upsert(conn, rows)

    def items(self, task: str, judge: str) -> set[str]:
        """The keys of every item this judge has a stored judgment for."""
        with self._db.read() as session:
            return set(session.exec(select(Judgment.item).where(Judgment.task == task, Judgment.judge == judge)))

    def verdicts(self, task: str, judge: str, items: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """item key -> verdict JSON, for all of the judge's items or the ones asked for."""
        wanted = None if items is None else set(items)
        with self._db.read() as session:
            rows = [
                (item, verdict) for item, verdict in session.exec(
                    select(Judgment.item, _VERDICT_JSON)
                    .where(Judgment.task == task, Judgment.judge == judge)
                    .order_by(Judgment.id)
                )
                if wanted is None or item in wanted
            ]
            verdicts = decoded(session.connection(), [verdict for _, verdict in rows])
        return {item: verdict for (item, _), verdict in zip(rows, verdicts)}

    def judges(self, task: str) -> list[JudgeRow]:
        """Every judge with stored judgments of the task, most judgments first."""
        with self._db.read() as session:
            rows = session.exec(
                select(
                    Judgment.judge, Judgment.profile, Judgment.model, Judgment.variant,
                    func.count(), func.sum(case((Judgment.valid.is_(False), 1), else_=0)),  # type: ignore[union-attr]
                )
                .where(Judgment.task == task)
                .group_by(Judgment.judge, Judgment.profile, Judgment.model, Judgment.variant)
            )
            judges = [JudgeRow(j, p, m, v, count, int(invalid or 0)) for j, p, m, v, count, invalid in rows]
        return sorted(judges, key=lambda row: (-row.judgments, row.judge))

    def labelled(self, task: str, judge: str) -> list[tuple[str, str | None, dict[str, Any]]]:
        """(item, reference, verdict JSON) of the judge's items that have a reference."""
        with self._db.read() as session:
            rows = session.exec(
                select(Judgment.item, Judgment.reference, _VERDICT_JSON)
                .where(Judgment.task == task, Judgment.judge == judge, Judgment.reference.is_not(None))  # type: ignore[union-attr]
                .order_by(Judgment.id)
            ).all()
            verdicts = decoded(session.connection(), [verdict for _, _, verdict in rows])
        return [(item, reference, verdict) for (item, reference, _), verdict in zip(rows, verdicts)]

    def tasks(self) -> list[str]:
        with self._db.read() as session:
            return sorted(set(session.exec(select(Judgment.task).distinct())))
