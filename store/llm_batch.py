"""Requests written to batch files: which response-cache keys each request's answers fill.

A request asks for n samples and its answers fill n cache keys (one per sample
index); the batch format's `custom_id` holds at most 64 characters, too few for
n keys, so the keys stay here under the request's id until its results are
imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable, Sequence

from sqlalchemy import select
from sqlmodel import Field, SQLModel

from store.db import Database, upsert_rows


class LLMBatchRequest(SQLModel, table=True):
    __tablename__ = "llm_batch_request"

    custom_id: str = Field(primary_key=True, description="the request's id in the batch file")
    model: str
    sample_keys_json: str = Field(description="JSON list: the cache key of each answer, in choice order")
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))


@dataclass(frozen=True)
class ExportedRequest:
    custom_id: str
    model: str
    sample_keys: tuple[str, ...]


class BatchRequests:
    """The exported requests of this database, by custom_id."""

    def __init__(self, db: Database):
        self._db = db
        self._table = LLMBatchRequest.__table__

    def save(self, requests: Iterable[ExportedRequest]) -> None:
        now = datetime.now(timezone.utc)
        rows = [
            dict(custom_id=r.custom_id, model=r.model, sample_keys_json=json.dumps(list(r.sample_keys)), created_at=now)
            for r in requests
        ]
        with self._db.connection() as conn:
            upsert_rows(conn, self._table, rows, ("custom_id",), ("model", "sample_keys_json", "created_at"))

    def get(self, custom_ids: Sequence[str]) -> dict[str, ExportedRequest]:
        found: dict[str, ExportedRequest] = {}
        ids = list(dict.fromkeys(custom_ids))
        with self._db.engine.connect() as conn:
            for start in range(0, len(ids), 500):  # below every dialect's bound-parameter limit
                rows = conn.execute(
                    select(self._table.c.custom_id, self._table.c.model, self._table.c.sample_keys_json)
                    .where(self._table.c.custom_id.in_(ids[start : start + 500]))
                )
                for custom_id, model, keys in rows:
                    found[custom_id] = ExportedRequest(custom_id, model, tuple(json.loads(keys)))
        return found
