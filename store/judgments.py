"""Every judgment of every task: one row per (task, judge, item, content), the verdict as JSON.

The store does not know the engine's types: a verdict arrives as the plain
JSON object of the engine's `Verdict` and goes back the same way (the engine
validates it on the way out). `valid` mirrors the verdict so counts need no
JSON parsing. The judge is stored in its structured columns (profile, model,
variant and the digests of its options, prompts and sampling) beside its name;
`content` is the digest of what the judge saw, so an item whose text changed is
judged anew while its old judgment stays. Saving a judgment of the same content
again replaces it (an upsert). A long text in a verdict (the raw answer of a
runaway model) is kept once in `stored_text`, shared with the cached answer it
was made of (`store.texts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from sqlalchemy import JSON, Column, Text, UniqueConstraint, case, cast, func
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel, select

from store.db import Database, upsert_rows
from store.identity import judge_name
from store.texts import decoded, shrink, store_texts



def _now() -> datetime:
    return datetime.now(timezone.utc)


_REPLACED = ("reference", "valid", "verdict", "run_id", "created_at")
_UNIQUE = ("task", "judge", "item", "content")
_IDENTITY = ("options", "prompts", "sampling", "content")  # columns a writer may leave out: "" then


def upsert(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Write judgment rows (dicts of the table's columns), replacing the same (task, judge, item, content)."""
    texts: dict[str, str] = {}
    rows = [{**dict.fromkeys(_IDENTITY, ""), **row, "verdict": shrink(row["verdict"], texts)} for row in rows]
    store_texts(conn, texts)
    upsert_rows(conn, Judgment.__table__, rows, _UNIQUE, _REPLACED)


class Judgment(SQLModel, table=True):
    __tablename__ = "judgment"
    __table_args__ = (UniqueConstraint(*_UNIQUE),)

    id: int | None = Field(default=None, primary_key=True)
    task: str = Field(index=True, description="the task's registry name, e.g. pairwise")
    judge: str = Field(index=True, description="the judge's short name (JudgeId.name)")
    profile: str = ""
    model: str = ""
    variant: str = ""
    options: str = Field(default="", sa_column_kwargs={"server_default": ""}, description="digest of the options")
    prompts: str = Field(default="", sa_column_kwargs={"server_default": ""}, description="digest of the prompts")
    sampling: str = Field(default="", sa_column_kwargs={"server_default": ""},
                          description="digest of the sampling the profile adds to every call")
    item: str = Field(description="the item's key within the task")
    content: str = Field(default="", sa_column_kwargs={"server_default": ""},
                         description="digest of what the judge saw of the item and its reference")
    reference: str | None = Field(default=None, description="the expert / gold answer, when known")
    valid: bool = True
    verdict: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    run_id: int | None = Field(default=None, foreign_key="batch_run.id")
    created_at: datetime = Field(default_factory=_now)


@dataclass(frozen=True)
class JudgeColumns:
    """A judge as its structured columns; its name follows from them (`store.identity.judge_name`)."""

    profile: str
    model: str
    variant: str
    options: str = ""
    prompts: str = ""
    sampling: str = ""

    @property
    def name(self) -> str:
        return judge_name(self.profile, self.model, self.variant, self.options, self.prompts, self.sampling)


@dataclass(frozen=True)
class JudgeRow:
    """One stored judge, with how many judgments it made and how many were invalid."""

    judge: JudgeColumns
    judgments: int
    invalid: int


@dataclass(frozen=True)
class NewJudgment:
    item: str
    verdict: dict[str, Any]
    valid: bool
    reference: str | None = None
    content: str = ""  # the digest of what was judged


@dataclass(frozen=True)
class StoredJudgment:
    """Where a stored verdict belongs: its run (None: judged outside a run), task, judge and item."""

    run_id: int | None
    task: str
    judge: str
    item: str


# The verdict as its JSON text: decoded by `store.texts.decoded`, which puts long texts back.
_VERDICT_JSON = cast(Judgment.verdict, Text)


