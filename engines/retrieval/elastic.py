"""The Elasticsearch backend: the Touché RAD `claimrev` argument base, or your own cluster.

The index mapping follows the RAD `claimrev` index (`id`, `text`, `attacks`,
`supports`, `topic`, `tags`, `original`, plus our `source`), so the same queries
run against the organizers' index and against one `argtui index push` filled.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import Any, AsyncIterator, Collection, Iterable, Sequence
from urllib.parse import urlsplit, urlunsplit

from elastic_transport import HttpxAsyncHttpNode, TransportError
from elasticsearch import ApiError, AsyncElasticsearch
from elasticsearch.helpers import async_streaming_bulk

from engines.retrieval.settings import DEFAULT_ES_INDEX
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

PUSH_CHUNK = 500
SOURCE_FIELDS = ["id", "text", "attacks", "supports", "topic", "tags", "original", "source"]
_ENGLISH = {"type": "text", "analyzer": "english"}
MAPPING: dict[str, Any] = {
    # Fields other tools add (RAD's references and embeddings) stay in _source, unindexed.
    "dynamic": False,
    "properties": {
        "id": {"type": "keyword"},
        "text": _ENGLISH,
        "attacks": _ENGLISH,
        "supports": _ENGLISH,
        "topic": {**_ENGLISH, "fields": {"keyword": {"type": "keyword", "ignore_above": 1024}}},
        "tags": {"type": "keyword"},
        "original": {"type": "keyword"},
        "source": {"type": "keyword"},
    },
}

# elasticsearch-py 9 asks for `compatible-with=9` media types, which Elasticsearch 8
# rejects; version 8 is the one both Elasticsearch 8 and 9 accept.
COMPATIBLE_WITH = "compatible-with=8"
_COMPATIBLE_WITH_ANY = re.compile(r"compatible-with=\d+")


def media_types_for_es8_and_9(headers):
    """The request's Accept / Content-Type asking for version 8 compatibility."""
    headers = headers.copy()
    for name in ("accept", "content-type"):
        if name in headers:
            headers[name] = _COMPATIBLE_WITH_ANY.sub(COMPATIBLE_WITH, headers[name])
    return headers


class Elasticsearch8And9Node(HttpxAsyncHttpNode):
    """The client's httpx transport, with media types every Elasticsearch 8 and 9 cluster accepts."""

    async def perform_request(self, method, target, body=None, headers=None, **kwargs):  # type: ignore[override]
        if headers:
            headers = media_types_for_es8_and_9(headers)
        return await super().perform_request(method, target, body=body, headers=headers, **kwargs)


