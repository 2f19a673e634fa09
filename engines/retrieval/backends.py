"""The retrieval backends by their `[retrieval] backend` name: opening each one and describing it.

Kept light to import (the package loads it with the config at start-up): tantivy
and the Elasticsearch client load when a backend is opened or described.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from engines.retrieval.settings import RetrievalSettings
from engines.retrieval.types import IndexStatus, ProgressCallback, Retriever

if TYPE_CHECKING:
    from engines.retrieval.elastic import ElasticsearchRetriever


class Backend(Protocol):
    name: str  # the `backend` value of the settings
    title: str  # how the Datasets panel names it
    embedded: bool  # the index in the data dir, built from the bundled corpus (and rebuilt by the app)

    async def open(
        self, settings: RetrievalSettings, data_dir: Path, on_progress: ProgressCallback | None = None
    ) -> Retriever:
        """A retriever to search it; close it with `await retriever.aclose()`."""
        ...

    async def status(self, settings: RetrievalSettings, data_dir: Path) -> IndexStatus | None:
        """What it holds; None while the embedded index is not built (describing it never builds it)."""
        ...


class EmbeddedBackend:
    name = "tantivy"
    title = "embedded tantivy index"
    embedded = True

    async def open(
        self, settings: RetrievalSettings, data_dir: Path, on_progress: ProgressCallback | None = None
    ) -> Retriever:
        """The index is built from the bundled corpus first if it is missing; `on_progress` follows
        that build (on the caller's event loop)."""
        from engines.retrieval.embedded import TantivyRetriever, embedded_index_dir, ensure_embedded_index

        return TantivyRetriever(await ensure_embedded_index(embedded_index_dir(data_dir), on_progress))

    async def status(self, settings: RetrievalSettings, data_dir: Path) -> IndexStatus | None:
        from engines.retrieval.embedded import EmbeddedIndex, embedded_index_dir

        return EmbeddedIndex(embedded_index_dir(data_dir)).status()


class ElasticsearchBackend:
    name = "elasticsearch"
    title = "Elasticsearch"
    embedded = False

    async def open(
        self, settings: RetrievalSettings, data_dir: Path, on_progress: ProgressCallback | None = None
    ) -> Retriever:
        return open_elasticsearch(settings.es_url, settings.index, settings.api_key())

    async def status(self, settings: RetrievalSettings, data_dir: Path) -> IndexStatus | None:
        retriever = await self.open(settings, data_dir)
        try:
            return await retriever.status()
        finally:
            await retriever.aclose()


def open_elasticsearch(url: str, index: str, api_key: str | None = None) -> "ElasticsearchRetriever":
    """One index of a cluster, to search or to push to; the client loads here, on first use."""
    from engines.retrieval.elastic import ElasticsearchRetriever, connect_elasticsearch

    return ElasticsearchRetriever(connect_elasticsearch(url, api_key=api_key), index, url=url)


BACKENDS: dict[str, Backend] = {backend.name: backend for backend in (EmbeddedBackend(), ElasticsearchBackend())}


def backend_of(settings: RetrievalSettings) -> Backend:
    return BACKENDS[settings.backend]


async def open_retriever(
    settings: RetrievalSettings, data_dir: Path, on_progress: ProgressCallback | None = None
) -> Retriever:
    """The configured retriever; the embedded index is built from the bundled corpus if missing.

    `on_progress` follows that first build (it runs on the caller's event loop).
    Close the retriever with `await retriever.aclose()`.
    """
    return await backend_of(settings).open(settings, data_dir, on_progress)
