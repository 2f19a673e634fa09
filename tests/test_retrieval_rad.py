"""The Touché RAD argument subset (4,441 ClaimRev arguments) imported into both backends."""

from __future__ import annotations

import pytest

from engines.retrieval import retrieve_for_idea
from engines.retrieval.elastic import ElasticsearchRetriever, connect_elasticsearch
from engines.retrieval.embedded import EmbeddedIndex, TantivyRetriever, run_write
from engines.retrieval.rad import RAD_SOURCE, count_rad_arguments, iter_rad_arguments

pytestmark = pytest.mark.shared_data

BANK_ROBBERY = "333.171"  # "For instance, in the case of a bank robbery society would prefer ..."


@pytest.fixture(scope="module")
def rad_path(shared_data):
    return shared_data / "touche25-rad" / "touche25-rad-arguments-referenced-subset.jsonl.gz"


async def check_known_arguments(retriever) -> None:
    [known] = await retriever.get([BANK_ROBBERY])
    assert known.text.startswith("For instance, in the case of a bank robbery")
    assert known.topic == "Are Bitcoin and Similar Cryptocurrencies Good for the World?"
    assert known.relation == "supports" and known.tags == ("ADC", "Bitcoin", "Anonymity", "Nerd")
    assert known.target == "The untraceability, is not an aspect of cash, that is beneficial for society."
    assert known.attacks == "The untraceability is an aspect of cash that is beneficial for society."

    by_text = await retriever.search("bank robbery perfect traceability of cash", k=1)
    assert [hit.argument.id for hit in by_text] == [BANK_ROBBERY]
    by_claim = await retriever.search(
        "untraceability of cash is beneficial for society", field="attacks", topic="bitcoin", k=5
    )
    assert BANK_ROBBERY in [hit.argument.id for hit in by_claim]

    graph = await retrieve_for_idea(retriever, "Anonymous cash transfers protect privacy", "ATTACK")
    assert {node.strategy for node in graph.nodes} == {"text", "attack", "support", "chain"}
    assert all(node.argument.source == RAD_SOURCE for node in graph.nodes)


async def test_rad_subset_in_the_embedded_index(rad_path, tmp_path):
    total = count_rad_arguments(rad_path)
    assert total == 4_441
    index = EmbeddedIndex(tmp_path / "index")
    await run_write(lambda report: index.create(iter_rad_arguments(rad_path), total, report))
    retriever = TantivyRetriever(index)
    assert await retriever.count() == 4_441
    originals = [a.relation for a in iter_rad_arguments(rad_path)]
    assert (originals.count("attacks"), originals.count("supports")) == (2_458, 1_983)
    await check_known_arguments(retriever)


async def test_rad_subset_in_elasticsearch(rad_path, osmem_es):
    url, node_class = osmem_es
    retriever = ElasticsearchRetriever(connect_elasticsearch(url, node_class=node_class), "claimrev-rad", url=url)
    try:
        pushed = await retriever.push(iter_rad_arguments(rad_path), 4_441)
        assert (pushed.done, pushed.skipped) == (4_441, 0)
        assert await retriever.count() == 4_441
        await check_known_arguments(retriever)
    finally:
        await retriever.client.indices.delete(index=retriever.index)
        await retriever.aclose()