def redact_url(url: str) -> str:
    """The URL without user:password, for messages and stored run names."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def connect_elasticsearch(
    url: str, *, api_key: str | None = None, node_class: type = Elasticsearch8And9Node, **options: Any
) -> AsyncElasticsearch:
    return AsyncElasticsearch(url, api_key=api_key, node_class=node_class, request_timeout=30, **options)


class ElasticsearchRetriever:
    """Search (and fill) one index of an Elasticsearch 8/9 cluster with the claimrev mapping."""

    def __init__(self, client: AsyncElasticsearch, index: str = DEFAULT_ES_INDEX, *, url: str = ""):
        self.client = client
        self.index = index
        self.url = redact_url(url)
        self.name = f"elasticsearch:{index}"

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
        if k < 1 or not query.strip():
            return []
        boolean: dict[str, Any] = {"must": [{"match": {field: {"query": query}}}]}
        if field != "text":
            boolean["should"] = [{"match": {"text": {"query": query, "boost": RELATION_TEXT_BOOST}}}]
        filters = []
        if topic:
            filters.append({"match": {"topic": {"query": topic, "operator": "and"}}})
        if relation:
            # `match`, not `term`: it also works where a stock index maps `original` as text
            filters.append({"match": {"original": relation}})
        if filters:
            boolean["filter"] = filters
        if exclude:
            boolean["must_not"] = [{"ids": {"values": list(exclude)}}]
        response = await self._call(
            self.client.search(index=self.index, query={"bool": boolean}, size=k, source_includes=SOURCE_FIELDS)
        )
        return [Hit(self._argument(hit["_id"], hit["_source"]), float(hit["_score"])) for hit in response["hits"]["hits"]]

    async def get(self, ids: Sequence[str]) -> list[Argument]:
        if not ids:
            return []
        response = await self._call(
            self.client.mget(index=self.index, ids=list(dict.fromkeys(ids)), source_includes=SOURCE_FIELDS)
        )
        return [self._argument(doc["_id"], doc["_source"]) for doc in response["docs"] if doc.get("found")]

    async def count(self) -> int:
        return int((await self._call(self.client.count(index=self.index)))["count"])

    async def status(self) -> IndexStatus:
        info = await self._call(self.client.info())
        response = await self._call(
            self.client.search(index=self.index, size=0, aggs={"sources": {"terms": {"field": "source", "size": 50}}})
        )
        buckets = response.get("aggregations", {}).get("sources", {}).get("buckets", [])
        version = info.get("version", {})
        return IndexStatus(
            backend="elasticsearch",
            location=f"{self.url} index {self.index}",
            total=await self.count(),
            sources={bucket["key"]: bucket["doc_count"] for bucket in buckets},
            version=f"{version.get('distribution', 'elasticsearch')} {version.get('number', '?')}",
        )

    async def create_index(self) -> bool:
        """Create the index with the claimrev mapping unless it exists; True if created."""
        if await self._call(self.client.indices.exists(index=self.index)):
            return False
        await self._call(self.client.indices.create(index=self.index, mappings=MAPPING))
        return True

    async def push(
        self,
        arguments: Iterable[Argument],
        total: int,
        on_progress: ProgressCallback = lambda progress: None,
    ) -> IndexProgress:
        """Bulk-index arguments (creating the index if needed), `PUSH_CHUNK` per request.

        Resumable: when the index already holds documents, arguments whose id is
        there are skipped, so rerunning an interrupted push sends only the rest.
        """
        await self.create_index()
        resuming = await self.count() > 0
        progress = IndexProgress(total=total)
        on_progress(progress)

        async def actions() -> AsyncIterator[dict]:
            for chunk in _chunks(arguments, PUSH_CHUNK):
                present = await self._present([a.id for a in chunk]) if resuming else set()
                for argument in chunk:
                    if argument.id in present:
                        progress.done += 1
                        progress.skipped += 1
                    else:
                        yield {"_index": self.index, "_id": argument.id, "_source": document(argument)}

        bulk = async_streaming_bulk(
            self.client, actions(), chunk_size=PUSH_CHUNK, raise_on_error=False, max_retries=3
        )
        async for ok, item in _guard(bulk):
            if not ok:
                failure = next(iter(item.values()), {})
                raise RetrievalError(
                    f"{self.url} index {self.index}: argument {failure.get('_id')!r} was rejected: "
                    f"{failure.get('error')}; {progress.done} of {total} are in the index, rerun to resume"
                )
            progress.done += 1
            if progress.done % PUSH_CHUNK == 0:
                on_progress(progress)
        await self._call(self.client.indices.refresh(index=self.index))
        on_progress(progress)
        return progress

    async def aclose(self) -> None:
        await self.client.close()

    async def _present(self, ids: list[str]) -> set[str]:
        response = await self._call(self.client.mget(index=self.index, ids=ids, source=False))
        return {doc["_id"] for doc in response["docs"] if doc.get("found")}

    def _argument(self, doc_id: str, source: dict) -> Argument:
        tags = source.get("tags") or ()
        original = source.get("original")
        return Argument(
            id=str(doc_id),
            text=source.get("text") or "",
            topic=source.get("topic") or "",
            attacks=source.get("attacks") or None,
            supports=source.get("supports") or None,
            tags=(tags,) if isinstance(tags, str) else tuple(tags),
            source=source.get("source") or self.index,
            relation=original if original in ("attacks", "supports") else None,
        )

    async def _call(self, request):
        try:
            return await request
        except ApiError as exc:
            raise RetrievalError(f"{self.url} index {self.index}: {exc}") from None
        except TransportError as exc:
            raise RetrievalError(f"Elasticsearch at {self.url} is unreachable: {exc}") from None


def _chunks(items: Iterable[Argument], size: int) -> Iterable[list[Argument]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


async def _guard(results: AsyncIterator):
    """Bulk results, with transport and API errors turned into RetrievalError."""
    try:
        async for result in results:
            yield result
    except ApiError as exc:
        raise RetrievalError(f"bulk request failed: {exc}") from None
    except TransportError as exc:
        raise RetrievalError(f"Elasticsearch is unreachable: {exc}") from None


def document(argument: Argument) -> dict:
    """An argument as a claimrev document."""
    data: dict[str, Any] = {
        "id": argument.id,
        "text": argument.text,
        "topic": argument.topic,
        "tags": list(argument.tags),
        "source": argument.source,
    }
    for name in ("attacks", "supports"):
        if getattr(argument, name):
            data[name] = getattr(argument, name)
    if argument.relation:
        data["original"] = argument.relation
    return data
