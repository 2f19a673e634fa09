"""The persistent LLM response cache: one row per (request key, sample index).

Writes go through a write-behind buffer (`store/write_behind.py`): answers
arrive hundreds a second in batch judging, so a process killed with kill -9
loses at most the last `FLUSH_INTERVAL_S` of them, and a rerun asks the server
again for only those. A long answer's text is kept in `stored_text` (`store.texts`),
where the judgment made of it finds the same text and stores nothing more.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import datetime, timezone

from sqlalchemy import bindparam, func, select
from sqlalchemy.exc import DBAPIError
from sqlmodel import Field, SQLModel

from store.db import Database, upsert_rows
from store.texts import LONG_TEXT_CHARS, decoded, refers_to_text, shrink, store_texts
from store.write_behind import FLUSH_INTERVAL_S, WriteBehind

__all__ = ["FLUSH_INTERVAL_S", "LLMCacheEntry", "ResponseCache"]


class LLMCacheEntry(SQLModel, table=True):
    __tablename__ = "llm_cache"

    key: str = Field(primary_key=True, description="sha256 of model+messages+params+sample index")
    model: str = ""
    response_json: str
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))


class ResponseCache:
    """Key-value access to the cache; values are JSON-serialisable dicts.

    Uses Core statements built once rather than ORM objects: it sits on the hot
    path of batch judging. On SQLite a lookup reads through a connection each
    thread keeps (an autocommit SELECT, so each sees the latest commit): a pool
    checkout with its BEGIN and ROLLBACK cost thirty times the SELECT itself.
    """

    def __init__(self, db: Database):
        self._db = db
        self._engine = db.engine
        self._table = LLMCacheEntry.__table__
        self._select = select(self._table.c.response_json).where(self._table.c.key == bindparam("key"))
        self._pending: WriteBehind[str, dict] = WriteBehind(self._write, "cached answers")
        self._held = threading.local() if db.dialect == "sqlite" else None
        self._held_select = str(self._select.compile(dialect=self._engine.dialect))  # the same SELECT, as SQL

    def get(self, key: str) -> dict | None:
        row = self._pending.get(key)
        if row is not None:
            return row["response"]
        if self._held is not None:
            try:
                found = self._held_connection().execute(self._held_select, (key,)).fetchone()
            except (sqlite3.Error, DBAPIError):
                self._held.connection = None  # read again below: a lasting problem becomes a StoreError naming it
            else:
                if found is None:
                    return None
                if not refers_to_text(found[0]):
                    return json.loads(found[0])
        with self._engine.connect() as conn:
            stored = conn.execute(self._select, {"key": key}).first()
            return decoded(conn, [stored[0]])[0] if stored else None

    def _held_connection(self) -> sqlite3.Connection:
        connection = getattr(self._held, "connection", None)
        if connection is None:
            # The pool's own kind of connection (its URL, its PRAGMAs), taken out of the pool's count;
            # it closes when this cache, or the thread that keeps it, is gone.
            pooled = self._engine.raw_connection()
            connection = self._held.connection = pooled.driver_connection
            pooled.detach()
        return connection

    def put(self, key: str, model: str, response: dict) -> None:
        self._pending.put(key, dict(key=key, model=model, response=response, created_at=datetime.now(timezone.utc)))

    def _write(self, rows: list[dict]) -> None:
        texts: dict[str, str] = {}
        stored = []
        for row in rows:
            response = row["response"]
            encoded = json.dumps(response, separators=(",", ":"))
            if len(encoded) >= LONG_TEXT_CHARS:  # it may hold a long text: keep that once, in stored_text
                encoded = json.dumps(shrink(response, texts), separators=(",", ":"))
            stored.append(dict(key=row["key"], model=row["model"], response_json=encoded, created_at=row["created_at"]))
        with self._db.connection() as conn:
            store_texts(conn, texts)
            upsert_rows(conn, self._table, stored, ("key",), ("model", "response_json", "created_at"))

    def answers_spelling(self, text: str) -> list[dict]:
        """Every stored answer whose text is `text` (written before it, as `_write` encodes an answer:
        its text first); a text long enough to be kept in `stored_text` is not looked for."""
        self.flush()
        if len(text) >= LONG_TEXT_CHARS:
            return []
        start = json.dumps({"text": text}, separators=(",", ":"))[:-1] + ","
        column = self._table.c.response_json
        with self._engine.connect() as conn:
            rows = conn.execute(select(column).where(func.substr(column, 1, len(start)) == start)).scalars().all()
        return [json.loads(row) for row in rows]

    @property
    def unflushed(self) -> int:
        """Answers put but not yet written."""
        return len(self._pending)

    def flush(self) -> None:
        """Write every buffered answer in one transaction."""
        self._pending.flush()

    def close(self) -> None:
        self.flush()
        if self._held is not None:
            self._held = threading.local()  # this thread's connection goes with the old one

    def count(self) -> int:
        self.flush()
        with self._engine.connect() as conn:
            return conn.exec_driver_sql("SELECT count(*) FROM llm_cache").scalar_one()
