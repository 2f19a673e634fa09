"""Retrieval of arguments: one interface, an embedded tantivy index and Elasticsearch.

The debate pipeline needs only this:

    retriever = await open_retriever(config.retrieval, config.paths.data_dir)
    graph = await retrieve_for_idea(retriever, "school uniforms reduce bullying", "ATTACK")
    await retriever.aclose()
"""

from engines.retrieval.backends import open_retriever
from engines.retrieval.settings import RetrievalSettings
from engines.retrieval.strategies import (
    IDEA,
    ArgumentGraph,
    GraphEdge,
    GraphNode,
    Goal,
    Strategy,
    retrieve_for_idea,
)
from engines.retrieval.types import (
    Argument,
    Hit,
    IndexStatus,
    Relation,
    RetrievalError,
    Retriever,
    SearchField,
)

__all__ = [
    "IDEA",
    "Argument",
    "ArgumentGraph",
    "GraphEdge",
    "GraphNode",
    "Goal",
    "Hit",
    "IndexStatus",
    "Relation",
    "RetrievalError",
    "RetrievalSettings",
    "Retriever",
    "SearchField",
    "Strategy",
    "open_retriever",
    "retrieve_for_idea",
]
