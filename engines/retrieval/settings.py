"""Which argument base the app searches, and opening it.

Kept light to import (the config loads it at start-up): the backends, with the
Elasticsearch client and tantivy behind them, load when a retriever is opened.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from engines.retrieval.types import ProgressCallback, Retriever

if TYPE_CHECKING:
    from engines.retrieval.elastic import ElasticsearchRetriever

RetrievalBackend = Literal["tantivy", "elasticsearch"]
DEFAULT_ES_INDEX = "claimrev"  # the name of the Touché RAD argument index


class RetrievalSettings(BaseModel):
    """The `[retrieval]` table of the config file; the defaults need no configuration."""

    model_config = ConfigDict(extra="forbid")

    backend: RetrievalBackend = "tantivy"
    es_url: str | None = None
    index: str = DEFAULT_ES_INDEX
    api_key_env: str | None = None  # the NAME of the variable holding an Elasticsearch API key

    @model_validator(mode="after")
    def _elasticsearch_needs_a_url(self) -> "RetrievalSettings":
        if self.backend == "elasticsearch" and not self.es_url:
            raise ValueError("backend 'elasticsearch' needs es_url")
        return self

    def api_key(self) -> str | None:
        """Read from the environment when connecting; never stored."""
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None


def open_elasticsearch(url: str, index: str, api_key: str | None = None) -> "ElasticsearchRetriever":
    from engines.retrieval.elastic import ElasticsearchRetriever, connect_elasticsearch

    return ElasticsearchRetriever(connect_elasticsearch(url, api_key=api_key), index, url=url)


async def open_retriever(
    settings: RetrievalSettings, data_dir: Path, on_progress: ProgressCallback | None = None
) -> Retriever:
    """The configured retriever; the embedded index is built from the bundled corpus if missing.

    `on_progress` follows that first build (it runs on the caller's event loop).
    Close the retriever with `await retriever.aclose()`.
    """
    if settings.backend == "elasticsearch" and settings.es_url:
        return open_elasticsearch(settings.es_url, settings.index, settings.api_key())
    from engines.retrieval.embedded import TantivyRetriever, embedded_index_dir, ensure_embedded_index

    index = await ensure_embedded_index(embedded_index_dir(data_dir), on_progress)
    return TantivyRetriever(index)
