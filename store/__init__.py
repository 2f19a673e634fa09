"""Persistence: SQLModel tables on SQLite, sessions, migrations, queries.

Imports neither engines nor screens (SPEC §2).
"""

from store.db import Database, StoreError

__all__ = ["Database", "StoreError"]
