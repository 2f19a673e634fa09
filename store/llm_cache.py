"""The persistent LLM response cache: one row per (request key, sample index)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from sqlalchemy import select
from sqlmodel import Field, SQLModel

from store.db import Database, upsert_rows


class LLMCacheEntry(SQLModel, table=True):
    __tablename__ = "llm_cache"

    key: str = Field(primary_key=True, description="sha256 of (model, messages, params, sample index)")
    model: str = Field(index=True)
    response_json: str
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))


class ResponseCache:
    """Key-value access to the cache; values are JSON-serialisable dicts.

    Uses Core statements rather than ORM objects: it sits on the hot path of
    batch judging.
    """

    def __init__(self, db: Database):
        self._db = db
        self._engine = db.engine
        self._table = LLMCacheEntry.__table__

    def get(self, key: str) -> dict | None:
        with self._engine.connect() as conn:
            row = conn.execute(
                select(self._table.c.response_json).where(self._table.c.key == key)
            ).first()
        return json.loads(row[0]) if row else None

    def put(self, key: str, model: str, response: dict) -> None:
        row = dict(
            key=key, model=model, response_json=json.dumps(response, separators=(",", ":")),
            created_at=datetime.now(timezone.utc),
        )
        with self._db.connection() as conn:
            upsert_rows(conn, self._table, [row], ("key",), ("model", "response_json", "created_at"))

    def count(self) -> int:
        with self._engine.connect() as conn:
            return conn.exec_driver_sql("SELECT count(*) FROM llm_cache").scalar_one()
