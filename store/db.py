"""Opening the SQLite database: WAL, foreign keys, busy timeout, schema version."""

from __future__ import annotations

import importlib
import pkgutil
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sqlalchemy import event
from sqlalchemy.exc import DatabaseError
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, create_engine

import store
from store.migrations import SCHEMA_VERSION, migrate

BUSY_TIMEOUT_MS = 10_000


class StoreError(Exception):
    """The database cannot be opened or is from a newer argtui."""


def _problem(exc: DatabaseError) -> str:
    """What is wrong with a database file, in the words a user can act on."""
    detail = str(exc.orig) if exc.orig is not None else str(exc)
    if "not a database" in detail or "malformed" in detail:
        return f"not an argtui database, or damaged ({detail}); move it away to start a new one"
    if "readonly" in detail or "unable to open" in detail:
        return f"cannot be written ({detail}); check its permissions and its folder's"
    return detail


def _register_tables() -> None:
    """Import every module of the package so all SQLModel tables are in the metadata."""
    for module in pkgutil.iter_modules(store.__path__):
        importlib.import_module(f"store.{module.name}")


def _configure_connection(dbapi_connection: sqlite3.Connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # NORMAL is durable across application crashes in WAL mode (kill -9 included);
    # only an OS crash or power loss may drop the last transactions.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.close()


class Database:
    """One SQLite file. Safe to share across threads; two processes may open it at once."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"{self.path.parent}: cannot hold the database ({exc.strerror or exc}); "
                "check ARGTUI_HOME or the data directory"
            ) from None
        self.engine: Engine = create_engine(
            f"sqlite:///{self.path}",
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        )
        event.listen(self.engine, "connect", _configure_connection)
        _register_tables()
        try:
            self._initialise()
        except DatabaseError as exc:
            self.engine.dispose()
            raise StoreError(f"{self.path}: {_problem(exc)}") from None

    def _initialise(self) -> None:
        with self.engine.begin() as conn:
            version = conn.exec_driver_sql("PRAGMA user_version").scalar_one()
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: schema version {version} is newer than this argtui "
                    f"understands ({SCHEMA_VERSION}); upgrade argtui"
                )
        # create_all only adds missing tables, so new tables need no migration step; it runs
        # first so that steps can copy old rows into tables a newer schema added.
        SQLModel.metadata.create_all(self.engine)
        if version != SCHEMA_VERSION:  # an up-to-date file is not written to: it may be read-only
            with self.engine.begin() as conn:
                if 0 < version < SCHEMA_VERSION:
                    migrate(conn, version)
                conn.exec_driver_sql(f"PRAGMA user_version={SCHEMA_VERSION}")

    @property
    def schema_version(self) -> int:
        with self.engine.connect() as conn:
            return conn.exec_driver_sql("PRAGMA user_version").scalar_one()

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on error."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def close(self) -> None:
        self.engine.dispose()
