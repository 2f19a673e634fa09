"""Schema versions and the steps between them.

The version lives in SQLite's `PRAGMA user_version`, on PostgreSQL in the
one-row table `argtui_schema`. How to change the schema:

* a new table: define it in a `store` module; `create_all` adds it on the next
  open, no step needed;
* a changed table (new column, new index, changed meaning): bump
  `SCHEMA_VERSION` and add `MIGRATIONS[old]`, a function that takes the
  connection inside the open transaction and brings version `old` to `old + 1`
  (for example `ALTER TABLE ... ADD COLUMN ...`). Steps run in order on open,
  all in one transaction, so a failed upgrade leaves the file as it was.

A change of what judges (a prompt, the sampling, an option's default) or of what is judged (an
item's text) needs no step: the judge's identity and the item's content digest follow it, so
the change gives new judgments and the old ones stay (the renames of schema 4 predate that).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from store.identity import judge_name, options_digest

SCHEMA_VERSION = 8
_VERSION_TABLE = "argtui_schema"


def read_schema_version(conn: Connection) -> int:
    """The schema version the database holds; 0 for a new database."""
    if conn.dialect.name == "sqlite":
        return conn.exec_driver_sql("PRAGMA user_version").scalar_one()
    if not inspect(conn).has_table(_VERSION_TABLE):
        return 0
    return conn.exec_driver_sql(f"SELECT version FROM {_VERSION_TABLE}").scalar_one_or_none() or 0


def write_schema_version(conn: Connection, version: int) -> None:
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"PRAGMA user_version={int(version)}")
        return
    conn.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {_VERSION_TABLE} (version INTEGER NOT NULL)")
    conn.exec_driver_sql(f"DELETE FROM {_VERSION_TABLE}")
    conn.exec_driver_sql(f"INSERT INTO {_VERSION_TABLE} (version) VALUES ({int(version)})")

# Steps that carry one task's schema-1 judgment table into `judgment`; a store module adds its
# own with `@judgments_from_v1` (every store module is imported before the database opens).
JUDGMENTS_FROM_V1: list[Callable[[Connection], object]] = []


def judgments_from_v1(step: Callable[[Connection], object]) -> Callable[[Connection], object]:
    JUDGMENTS_FROM_V1.append(step)
    return step


# What the copy steps share: which old tables a file has, and the parts of a verdict that
# schema 1 kept in another form.


def has_tables(conn: Connection, *names: str) -> bool:
    return set(names) <= set(inspect(conn).get_table_names())


def v1_time(value: str | datetime) -> datetime:
    """An old row's time: SQLite kept it without its zone, which was UTC."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def v1_usage(prompt_tokens: int = 0, completion_tokens: int = 0, calls: int = 0, cached_calls: int = 0) -> dict:
    """A verdict's usage as JSON; schema 1 kept no latency."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "reused_prompt_tokens": 0,
            "latency_s": 0.0, "ttft_s": None, "calls": calls, "cached_calls": cached_calls, "cached_prompt_tokens": 0}


def _v1_to_v2(conn: Connection) -> None:
    """Batch runs name their task and judge; judgments move to the `judgment` table (new: create_all)."""
    for column in ("task", "judge"):
        _add_column(conn, "batch_run", column, "VARCHAR NOT NULL DEFAULT ''")
    # Runs from before tasks had names: the task is the kind without its "eval-" prefix.
    conn.exec_driver_sql("UPDATE batch_run SET task = substr(kind, 6) WHERE task = '' AND kind LIKE 'eval-%'")
    # Every task's old judgments into the one judgment table (the old tables stay as they were).
    for copy in sorted(JUDGMENTS_FROM_V1, key=lambda step: step.__module__):
        copy(conn)


def _v2_to_v3(conn: Connection) -> None:
    """Debates have an opponent level (the five steps, level 2, before levels existed) and
    turns a state, so an interrupted turn can say so."""
    _add_column(conn, "debate", "level", "INTEGER NOT NULL DEFAULT 2")
    _add_column(conn, "debate_turn", "state", "VARCHAR NOT NULL DEFAULT 'done'")
    conn.exec_driver_sql("UPDATE debate_turn SET state = 'failed' WHERE error IS NOT NULL")


# Judge options whose default changed with schema 4, per task: a judge named before it with
# no options ran with these values, which now differ from the defaults. A store module adds
# its task's with `@judge_options_before_v4(task)`: variant -> options ({} if none applied).
JUDGE_OPTIONS_BEFORE_V4: dict[str, Callable[[str], dict]] = {}


def judge_options_before_v4(task: str) -> Callable[[Callable[[str], dict]], Callable[[str], dict]]:
    def register(options_of: Callable[[str], dict]) -> Callable[[str], dict]:
        JUDGE_OPTIONS_BEFORE_V4[task] = options_of
        return options_of

    return register


def _v3_to_v4(conn: Connection) -> None:
    """Judges whose task's defaults changed get the options they ran with in their names, so a
    run with the new defaults is a new judge and resumes none of their answers."""
    if not has_tables(conn, "judgment"):
        return
    judges = conn.exec_driver_sql("SELECT DISTINCT task, judge, profile, model, variant FROM judgment").fetchall()
    for task, judge, profile, model, variant in judges:
        options_of = JUDGE_OPTIONS_BEFORE_V4.get(task)
        options = options_of(variant) if options_of else {}
        if not options or judge != judge_name(profile, model, variant):  # a digest: options were given then
            continue
        renamed = {"task": task, "old": judge, "new": judge_name(profile, model, variant, options_digest(options))}
        for table in ("judgment", "batch_run"):
            conn.execute(text(f"UPDATE {table} SET judge = :new WHERE task = :task AND judge = :old"), renamed)


def _v4_to_v5(conn: Connection) -> None:
    """Runs and imports name the process that holds them (and runs its heartbeat), so a killed
    one shows as such; long texts in judgments and cached answers may be references into
    `stored_text` (new: create_all), which an older argtui would not follow."""
    for column, declaration in (("host", "VARCHAR NOT NULL DEFAULT ''"), ("pid", "INTEGER"),
                                ("heartbeat_at", "TIMESTAMP")):
        _add_column(conn, "batch_run", column, declaration)
    _add_column(conn, "critique_import", "host", "VARCHAR NOT NULL DEFAULT ''")
    _add_column(conn, "critique_import", "pid", "INTEGER")


_JUDGMENT_KEY = ("task", "judge", "item", "content")


def _v5_to_v6(conn: Connection) -> None:
    """Judgments carry their judge's identity in columns (the digests of its options, prompts and
    sampling) and the digest of what it saw (`content`), which joins the unique key: an item whose
    text changed is judged anew, its old judgment kept. The options digest of an older judge is
    the one its name carried."""
    if not has_tables(conn, "judgment"):
        return
    uniques = inspect(conn).get_unique_constraints("judgment")
    if not any(tuple(unique["column_names"]) == _JUDGMENT_KEY for unique in uniques):
        if conn.dialect.name == "sqlite":
            _rebuild_sqlite_table(conn, "judgment")
        else:
            for column in ("options", "prompts", "sampling", "content"):
                _add_column(conn, "judgment", column, "VARCHAR NOT NULL DEFAULT ''")
            for unique in (unique for unique in uniques if tuple(unique["column_names"]) == _JUDGMENT_KEY[:3]):
                conn.exec_driver_sql(f'ALTER TABLE judgment DROP CONSTRAINT "{unique["name"]}"')
            conn.exec_driver_sql(f"ALTER TABLE judgment ADD UNIQUE ({', '.join(_JUDGMENT_KEY)})")
    judges = conn.exec_driver_sql(
        "SELECT DISTINCT judge, profile, model, variant FROM judgment WHERE options = '' AND prompts = '' "
        "AND sampling = ''"
    ).fetchall()
    for judge, profile, model, variant in judges:
        named = judge_name(profile, model, variant) + " #"
        if judge.startswith(named):
            conn.execute(text("UPDATE judgment SET options = :options WHERE judge = :judge"),
                         {"options": judge.removeprefix(named), "judge": judge})


def _v6_to_v7(conn: Connection) -> None:
    """Debates name the student profile that argued them (`student`: new, create_all) and when they
    ended; debates from before profiles have no student and never ended."""
    _add_column(conn, "debate", "student_id", "INTEGER REFERENCES student (id)")
    _add_column(conn, "debate", "ended_at", "TIMESTAMP")
    # The index a new file's table has (create_all), so a migrated file finds a student's debates as fast.
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_debate_student_id ON debate (student_id)")


def _v7_to_v8(conn: Connection) -> None:
    """Analyzer stage-1 reasons are kept by what stage 1 asked (its prompt, samplings and schema), no
    longer by the example pool alone: the reasons kept before cannot say what asked for them, so
    they are dropped, and are derived again when first needed."""
    if has_tables(conn, "grice_reason"):
        conn.exec_driver_sql("DROP TABLE grice_reason")
    SQLModel.metadata.tables["grice_reason"].create(conn)


def _rebuild_sqlite_table(conn: Connection, table: str) -> None:
    """Give an SQLite table the shape its model has now (SQLite cannot change a unique key in place):
    a new table of that shape gets the rows of the old one, whose columns it has."""
    old = f"{table}_before_rebuild"
    columns = [info["name"] for info in inspect(conn).get_columns(table)]
    for index in inspect(conn).get_indexes(table):
        conn.exec_driver_sql(f'DROP INDEX "{index["name"]}"')
    conn.exec_driver_sql(f'ALTER TABLE "{table}" RENAME TO "{old}"')
    model = SQLModel.metadata.tables[table]  # every store module is imported before the database opens
    model.create(conn)
    kept = ", ".join(f'"{name}"' for name in columns if name in model.columns)
    conn.exec_driver_sql(f'INSERT INTO "{table}" ({kept}) SELECT {kept} FROM "{old}"')
    conn.exec_driver_sql(f'DROP TABLE "{old}"')


def _add_column(conn: Connection, table: str, column: str, declaration: str) -> None:
    if column not in {info["name"] for info in inspect(conn).get_columns(table)}:
        conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6, 6: _v6_to_v7, 7: _v7_to_v8,
}


def migrate(conn: Connection, from_version: int) -> None:
    for version in range(from_version, SCHEMA_VERSION):
        step = MIGRATIONS.get(version)
        if step is None:
            raise RuntimeError(f"no migration step from schema version {version}")
        step(conn)
