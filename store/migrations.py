"""Schema versions and the steps between them.

The version lives in SQLite's `PRAGMA user_version`. How to change the schema:

* a new table: define it in a `store` module; `create_all` adds it on the next
  open, no step needed;
* a changed table (new column, new index, changed meaning): bump
  `SCHEMA_VERSION` and add `MIGRATIONS[old]`, a function that takes the
  connection inside the open transaction and brings version `old` to `old + 1`
  (for example `ALTER TABLE ... ADD COLUMN ...`). Steps run in order on open,
  all in one transaction, so a failed upgrade leaves the file as it was.
"""

from __future__ import annotations

from typing import Callable

from sqlalchemy.engine import Connection

SCHEMA_VERSION = 1

MIGRATIONS: dict[int, Callable[[Connection], None]] = {}


def migrate(conn: Connection, from_version: int) -> None:
    for version in range(from_version, SCHEMA_VERSION):
        step = MIGRATIONS.get(version)
        if step is None:
            raise RuntimeError(f"no migration step from schema version {version}")
        step(conn)
