"""Critique rating: positions, critiques, raters, append-only ratings, source reveals.

A rating is never changed or deleted (SQLite triggers refuse it). A revision
is a new rating that points at the rating it revises and carries a reason;
each (critique, rater) has at most one first rating and a linear chain of
revisions (unique indexes enforce both, also across processes). Every write
below is its own transaction, so a confirmed rating is on disk when the call
returns (WAL, synchronous=NORMAL: it survives the process being killed). An
import is staged in short transactions and published in one (`import_items`);
its staged rows are deleted whatever the outcome, or, when even that fails (a full
disk takes no deletion either, a dead server none at all), by the next import.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Literal, Mapping

from sqlalchemy import DDL, CheckConstraint, Index, Select, delete, event, func, insert, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased
from sqlmodel import Field, Session, SQLModel, select

from store.db import Database, StoreError, insert_missing
from store.holders import Holder
from store.judgments import judge_name, upsert
from store.migrations import has_tables, judge_options_before_v4, judgments_from_v1, v1_time, v1_usage

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
IMPORT_BATCH_ROWS = 500  # staged rows per transaction: each holds the write lock for milliseconds
ABANDONED_IMPORT_AGE = timedelta(days=1)  # staged rows this old, of another host's import, belong to a dead process
log = logging.getLogger("argtui.store")
_IMPORTING: set[str] = set()  # ids of the imports this process is running now


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
    created_at: datetime = Field(default_factory=_now)


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
    created_at: datetime = Field(default_factory=_now)


class CritiqueImport(SQLModel, table=True):
    """An import in progress: its rows wait in the staging tables below until it is published."""

    __tablename__ = "critique_import"

    id: str = Field(primary_key=True)
    started_at: datetime = Field(default_factory=_now)
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
        now = _now()
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
                    dict(name=name, kind=kind, details_json="{}", created_at=_now())
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
                or _as_utc(row.started_at) < _now() - ABANDONED_IMPORT_AGE
            ):
                self._discard_import(row.id)

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
        with self._db.read() as session:
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
        with self._db.read() as session:
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
        with self._db.read() as session:
            total = session.exec(select(func.count(Critique.id))).one()
        return len(self.rated_critique_ids(rater)), total

    def raters(self) -> list[RaterView]:
        with self._db.read() as session:
            rows = session.exec(
                select(Rater, func.count(func.distinct(CritiqueRating.critique_id)))
                .join(CritiqueRating, CritiqueRating.rater_id == Rater.id, isouter=True)
                .group_by(Rater.id)
                .order_by(Rater.kind, Rater.name)
            ).all()
        return [RaterView(r.name, r.kind, json.loads(r.details_json), n) for r, n in rows]

    def last_active_rater(self) -> str | None:
        """The human rater who rated most recently in this database (the app's default)."""
        with self._db.read() as session:
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
            # Insert-or-get: another process may create the same rater at this moment.
            insert_missing(session.connection(), Rater.__table__, [dict(
                name=name, kind=kind, details_json=json.dumps(details or {}, sort_keys=True), created_at=_now(),
            )], ["name"])
            row = session.exec(select(Rater).where(Rater.name == name)).one()
        return row

    def _critique_ids(self, table: type[CritiqueRating] | type[SourceReveal], rater: str) -> set[int]:
        """Critiques with at least one row by this rater in `table`."""
        with self._db.read() as session:
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
            elif "check" in message.lower():
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
        with self._db.read() as session:
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


@judge_options_before_v4("critiques")
def _critique_judges_before_v4(variant: str) -> dict:
    """Both prompts answered within 320 tokens."""
    return {"max_tokens": 320}
