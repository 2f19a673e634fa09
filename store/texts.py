"""Long texts stored once, by their SHA-256, whichever rows hold them.

An answer is kept twice over: by the response cache (so a rerun need not ask again)
and inside the judgment made of it (`raw`, what was said). For a normal answer that
costs nothing worth a table; for a runaway one (10 MB of digits) it doubled the
database. So a string of `LONG_TEXT_CHARS` or more inside a JSON value is written to
`stored_text` once and the value holds `{"argtui_text": digest}` in its place; reading
puts the text back, so callers never see a reference.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable

from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from store.db import insert_missing

LONG_TEXT_CHARS = 16_384  # far above any answer a judge is asked for (a few thousand tokens)
_REFERENCE = "argtui_text"
_REFERENCE_IN_JSON = json.dumps(_REFERENCE)  # how a reference shows in encoded JSON


class StoredText(SQLModel, table=True):
    __tablename__ = "stored_text"

    digest: str = Field(primary_key=True, description="sha256 of the text")
    text: str


def shrink(value: Any, texts: dict[str, str]) -> Any:
    """The JSON value with every long string replaced by a reference; the strings go into `texts` by digest.
    A value without a long string is returned as it is (the common case: nothing is copied)."""
    return _shrunk(value, texts) if _has_long_text(value) else value


def _has_long_text(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) >= LONG_TEXT_CHARS
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, list):
        return False
    for item in value:
        if _has_long_text(item):
            return True
    return False


def _shrunk(value: Any, texts: dict[str, str]) -> Any:
    if isinstance(value, str):
        if len(value) < LONG_TEXT_CHARS:
            return value
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        texts[digest] = value
        return {_REFERENCE: digest}
    if isinstance(value, dict):
        return {key: _shrunk(item, texts) for key, item in value.items()}
    if isinstance(value, list):
        return [_shrunk(item, texts) for item in value]
    return value


def store_texts(conn: Connection, texts: dict[str, str]) -> None:
    """Write the texts that `shrink` took out (a text stored already is kept as it is)."""
    insert_missing(conn, StoredText.__table__, [dict(digest=d, text=t) for d, t in texts.items()], ["digest"])


def refers_to_text(encoded: str) -> bool:
    """Whether a JSON text may hold a reference to a stored long text (only then is it searched for one)."""
    return _REFERENCE_IN_JSON in encoded


def decoded(conn: Connection, encoded: list[str]) -> list[Any]:
    """JSON texts decoded, with the long texts they refer to put back (read through `conn`, so in
    its snapshot). Only a text that names a reference is searched for one."""
    values = [json.loads(text) for text in encoded]
    marked = [i for i, text in enumerate(encoded) if refers_to_text(text)]
    if marked:
        digests: set[str] = set()
        for i in marked:
            _references(values[i], digests)
        texts = _load_texts(conn, digests)
        for i in marked:
            values[i] = _expand(values[i], texts)
    return values


def _references(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        if _is_reference(value):
            found.add(value[_REFERENCE])
        else:
            for item in value.values():
                _references(item, found)
    elif isinstance(value, list):
        for item in value:
            _references(item, found)


def _load_texts(conn: Connection, digests: Iterable[str]) -> dict[str, str]:
    wanted = sorted(set(digests))
    if not wanted:
        return {}
    table = StoredText.__table__
    return dict(conn.execute(select(table.c.digest, table.c.text).where(table.c.digest.in_(wanted))).all())


def _expand(value: Any, texts: dict[str, str]) -> Any:
    if isinstance(value, dict):
        if _is_reference(value):
            return texts.get(value[_REFERENCE], value)  # a look-alike in data (no such text) stays as it is
        return {key: _expand(item, texts) for key, item in value.items()}
    if isinstance(value, list):
        return [_expand(item, texts) for item in value]
    return value


def _is_reference(value: dict) -> bool:
    return len(value) == 1 and isinstance(value.get(_REFERENCE), str)
