"""The embedded backend: a tantivy (BM25) index on disk, in the user data dir.

Built from the bundled corpus on first use; Touché RAD files can be imported
into it. Writes are one transaction (one tantivy commit): a failed or
interrupted import leaves the index as it was. Every write runs in a worker
thread; the async wrappers report progress on the caller's event loop and stop
the write (rolling it back) when the awaiting task is cancelled.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Collection, Iterable, Sequence, TypeVar

import tantivy
from tantivy import Document, Filter, Index, Occur, Query, SchemaBuilder, TextAnalyzerBuilder, Tokenizer

from engines.retrieval.corpus import BUNDLED_SOURCES, bundled_arguments
from engines.retrieval.types import (
    RELATION_TEXT_BOOST,
    Argument,
    Hit,
    IndexProgress,
    IndexStatus,
    ProgressCallback,
    Relation,
    RetrievalError,
    SearchField,
)
from engines.timing import Stopwatch

SCHEMA_VERSION = 1
MANIFEST = "argtui-index.json"
ANALYZER_NAME = "argtext"
# One indexing thread writes one segment, and a single segment answers fastest;
# the heap is an upper bound that keeps even a 300k-argument build in one segment.
WRITER_HEAP_BYTES = 400_000_000
PROGRESS_EVERY = 2_000
MAX_FILTERED_EXCLUSIONS = 32
# How many more relation-field hits than k to look at, first and if that falls short (see `_matching`).
RELATION_MARGINS = (2, 32)
COMMON_CLAIM_SHARE, COMMON_CLAIM_MINIMUM = 0.1, 1_000  # see `_telling_words`
RELATION_TEXT_WORDS = 8  # see `_rarest`
# How tantivy's failed writes name the disk: its I/O errors, and a writer whose worker thread an
# I/O error killed ("An index writer was killed … (io::Error most likely)", on a nearly full disk).
_IO_FAILURES = ("IO error", "io::Error", "index writer was killed")

T = TypeVar("T")


def embedded_index_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "index" / "tantivy"


def _analyzer() -> tantivy.TextAnalyzer:
    """English BM25 text analysis, close to Elasticsearch's `english` analyzer."""
    return (
        TextAnalyzerBuilder(Tokenizer.simple())
        .filter(Filter.remove_long(40))
        .filter(Filter.lowercase())
        .filter(Filter.stopword("english"))
        .filter(Filter.stemmer("english"))
        .build()
    )


ANALYZER = _analyzer()


def _schema() -> tantivy.Schema:
    builder = SchemaBuilder()
    for name in ("id", "tags", "relation", "source"):
        builder.add_text_field(name, stored=True, tokenizer_name="raw")
    for name in ("text", "attacks", "supports", "topic"):
        builder.add_text_field(name, stored=True, tokenizer_name=ANALYZER_NAME)
    return builder.build()


SCHEMA = _schema()


class IndexBusy(RetrievalError):
    def __init__(self, directory: Path):
        super().__init__(
            f"another argtui process is writing the index at {directory}; try again when it has finished"
        )


class _Stopped(Exception):
    """The awaiting task was cancelled: roll the write back."""