class JudgmentRepository:
    def __init__(self, db: Database):
        self._db = db

    def save(
        self, task: str, judge: JudgeColumns, judgments: Iterable[NewJudgment], run_id: int | None = None,
    ) -> None:
        """Store judgments in one transaction, replacing earlier ones of the same items and contents."""
        identity = dict(
            task=task, judge=judge.name, profile=judge.profile, model=judge.model, variant=judge.variant,
            options=judge.options, prompts=judge.prompts, sampling=judge.sampling,
        )
        rows = [
            dict(identity, item=j.item, content=j.content, reference=j.reference, valid=j.valid, verdict=j.verdict,
                 run_id=run_id, created_at=_now())
            for j in judgments
        ]
        with self._db.connection() as conn:
            upsert(conn, rows)

    def items(self, task: str, judge: str) -> set[str]:
        """The keys of every item this judge has a stored judgment for."""
        with self._db.read() as session:
            return set(session.exec(select(Judgment.item).where(Judgment.task == task, Judgment.judge == judge)))

    def matching(self, task: str, judge: str, contents: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """item key -> verdict JSON, for the items of `contents` (key -> content digest) judged with that content."""
        with self._db.read() as session:
            rows = [
                (item, verdict) for item, content, verdict in session.exec(
                    select(Judgment.item, Judgment.content, _VERDICT_JSON)
                    .where(Judgment.task == task, Judgment.judge == judge)
                )
                if contents.get(item) == content
            ]
            verdicts = decoded(session.connection(), [verdict for _, verdict in rows])
        return {item: verdict for (item, _), verdict in zip(rows, verdicts)}

    def verdicts(self, task: str, judge: str, items: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """item key -> verdict JSON, for all of the judge's items or the ones asked for: of an item
        judged with several contents, the latest judgment."""
        wanted = None if items is None else set(items)
        with self._db.read() as session:
            rows = [
                (item, verdict) for item, verdict in session.exec(
                    select(Judgment.item, _VERDICT_JSON)
                    .where(Judgment.task == task, Judgment.judge == judge)
                    .order_by(Judgment.created_at, Judgment.id)
                )
                if wanted is None or item in wanted
            ]
            latest = list({item: index for index, (item, _) in enumerate(rows)}.values())
            rows = [rows[index] for index in sorted(latest)]
            verdicts = decoded(session.connection(), [verdict for _, verdict in rows])
        return {item: verdict for (item, _), verdict in zip(rows, verdicts)}

    def judges(self, task: str) -> list[JudgeRow]:
        """Every judge with stored judgments of the task, most judgments first."""
        identity = (Judgment.profile, Judgment.model, Judgment.variant, Judgment.options, Judgment.prompts,
                    Judgment.sampling)
        with self._db.read() as session:
            rows = session.exec(
                select(
                    *identity,
                    func.count(), func.sum(case((Judgment.valid.is_(False), 1), else_=0)),  # type: ignore[union-attr]
                )
                .where(Judgment.task == task)
                .group_by(*identity)
            )
            judges = [JudgeRow(JudgeColumns(*columns), count, int(invalid or 0)) for *columns, count, invalid in rows]
        return sorted(judges, key=lambda row: (-row.judgments, row.judge.name))

    def labelled(self, task: str, judge: str) -> list[tuple[str, str | None, dict[str, Any]]]:
        """(item, reference, verdict JSON) of the judge's judgments whose item has a reference: of an
        item judged with several contents, the latest, so that no item counts twice."""
        with self._db.read() as session:
            rows = session.exec(
                select(Judgment.item, Judgment.reference, _VERDICT_JSON)
                .where(Judgment.task == task, Judgment.judge == judge, Judgment.reference.is_not(None))  # type: ignore[union-attr]
                .order_by(Judgment.created_at, Judgment.id)
            ).all()
            rows = list({item: (item, reference, verdict) for item, reference, verdict in rows}.values())
            verdicts = decoded(session.connection(), [verdict for _, _, verdict in rows])
        return [(item, reference, verdict) for (item, reference, _), verdict in zip(rows, verdicts)]

    def every(self) -> list[tuple[StoredJudgment, dict[str, Any]]]:
        """Every stored judgment with its verdict JSON, by run, task, judge and item."""
        with self._db.read() as session:
            rows = session.exec(
                select(Judgment.run_id, Judgment.task, Judgment.judge, Judgment.item, _VERDICT_JSON)
                .order_by(Judgment.run_id, Judgment.task, Judgment.judge, Judgment.item, Judgment.id)
            ).all()
            verdicts = decoded(session.connection(), [row[-1] for row in rows])
        return [(StoredJudgment(*row[:-1]), verdict) for row, verdict in zip(rows, verdicts)]

    def tasks(self) -> list[str]:
        with self._db.read() as session:
            return sorted(set(session.exec(select(Judgment.task).distinct())))
