"""Retrieval on a small fixture corpus, the same behaviour from tantivy and from Elasticsearch.

The Elasticsearch side runs against a real osmem-server (`osmem_es` fixture)
and, when ARGTUI_TEST_ES_URL is set, against that real cluster too (`real_es`).
BM25 scores differ between engines, so tests assert which arguments come back
and their order only where the corpus makes the margin clear.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from typing import get_args

import pytest
from elastic_transport import HttpHeaders
from tantivy import Index

from engines.retrieval import (
    IDEA,
    GraphEdge,
    RetrievalError,
    RetrievalSettings,
    open_retriever,
    retrieve_for_idea,
)
from engines.retrieval.backends import BACKENDS
from engines.retrieval.elastic import (
    MAPPING,
    ElasticsearchRetriever,
    connect_elasticsearch,
    media_types_for_es8_and_9,
    redact_url,
)
from engines.retrieval.embedded import (
    RELATION_TEXT_WORDS,
    SCHEMA,
    EmbeddedIndex,
    IndexBusy,
    TantivyRetriever,
    _rarest,
    ensure_embedded_index,
    run_write,
)
from engines.retrieval.settings import RetrievalBackend
from engines.retrieval.types import Argument

UNIFORMS = "Students should wear school uniforms"
BULLYING = "School uniforms reduce bullying"
NUCLEAR = "We should expand nuclear energy"


def arg(id, text, *, attacks=None, supports=None, topic="School uniforms", tags=("Education",)):
    relation = "attacks" if attacks else "supports" if supports else None
    return Argument(id=id, text=text, topic=topic, attacks=attacks, supports=supports, tags=tags,
                    source="fixture", relation=relation)


U2_TEXT = "Uniforms are an expensive burden for poor families"
U3_TEXT = "Bullies simply pick on shoes, phones and haircuts instead"
U4_TEXT = "Schools reported fewer fights after introducing a dress code"
CORPUS = [
    arg("u1", "Uniforms reduce bullying because nobody is judged by their clothes", supports=UNIFORMS),
    arg("u2", U2_TEXT, attacks=UNIFORMS),
    arg("u3", U3_TEXT, attacks=BULLYING),
    arg("u4", U4_TEXT, supports=BULLYING),
    arg("u5", "Second-hand exchanges make uniforms cheap for every family", attacks=U2_TEXT),
    arg("u6", "Teasing about phones and haircuts keeps going when clothing is equal", supports=U3_TEXT),
    arg("u7", "The fewer fights came from new staff, not from the dress code", attacks=U4_TEXT),
    arg("u8", "A shared dress code builds school spirit and belonging", supports=UNIFORMS),
    arg("n1", "Nuclear plants produce energy without carbon emissions", supports=NUCLEAR, topic="Nuclear energy",
        tags=("Science", "Energy")),
    arg("n2", "Nuclear waste stays dangerous for thousands of years", attacks=NUCLEAR, topic="Nuclear energy",
        tags=()),
    arg("n3", "Uniform safety rules make modern reactors reliable", supports=NUCLEAR, topic="Nuclear energy",
        tags=()),
    arg("x1", "Every claim deserves a hearing", topic="Debate"),  # no relation recorded
]


def ids(hits):
    return [hit.argument.id for hit in hits]


@pytest.fixture
def tantivy_retriever(tmp_path):
    index = EmbeddedIndex(tmp_path / "index")
    index.create(CORPUS, len(CORPUS))
    return TantivyRetriever(index)


@pytest.fixture
async def osmem_retriever(osmem_es):
    url, node_class = osmem_es
    retriever = ElasticsearchRetriever(connect_elasticsearch(url, node_class=node_class), _index_name(), url=url)
    await retriever.push(CORPUS, len(CORPUS))
    yield retriever
    await retriever.client.indices.delete(index=retriever.index)
    await retriever.aclose()


def _index_name() -> str:
    return f"argtui-test-{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=["tantivy", "elasticsearch"])
def retriever(request):
    return request.getfixturevalue(f"{'osmem' if request.param == 'elasticsearch' else 'tantivy'}_retriever")


async def test_text_search_ranks_the_closest_text_first(retriever):
    hits = await retriever.search("uniforms reduce bullying", k=3)
    assert ids(hits)[0] == "u1"
    assert hits[0].score >= hits[-1].score > 0


async def test_relation_fields_find_what_attacks_or_supports_a_claim(retriever):
    attacking = await retriever.search(BULLYING, field="attacks", k=1)
    supporting = await retriever.search(BULLYING, field="supports", k=1)
    assert ids(attacking) == ["u3"] and attacking[0].argument.attacks == BULLYING
    assert ids(supporting) == ["u4"] and supporting[0].argument.supports == BULLYING
    # only arguments with something in the searched field can match it
    assert all(hit.argument.attacks for hit in await retriever.search("uniforms dress code", field="attacks", k=20))


async def test_relation_topic_and_exclude_filters(retriever):
    attacking_only = await retriever.search("uniforms families dress code", relation="attacks", k=20)
    assert attacking_only and {hit.argument.relation for hit in attacking_only} == {"attacks"}
    assert set(ids(attacking_only)) <= {"u2", "u3", "u5", "u7", "n2"}

    everywhere = await retriever.search("uniform safety", k=20)
    assert "n3" in ids(everywhere) and "u1" in ids(everywhere)
    assert ids(await retriever.search("uniform safety", topic="nuclear ENERGY", k=20)) == ["n3"]
    assert await retriever.search("uniform safety", topic="nuclear cats", k=20) == []

    excluded = await retriever.search("uniforms reduce bullying", k=20, exclude={"u1", "u4"})
    assert excluded and not {"u1", "u4"} & set(ids(excluded))
    assert await retriever.search("the of and", k=5) == []  # nothing left after stop words


async def test_get_returns_arguments_in_the_order_asked_and_count(retriever):
    got = await retriever.get(["u3", "missing", "n1", "u3"])
    assert got == [CORPUS[2], CORPUS[8]]  # every field survives the round trip
    assert await retriever.get([]) == []
    assert await retriever.count() == len(CORPUS)
    unrelated = await retriever.get(["x1"])
    assert unrelated[0].relation is None and unrelated[0].target is None


async def test_attack_goal_graph_chains_an_attack_on_each_support_argument(retriever):
    graph = await retrieve_for_idea(retriever, BULLYING, "ATTACK", k=1)
    by_strategy = {strategy: ids_of(graph, strategy) for strategy in ("text", "attack", "support", "chain")}
    assert by_strategy["attack"] == ["u3"]
    assert by_strategy["support"] == ["u4"]
    assert by_strategy["chain"] == ["u7"]  # u7 attacks u4, the argument supporting the idea
    assert len(by_strategy["text"]) == 1 and by_strategy["text"][0] not in {"u3", "u4", "u7"}
    assert set(graph.edges) >= {
        edge("u3", IDEA, "attacks"), edge("u4", IDEA, "supports"), edge("u7", "u4", "attacks"),
    }
    assert [node.strategy for node in graph.nodes] == ["text", "attack", "support", "chain"]
    # the support argument is only the way to its chain: kept as context, not offered for selection
    assert [node.argument.id for node in graph.nodes if node.context] == ["u4"]
    assert [node.strategy for node in graph.candidates()] == ["text", "attack", "chain"]


async def test_support_goal_graph_chains_a_support_of_each_attack_argument(retriever):
    graph = await retrieve_for_idea(retriever, BULLYING, "SUPPORT", k=1)
    assert ids_of(graph, "support") == ["u4"] and ids_of(graph, "attack") == ["u3"]
    assert ids_of(graph, "chain") == ["u6"]  # u6 supports u3, the attack on the idea
    assert edge("u6", "u3", "supports") in graph.edges
    assert [node.strategy for node in graph.nodes] == ["text", "support", "attack", "chain"]
    assert [node.argument.id for node in graph.nodes if node.context] == ["u3"]


async def test_graph_never_repeats_an_argument(retriever):
    graph = await retrieve_for_idea(retriever, "school uniforms dress code bullying families", "ATTACK", k=2)
    found = [node.argument.id for node in graph.nodes]
    assert len(found) == len(set(found)) >= 6
    assert all(edge.source in found and edge.target in {IDEA, *found} for edge in graph.edges)
    assert graph.as_dict()["nodes"][0]["strategy"] == "text"
    assert [node["context"] for node in graph.as_dict()["nodes"]] == [node.strategy == "support" for node in graph.nodes]
    assert len(graph.candidates()) == len(graph.nodes) - len(graph.arguments("support")) <= 6  # the paper's six
    with pytest.raises(ValueError):
        await retrieve_for_idea(retriever, BULLYING, "IGNORE")  # type: ignore[arg-type]


def ids_of(graph, strategy):
    return [argument.id for argument in graph.arguments(strategy)]


def edge(source, target, relation):
    return GraphEdge(source, target, relation)


# --- the backends ---------------------------------------------------------------------------------


def test_every_backend_the_settings_accept_is_registered():
    assert set(BACKENDS) == set(get_args(RetrievalBackend))
    assert [backend.embedded for backend in BACKENDS.values()].count(True) == 1


def test_the_settings_and_the_registry_load_no_backend_until_one_is_opened():
    loaded = "import sys, engines.retrieval.backends; print(sorted({'tantivy', 'elasticsearch'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", loaded], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"  # both load with the config, at start-up


# --- the embedded index ----------------------------------------------------------------------------


async def test_first_use_builds_the_bundled_corpus_and_a_rebuild_keeps_imports(tmp_path):
    reports = []
    retriever = await open_retriever(RetrievalSettings(), tmp_path, on_progress=reports.append)
    assert await retriever.count() == 30_497 + 1_271
    assert reports[-1].done == reports[-1].total == 31_768
    status = await retriever.status()
    assert status.sources == {"ibm-argq-30k": 30_497, "webis-argquality-20": 1_271}
    assert status.built_at and status.build_seconds > 0

    ibm = (await retriever.get(["ibm-0"]))[0]
    assert ibm.relation in ("attacks", "supports") and ibm.target == ibm.topic
    webis = await retriever.search("school uniforms", topic="school uniforms", k=50)
    webis = [hit.argument for hit in webis if hit.argument.source == "webis-argquality-20"]
    assert webis and webis[0].id.startswith("webis-6/") and webis[0].tags == ("Education",)

    index = retriever.index
    await run_write(lambda report: index.import_arguments(CORPUS[:2], 2, "fixture", "test", report))
    await run_write(index.build_bundled)
    assert await retriever.count() == 31_768 + 2
    assert (await retriever.get(["u1"]))[0] == CORPUS[0]


async def test_a_relation_search_never_returns_arguments_that_match_only_by_text(tmp_path):
    """Arguments matching many query words in their text outrank, a tenth of it counted, a weak
    match of the claim; they must not come back, and the claim match must."""
    words = [f"word{n}" for n in range(40)]
    corpus = [arg("claim", "nothing in common", attacks="uniforms")]
    corpus += [arg(f"text-{n}", " ".join(words)) for n in range(40)]  # more than k + the largest margin
    index = EmbeddedIndex(tmp_path / "index")
    index.create(corpus, len(corpus))
    retriever = TantivyRetriever(index)
    query = " ".join(words) + " uniforms"
    assert ids(await retriever.search(query, k=1))[0].startswith("text-")
    assert ids(await retriever.search(query, field="attacks", k=1)) == ["claim"]
    assert ids(await retriever.search(query, field="attacks", k=1, exclude=["claim"])) == []


async def test_words_in_most_claims_do_not_match_a_claim_in_a_large_index(tmp_path):
    corpus = [arg(f"common-{n}", f"statement {n}", attacks="We should act now") for n in range(1_100)]
    corpus.append(arg("cats", "statement about pets", attacks="Cats deserve rights"))
    index = EmbeddedIndex(tmp_path / "index")
    index.create(corpus, len(corpus))
    retriever = TantivyRetriever(index)
    assert ids(await retriever.search("we should protect cats", field="attacks", k=5)) == ["cats"]
    # a query of nothing but such words still finds its claims
    assert len(await retriever.search("we should act", field="attacks", k=5)) == 5


async def test_a_failing_import_changes_nothing(tantivy_retriever):
    index = tantivy_retriever.index

    def broken():
        yield arg("new-1", "A fresh argument about uniforms")
        raise RetrievalError("the source broke")

    with pytest.raises(RetrievalError, match="the source broke"):
        await run_write(lambda report: index.import_arguments(broken(), 2, "fixture", "test", report))
    assert await tantivy_retriever.count() == len(CORPUS)
    assert await tantivy_retriever.get(["new-1"]) == []


async def test_reimport_replaces_arguments_by_id(tantivy_retriever):
    index = tantivy_retriever.index
    changed = arg("u2", "Uniforms cost poor families too much money", attacks=UNIFORMS)
    await run_write(lambda report: index.import_arguments([changed], 1, "fixture", "test", report))
    assert await tantivy_retriever.count() == len(CORPUS)
    assert (await tantivy_retriever.get(["u2"]))[0].text == changed.text


async def test_cancelling_a_write_rolls_it_back(tantivy_retriever):
    index = tantivy_retriever.index
    reached = asyncio.Event()
    loop = asyncio.get_running_loop()

    def many():
        for number in range(50_000):
            if number == 3_000:
                loop.call_soon_threadsafe(reached.set)
            yield arg(f"bulk-{number}", f"argument number {number} about uniforms")

    task = asyncio.create_task(run_write(lambda report: index.import_arguments(many(), 50_000, "bulk", "t", report)))
    await reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _until_unlocked(index)
    assert await tantivy_retriever.count() == len(CORPUS)


async def _until_unlocked(index: EmbeddedIndex) -> None:
    """The write thread rolls back after the task is cancelled; wait for it to let go of the lock."""
    for _ in range(200):
        try:
            index.open().writer(heap_size=15_000_000).rollback()
            return
        except ValueError:
            await asyncio.sleep(0.05)
    raise AssertionError("the cancelled write never released the index")


async def test_a_second_writer_gets_a_clear_busy_error(tantivy_retriever):
    index = tantivy_retriever.index
    holder = index.open().writer(heap_size=15_000_000)
    try:
        with pytest.raises(IndexBusy, match="another argtui process"):
            await run_write(index.build_bundled)
    finally:
        holder.rollback()
    assert await tantivy_retriever.count() == len(CORPUS)


async def test_first_use_waits_for_a_build_another_process_is_running(tmp_path):
    directory = tmp_path / "index"
    directory.mkdir()
    other_builder = Index(SCHEMA, path=str(directory)).writer(heap_size=15_000_000)
    opening = asyncio.create_task(ensure_embedded_index(directory))
    await asyncio.sleep(1.0)
    assert not opening.done()  # waiting, not failing
    del other_builder  # that process ends without finishing: this one builds
    index = await asyncio.wait_for(opening, timeout=60)
    assert await TantivyRetriever(index).count() == 31_768


def test_an_index_of_another_format_is_not_built_and_a_foreign_folder_is_left_alone(tmp_path):
    index = EmbeddedIndex(tmp_path / "index")
    index.create(CORPUS[:1], 1)
    assert index.is_built
    index.manifest_path.write_text('{"schema_version": 0}')
    assert not index.is_built and index.status() is None
    with pytest.raises(RetrievalError, match="argtui index build"):
        TantivyRetriever(index)

    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "holiday.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(RetrievalError, match="is not an argument index"):
        EmbeddedIndex(foreign).create(CORPUS, len(CORPUS))
    assert (foreign / "holiday.jpg").exists()


# --- Elasticsearch -----------------------------------------------------------------------------------


async def test_push_creates_the_claimrev_mapping_and_resumes(osmem_es):
    url, node_class = osmem_es
    retriever = ElasticsearchRetriever(connect_elasticsearch(url, node_class=node_class), _index_name(), url=url)
    try:
        first = await retriever.push(CORPUS[:5], 5)
        assert (first.done, first.skipped) == (5, 0)
        mapping = (await retriever.client.indices.get_mapping(index=retriever.index))[retriever.index]["mappings"]
        for name, spec in MAPPING["properties"].items():
            assert mapping["properties"][name]["type"] == spec["type"]
        assert mapping["properties"]["text"]["analyzer"] == "english"
        assert await retriever.create_index() is False  # exists already

        reports = []
        second = await retriever.push(CORPUS, len(CORPUS), reports.append)
        assert (second.done, second.skipped) == (len(CORPUS), 5)
        assert reports[-1].done == len(CORPUS)
        status = await retriever.status()
        assert status.total == len(CORPUS) and status.sources == {"fixture": len(CORPUS)}
        assert status.backend == "elasticsearch" and retriever.index in status.location
    finally:
        await retriever.client.indices.delete(index=retriever.index)
        await retriever.aclose()


async def test_an_unreachable_cluster_or_missing_index_is_a_clear_error(osmem_es):
    url, node_class = osmem_es
    missing = ElasticsearchRetriever(connect_elasticsearch(url, node_class=node_class), "no-such-index", url=url)
    with pytest.raises(RetrievalError, match="no-such-index"):
        await missing.search("anything")
    await missing.aclose()

    down = ElasticsearchRetriever(
        connect_elasticsearch("http://127.0.0.1:9", node_class=node_class, max_retries=0), "claimrev",
        url="http://user:secret@127.0.0.1:9",
    )
    with pytest.raises(RetrievalError, match="unreachable") as failure:
        await down.count()
    assert "secret" not in str(failure.value)
    await down.aclose()


def test_requests_ask_for_version_8_compatibility_which_es_8_and_9_accept():
    headers = HttpHeaders({
        "accept": "application/vnd.elasticsearch+json; compatible-with=9",
        "content-type": "application/vnd.elasticsearch+x-ndjson; compatible-with=9",
        "user-agent": "x",
    })
    rewritten = media_types_for_es8_and_9(headers)
    assert rewritten["accept"] == "application/vnd.elasticsearch+json; compatible-with=8"
    assert rewritten["content-type"] == "application/vnd.elasticsearch+x-ndjson; compatible-with=8"
    assert headers["accept"].endswith("=9")  # the caller's headers are left as they were
    assert redact_url("https://elastic:pw@es.example.org:9243/path") == "https://es.example.org:9243/path"


@pytest.mark.real_es
async def test_a_real_elasticsearch_cluster_runs_the_same_strategies():
    url = os.environ.get("ARGTUI_TEST_ES_URL")
    if not url:
        pytest.skip("set ARGTUI_TEST_ES_URL to a real Elasticsearch 8/9 cluster to run this test")
    # the product's own transport, unchanged: this is what users run against
    retriever = ElasticsearchRetriever(
        connect_elasticsearch(url, api_key=os.environ.get("ARGTUI_TEST_ES_API_KEY")), _index_name(), url=url
    )
    try:
        await retriever.push(CORPUS, len(CORPUS))
        assert await retriever.count() == len(CORPUS)
        assert ids(await retriever.search(BULLYING, field="attacks", k=1)) == ["u3"]
        graph = await retrieve_for_idea(retriever, BULLYING, "ATTACK", k=1)
        assert ids_of(graph, "chain") == ["u7"]
        assert await retriever.get(["u3"]) == [CORPUS[2]]
    finally:
        await retriever.client.indices.delete(index=retriever.index, ignore_unavailable=True)
        await retriever.aclose()



async def test_a_long_relation_query_counts_only_its_rarest_words_in_the_text(tmp_path):
    """A chain hop queries with a whole argument: its text part keeps the rarest words (in query
    order), where the common ones would cost most and add least; the claim still decides."""
    common = [f"common{n}" for n in range(RELATION_TEXT_WORDS)]
    corpus = [
        arg("claim", "zebra crossing", attacks="uniforms"),
        arg("no-claim", "zebra crossing yak"),
        *(arg(f"filler-{n}", " ".join(common[: n % len(common) + 1])) for n in range(40)),
    ]
    index = EmbeddedIndex(tmp_path / "index")
    index.create(corpus, len(corpus))
    retriever = TantivyRetriever(index)
    searcher = retriever._searcher()
    query_words = ["common0", "zebra", *common[1:], "yak"]
    # common0 is in every filler, common7 in the fewest of them: the two commonest drop out
    assert _rarest(searcher, "text", query_words, RELATION_TEXT_WORDS) == ["zebra", *common[2:], "yak"]
    assert _rarest(searcher, "text", query_words[:3], RELATION_TEXT_WORDS) == query_words[:3]
    query = " ".join(query_words) + " uniforms"
    assert ids(await retriever.search(query, field="attacks", k=2)) == ["claim"]
