"""Importing positions, critiques and ratings: checked against the stored ones, staged in short
transactions, published in one.

An import is all or nothing. Its new rows wait in staging tables (written `IMPORT_BATCH_ROWS`
at a time, so raters never wait long for the write lock) and are copied into the real tables
by a few INSERT … SELECT statements in one short transaction. Its staged rows are deleted
whatever the outcome, or, when even that fails (a full disk takes no deletion either, a dead
server none at all), by the next import.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Iterable, Mapping

from sqlalchemy import Select, delete, insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased
from sqlmodel import Field, Session, SQLModel, select

from store.critiques.tables import (
    DIMENSIONS,
    HUMAN,
    Critique,
    CritiqueError,
    CritiquePosition,
    CritiqueRating,
    Rater,
    RatingFields,
    as_utc,
    utc_now,
)
from store.db import Database, StoreError, insert_missing
from store.holders import Holder

IMPORT_BATCH_ROWS = 500  # staged rows per transaction: each holds the write lock for milliseconds
ABANDONED_IMPORT_AGE = timedelta(days=1)  # staged rows this old, of another host's import, belong to a dead process
log = logging.getLogger("argtui.store")
_IMPORTING: set[str] = set()  # ids of the imports this process is running now


class CritiqueImport(SQLModel, table=True):
    """An import in progress: its rows wait in the staging tables below until it is published."""

    __tablename__ = "critique_import"

    id: str = Field(primary_key=True)
    started_at: datetime = Field(default_factory=utc_now)
    host: str = Field(default="", sa_column_kwargs={"server_default": ""},  # as the migration gives older databases
                      description="the host of the importing process")
    pid: int | None = Field(default=None, description="the importing process")


class StagedPosition(SQLModel, table=True):
    __tablename__ = "critique_import_position"

    id: int | None = Field(default=None, primary_key=True)
    import_id: str = Field(index=True)
    uid: str
    text: str
    created_at: datetime


class StagedCritique(SQLModel, table=True):
    __tablename__ = "critique_import_critique"

    id: int | None = Field(default=None, primary_key=True)
    import_id: str = Field(index=True)
    uid: str
    position_uid: str
    text: str
    source: str | None = None
    topic: str | None = None
    created_at: datetime


class StagedRating(RatingFields, table=True):
    __tablename__ = "critique_import_rating"

    id: int | None = Field(default=None, primary_key=True)
    import_id: str = Field(index=True)
    uid: str
    critique_uid: str
    rater: str
    revises_uid: str | None = None
    depth: int = Field(description="revisions of this import's own ratings before it: they are published first")


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


@dataclass
class _ImportPlan:
    """The new items of an import, checked; ratings with their rater and revision depth."""

    positions: list[NewPosition] = field(default_factory=list)
    critiques: list[NewCritique] = field(default_factory=list)
    ratings: list[tuple[NewRating, str, int]] = field(default_factory=list)
    raters: list[tuple[str, str]] = field(default_factory=list)  # (name, kind) of raters not stored yet
    rater_names: set[str] = field(default_factory=set)
    counts: ImportCounts = field(default_factory=ImportCounts)


class _Chains:
    """Revision chains as stored and as an import extends them, to check its ratings."""

    def __init__(self) -> None:
        self.content: dict[str, tuple] = {}  # rating uid -> what it says (see `_content`)
        self.depth: dict[str, int | None] = {}  # None: already stored
        self.first: set[tuple[str, str]] = set()  # (critique uid, rater) with a first rating
        self.revised: set[str] = set()

    def add(self, uid: str, content: tuple, depth: int | None) -> None:
        self.content[uid], self.depth[uid] = content, depth
        critique_uid, rater, revises_uid = content[:3]
        if revises_uid is None:
            self.first.add((critique_uid, rater))
        else:
            self.revised.add(revises_uid)

    def check(self, rating: NewRating, rater: str) -> int:
        """The rating's depth among the import's own revisions; raises where a chain would break."""
        if rating.revises_uid is None:
            if (rating.critique_uid, rater) in self.first:
                raise CritiqueError(
                    "rating", rating.uid, None,
                    "the rater already has a first rating of this critique; a second one must revise it",
                )
            return 0
        target = self.content.get(rating.revises_uid)
        if target is None:
            raise CritiqueError("rating", rating.uid, "revises", f"no rating {rating.revises_uid!r}")
        if target[:2] != (rating.critique_uid, rater):
            raise CritiqueError(
                "rating", rating.uid, "revises", f"{rating.revises_uid!r} is another critique's or rater's rating"
            )
        if rating.revises_uid in self.revised:
            raise CritiqueError("rating", rating.uid, "revises", "the rating it revises has already been revised")
        if not (rating.reason or "").strip():
            raise CritiqueError("rating", rating.uid, "reason", "a revision needs a reason")
        parent = self.depth[rating.revises_uid]
        return 0 if parent is None else parent + 1


def _content(critique_uid: str, rater: str, revises_uid: str | None, reason, note, valid, values: Mapping) -> tuple:
    """What must match for a rating in a file to be the stored one of the same uid."""
    return (critique_uid, rater, revises_uid, reason, note, bool(valid), *(values.get(name) for name in DIMENSIONS))


def _check_values(rating: NewRating) -> None:
    for name in DIMENSIONS:
        value = rating.values.get(name)
        if value is not None and not 0 <= value <= 1:
            raise CritiqueError("rating", rating.uid, name, "must be between 0 and 1")


_CHUNK = 500  # values per IN (...) list


def _rows_by(session: Session, query: Select, column: Any, values: Iterable[str]) -> list:
    """The rows of `query` whose `column` is one of `values`, asked for in chunks."""
    values = sorted(set(values))
    rows: list = []
    for start in range(0, len(values), _CHUNK):
        rows.extend(session.exec(query.where(column.in_(values[start:start + _CHUNK]))).all())
    return rows


class CritiqueImports:
    """The import half of `CritiqueRepository`."""

    _db: Database

    def import_items(
        self,
        positions: Iterable[NewPosition],
        critiques: Iterable[NewCritique],
        ratings: Iterable[NewRating],
    ) -> ImportCounts:
        """All or nothing: anything that contradicts stored data aborts the whole import.

        Items already stored with the same content are skipped, so importing a
        file twice is harmless. The new rows are first written to staging tables
        in short transactions of `IMPORT_BATCH_ROWS` rows, then published by a few
        INSERT … SELECT statements in one short transaction, so raters and other
        writers never wait long for the write lock and never see half an import.
        """
        plan = self._plan_import(list(positions), list(critiques), list(ratings))
        import_id = uuid.uuid4().hex
        self._discard_abandoned_imports()
        holder = Holder.this_process()
        _IMPORTING.add(import_id)
        try:
            with self._db.session() as session:
                session.add(CritiqueImport(id=import_id, host=holder.host, pid=holder.pid))
            self._stage(import_id, plan)
            self._publish(import_id, plan)
        except StoreError as exc:
            if not self._discard_staged(import_id):
                raise StoreError(f"{exc}; the import's staged rows are removed by the next import") from exc
            raise
        except BaseException:
            self._discard_staged(import_id)
            raise
        finally:
            _IMPORTING.discard(import_id)
        self._discard_staged(import_id)
        return plan.counts

    def _plan_import(
        self, positions: list[NewPosition], critiques: list[NewCritique], ratings: list[NewRating]
    ) -> "_ImportPlan":
        """Check the items against the stored ones (reading only) and keep the new ones."""
        plan = _ImportPlan()
        revised = aliased(CritiqueRating)
        stored_ratings = (
            select(CritiqueRating, Critique.uid, Rater.name, revised.uid)
            .join(Critique, Critique.id == CritiqueRating.critique_id)
            .join(Rater, Rater.id == CritiqueRating.rater_id)
            .outerjoin(revised, revised.id == CritiqueRating.revises_id)
        )
        with self._db.read() as session:
            known_positions = {
                row.uid: row.text
                for row in _rows_by(session, select(CritiquePosition), CritiquePosition.uid, (p.uid for p in positions))
            }
            known_critiques = {
                row.uid: NewCritique(row.uid, position_uid, row.text, row.source, row.topic)
                for row, position_uid in _rows_by(
                    session,
                    select(Critique, CritiquePosition.uid).join(CritiquePosition, CritiquePosition.id == Critique.position_id),
                    Critique.uid, (c.uid for c in critiques),
                )
            }
            known_raters = set(_rows_by(session, select(Rater.name), Rater.name, (r.rater.strip() for r in ratings)))
            stored_rows = [
                *_rows_by(session, stored_ratings, CritiqueRating.uid,
                          [r.uid for r in ratings] + [r.revises_uid for r in ratings if r.revises_uid]),
                *_rows_by(session, stored_ratings, Critique.uid, (r.critique_uid for r in ratings)),
            ]
        for position in positions:
            if position.uid not in known_positions:
                known_positions[position.uid] = position.text
                plan.positions.append(position)
            elif known_positions[position.uid] != position.text:
                raise CritiqueError("position", position.uid, "position", "differs from the stored text")
        for critique in critiques:
            stored = known_critiques.get(critique.uid)
            if stored is None:
                if critique.position_uid not in known_positions:
                    raise CritiqueError("critique", critique.uid, "position_id", f"no position {critique.position_uid!r}")
                known_critiques[critique.uid] = critique
                plan.critiques.append(critique)
                continue
            for name, mine, theirs in (
                ("critique", stored.text, critique.text),
                ("position_id", stored.position_uid, critique.position_uid),
                ("source", stored.source, critique.source),
                ("topic", stored.topic, critique.topic),
            ):
                if mine != theirs:
                    raise CritiqueError("critique", critique.uid, name, "differs from the stored critique")
        chains = _Chains()
        for row, critique_uid, rater, revises_uid in stored_rows:
            values = {name: getattr(row, name) for name in DIMENSIONS}
            chains.add(row.uid, _content(critique_uid, rater, revises_uid, row.reason, row.note, row.valid, values), None)
        for rating in ratings:
            rater = rating.rater.strip()
            if not rater:
                raise CritiqueError("rater", rating.rater, "rater", "a rater needs a name")
            if rating.critique_uid not in known_critiques:
                raise CritiqueError("rating", rating.uid, None, f"no critique {rating.critique_uid!r}")
            _check_values(rating)
            plan.rater_names.add(rater)
            content = _content(
                rating.critique_uid, rater, rating.revises_uid, rating.reason, rating.note, rating.valid, rating.values
            )
            if rating.uid in chains.content:
                if chains.content[rating.uid] != content:
                    raise CritiqueError("rating", rating.uid, None, "differs from the stored rating")
                plan.counts.already_stored += 1
                continue
            depth = chains.check(rating, rater)
            chains.add(rating.uid, content, depth)
            plan.ratings.append((rating, rater, depth))
            if rater not in known_raters:
                known_raters.add(rater)
                plan.raters.append((rater, rating.rater_kind))
        plan.counts.positions, plan.counts.critiques = len(plan.positions), len(plan.critiques)
        plan.counts.ratings, plan.counts.raters = len(plan.ratings), sorted(plan.rater_names)
        return plan

    def _stage(self, import_id: str, plan: "_ImportPlan") -> None:
        now = utc_now()
        staged = [
            (StagedPosition, [dict(import_id=import_id, uid=p.uid, text=p.text, created_at=now) for p in plan.positions]),
            (StagedCritique, [
                dict(import_id=import_id, uid=c.uid, position_uid=c.position_uid, text=c.text, source=c.source,
                     topic=c.topic, created_at=now)
                for c in plan.critiques
            ]),
            (StagedRating, [
                dict(import_id=import_id, uid=r.uid, critique_uid=r.critique_uid, rater=rater, depth=depth,
                     revises_uid=r.revises_uid, reason=r.reason, note=r.note, source_seen=r.source_seen, valid=r.valid,
                     raw=r.raw, error=r.error, created_at=r.created_at or now,
                     **{name: r.values.get(name) for name in DIMENSIONS})
                for r, rater, depth in plan.ratings
            ]),
        ]
        for table, rows in staged:
            for start in range(0, len(rows), IMPORT_BATCH_ROWS):
                with self._db.connection() as conn:
                    conn.execute(insert(table.__table__), rows[start:start + IMPORT_BATCH_ROWS])

    def _publish(self, import_id: str, plan: "_ImportPlan") -> None:
        """Copy the staged rows into the real tables in one transaction."""
        position, critique, rater, rating = (
            CritiquePosition.__table__, Critique.__table__, Rater.__table__, CritiqueRating.__table__
        )
        sp, sc, sr = StagedPosition.__table__, StagedCritique.__table__, StagedRating.__table__
        revised = rating.alias("revised")
        steps = [
            (position, ["uid", "text", "created_at"],
             select(sp.c.uid, sp.c.text, sp.c.created_at).where(sp.c.import_id == import_id).order_by(sp.c.id),
             len(plan.positions)),
            (critique, ["uid", "position_id", "text", "source", "topic", "created_at"],
             select(sc.c.uid, position.c.id, sc.c.text, sc.c.source, sc.c.topic, sc.c.created_at)
             .join(position, position.c.uid == sc.c.position_uid)
             .where(sc.c.import_id == import_id).order_by(sc.c.id),
             len(plan.critiques)),
        ]
        columns = ["reason", "note", "source_seen", "valid", "raw", "error", "created_at", *DIMENSIONS]
        for depth in range(max((d for _, _, d in plan.ratings), default=-1) + 1):
            steps.append((
                rating, ["uid", "critique_id", "rater_id", "revises_id", *columns],
                select(sr.c.uid, critique.c.id, rater.c.id, revised.c.id, *(sr.c[name] for name in columns))
                .join(critique, critique.c.uid == sr.c.critique_uid)
                .join(rater, rater.c.name == sr.c.rater)
                .outerjoin(revised, revised.c.uid == sr.c.revises_uid)
                .where(sr.c.import_id == import_id, sr.c.depth == depth).order_by(sr.c.id),
                sum(1 for _, _, d in plan.ratings if d == depth),
            ))
        try:
            with self._db.connection() as conn:
                stored_raters = set(conn.execute(
                    select(rater.c.name).where(rater.c.name.in_([name for name, _ in plan.raters]))
                ).scalars())
                new_raters = [
                    dict(name=name, kind=kind, details_json="{}", created_at=utc_now())
                    for name, kind in plan.raters if name not in stored_raters
                ]
                insert_missing(conn, rater, new_raters, ["name"])  # a rater may appear meanwhile
                for table, names, rows, expected in steps:
                    written = len(conn.execute(insert(table).from_select(names, rows).returning(table.c.id)).all())
                    if written != expected:
                        raise StoreError(f"import {import_id}: {written} of {expected} {table.name} rows published")
        except IntegrityError as exc:
            raise CritiqueError(
                "import", import_id, None,
                f"another writer stored conflicting items while this import ran ({exc.orig}); nothing was imported",
            ) from None

    def _discard_import(self, import_id: str) -> None:
        """Delete one import's staged rows, in short transactions."""
        for table in (StagedPosition, StagedCritique, StagedRating):
            column = table.__table__.c
            while True:
                with self._db.connection() as conn:
                    batch = select(column.id).where(column.import_id == import_id).limit(IMPORT_BATCH_ROWS)
                    if not conn.execute(delete(table.__table__).where(column.id.in_(batch))).rowcount:
                        break
        with self._db.connection() as conn:
            conn.execute(delete(CritiqueImport.__table__).where(CritiqueImport.__table__.c.id == import_id))

    def _discard_staged(self, import_id: str) -> bool:
        """Delete the import's staged rows; whether that worked. A failure is logged, not raised,
        so it never hides what happened to the import itself."""
        try:
            self._discard_import(import_id)
        except StoreError as exc:
            log.warning("import %s: its staged rows stay until the next import: %s", import_id, exc)
            return False
        return True

    def _discard_abandoned_imports(self) -> None:
        """Staged rows of imports that no process runs: one of this process that ended, one whose
        process is gone from this host, or one (of another host) started long ago."""
        this = Holder.this_process()
        with self._db.read() as session:
            imports = session.exec(select(CritiqueImport)).all()
        for row in imports:
            holder = Holder(row.host, row.pid) if row.pid is not None else None
            if (
                (holder == this and row.id not in _IMPORTING)
                or (holder is not None and holder.gone)
                or as_utc(row.started_at) < utc_now() - ABANDONED_IMPORT_AGE
            ):
                self._discard_import(row.id)
