"""Critique rating's tables: positions, critiques, raters, append-only ratings, source reveals.

A rating is never changed or deleted (SQLite triggers and PostgreSQL ones refuse it); the
values read out of these tables cross the border as the frozen views below.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal

from sqlalchemy import DDL, CheckConstraint, Index, event, text
from sqlmodel import Field, SQLModel

from store.db import StoreError

DIMENSIONS = (
    "centrality",
    "strength",
    "correctness",
    "clarity",
    "dead_weight",
    "single_issue",
    "overall",
)
HUMAN, JUDGE = "human", "judge"
RatingVersion = Literal["current", "first", "all"]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    # SQLite keeps no zone; everything is written in UTC.
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class CritiqueError(StoreError):
    """A write that would break the rating rules or contradict stored data."""

    def __init__(self, kind: str, uid: str, field_name: str | None, problem: str):
        self.kind, self.uid, self.field, self.problem = kind, uid, field_name, problem
        what = f" field {field_name!r}:" if field_name else ""
        super().__init__(f"{kind} {uid!r}:{what} {problem}")


class CritiquePosition(SQLModel, table=True):
    __tablename__ = "critique_position"

    id: int | None = Field(default=None, primary_key=True)
    uid: str = Field(unique=True, index=True, description="the position_id of the imported file")
    text: str
    created_at: datetime = Field(default_factory=utc_now)


class Critique(SQLModel, table=True):
    __tablename__ = "critique"

    id: int | None = Field(default=None, primary_key=True)
    uid: str = Field(unique=True, index=True, description="the critique_id of the imported file")
    position_id: int = Field(foreign_key="critique_position.id", index=True)
    text: str
    source: str | None = Field(default=None, description="hidden from raters unless revealed")
    topic: str | None = None
    created_at: datetime = Field(default_factory=utc_now)


class Rater(SQLModel, table=True):
    __tablename__ = "critique_rater"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    kind: str = Field(default=HUMAN, description="human, or judge (an LLM judge)")
    details_json: str = "{}"
    created_at: datetime = Field(default_factory=utc_now)
    last_active_at: datetime | None = None


class RatingFields(SQLModel):
    """What a rating says, stored and staged alike."""

    reason: str | None = None
    centrality: float | None = None
    strength: float | None = None
    correctness: float | None = None
    clarity: float | None = None
    dead_weight: float | None = None
    single_issue: float | None = None
    overall: float | None = None
    note: str | None = None
    source_seen: bool = Field(default=False, description="the rater had revealed the source")
    valid: bool = Field(default=True, description="False: a judge's unparseable output, kept raw")
    raw: str | None = None
    error: str | None = None
    created_at: datetime = Field(default_factory=utc_now)


class CritiqueRating(RatingFields, table=True):
    __tablename__ = "critique_rating"
    __table_args__ = (
        # One first rating per rater and critique; later ones must be revisions.
        Index(
            "ix_critique_rating_first", "critique_id", "rater_id",
            unique=True, sqlite_where=text("revises_id IS NULL"), postgresql_where=text("revises_id IS NULL"),
        ),
        CheckConstraint("revises_id IS NULL OR length(trim(reason)) > 0", name="revision_has_reason"),
        *(
            CheckConstraint(f"{name} IS NULL OR ({name} >= 0 AND {name} <= 1)", name=f"{name}_in_unit")
            for name in DIMENSIONS
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    uid: str = Field(unique=True, index=True)
    critique_id: int = Field(foreign_key="critique.id", index=True)
    rater_id: int = Field(foreign_key="critique_rater.id", index=True)
    # Unique: a rating is revised at most once, so revisions form a chain.
    revises_id: int | None = Field(default=None, foreign_key="critique_rating.id", unique=True)


class SourceReveal(SQLModel, table=True):
    __tablename__ = "critique_source_reveal"

    id: int | None = Field(default=None, primary_key=True)
    critique_id: int = Field(foreign_key="critique.id", index=True)
    rater_id: int = Field(foreign_key="critique_rater.id", index=True)
    created_at: datetime = Field(default_factory=utc_now)


# The database itself refuses changes and deletions, whichever program connects.
_APPEND_ONLY_FUNCTION = DDL(
    "CREATE OR REPLACE FUNCTION argtui_append_only() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION USING MESSAGE = TG_TABLE_NAME || ' is append-only'; END $$"
)
for _table in ("critique_rating", "critique_source_reveal"):
    event.listen(SQLModel.metadata.tables[_table], "after_create", _APPEND_ONLY_FUNCTION.execute_if(dialect="postgresql"))
    for _verb in ("UPDATE", "DELETE"):
        _trigger = f"{_table}_no_{_verb.lower()}"
        event.listen(
            SQLModel.metadata.tables[_table],
            "after_create",
            DDL(
                f"CREATE TRIGGER IF NOT EXISTS {_trigger} BEFORE {_verb} ON {_table} "
                f"BEGIN SELECT RAISE(ABORT, '{_table} is append-only'); END"
            ).execute_if(dialect="sqlite"),
        )
        event.listen(
            SQLModel.metadata.tables[_table],
            "after_create",
            DDL(
                f"CREATE TRIGGER {_trigger} BEFORE {_verb} ON {_table} "
                "FOR EACH ROW EXECUTE FUNCTION argtui_append_only()"
            ).execute_if(dialect="postgresql"),
        )


# ---------------------------------------------------------------------- values crossing the border


@dataclass(frozen=True)
class CritiqueView:
    id: int
    uid: str
    position_uid: str
    text: str
    source: str | None
    topic: str | None


@dataclass(frozen=True)
class PositionView:
    id: int
    uid: str
    text: str
    critiques: tuple[CritiqueView, ...]


@dataclass(frozen=True)
class RatingView:
    id: int
    uid: str
    critique_id: int
    critique_uid: str
    position_uid: str
    rater: str
    rater_kind: str
    values: dict[str, float | None]
    note: str | None
    revises_uid: str | None
    reason: str | None
    source_seen: bool
    valid: bool
    raw: str | None
    error: str | None
    created_at: datetime


@dataclass(frozen=True)
class RaterView:
    name: str
    kind: str
    details: dict
    rated: int
