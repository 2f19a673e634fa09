"""Opening the database (an SQLite file, or PostgreSQL by URL) and its sessions.

SQLite: WAL journal, foreign keys on, a busy timeout. Every write transaction
starts with BEGIN IMMEDIATE, so a writer waits for the write lock before it
reads anything and can never be refused half-way (a deferred transaction that
reads, then writes after another process committed, fails at once whatever
the busy timeout). Waiting for the lock is retried (tenacity) for at most
`LOCK_WAIT_S` seconds in all; then the write fails with a StoreError that says
so, and nothing of it is stored. Readers never wait: WAL lets them read while
one process writes. A file this process may not write (a read-only mount) is
opened read-only: what only reads works, and a write fails with a StoreError
that says the database cannot be written.

PostgreSQL (`postgresql://…`): the same tables through psycopg 3; its row
locks make concurrent writers wait, never fail. Every wait is bounded: a
server that does not answer by `CONNECT_TIMEOUT_S` (connect_timeout), a lock
held longer than `LOCK_WAIT_S` (lock_timeout) and a statement running longer
than `STATEMENT_TIMEOUT_S` (statement_timeout) end the transaction.

Whatever the database cannot do (the disk is full, the server is gone, a lock
or a statement outlasted its bound) reaches the caller as one StoreError that
names the database, what happened and the bound that applied; the transaction
is rolled back, so nothing of it is stored.
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence
from urllib.parse import quote

from sqlalchemy import Table, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Engine, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, InterfaceError, OperationalError
from sqlmodel import Session, SQLModel, create_engine
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random_exponential

from store.migrations import SCHEMA_VERSION, migrate, read_schema_version, write_schema_version

# SQLite's own wait for the write lock, per attempt; the attempts together wait at most LOCK_WAIT_S.
BUSY_TIMEOUT_MS = 5_000
LOCK_WAIT_S = 15.0  # also PostgreSQL's lock_timeout
CONNECT_TIMEOUT_S = 10  # PostgreSQL: a server that accepts and never answers fails the connection after this
STATEMENT_TIMEOUT_S = 120  # PostgreSQL: the longest statement (publishing a large import) takes seconds
_WRITE = "argtui_write"  # the execution option that marks a write transaction
_INIT_LOCK_KEY = 7_401_337  # PostgreSQL advisory lock: one process creates or upgrades the schema


class StoreError(Exception):
    """The database cannot be opened, is from a newer argtui, or could not do what was asked (it
    stayed locked too long, its disk is full, its server is gone); the message says which."""


def _problem(exc: DBAPIError, *, write: bool = False) -> str:
    """What is wrong with the database, in the words a user can act on, naming the bound that applied."""
    text = str(exc.orig) if exc.orig is not None else str(exc)
    detail = "; ".join(" ".join(line.split()) for line in text.splitlines() if line.strip())
    lowered = detail.lower()
    not_saved = "; nothing was saved, try again" if write else ""
    if "not a database" in detail or "malformed" in detail:
        return f"not an argtui database, or damaged ({detail}); move it away to start a new one"
    if "readonly" in detail or "unable to open" in detail:
        return f"cannot be written ({detail}); check its permissions and its folder's"
    if "disk is full" in lowered or "no space left" in lowered:
        return f"the disk is full ({detail}); nothing was saved: free some space, then try again"
    if "locked" in lowered:
        return (f"the database is locked by another program (SQLite's busy wait, {BUSY_TIMEOUT_MS / 1000:g} s)"
                f"{not_saved}")
    if "lock timeout" in lowered:
        return f"the database is locked by another program (PostgreSQL's lock_timeout, {LOCK_WAIT_S:g} s){not_saved}"
    if "statement timeout" in lowered:
        return (f"a statement outlasted PostgreSQL's statement_timeout ({STATEMENT_TIMEOUT_S} s) and was cancelled"
                f"{not_saved}")
    if "timeout expired" in lowered:
        return (f"the server did not answer within connect_timeout ({CONNECT_TIMEOUT_S} s); "
                f"check that PostgreSQL runs at this address{not_saved}")
    if exc.connection_invalidated or any(word in lowered for word in _UNREACHABLE):
        return f"the database server cannot be reached or closed the connection ({detail}){not_saved}"
    return detail + not_saved


# What psycopg says when there is no server, or when it went away mid-transaction.
_UNREACHABLE = ("connection failed", "could not connect", "connection refused", "server closed",
                "terminating connection", "connection is closed", "connection is lost", "consuming input failed",
                "could not receive data")


def _register_tables() -> None:
    """Import every module of the package so all SQLModel tables are in the metadata."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):  # `import store` here: a circle
        importlib.import_module(f"store.{module.name}")


