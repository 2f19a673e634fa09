"""Critique rating: positions, critiques, raters, append-only ratings, source reveals.

A rating is never changed or deleted (SQLite triggers refuse it). A revision
is a new rating that points at the rating it revises and carries a reason;
each (critique, rater) has at most one first rating and a linear chain of
revisions (unique indexes enforce both, also across processes). Every write
below is its own transaction, so a confirmed rating is on disk when the call
returns (WAL, synchronous=NORMAL: it survives the process being killed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Literal, Mapping

from sqlalchemy import DDL, CheckConstraint, Index, event, func, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased
from sqlmodel import Field, Session, SQLModel, select

from store.db import Database, StoreError
from store.judgments import judge_name, upsert
from store.migrations import has_tables, judgments_from_v1, v1_time, v1_usage

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


def _now() -> datetime:
    return datetime.now(timezone.utc)


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
    created_at: datetime = Field(default_factory=_now)


class Critique(SQLModel, table=True):
    __tablename__ = "critique"

    id: int | None = Field(default=None, primary_key=True)
    uid: str = Field(unique=True, index=True, description="the critique_id of the imported file")
    position_id: int = Field(foreign_key="critique_position.id", index=True)
    text: str
    source: str | None = Field(default=None, description="hidden from raters unless revealed")
    topic: str | None = None
    created_at: datetime = Field(default_factory=_now)


class Rater(SQLModel, table=True):
    __tablename__ = "critique_rater"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    kind: str = Field(default=HUMAN, description="human, or judge (an LLM judge)")
    details_json: str = "{}"
    created_at: datetime = Field(default_factory=_now)
    last_active_at: datetime | None = None


class CritiqueRating(SQLModel, table=True):
    __tablename__ = "critique_rating"
    __table_args__ = (
        # One first rating per rater and critique; later ones must be revisions.
        Index(
            "ix_critique_rating_first", "critique_id", "rater_id",
            unique=True, sqlite_where=text("revises_id IS NULL"),
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
    created_at: datetime = Field(default_factory=_now)


class SourceReveal(SQLModel, table=True):
    __tablename__ = "critique_source_reveal"

    id: int | None = Field(default=None, primary_key=True)
    critique_id: int = Field(foreign_key="critique.id", index=True)
    rater_id: int = Field(foreign_key="critique_rater.id", index=True)
    created_at: datetime = Field(default_factory=_now)


for _table in ("critique_rating", "critique_source_reveal"):
    for _verb in ("UPDATE", "DELETE"):
        event.listen(
            SQLModel.metadata.tables[_table],
            "after_create",
            DDL(
                f"CREATE TRIGGER IF NOT EXISTS {_table}_no_{_verb.lower()} BEFORE {_verb} ON {_table} "
                f"BEGIN SELECT RAISE(ABORT, '{_table} is append-only'); END"
            ),
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


@dataclass(frozen=True)
class NewPosition:
    uid: str
    text: str


@dataclass(frozen=True)
class NewCritique:
    uid: str
    position_uid: str
    text: str
    source: str | None = None
    topic: str | None = None


@dataclass(frozen=True)
class NewRating:
    """A rating to import; `revises_uid` names an earlier rating of the same file or database."""

    uid: str
    critique_uid: str
    rater: str
    values: Mapping[str, float | None]
    rater_kind: str = HUMAN
    note: str | None = None
    revises_uid: str | None = None
    reason: str | None = None
    source_seen: bool = False
    valid: bool = True
    raw: str | None = None
    error: str | None = None
    created_at: datetime | None = None


@dataclass
class ImportCounts:
    positions: int = 0
    critiques: int = 0
    ratings: int = 0
    already_stored: int = 0
    raters: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------- repository


class CritiqueRepository:
    def __init__(self, db: Database):
        self._db = db

    # -------------------------------------------------------------- import

    def import_items(
        self,
        positions: Iterable[NewPosition],
        critiques: Iterable[NewCritique],
        ratings: Iterable[NewRating],
    ) -> ImportCounts:
        """All in one transaction: anything that contradicts stored data aborts the whole import.

        Items already stored with the same content are skipped, so importing a
        file twice is harmless.
        """
        counts = ImportCounts()
        with self._db.session() as session:
            position_ids: dict[str, int] = {}
            for position in positions:
                stored = session.exec(
                    select(CritiquePosition).where(CritiquePosition.uid == position.uid)
                ).first()
                if stored is None:
                    stored = CritiquePosition(uid=position.uid, text=position.text)
                    session.add(stored)
                    session.flush()
                    counts.positions += 1
                elif stored.text != position.text:
                    raise CritiqueError("position", position.uid, "position", "differs from the stored text")
                position_ids[position.uid] = stored.id
            critique_ids: dict[str, int] = {}
            for critique in critiques:
                stored = session.exec(select(Critique).where(Critique.uid == critique.uid)).first()
                if stored is None:
                    stored = Critique(
                        uid=critique.uid, position_id=position_ids[critique.position_uid],
                        text=critique.text, source=critique.source, topic=critique.topic,
                    )
                    session.add(stored)
                    session.flush()
                    counts.critiques += 1
                else:
                    for name, mine, theirs in (
                        ("critique", stored.text, critique.text),
                        ("position_id", stored.position_id, position_ids[critique.position_uid]),
                        ("source", stored.source, critique.source),
                        ("topic", stored.topic, critique.topic),
                    ):
                        if mine != theirs:
                            raise CritiqueError("critique", critique.uid, name, "differs from the stored critique")
                critique_ids[critique.uid] = stored.id
            rater_names = set()
            for rating in ratings:
                rater = self._rater(session, rating.rater, rating.rater_kind)
                rater_names.add(rater.name)
                stored = session.exec(select(CritiqueRating).where(CritiqueRating.uid == rating.uid)).first()
                revises_id = None
                if rating.revises_uid is not None:
                    revised = session.exec(
                        select(CritiqueRating).where(CritiqueRating.uid == rating.revises_uid)
                    ).first()
                    if revised is None:
                        raise CritiqueError("rating", rating.uid, "revises", f"no rating {rating.revises_uid!r}")
                    if (revised.critique_id, revised.rater_id) != (critique_ids[rating.critique_uid], rater.id):
                        raise CritiqueError(
                            "rating", rating.uid, "revises", f"{rating.revises_uid!r} is another critique's or rater's rating"
                        )
                    revises_id = revised.id
                row = CritiqueRating(
                    uid=rating.uid, critique_id=critique_ids[rating.critique_uid], rater_id=rater.id,
                    revises_id=revises_id, reason=rating.reason, note=rating.note,
                    source_seen=rating.source_seen, valid=rating.valid, raw=rating.raw, error=rating.error,
                    **{name: rating.values.get(name) for name in DIMENSIONS},
                    **({"created_at": rating.created_at} if rating.created_at else {}),
                )
                if stored is not None:
                    if _rating_content(stored) != _rating_content(row):
                        raise CritiqueError("rating", rating.uid, None, "differs from the stored rating")
                    counts.already_stored += 1
                    continue
                session.add(row)
                self._flush_rating(session, rating.uid)
                counts.ratings += 1
            counts.raters = sorted(rater_names)
        return counts

    # -------------------------------------------------------------- rating

    def add_rating(
        self,
        critique_id: int,
        rater: str,
        values: Mapping[str, float | None],
        *,
        note: str | None = None,
        revises_id: int | None = None,
        reason: str | None = None,
        source_seen: bool = False,
        rater_kind: str = HUMAN,
        valid: bool = True,
        raw: str | None = None,
        error: str | None = None,
    ) -> RatingView:
        """Store one rating, committed before returning; a revision names the rating it revises."""
        with self._db.session() as session:
            critique = session.get(Critique, critique_id)
            if critique is None:
                raise CritiqueError("critique", str(critique_id), None, "not found")
            rater_row = self._rater(session, rater, rater_kind)
            chain = self._chain(session, critique_id, rater_row.id)
            if revises_id is None and chain:
                raise CritiqueError(
                    "critique", critique.uid, None,
                    f"{rater} has already rated it; revise that rating (with a reason) instead",
                )
            if revises_id is not None:
                if not chain or chain[-1].id != revises_id:
                    raise CritiqueError(
                        "critique", critique.uid, "revises",
                        f"only {rater}'s latest rating of this critique can be revised",
                    )
                if not (reason or "").strip():
                    raise CritiqueError("critique", critique.uid, "reason", "a revision needs a reason")
            row = CritiqueRating(
                uid=f"{critique.uid}/{rater}/{len(chain) + 1}",
                critique_id=critique_id, rater_id=rater_row.id, revises_id=revises_id,
                reason=reason.strip() if reason else None, note=note or None, source_seen=source_seen,
                valid=valid, raw=raw, error=error, **{name: values.get(name) for name in DIMENSIONS},
            )
            session.add(row)
            self._flush_rating(session, row.uid)
            rater_row.last_active_at = _now()
            session.add(rater_row)
            rating_id = row.id
        return self._rating_views(CritiqueRating.id == rating_id)[0]

    def reveal_source(self, critique_id: int, rater: str) -> str | None:
        """Record that the rater looked at the source; returns it."""
        with self._db.session() as session:
            critique = session.get(Critique, critique_id)
            if critique is None:
                raise CritiqueError("critique", str(critique_id), None, "not found")
            rater_row = self._rater(session, rater, HUMAN)
            session.add(SourceReveal(critique_id=critique_id, rater_id=rater_row.id))
            return critique.source

    def revealed_critique_ids(self, rater: str) -> set[int]:
        """Critiques whose source this rater has revealed."""
        return self._critique_ids(SourceReveal, rater)

    def reveals(self) -> list[tuple[str, str, datetime]]:
        """(critique uid, rater, time) of every source reveal."""
        with self._db.session() as session:
            rows = session.exec(
                select(Critique.uid, Rater.name, SourceReveal.created_at)
                .join(Critique, Critique.id == SourceReveal.critique_id)
                .join(Rater, Rater.id == SourceReveal.rater_id)
                .order_by(SourceReveal.id)
            )
            return [tuple(row) for row in rows]

    def ensure_rater(self, name: str, kind: str = HUMAN, details: dict | None = None, *, active: bool = False) -> RaterView:
        """The rater, created with these details if new (an existing rater keeps its own);
        `active` makes it the app's default rater from now on."""
        with self._db.session() as session:
            row = self._rater(session, name, kind, details)
            if active:
                row.last_active_at = _now()
                session.add(row)
            return RaterView(row.name, row.kind, json.loads(row.details_json), 0)

    # -------------------------------------------------------------- reading

    def positions(self) -> list[PositionView]:
        with self._db.session() as session:
            positions = list(session.exec(select(CritiquePosition).order_by(CritiquePosition.id)))
            critiques = list(session.exec(select(Critique).order_by(Critique.id)))
        by_position: dict[int, list[CritiqueView]] = {p.id: [] for p in positions}
        uid_of = {p.id: p.uid for p in positions}
        for c in critiques:
            by_position[c.position_id].append(
                CritiqueView(c.id, c.uid, uid_of[c.position_id], c.text, c.source, c.topic)
            )
        return [PositionView(p.id, p.uid, p.text, tuple(by_position[p.id])) for p in positions]

    def ratings(self, rater: str | None = None, *, which: RatingVersion = "current") -> list[RatingView]:
        """Ratings oldest first: the latest of each revision chain, the first of each, or all."""
        conditions = []
        if which == "current":
            revised = select(CritiqueRating.revises_id).where(CritiqueRating.revises_id.is_not(None))
            conditions.append(CritiqueRating.id.not_in(revised))
        elif which == "first":
            conditions.append(CritiqueRating.revises_id.is_(None))
        if rater is not None:
            conditions.append(Rater.name == rater)
        return self._rating_views(*conditions)

    def history(self, critique_id: int, rater: str) -> list[RatingView]:
        """The rater's ratings of one critique, first rating first, then each revision."""
        return self._rating_views(CritiqueRating.critique_id == critique_id, Rater.name == rater)

    def rated_critique_ids(self, rater: str) -> set[int]:
        return self._critique_ids(CritiqueRating, rater)

    def progress(self, rater: str) -> tuple[int, int]:
        """(critiques the rater has rated, all critiques)."""
        with self._db.session() as session:
            total = session.exec(select(func.count(Critique.id))).one()
        return len(self.rated_critique_ids(rater)), total

    def raters(self) -> list[RaterView]:
        with self._db.session() as session:
            rows = session.exec(
                select(Rater, func.count(func.distinct(CritiqueRating.critique_id)))
                .join(CritiqueRating, CritiqueRating.rater_id == Rater.id, isouter=True)
                .group_by(Rater.id)
                .order_by(Rater.kind, Rater.name)
            ).all()
        return [RaterView(r.name, r.kind, json.loads(r.details_json), n) for r, n in rows]

    def last_active_rater(self) -> str | None:
        """The human rater who rated most recently in this database (the app's default)."""
        with self._db.session() as session:
            return session.exec(
                select(Rater.name)
                .where(Rater.kind == HUMAN, Rater.last_active_at.is_not(None))
                .order_by(Rater.last_active_at.desc())
            ).first()

    # -------------------------------------------------------------- internals

    def _rater(self, session: Session, name: str, kind: str, details: dict | None = None) -> Rater:
        name = name.strip()
        if not name:
            raise CritiqueError("rater", name, "rater", "a rater needs a name")
        row = session.exec(select(Rater).where(Rater.name == name)).first()
        if row is None:
            row = Rater(name=name, kind=kind, details_json=json.dumps(details or {}, sort_keys=True))
            session.add(row)
            session.flush()
        return row

    def _critique_ids(self, table: type[CritiqueRating] | type[SourceReveal], rater: str) -> set[int]:
        """Critiques with at least one row by this rater in `table`."""
        with self._db.session() as session:
            return set(
                session.exec(
                    select(table.critique_id).join(Rater, Rater.id == table.rater_id).where(Rater.name == rater)
                ).all()
            )

    @staticmethod
    def _chain(session: Session, critique_id: int, rater_id: int) -> list[CritiqueRating]:
        return list(
            session.exec(
                select(CritiqueRating)
                .where(CritiqueRating.critique_id == critique_id, CritiqueRating.rater_id == rater_id)
                .order_by(CritiqueRating.id)
            )
        )

    @staticmethod
    def _flush_rating(session: Session, uid: str) -> None:
        try:
            session.flush()
        except IntegrityError as exc:
            message = str(exc.orig)
            if "ix_critique_rating_first" in message or "critique_rating.critique_id" in message:
                problem = "the rater already has a first rating of this critique; a second one must revise it"
            elif "revises_id" in message:
                problem = "the rating it revises has already been revised"
            elif "CHECK" in message:
                problem = f"violates a rule: {message}"
            else:
                problem = message
            raise CritiqueError("rating", uid, None, problem) from None

    def _rating_views(self, *conditions) -> list[RatingView]:
        """Ratings matching the conditions (on CritiqueRating and Rater), oldest first."""
        revised = aliased(CritiqueRating)
        query = (
            select(CritiqueRating, Critique.uid, CritiquePosition.uid, Rater.name, Rater.kind, revised.uid)
            .join(Critique, Critique.id == CritiqueRating.critique_id)
            .join(CritiquePosition, CritiquePosition.id == Critique.position_id)
            .join(Rater, Rater.id == CritiqueRating.rater_id)
            .outerjoin(revised, revised.id == CritiqueRating.revises_id)
            .where(*conditions)
            .order_by(CritiqueRating.id)
        )
        with self._db.session() as session:
            rows = session.exec(query).all()
        return [
            RatingView(
                id=row.id, uid=row.uid, critique_id=row.critique_id, critique_uid=critique_uid,
                position_uid=position_uid, rater=rater, rater_kind=kind,
                values={name: getattr(row, name) for name in DIMENSIONS}, note=row.note,
                revises_uid=revises_uid, reason=row.reason, source_seen=row.source_seen, valid=row.valid,
                raw=row.raw, error=row.error, created_at=_as_utc(row.created_at),
            )
            for row, critique_uid, position_uid, rater, kind, revises_uid in rows
        ]


