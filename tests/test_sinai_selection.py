"""Step 3 of the five-step bot as the SINAI paper runs it: per query the model chooses from six
arguments (two by text, two by the goal's relation, two one-hop chains) and selects exactly three;
the hits the chains start from stay in the evidence as context. Real tantivy index on a corpus
built so that every strategy finds two arguments; a scripted backend records the prompts."""

from __future__ import annotations

from collections import Counter

import json

import pytest
from pydantic import ValidationError

from engines.debate.opponent import DebateSetup, DialogueTurn, StepFinished, TurnCompleted
from engines.debate.pipeline import DebatePipeline
from engines.debate.records import EVIDENCE, DebateRecords
from engines.debate.schemas import query_selection_model
from engines.llm.client import LLMClient
from engines.retrieval.embedded import EmbeddedIndex, TantivyRetriever
from engines.retrieval.types import Argument
from fakes import FakeServer, Reply, chat_reply, schema_instance, stream_reply
from store.debates import DebateRepository

IDEA = "School uniforms reduce bullying"
ATTACKS_IDEA = ["Teasing simply moves to shoes, phones and haircuts instead",
                "Teasing moves online where no dress code reaches"]
SUPPORTS_IDEA = ["Pupils reported fewer fights after the dress code came in",
                 "Pupils say they feel less judged when everyone dresses alike"]


def arg(id: str, text: str, *, attacks: str | None = None, supports: str | None = None) -> Argument:
    return Argument(id=id, text=text, topic="School uniforms", attacks=attacks, supports=supports,
                    source="fixture", relation="attacks" if attacks else "supports" if supports else None)


CORPUS = [
    *(arg(f"a{i}", text, attacks=IDEA) for i, text in enumerate(ATTACKS_IDEA, 1)),
    *(arg(f"s{i}", text, supports=IDEA) for i, text in enumerate(SUPPORTS_IDEA, 1)),
    # the chains: an attack on each support argument, a support of each attack argument
    arg("c1", "Those fights fell because new staff arrived that year", attacks=SUPPORTS_IDEA[0]),
    arg("c2", "Feeling less judged in a survey is not being teased less", attacks=SUPPORTS_IDEA[1]),
    arg("d1", "Phones and haircuts still draw mockery when clothes match", supports=ATTACKS_IDEA[0]),
    arg("d2", "Most teasing now happens online in group chats", supports=ATTACKS_IDEA[1]),
    # found by text only
    arg("t1", "School uniforms and bullying come up at every parents' evening"),
    arg("t2", "Whether uniforms reduce bullying at school is an open question"),
]
SETUP = DebateSetup("School uniforms should be mandatory", "pro")
HISTORY = [DialogueTurn("user", "School uniforms reduce bullying because nobody is mocked for their clothes.")]
PLAN = {"SEARCH_1": {"opponent_idea": IDEA, "field_to_look": "ATTACK", "justification": "the main point"},
        "SEARCH_2": {"opponent_idea": IDEA, "field_to_look": "SUPPORT", "justification": "the other way"}}
REPLY = "Teasing just moves to phones and haircuts, so uniforms change little."


@pytest.fixture
def retriever(tmp_path):
    index = EmbeddedIndex(tmp_path / "index")
    index.create(CORPUS, len(CORPUS))
    return TantivyRetriever(index)


def choices(prop: dict) -> list[str]:
    return prop.get("enum") or [prop["const"]]


def scripted(selection_size: int | None = None, plan: dict = PLAN):
    """Valid answers to the five steps; step 3 selects the first `selection_size` choices (all
    the schema asks for when None), step 5 names the first finally selected argument."""

    def answer(body: dict) -> Reply:
        if "structured_outputs" in body:
            return chat_reply("no")  # the stance check: the reply does not argue the student's side
        schema = body["response_format"]["json_schema"]["schema"]
        props = schema.get("properties", {})
        if schema["title"] == "SearchPlan":
            return chat_reply(json.dumps(plan))
        if schema["title"] == "QuerySelection":
            items = props["arguments"]
            count = items["minItems"] if selection_size is None else selection_size
            return chat_reply(json.dumps({"arguments": choices(items["items"])[:count], "justification": "best"}))
        if schema["title"] == "Reply":
            named = choices(props["arguments"]["items"])[0]
            return stream_reply(json.dumps({"response": REPLY, "justification": "j", "arguments": [named]}))
        return chat_reply(json.dumps(schema_instance(schema, "school uniforms reduce bullying")))

    return answer


def selection_prompts(server: FakeServer) -> list[str]:
    return [body["messages"][0]["content"] for body in server.bodies
            if body.get("response_format", {}).get("json_schema", {}).get("schema", {}).get("title")
            == "QuerySelection"]


def listed(prompt: str) -> list[str]:
    """The argument lines of a step-3 prompt's retrieved block."""
    block = prompt.split("The information retrieved in each strategy is shown next:\n")[1]
    block = block.split("\nTo select the best arguments")[0]
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]


async def run_turn(server: FakeServer, retriever) -> list:
    client = LLMClient(server.profile(kind="vllm", retries=0))
    try:
        return [event async for event in DebatePipeline(client, retriever).run_turn(SETUP, HISTORY)]
    finally:
        await client.aclose()