def _configure_sqlite(dbapi_connection: sqlite3.Connection, _record) -> None:
    # The driver opens no transactions of its own: `_begin_sqlite` says which kind each one is.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # NORMAL is durable across application crashes in WAL mode (kill -9 included);
    # only an OS crash or power loss may drop the last transactions.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.close()


def _locked(exc: BaseException) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock."""
    return isinstance(exc, OperationalError) and "locked" in str(exc.orig)


def _begin_sqlite(conn: Connection) -> None:
    if not conn.get_execution_options().get(_WRITE):
        conn.exec_driver_sql("BEGIN")
        return
    retrying = Retrying(
        retry=retry_if_exception(_locked),
        stop=stop_after_delay(LOCK_WAIT_S),
        wait=wait_random_exponential(multiplier=0.05, max=1.0),
        reraise=True,
    )
    try:
        retrying(conn.exec_driver_sql, "BEGIN IMMEDIATE")
    except OperationalError as exc:
        if not _locked(exc):
            raise
        raise StoreError(
            f"{conn.engine.url.database}: the database is locked by another program (SQLite's busy wait ended): "
            f"it kept the database locked for over {LOCK_WAIT_S:g} s; nothing was saved, try again"
        ) from None


def upsert_rows(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], keys: Sequence[str], replaced: Sequence[str]
) -> None:
    """Insert rows, replacing the columns `replaced` of rows that share `keys` (either dialect)."""
    if not rows:
        return
    conn.execute(_upsert_statement(conn.dialect.name, table, tuple(keys), tuple(replaced)), list(rows))


def insert_missing(conn: Connection, table: Table, rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> None:
    """Insert the rows whose `keys` are not stored yet, another writer's concurrent ones included:
    where two processes insert the same key at once, one inserts and the other skips, neither fails."""
    if not rows:
        return
    dialect = sqlite if conn.dialect.name == "sqlite" else postgresql
    conn.execute(dialect.insert(table).on_conflict_do_nothing(index_elements=list(keys)), list(rows))


@functools.cache
def _upsert_statement(dialect_name: str, table: Table, keys: tuple[str, ...], replaced: tuple[str, ...]) -> Any:
    # Built once: building `excluded` costs more than executing the statement for a few rows.
    dialect = sqlite if dialect_name == "sqlite" else postgresql
    statement = dialect.insert(table)
    return statement.on_conflict_do_update(
        index_elements=list(keys), set_={name: statement.excluded[name] for name in replaced}
    )


def read_only_url(path: Path) -> URL | None:
    """An SQLite URL opening `path` read-only when this process may not write it or its folder (a
    read-only mount, no write permission), so that reading commands still work; else None.

    In WAL mode a reader needs the -shm file beside the database: where the folder cannot take one,
    the file is read as immutable (no process can write it there either).
    """
    if not path.is_file() or (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return None
    shm = path.with_name(path.name + "-shm")
    immutable = not os.access(path.parent, os.W_OK) and not shm.exists()
    query = {"mode": "ro", **({"immutable": "1"} if immutable else {}), "uri": "true"}
    return URL.create("sqlite", database=f"file:{quote(str(path.resolve()))}", query=query)


def database_url(location: Path | str) -> str:
    """A URL as given (`postgresql://…` runs on psycopg 3), or an SQLite file path."""
    text = str(location)
    if "://" not in text:
        return f"sqlite:///{Path(text)}"
    url = make_url(text)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url.render_as_string(hide_password=False)


class Database:
    """One database, safe to share across threads; several processes may use it at once.

    `location` is an SQLite file path or a database URL (`postgresql://user@host/name`);
    `local_dir` a folder of this host that keeps what the database cannot take while it is down
    (why a run stopped: `store.runs`), by default an SQLite file's own folder.
    """

    def __init__(self, location: Path | str, *, local_dir: Path | None = None):
        try:
            url = database_url(location)
        except (ArgumentError, ValueError):  # the message would quote the URL, password included
            raise StoreError("the database URL is not one argtui can read; check ARGTUI_DATABASE_URL "
                             "(postgresql://USER:PASSWORD@HOST:PORT/NAME)") from None
        self.path: Path | None = None
        if url.startswith("sqlite"):
            self.path = Path(str(location))
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"{self.path.parent}: cannot hold the database ({exc.strerror or exc}); "
                    "check ARGTUI_HOME or the data directory"
                ) from None
            if self.path.is_dir():
                raise StoreError(f"{self.path}: is a folder, not a database file; move it away "
                                 "(argtui then starts a new database there) or set ARGTUI_HOME elsewhere")
            self.engine: Engine = create_engine(
                read_only_url(self.path) or url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
            )
            event.listen(self.engine, "connect", _configure_sqlite)
            event.listen(self.engine, "begin", _begin_sqlite)
        else:
            # Times are stored without a zone, in UTC, as on SQLite.
            options = (f"-c timezone=UTC -c lock_timeout={int(LOCK_WAIT_S * 1000)} "
                       f"-c statement_timeout={STATEMENT_TIMEOUT_S * 1000}")
            self.engine = create_engine(
                url, pool_pre_ping=True, connect_args={"options": options, "connect_timeout": CONNECT_TIMEOUT_S},
            )
        self.local_dir = local_dir or (self.path.parent if self.path else None)
        self.location = str(self.path) if self.path else (
            self.engine.url.set(drivername=self.engine.url.get_backend_name()).render_as_string(hide_password=True)
        )
        event.listen(self.engine, "handle_error", self._store_error)
        self._writer = self.engine.execution_options(**{_WRITE: True})
        # A read session sees one snapshot, so rows another process commits between its
        # statements (an import publishing positions, then their critiques) never half-appear.
        # SQLite's deferred BEGIN (`_begin_sqlite`) gives that already.
        self._reader = self.engine if self.path else self.engine.execution_options(isolation_level="REPEATABLE READ")
        _register_tables()
        try:
            self._initialise()
        except DBAPIError as exc:
            self.engine.dispose()
            raise StoreError(f"{self.location}: {_problem(exc)}") from None
        except BaseException:
            self.engine.dispose()
            raise

    def _store_error(self, context: ExceptionContext) -> None:
        """What the database could not do becomes a StoreError; rule violations and bugs stay as they are."""
        exc = context.sqlalchemy_exception
        if context.is_pre_ping or not isinstance(exc, (OperationalError, InterfaceError)):
            return
        if context.statement == "BEGIN IMMEDIATE" and _locked(exc):
            return  # `_begin_sqlite` waits for the lock
        write = context.connection is not None and bool(context.connection.get_execution_options().get(_WRITE))
        raise StoreError(f"{self.location}: {_problem(exc, write=write)}") from exc

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`."""
        return self.engine.dialect.name

    def _initialise(self) -> None:
        if self.dialect == "postgresql":
            # Schema DDL is transactional here: create and upgrade in one locked transaction.
            with self.engine.begin() as conn:
                conn.exec_driver_sql("SET LOCAL statement_timeout = 0")  # an upgrade of a large database may take long
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_INIT_LOCK_KEY})")
                version = self._checked_version(conn)
                SQLModel.metadata.create_all(conn)
                self._upgrade(conn, version)
            return
        with self.engine.begin() as conn:
            version = self._checked_version(conn)
        # create_all only adds missing tables, so new tables need no migration step; it runs
        # first so that steps can copy old rows into tables a newer schema added.
        SQLModel.metadata.create_all(self.engine)
        if version != SCHEMA_VERSION:  # an up-to-date file is not written to: it may be read-only
            with self._writer.begin() as conn:
                self._upgrade(conn, version)

    def _checked_version(self, conn: Connection) -> int:
        version = read_schema_version(conn)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.location}: schema version {version} is newer than this argtui "
                f"understands ({SCHEMA_VERSION}); upgrade argtui"
            )
        return version

    @staticmethod
    def _upgrade(conn: Connection, version: int) -> None:
        if version == SCHEMA_VERSION:
            return
        if 0 < version < SCHEMA_VERSION:
            migrate(conn, version)
        write_schema_version(conn, SCHEMA_VERSION)

    @property
    def schema_version(self) -> int:
        with self.engine.connect() as conn:
            return read_schema_version(conn)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A write session: commits on success, rolls back on error (see the module's locking)."""
        with Session(self._writer, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session that only reads, from one snapshot: it never waits for a writer."""
        with Session(self._reader, expire_on_commit=False) as session:
            yield session

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A Core connection in one write transaction (commits on success)."""
        with self._writer.begin() as conn:
            yield conn

    def close(self) -> None:
        self.engine.dispose()
