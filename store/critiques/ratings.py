"""Rating critiques: one first rating per rater and critique, then a linear chain of revisions,
each with a reason (unique indexes enforce both, also across processes), and reading them back.

Every write is its own transaction, so a confirmed rating is on disk when the call returns
(WAL, synchronous=NORMAL: it survives the process being killed).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Mapping

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased
from sqlmodel import Session, select

from store.critiques.staging import CritiqueImports
from store.critiques.tables import (
    DIMENSIONS,
    HUMAN,
    Critique,
    CritiqueError,
    CritiquePosition,
    CritiqueRating,
    CritiqueView,
    PositionView,
    Rater,
    RaterView,
    RatingVersion,
    RatingView,
    SourceReveal,
    as_utc,
    utc_now,
)
from store.db import Database, insert_missing


class CritiqueRepository(CritiqueImports):
    """Positions, critiques, raters and their ratings in one database; imports are `CritiqueImports`."""

    def __init__(self, db: Database):
        self._db = db

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
            rater_row.last_active_at = utc_now()
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
                row.last_active_at = utc_now()
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
                name=name, kind=kind, details_json=json.dumps(details or {}, sort_keys=True), created_at=utc_now(),
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
                raw=row.raw, error=row.error, created_at=as_utc(row.created_at),
            )
            for row, critique_uid, position_uid, rater, kind, revises_uid in rows
        ]