async def test_six_arguments_per_query_reach_step_3_and_the_chains_bases_stay_as_context(retriever, fake_server):
    fake_server.answer = scripted()
    events = await run_turn(fake_server, retriever)
    assert isinstance(events[-1], TurnCompleted), events[-1]
    turn = events[-1].turn
    graphs = turn.steps.retrieval.graphs
    evidence = [event for event in events if isinstance(event, StepFinished)][-1].evidence  # what the screen shows
    assert [graph.goal for graph in graphs] == ["ATTACK", "SUPPORT"]
    [attack_prompt, support_prompt] = sorted(selection_prompts(fake_server), key=lambda p: '"ATTACK"' not in p)
    for query, (graph, prompt, context_strategy) in enumerate(
        [(graphs[0], attack_prompt, "support"), (graphs[1], support_prompt, "attack")], 1
    ):
        strategies = sorted(node.strategy for node in graph.nodes)
        assert strategies == sorted(["text", "text", "attack", "attack", "support", "support", "chain", "chain"])
        offered = [node.text for node in graph.nodes if not node.context]
        context = [node.text for node in graph.nodes if node.context]
        assert {node.strategy for node in graph.nodes if node.context} == {context_strategy} and len(context) == 2
        assert sorted(listed(prompt)) == sorted(offered) and len(offered) == 6
        assert not [text for text in context if text in prompt]  # not even as a chain's note
        rows = [row for row in evidence if row.query == query]
        assert sorted(row.text for row in rows if row.context) == sorted(context)
        assert len(rows) == 8 and not any(row.selected for row in rows if row.context)
        assert len([row for row in rows if row.selected]) == 3
    # goal ATTACK: the chains (attacks on the arguments supporting the idea) are its SUPPORT STRATEGY
    support_block = attack_prompt.split("SUPPORT STRATEGY:\n")[-1].split("\nTEXT STRATEGY:")[0]
    chains = {node.text for node in graphs[0].nodes if node.strategy == "chain"}
    assert {line[2:] for line in support_block.splitlines()} == chains


async def test_the_context_flag_is_stored_and_rows_stored_before_it_still_load(db, retriever, fake_server):
    fake_server.answer = scripted()
    turn = (await run_turn(fake_server, retriever))[-1].turn
    repository = DebateRepository(db)
    records = DebateRecords(repository)
    debate = repository.create(SETUP.claim, SETUP.user_side)
    records.add_message(debate.id, HISTORY[0].content)
    stored = records.add_reply(debate.id, turn)
    assert [row.context for row in stored.evidence] == [item.context for item in turn.evidence]
    assert sum(row.context for row in stored.evidence) == 4  # two per query
    assert [node.context for graph in stored.steps.retrieval.graphs for node in graph.nodes] == [
        row.context for row in stored.evidence]
    [old] = EVIDENCE.validate_json(json.dumps([{"id": "ibm-1", "text": "Uniforms are cheap.", "strategy": "support",
                                                "query": 1, "selected": True}]))
    assert old.context is False and old.selected


async def test_two_queries_that_retrieve_the_same_graph_each_get_their_selection(retriever, fake_server):
    fake_server.answer = scripted(plan={"SEARCH_1": PLAN["SEARCH_1"], "SEARCH_2": PLAN["SEARCH_1"]})
    turn = (await run_turn(fake_server, retriever))[-1].turn
    assert list(turn.steps.selection) == ["SEARCH_1", "SEARCH_2"]
    assert [sum(item.selected for item in turn.evidence if item.query == q) for q in (1, 2)] == [3, 3]


async def test_a_selection_of_two_when_six_are_offered_is_rejected_and_asked_again(retriever, fake_server):
    fake_server.answer = scripted(selection_size=2)
    last = (await run_turn(fake_server, retriever))[-1]
    # Level 0 answers the fallback only from the claim's topic's labelled arguments, which this index lacks.
    failure = last.turn.fallback_from if isinstance(last, TurnCompleted) else last
    assert failure.step == "selection" and "invalid output after 2 attempts" in failure.error
    # The query that failed first was asked twice; the other one's asks may be cancelled with the
    # turn before they reach the server (its first too, on a loaded machine).
    asked = Counter(selection_prompts(fake_server))
    assert len(asked) in (1, 2) and sorted(asked.values())[-1] == 2


def test_the_schema_demands_exactly_three_arguments_when_three_or_more_are_offered():
    texts = [f"argument {i}" for i in range(6)]
    model = query_selection_model(texts)
    schema = model.model_json_schema()["properties"]["arguments"]
    assert (schema["minItems"], schema["maxItems"]) == (3, 3) and schema["items"]["enum"] == texts
    assert model(arguments=texts[:3], justification="j").arguments == texts[:3]
    for wrong in (texts[:2], texts[:4], [texts[0], texts[1], "unknown"]):
        with pytest.raises(ValidationError):
            model(arguments=wrong, justification="j")
    # what no grammar can forbid: a repeat counts once
    assert model(arguments=[texts[1], texts[1], texts[0]], justification="j").arguments == texts[1::-1]


@pytest.mark.parametrize("offered, expected", [(["a", "b", "c"], 3), (["a", "b"], 2), (["a", "a", "b"], 2), (["a"], 1)])
def test_with_fewer_than_three_offered_the_schema_asks_for_all_of_them(offered, expected):
    schema = query_selection_model(offered).model_json_schema()["properties"]["arguments"]
    assert (schema["minItems"], schema["maxItems"]) == (expected, expected)
