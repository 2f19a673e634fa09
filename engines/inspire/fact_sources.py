"""Fact sources: what InspireScore checks a text's claims against, apart from the debate's argument base.

A source is named by one string (`--facts SOURCE`, `[inspire] facts`):

* `base` (the default): the argument base the bot retrieves from, as `[retrieval]` configures it;
* `http(s)://HOST:PORT/INDEX`: an Elasticsearch index of passages (`text` field, as the argument index);
* anything else: a JSONL file of reference statements, `{"id": ..., "text": ...}` per line. It is
  indexed with the embedded tantivy backend once per file content, under the data dir's
  `index/facts/<digest>`, and searched like the argument base.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

from engines.datasets import DataFormatError, json_lines
from engines.errors import ArgtuiError
from engines.inspire.facts import ARGUMENT_BASE
from engines.retrieval.types import FACT_SOURCE_BASE, Argument, FactSource, Retriever
from engines.secrets import redact

BASE = FACT_SOURCE_BASE
STATEMENTS_SOURCE = "fact-statements"  # the `source` of every indexed statement
DIGEST_CHARS = 32


def fact_statements(path: Path) -> list[Argument]:
    """The statements of a JSONL file; a line that is not `{"id": string or integer, "text": non-empty
    string}`, or repeats an id, fails naming the file, line and field."""
    statements: list[Argument] = []
    lines: dict[str, int] = {}
    for number, record in json_lines(path):
        if not isinstance(record, dict):
            raise DataFormatError(path, number, None, 'expected an object {"id": ..., "text": ...}')
        for field in ("id", "text"):
            if field not in record:
                raise DataFormatError(path, number, field, "missing")
        identifier, text = record["id"], record["text"]
        if isinstance(identifier, bool) or not isinstance(identifier, (str, int)) or str(identifier) == "":
            raise DataFormatError(path, number, "id", f"expected a non-empty string or an integer, got {identifier!r}")
        if not isinstance(text, str) or not text.strip():
            raise DataFormatError(path, number, "text", f"expected a non-empty string, got {text!r}")
        key = str(identifier)
        if key in lines:
            raise DataFormatError(path, number, "id", f"{key!r} is already the id of line {lines[key]}")
        lines[key] = number
        statements.append(Argument(id=key, text=text, topic="", source=STATEMENTS_SOURCE))
    if not statements:
        raise DataFormatError(path, None, None, "holds no statement")
    return statements


def _digest(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()[:DIGEST_CHARS]
    except FileNotFoundError:
        raise DataFormatError(path, None, None, "file not found") from None
    except OSError as exc:
        raise DataFormatError(path, None, None, f"cannot be read ({exc.strerror or exc})") from None


async def statements_index(path: Path, data_dir: Path):
    """The embedded index of the file's statements, built on first use of this content."""
    from engines.retrieval.embedded import EmbeddedIndex, run_write

    digest = await asyncio.to_thread(_digest, path)
    directory = Path(data_dir) / "index" / "facts" / digest
    index = EmbeddedIndex(directory)
    if index.is_built:
        return index
    statements = await asyncio.to_thread(fact_statements, path)  # a bad line fails before anything is written
    directory.parent.mkdir(parents=True, exist_ok=True)
    # Built aside and moved in whole: a reader never sees, and a second builder never removes, half an index.
    building = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=directory.parent))
    try:
        await run_write(lambda report: EmbeddedIndex(building).create(statements, len(statements), report))
        try:
            building.rename(directory)
        except OSError:
            if not index.is_built:  # not another builder's finished index: a real failure
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return index


def _elasticsearch_index(source: str) -> tuple[str, str] | None:
    """(cluster URL, index) of an `http(s)://HOST/INDEX` source; None for any other source."""
    parts = urlsplit(source)
    if parts.scheme not in ("http", "https"):
        return None
    index = parts.path.strip("/")
    if not parts.netloc or not index or "/" in index:
        raise ArgtuiError(f"fact source {redact(source)}: expected http(s)://HOST:PORT/INDEX (one index name)")
    return urlunsplit((parts.scheme, parts.netloc, "", "", "")), index


def source_identity(source: str | None) -> str:
    """What a judge checking claims against `source` is judged by: the argument base, an index's
    address without credentials, or a statements file's content (a changed file is a new judge)."""
    if source is None or source == BASE:
        return BASE
    elasticsearch = _elasticsearch_index(source)
    if elasticsearch is not None:
        url, index = elasticsearch
        return f"elasticsearch {redact(url)}/{index}"
    return f"statements {_digest(Path(source).expanduser())}"


async def open_fact_source(
    source: str | None, base: Callable[[], Awaitable[Retriever]], data_dir: Path, api_key: str | None = None
) -> FactSource:
    """The named source (None or `base`: the argument base that `base()` opens). `api_key`
    is an Elasticsearch source's. Close a source that is not the base with `retriever.aclose()`."""
    if source is None or source == BASE:
        return FactSource(await base(), ARGUMENT_BASE)
    elasticsearch = _elasticsearch_index(source)
    if elasticsearch is not None:
        from engines.retrieval.backends import open_elasticsearch

        url, index = elasticsearch
        return FactSource(open_elasticsearch(url, index, api_key), f"fact source {redact(url)}/{index}", source)
    from engines.retrieval.embedded import TantivyRetriever

    path = Path(source).expanduser()
    return FactSource(TantivyRetriever(await statements_index(path, data_dir)), f"fact source {path.name}", source)