def _as_utc(moment: datetime) -> datetime:
    # SQLite keeps no zone; everything is written in UTC.
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _rating_content(row: CritiqueRating) -> tuple:
    return (
        row.critique_id, row.rater_id, row.revises_id, row.reason, row.note, row.valid,
        *(getattr(row, name) for name in DIMENSIONS),
    )


# ---------------------------------------------------------------------- judge ratings of schema 1

JUDGMENT_TASK = "critiques"  # the critique task's name in the judgment table
_V1_JUDGE_DETAILS = ("profile", "model", "prompt")


def carried_judge(rater: RaterView) -> bool:
    """A judge rater written by `argtui eval critiques` before judge verdicts had their own table:
    `copy_v1` carries its ratings into `judgment`, where they are read from now on."""
    return rater.kind == JUDGE and all(rater.details.get(key) for key in _V1_JUDGE_DETAILS)


@judgments_from_v1
def copy_v1(conn: Connection) -> int:
    """Copy the current ratings of carried judge raters into `judgment`; returns how many.

    The judge is named as the judging core names it (`<model>@<profile> <prompt>`, read
    from the rater's details) and the item is the critique's uid. The verdict JSON has the
    engine's Verdict shape: `value` overall, `data` the seven dimensions and the reasoning
    (null when invalid), `raw`, `invalid_reason` the old error; `detail` is the reasoning.
    The old rows stay in place; copying again replaces the same judgments.
    """
    if not has_tables(conn, "critique_rating", "critique_rater", "critique"):
        return 0
    judges = {}
    for rater_id, kind, details_json in conn.exec_driver_sql("SELECT id, kind, details_json FROM critique_rater"):
        details = json.loads(details_json or "{}")
        if carried_judge(RaterView("", kind, details, 0)):
            judges[rater_id] = details
    if not judges:
        return 0
    rows = conn.exec_driver_sql(
        f"SELECT r.rater_id, c.uid, r.valid, r.raw, r.error, r.note, r.created_at, "
        f"{', '.join('r.' + name for name in DIMENSIONS)} "
        "FROM critique_rating r JOIN critique c ON c.id = r.critique_id "
        "WHERE r.id NOT IN (SELECT revises_id FROM critique_rating WHERE revises_id IS NOT NULL) "
        f"AND r.rater_id IN ({', '.join(str(rater_id) for rater_id in judges)}) ORDER BY r.id"
    ).mappings()
    judgments = []
    for row in rows:
        details = judges[row["rater_id"]]
        values = {name: row[name] for name in DIMENSIONS}
        valid = bool(row["valid"])
        verdict = {
            "label": None,
            "value": values["overall"] if valid else None,
            "data": {**values, "reasoning": row["note"] or ""} if valid else None,
            "distribution": {},
            "raw": row["raw"] or "",
            "invalid_reason": None if valid else (row["error"] or "invalid output"),
            "detail": row["note"] or "",
            "usage": v1_usage(),
            "seconds": 0.0,
        }
        judgments.append(dict(
            task=JUDGMENT_TASK, judge=judge_name(details["profile"], details["model"], details["prompt"]),
            profile=details["profile"], model=details["model"], variant=details["prompt"], item=row["uid"],
            reference=None, valid=valid, verdict=verdict, run_id=None, created_at=v1_time(row["created_at"]),
        ))
    for judgment in judgments:  # one at a time: two old raters of one judge, the later rating wins
        upsert(conn, [judgment])
    return len(judgments)