class EmbeddedIndex:
    """The on-disk index: is it built, build it, import into it, describe it."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    @property
    def manifest_path(self) -> Path:
        return self.directory / MANIFEST

    def manifest(self) -> dict | None:
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if data.get("schema_version") == SCHEMA_VERSION else None

    @property
    def is_built(self) -> bool:
        return self.manifest() is not None

    def open(self) -> Index:
        if not self.is_built:
            raise RetrievalError(f"no argument index at {self.directory}; run `argtui index build`")
        index = Index.open(str(self.directory))
        index.register_tokenizer(ANALYZER_NAME, ANALYZER)
        return index

    def build_bundled(self, on_progress: ProgressCallback = lambda progress: None) -> float:
        """(Re)index the bundled corpus, keeping imported arguments; returns the seconds taken.

        An index of an older format is replaced (imports then need importing again).
        """
        stopwatch = Stopwatch()
        manifest = self.manifest()
        if manifest is None:
            self._refuse_if_being_written()
            self._remove()  # a half-built index, or one of an older format
            manifest = {"schema_version": SCHEMA_VERSION, "imports": {}}
        arguments = bundled_arguments()
        self._write(arguments, len(arguments), on_progress, replace_sources=BUNDLED_SOURCES, upsert=False)
        seconds = stopwatch.seconds
        manifest["bundled"] = {"built_at": _now(), "seconds": round(seconds, 3), "arguments": len(arguments)}
        self._save_manifest(manifest)
        return seconds

    def create(
        self, arguments: Iterable[Argument], total: int, on_progress: ProgressCallback = lambda progress: None
    ) -> float:
        """A new index holding exactly these arguments (a custom corpus); returns the seconds taken."""
        stopwatch = Stopwatch()
        self._remove()
        self._write(arguments, total, on_progress, replace_sources=(), upsert=False)
        self._save_manifest({"schema_version": SCHEMA_VERSION, "imports": {}})
        return stopwatch.seconds

    def import_arguments(
        self,
        arguments: Iterable[Argument],
        total: int,
        source: str,
        origin: str,
        on_progress: ProgressCallback = lambda progress: None,
    ) -> int:
        """Add or replace (by id) arguments from `origin` (a file path) in one commit."""
        manifest = self.manifest()
        if manifest is None:
            raise RetrievalError(f"no argument index at {self.directory}; run `argtui index build` first")
        written = self._write(arguments, total, on_progress, replace_sources=(), upsert=True)
        manifest.setdefault("imports", {})[source] = {"path": origin, "arguments": written, "at": _now()}
        self._save_manifest(manifest)
        return written

    def status(self) -> IndexStatus | None:
        manifest = self.manifest()
        if manifest is None:
            return None
        searcher = self.open().searcher()
        sources = {}
        for source, _ in searcher.terms_with_prefix("source", ""):
            # term frequencies still count deleted documents; a count query does not
            live = searcher.search(Query.term_query(SCHEMA, "source", source), 1, count=True).count
            if live:
                sources[source] = live
        bundled = manifest.get("bundled") or {}
        return IndexStatus(
            backend="tantivy",
            location=str(self.directory),
            total=searcher.num_docs,
            sources=sources,
            built_at=bundled.get("built_at"),
            build_seconds=bundled.get("seconds"),
            size_bytes=sum(p.stat().st_size for p in self.directory.iterdir() if p.is_file()),
            version=tantivy.__version__,
        )

    def _write(
        self,
        arguments: Iterable[Argument],
        total: int,
        on_progress: ProgressCallback,
        *,
        replace_sources: Collection[str],
        upsert: bool,
    ) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            index = Index(SCHEMA, path=str(self.directory), reuse=True)
            index.register_tokenizer(ANALYZER_NAME, ANALYZER)
            writer = index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=1)
        except ValueError as exc:
            if "LockBusy" in str(exc):
                raise IndexBusy(self.directory) from None
            self._raise_if_disk_failed(exc)
            raise
        progress = IndexProgress(total=total)
        on_progress(progress)
        try:
            for source in replace_sources:
                writer.delete_documents_by_term("source", source)
            for argument in arguments:
                if upsert:
                    writer.delete_documents_by_term("id", argument.id)
                writer.add_document(_document(argument))
                progress.done += 1
                if progress.done % PROGRESS_EVERY == 0:
                    on_progress(progress)
            writer.commit()
            writer.wait_merging_threads()
            index.reload()
        except BaseException as exc:
            try:
                writer.rollback()
            except ValueError:  # a writer whose worker died cannot roll back; nothing of it was committed
                pass
            if isinstance(exc, ValueError):
                self._raise_if_disk_failed(exc)
            raise
        on_progress(progress)
        return progress.done

    def _raise_if_disk_failed(self, exc: ValueError) -> None:
        """tantivy's failed write as one line naming the index, when it is the disk's (its I/O
        errors, or a writer whose worker thread an I/O error killed)."""
        message = str(exc)
        if not any(sign in message for sign in _IO_FAILURES):
            return
        raise RetrievalError(
            f"{self.directory}: cannot write the argument index, a disk or I/O problem (is the disk full?): "
            f"{message.splitlines()[0]}; free some space or check the folder's permissions, then try again "
            "(the index is as it was)"
        ) from None

    def _refuse_if_being_written(self) -> None:
        """Raise IndexBusy while another writer holds the index (its files are not ours to delete)."""
        if not (self.directory / "meta.json").exists():
            return
        try:
            writer = Index.open(str(self.directory)).writer(heap_size=WRITER_HEAP_BYTES, num_threads=1)
        except ValueError as exc:
            if "LockBusy" in str(exc):
                raise IndexBusy(self.directory) from None
            return  # unreadable: a broken index, removed next
        del writer

    def _remove(self) -> None:
        """Delete the index folder; refuse to touch a folder that is not an index."""
        if not self.directory.exists():
            return
        if any(self.directory.iterdir()) and not (self.directory / "meta.json").exists():
            raise RetrievalError(f"{self.directory} exists and is not an argument index; move it away first")
        shutil.rmtree(self.directory)

    def _save_manifest(self, manifest: dict) -> None:
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        tmp.replace(self.manifest_path)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _document(argument: Argument) -> Document:
    document = Document(id=argument.id, text=argument.text, topic=argument.topic, source=argument.source)
    for name in ("attacks", "supports", "relation"):
        value = getattr(argument, name)
        if value:
            document.add_text(name, value)
    for tag in argument.tags:
        document.add_text("tags", tag)
    return document


def _argument(document: Document) -> Argument:
    values = document.to_dict()

    def first(name: str) -> str | None:
        found = values.get(name)
        return found[0] if found else None

    return Argument(
        id=first("id") or "",
        text=first("text") or "",
        topic=first("topic") or "",
        attacks=first("attacks"),
        supports=first("supports"),
        tags=tuple(values.get("tags", ())),
        source=first("source") or "",
        relation=first("relation"),  # type: ignore[arg-type]
    )


async def run_write(
    write: Callable[[ProgressCallback], T], on_progress: ProgressCallback | None = None
) -> T:
    """Run a blocking index write in a thread; progress arrives on this event loop.

    Cancelling the awaiting task stops the write at its next progress step and
    rolls it back.
    """
    loop = asyncio.get_running_loop()
    stop = threading.Event()

    def report(progress: IndexProgress) -> None:
        if stop.is_set():
            raise _Stopped()
        if on_progress is not None:
            loop.call_soon_threadsafe(on_progress, replace(progress))

    try:
        return await asyncio.to_thread(write, report)
    except asyncio.CancelledError:
        stop.set()
        raise
    except OSError as exc:  # the manifest: the disk is full, or the folder cannot be written
        raise RetrievalError(f"{exc.filename}: cannot write the argument index ({exc.strerror or exc}); "
                             "free some space or check the folder's permissions, then try again") from None


async def ensure_embedded_index(
    directory: Path, on_progress: ProgressCallback | None = None, *, wait_s: float = 120.0
) -> EmbeddedIndex:
    """The index at `directory`, built from the bundled corpus first if it is missing.

    While another process (or task) is writing the index, this waits up to
    `wait_s` seconds for it rather than failing.
    """
    index = EmbeddedIndex(directory)
    deadline = time.monotonic() + wait_s
    while not index.is_built:
        try:
            await run_write(index.build_bundled, on_progress)
        except IndexBusy:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)
    return index


class TantivyRetriever:
    """Search the embedded index: about a millisecond per query on 300k arguments."""

    name = "tantivy"

    def __init__(self, index: EmbeddedIndex):
        self.index = index
        self._tantivy = index.open()
        self._committed: tuple[int, int] | None = None  # meta.json's identity when last reloaded

    async def search(
        self,
        query: str,
        *,
        field: SearchField = "text",
        k: int = 2,
        topic: str | None = None,
        relation: Relation | None = None,
        exclude: Collection[str] = (),
    ) -> list[Hit]:
        # Inline, not in a worker thread: a search takes a millisecond or two, and
        # handing it to a thread costs more than that on a busy machine.
        words = _words(query)
        if not words or k < 1:
            return []
        searcher = self._searcher()
        claim_words = words if field == "text" else _telling_words(searcher, field, words)
        text_words = words if field == "text" else _rarest(searcher, "text", words, RELATION_TEXT_WORDS)
        # Few exclusions are filtered out of a slightly longer list: a MustNot clause
        # would cost tantivy its top-k pruning.
        few_excluded = len(exclude) <= MAX_FILTERED_EXCLUSIONS
        filters = self._filters(topic, relation, () if few_excluded else exclude)
        matching = _matching(field, claim_words, text_words)
        for margin in (0,) if field == "text" else RELATION_MARGINS:
            limit = k + (len(exclude) if few_excluded else 0) + margin
            hits = self._run(searcher, matching, filters, limit)
            kept = [h for h in hits if h.argument.id not in exclude and _matches_field(h.argument, field, claim_words)]
            if len(kept) >= k or len(hits) < limit:
                return kept[:k]
        # the flat query lets through too many arguments that match only by their text
        exactly = _matching_exactly(field, claim_words, text_words)
        return self._run(searcher, exactly, self._filters(topic, relation, exclude), k)

    def _filters(self, topic: str | None, relation: Relation | None, exclude: Collection[str]) -> list:
        filters = []
        if topic and (topic_words := _words(topic)):
            every_word = Query.boolean_query([(Occur.Must, Query.term_query(SCHEMA, "topic", w)) for w in topic_words])
            filters.append((Occur.Must, Query.const_score_query(every_word, 0.0)))
        if relation:
            filters.append((Occur.Must, Query.const_score_query(Query.term_query(SCHEMA, "relation", relation), 0.0)))
        if exclude:
            filters.append((Occur.MustNot, Query.term_set_query(SCHEMA, "id", list(exclude))))
        return filters

    def _run(self, searcher: tantivy.Searcher, matching: Query, filters: list, limit: int) -> list[Hit]:
        query = Query.boolean_query([(Occur.Must, matching), *filters]) if filters else matching
        result = searcher.search(query, limit, count=False)
        return [Hit(_argument(searcher.doc(address)), float(score)) for score, address in result.hits]

    async def get(self, ids: Sequence[str]) -> list[Argument]:
        if not ids:
            return []
        searcher = self._searcher()
        result = searcher.search(Query.term_set_query(SCHEMA, "id", list(ids)), len(ids), count=False)
        found = {a.id: a for a in (_argument(searcher.doc(address)) for _, address in result.hits)}
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    async def count(self) -> int:
        return self._searcher().num_docs

    async def status(self) -> IndexStatus:
        status = self.index.status()
        if status is None:
            raise RetrievalError(f"the argument index at {self.index.directory} is gone; run `argtui index build`")
        return status

    async def aclose(self) -> None:
        return None

    def _searcher(self) -> tantivy.Searcher:
        # tantivy notices another writer's commit only after a delay; every commit
        # replaces meta.json (a new file), so reload when it changed and every search sees the last commit
        meta = (self.index.directory / "meta.json").stat()
        committed = (meta.st_ino, meta.st_mtime_ns)
        if committed != self._committed:
            self._tantivy.reload()
            self._committed = committed
        return self._tantivy.searcher()


def _words(text: str) -> list[str]:
    return list(dict.fromkeys(ANALYZER.analyze(text)))


def _any_of(field: str, words: list[str], boost: float | None = None) -> list:
    terms = [Query.term_query(SCHEMA, field, word) for word in words]
    if boost is not None:
        terms = [Query.boost_query(term, boost) for term in terms]
    return [(Occur.Should, term) for term in terms]


def _telling_words(searcher: tantivy.Searcher, field: SearchField, words: list[str]) -> list[str]:
    """The words that tell claims apart: not those in the `field` of over a tenth of all arguments.

    ("we", "should" in the IBM topics.) They would barely move the ranking and
    make tantivy visit most of a large index. When every word is that common, all count.
    """
    ceiling = max(COMMON_CLAIM_SHARE * searcher.num_docs, COMMON_CLAIM_MINIMUM)
    return [word for word in words if searcher.doc_freq(field, word) <= ceiling] or words


def _rarest(searcher: tantivy.Searcher, field: str, words: list[str], count: int) -> list[str]:
    """The `count` words of `field` in the fewest arguments, in query order.

    A relation search adds the words' BM25 in the text at a tenth; a whole
    argument's text as the query (a chain hop) has twenty words or more, and the
    common ones, which add least, cost most: their lists in the text are long.
    """
    if len(words) <= count:
        return words
    kept = set(sorted(words, key=lambda word: searcher.doc_freq(field, word))[:count])
    return [word for word in words if word in kept]


def _matching(field: SearchField, claim_words: list[str], words: list[str]) -> Query:
    """BM25 of the words in `field` (plus a tenth of their BM25 in the text, for a relation field).

    One flat disjunction of terms, which tantivy answers with block-max WAND
    pruning; "the field must match, the text only adds" would instead score
    every argument on a matched claim (thousands share one). Hits that match
    only by their text are dropped by the caller.
    """
    if field == "text":
        return Query.boolean_query(_any_of("text", words))
    return Query.boolean_query(_any_of(field, claim_words) + _any_of("text", words, RELATION_TEXT_BOOST))


def _matching_exactly(field: SearchField, claim_words: list[str], words: list[str]) -> Query:
    """A relation field's ranking with the field required: slower, needed only when `_matching` falls short."""
    return Query.boolean_query([
        (Occur.Must, Query.boolean_query(_any_of(field, claim_words))),
        (Occur.Should, Query.boolean_query(_any_of("text", words, RELATION_TEXT_BOOST))),
    ])


def _matches_field(argument: Argument, field: SearchField, words: list[str]) -> bool:
    return field == "text" or not set(words).isdisjoint(ANALYZER.analyze(getattr(argument, field) or ""))
