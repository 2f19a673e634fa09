"""Argument component predictions with every transcript turn, and the documents they label.

A prediction belongs to a run (an evaluation's stable name, or a live run
such as `live:mad:embedded`) and a document; saving the same component of
the same run again replaces it, transcript included.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import UniqueConstraint, delete
from sqlmodel import Field, SQLModel, select

from store.db import Database


def _now() -> datetime:
    return datetime.now(timezone.utc)


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class ComponentDocument(SQLModel, table=True):
    __tablename__ = "component_document"
    __table_args__ = (UniqueConstraint("source", "name", "digest"),)

    id: int | None = Field(default=None, primary_key=True)
    source: str = Field(description="e.g. ukp-essays, typed")
    name: str = Field(description="e.g. essay004, or the first words of a typed text")
    digest: str = Field(index=True, description="sha256 of the text")
    text: str
    created_at: datetime = Field(default_factory=_now)


class ComponentPrediction(SQLModel, table=True):
    __tablename__ = "component_prediction"
    __table_args__ = (UniqueConstraint("run", "document_id", "component"),)

    id: int | None = Field(default=None, primary_key=True)
    run: str = Field(index=True)
    document_id: int = Field(foreign_key="component_document.id", index=True)
    component: str = Field(description="the component's id in its document, e.g. T3 or S2")
    start: int
    end: int
    gold: str | None = None
    method: str
    judge: str = Field(description="backend profile name")
    model: str = ""
    label: str | None = Field(default=None, description="None when the output was not a label")
    raw: str = ""
    distribution_json: str = "{}"
    distribution_source: str = ""
    judge_distribution_json: str = "{}"
    proponent_label: str | None = None
    opponent_label: str | None = None
    skipped: bool = False
    reason: str = ""
    calls: int = 0
    cached_calls: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    created_at: datetime = Field(default_factory=_now)

    @property
    def distribution(self) -> dict[str, float]:
        return json.loads(self.distribution_json)

    @property
    def judge_distribution(self) -> dict[str, float]:
        return json.loads(self.judge_distribution_json)


class ComponentTurn(SQLModel, table=True):
    __tablename__ = "component_turn"

    id: int | None = Field(default=None, primary_key=True)
    prediction_id: int = Field(foreign_key="component_prediction.id", index=True, ondelete="CASCADE")
    position: int
    role: str
    label: str | None = None
    text: str


@dataclass(frozen=True)
class StoredDocument:
    """A document with one run's predictions on it (what the Components view lists)."""

    document: ComponentDocument
    run: str
    method: str
    judge: str
    components: int


class ComponentRepository:
    def __init__(self, db: Database):
        self._db = db

    def document(self, source: str, name: str, text: str) -> ComponentDocument:
        """The stored document with this source, name and text; created if new."""
        digest = text_digest(text)
        with self._db.session() as session:
            found = session.exec(
                select(ComponentDocument).where(
                    ComponentDocument.source == source,
                    ComponentDocument.name == name,
                    ComponentDocument.digest == digest,
                )
            ).first()
            if found is None:
                found = ComponentDocument(source=source, name=name, digest=digest, text=text)
                session.add(found)
                session.flush()
                session.refresh(found)
            return found

    def save(self, prediction: ComponentPrediction, turns: list[ComponentTurn]) -> ComponentPrediction:
        """Store a prediction and its transcript in one transaction, replacing an earlier one."""
        with self._db.session() as session:
            earlier = session.exec(
                select(ComponentPrediction).where(
                    ComponentPrediction.run == prediction.run,
                    ComponentPrediction.document_id == prediction.document_id,
                    ComponentPrediction.component == prediction.component,
                )
            ).first()
            if earlier is not None:
                session.exec(delete(ComponentTurn).where(ComponentTurn.prediction_id == earlier.id))
                session.delete(earlier)
                session.flush()
            session.add(prediction)
            session.flush()
            for position, turn in enumerate(turns):
                turn.prediction_id, turn.position = prediction.id, position
                session.add(turn)
            session.flush()
            session.refresh(prediction)
            return prediction

    def done(self, run: str) -> set[tuple[int, str]]:
        """(document id, component) of every prediction stored for the run."""
        with self._db.session() as session:
            rows = session.exec(
                select(ComponentPrediction.document_id, ComponentPrediction.component).where(
                    ComponentPrediction.run == run
                )
            )
            return {(document_id, component) for document_id, component in rows}

    def predictions(self, run: str, document_id: int | None = None) -> list[ComponentPrediction]:
        """A run's predictions in document and text order."""
        with self._db.session() as session:
            query = select(ComponentPrediction).where(ComponentPrediction.run == run)
            if document_id is not None:
                query = query.where(ComponentPrediction.document_id == document_id)
            query = query.order_by(ComponentPrediction.document_id, ComponentPrediction.start)
            return list(session.exec(query))

    def turns(self, prediction_id: int) -> list[ComponentTurn]:
        with self._db.session() as session:
            return list(
                session.exec(
                    select(ComponentTurn)
                    .where(ComponentTurn.prediction_id == prediction_id)
                    .order_by(ComponentTurn.position)
                )
            )

    def stored_documents(self) -> list[StoredDocument]:
        """Every (document, run) pair with predictions, newest first."""
        with self._db.session() as session:
            rows = session.exec(
                select(ComponentPrediction, ComponentDocument)
                .join(ComponentDocument, ComponentDocument.id == ComponentPrediction.document_id)
                .order_by(ComponentPrediction.created_at.desc())
            )
            grouped: dict[tuple[int, str], StoredDocument] = {}
            for prediction, document in rows:
                key = (document.id, prediction.run)
                if key in grouped:
                    entry = grouped[key]
                    grouped[key] = StoredDocument(document, entry.run, entry.method, entry.judge, entry.components + 1)
                else:
                    grouped[key] = StoredDocument(document, prediction.run, prediction.method, prediction.judge, 1)
            return list(grouped.values())
