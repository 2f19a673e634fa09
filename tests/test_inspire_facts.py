"""Support by the argument base: the no-call shortcut respects negation, a turn's own arguments
and quotes are never its evidence, claims the text never made are dropped, and a fact source
(a JSONL of reference statements, or an Elasticsearch index) can stand in for the argument base: from the CLI, the config
and the Coach's path. Real tantivy indexes, a real osmem-server and SQLite files; the model is the fake server."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from argtui.cli import main
from argtui.config import ConfigError, load_config
from argtui.runtime import Runtime
from engines.datasets import DataFormatError
from engines.errors import ArgtuiError
from engines.debate.records import DebateRecords, GraphNodeRecord, GraphRecord, RetrievalStep, TurnSteps
from engines.inspire.fact_sources import fact_statements, open_fact_source
from engines.inspire.facts import (
    ARGUMENT_BASE, MAX_CLAIMS, FactCheck, check_facts, extract_claims, judge_claim, quotes, states_word_for_word,
)
from engines.inspire.logic import MAX_DERIVATIONS, translate
from engines.inspire.score import DIMENSION_TITLES, DIMENSIONS, SUPPORTED
from engines.inspire.settings import InspireSettings
from engines.judging.identity import judge_id
from engines.judging.store import JudgmentStore
from engines.llm.client import LLMClient
from engines.retrieval.elastic import ElasticsearchRetriever, connect_elasticsearch
from engines.retrieval.embedded import EmbeddedIndex, TantivyRetriever
from engines.retrieval.types import Argument
from engines.tasks.inspire import TASK, InspireOptions, file_items, turn_judgment
from fakes import FakeServer, chat_reply, schema_answer
from store.debates import DebateRepository

NEGATED = Argument(id="negated", text="There is no evidence that vaccines cause autism.", topic="vaccines")
COST = "Uniforms cost families money every year."
COST_ARGUMENT = Argument(id="cost", text=COST, topic="uniforms")
SURVEY = Argument(id="survey", text="A survey found that families pay for school uniforms.", topic="uniforms")
TOPIC = "School uniforms should be mandatory"
VERDICT_PROMPT = "Decide whether the evidence supports the claim"


def index_of(folder: Path, *arguments: Argument) -> TantivyRetriever:
    index = EmbeddedIndex(folder)
    index.create(arguments, len(arguments))
    return TantivyRetriever(index)


def scripted(claims: list[str], verdict: str):
    """The fake model: `claims` for every claim extraction, `verdict` for every verdict, a valid
    instance of the schema for anything else (subjective scores, logic translations)."""
    fallback = schema_answer(COST)

    def answer(body: dict) -> object:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("List the factual claims"):
            return chat_reply(json.dumps({"claims": claims}))
        if prompt.startswith(VERDICT_PROMPT):
            return chat_reply(verdict)
        return fallback(body)

    return answer


def verdict_requests(fake: FakeServer) -> list[str]:
    return [body["messages"][-1]["content"] for body in fake.bodies
            if body["messages"][-1]["content"].startswith(VERDICT_PROMPT)]


# ---------------------------------------------------------------- negation


def test_only_a_whole_sentence_states_a_claim_so_a_negation_does_not():
    assert not states_word_for_word(NEGATED.text, "Vaccines cause autism")
    assert not states_word_for_word("Vaccines cause autism, some parents fear.", "Vaccines cause autism")
    assert states_word_for_word("Some parents fear it. VACCINES cause  autism!", "vaccines cause autism.")


async def test_a_negated_passage_does_not_support_the_claim_without_the_model(tmp_path):
    retriever = index_of(tmp_path / "index", NEGATED)
    with FakeServer([chat_reply("contradicted")]) as fake:
        async with LLMClient(fake.profile()) as client:
            verdict, usage = await judge_claim(client, retriever, "Vaccines cause autism")
        asked = verdict_requests(fake)
    # The passage's words contain the claim's in order, yet only the model may decide: it was asked, with it.
    assert usage.calls == 1 and len(asked) == 1 and NEGATED.text in asked[0]
    assert verdict.verdict == "contradicted" and verdict.evidence_ids == (NEGATED.id,)


# ---------------------------------------------------------------- a turn's own evidence


def test_a_passage_is_quoted_by_a_text_repeating_one_of_its_longer_sentences():
    assert quotes(f"As I said: {COST.upper()} And more.", f"Short one. {COST}")
    assert not quotes("Yes. That is wrong.", "Yes. That is wrong.")  # sentences too short to be a quote
    assert not quotes("Uniforms cost families money.", COST)


async def test_a_bot_turns_own_argument_is_not_its_evidence(tmp_path):
    retriever = index_of(tmp_path / "index", COST_ARGUMENT, SURVEY)
    with FakeServer(scripted([COST], "no evidence")) as fake:
        async with LLMClient(fake.profile()) as client:
            # Against any other text, the argument states the claim: supported with no call.
            alone, alone_usage = await judge_claim(client, retriever, COST)
            # A level-0 reply is the retrieved argument verbatim: excluded by id, and by the quote alone.
            by_id, _ = await check_facts(client, retriever, TOPIC, f"Think again. {COST}", exclude=[COST_ARGUMENT.id])
            by_quote, _ = await check_facts(client, retriever, TOPIC, COST)
    assert alone.verdict == "supported" and alone.evidence_ids[0] == COST_ARGUMENT.id and alone_usage.calls == 0
    for check in (by_id, by_quote):
        [verdict] = check.verdicts
        assert COST_ARGUMENT.id not in verdict.evidence_ids and verdict.evidence_ids == (SURVEY.id,)
        assert verdict.verdict == "no evidence" and verdict.calls == 1  # the model judged the other passage


def test_a_turns_evidence_ids_come_from_its_steps_its_rows_and_its_rad_arguments(tmp_path):
    rad = tmp_path / "rad.jsonl"
    rad.write_text(json.dumps({"id": "d1", "claim": TOPIC, "simulated_debate": [
        {"role": "user", "content": "Uniforms make everyone equal."},
        {"role": "assistant", "content": COST, "arguments": [{"id": "cost", "text": COST}]},
    ]}) + "\n", encoding="utf-8")
    user, bot = file_items(rad)
    assert user.evidence == () and bot.evidence == ("cost",)

    steps = TurnSteps(retrieval=RetrievalStep(graphs=[GraphRecord(idea="cost", goal="ATTACK", nodes=[
        GraphNodeRecord(id="retrieved", text=COST, strategy="text"),
    ])]))
    record = tmp_path / "record.jsonl"
    turns = [{"role": "user", "content": "Uniforms make everyone equal."},
             {"role": "assistant", "content": COST, "steps": steps.model_dump(mode="json", exclude_none=True),
              "evidence": [{"id": "cost", "text": COST}, {"id": "retrieved", "text": COST}]}]
    record.write_text(json.dumps({"id": 7, "claim": TOPIC, "user_side": "pro", "turns": turns}) + "\n", encoding="utf-8")
    assert file_items(record)[1].evidence == ("retrieved", "cost")

    turns[1]["evidence"] = [{"text": COST}]
    record.write_text(json.dumps({"id": 7, "claim": TOPIC, "user_side": "pro", "turns": turns}) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as error:
        file_items(record)
    assert (error.value.path, error.value.line, error.value.field) == (str(record), 1, "turns[1].evidence[0].id")


# ---------------------------------------------------------------- claims the text never made


async def test_claims_not_in_the_text_are_dropped_before_any_verdict(tmp_path):
    retriever = index_of(tmp_path / "index", SURVEY)
    echo = "If prices rise then taxes rise"  # the translation prompt's own example, not the student's
    with FakeServer(scripted(["Families pay for school uniforms", echo], "supported")) as fake:
        async with LLMClient(fake.profile()) as client:
            check, _ = await check_facts(client, retriever, TOPIC, "My family pays for school uniforms. It hurts.")
    assert [v.claim for v in check.verdicts] == ["Families pay for school uniforms"] and check.dropped == 1


# ---------------------------------------------------------------- the dimension's name


def test_the_dimension_is_named_for_what_it_measures_and_old_checks_still_read():
    assert SUPPORTED == "supported_by_base" and SUPPORTED in DIMENSIONS
    assert DIMENSION_TITLES[SUPPORTED] == "supported by the argument base"
    # A check stored before the source was recorded was against the argument base, nothing dropped.
    old = FactCheck.model_validate({"verdicts": [{"claim": COST, "verdict": "supported"}], "raw": "{}"})
    assert old.source == ARGUMENT_BASE and old.dropped == 0 and old.score == 1.0
    assert FactCheck(source="fact source facts.jsonl").title == "supported by the fact source facts.jsonl"


# ---------------------------------------------------------------- fact sources


def write_statements(path: Path, *lines: object) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return path


async def no_base():
    raise AssertionError("a fact source apart from the argument base never opens it")


async def test_a_jsonl_fact_source_supports_a_claim_its_statement_states(tmp_path):
    facts = write_statements(tmp_path / "facts.jsonl", {"id": "who-1", "text": "Measles vaccines prevent measles."},
                             {"id": 2, "text": NEGATED.text})
    source = await open_fact_source(str(facts), no_base, tmp_path / "data")
    with FakeServer([chat_reply("contradicted")]) as fake:
        async with LLMClient(fake.profile()) as client:
            stated, stated_usage = await judge_claim(client, source.retriever, "measles vaccines prevent measles")
        assert verdict_requests(fake) == []
    assert stated.verdict == "supported" and stated.evidence_ids[0] == "who-1" and stated_usage.calls == 0
    assert source.name == "fact source facts.jsonl"
    [built] = (tmp_path / "data" / "index" / "facts").iterdir()  # indexed once per content, nothing left aside
    again = await open_fact_source(str(facts), no_base, tmp_path / "data")
    assert again.retriever.index.directory == built and [p.name for p in built.parent.iterdir()] == [built.name]


@pytest.mark.parametrize("line, field, problem", [
    ({"id": "b"}, "text", "missing"),
    ({"id": True, "text": "Vaccines work."}, "id", "expected a non-empty string or an integer"),
    ({"id": "b", "text": "  "}, "text", "expected a non-empty string"),
    ({"id": "a", "text": "Vaccines work."}, "id", "already the id of line 1"),
    ('["a", "Vaccines work."]', None, "expected an object"),
])
async def test_a_bad_statement_line_names_file_line_and_field(tmp_path, line, field, problem):
    facts = write_statements(tmp_path / "facts.jsonl", {"id": "a", "text": "Measles vaccines prevent measles."}, line)
    with pytest.raises(DataFormatError) as error:
        await open_fact_source(str(facts), no_base, tmp_path / "data")
    assert (error.value.path, error.value.line, error.value.field) == (str(facts), 2, field)
    assert problem in str(error.value) and str(error.value).startswith(f"{facts}, line 2")
    assert not (tmp_path / "data" / "index" / "facts").exists()  # refused before anything is written


def test_a_fact_statement_file_with_no_statement_is_refused(tmp_path):
    with pytest.raises(DataFormatError, match="holds no statement"):
        fact_statements(write_statements(tmp_path / "empty.jsonl", ""))


def test_the_inspire_table_of_the_config_is_checked(argtui_home):
    config_file = argtui_home / "config.toml"
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text('[inspire]\nfacts = 3\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[inspire\]: facts"):
        load_config()


def rad_debate(path: Path) -> Path:
    """A student message that makes no factual claim, and a bot reply that is its retrieved argument verbatim."""
    path.write_text(json.dumps({"id": "d1", "claim": TOPIC, "simulated_debate": [
        {"role": "user", "content": "Uniforms make everyone equal."},
        {"role": "assistant", "content": COST, "arguments": [{"id": "cost", "text": COST}]},
    ]}) + "\n", encoding="utf-8")
    return path


def test_eval_inspire_facts_checks_claims_against_the_source_without_the_turns_own_argument(tmp_path, capsys):
    facts = write_statements(tmp_path / "facts.jsonl", {"id": "cost", "text": COST}, {"id": SURVEY.id, "text": SURVEY.text})
    with FakeServer(scripted([COST], "no evidence")) as fake:
        load_config().add_backend(fake.profile(), make_default=True)
        assert main(["eval", "inspire", "--debates", str(rad_debate(tmp_path / "rad.jsonl")),
                     "--facts", str(facts), "--json"]) == 0
    capsys.readouterr()
    store = JudgmentStore(Runtime().db, "inspire")
    [judge] = store.judges()
    user, bot = sorted(map(turn_judgment, store.latest(judge.judge).values()), key=lambda t: t.position)
    assert user.score.facts.verdicts == () and user.score.facts.dropped == 1  # the claim is not the student's
    [verdict] = bot.score.facts.verdicts
    assert verdict.evidence_ids == (SURVEY.id,) and verdict.verdict == "no evidence"
    assert bot.score.facts.source == "fact source facts.jsonl"


async def test_the_coach_checks_claims_against_the_configured_fact_source(tmp_path):
    facts = write_statements(tmp_path / "facts.jsonl", {"id": SURVEY.id, "text": SURVEY.text})
    config = load_config()
    config.inspire = InspireSettings(facts=str(facts))
    config.save()
    runtime = Runtime()
    repository = DebateRepository(runtime.db)
    debate = repository.create(TOPIC, "pro", backend="fake")
    DebateRecords(repository).add_message(debate.id, "Families pay a lot for uniforms, a survey found.")
    with FakeServer(scripted(["Families pay for school uniforms"], "supported")) as fake:
        runtime.config.add_backend(fake.profile(), make_default=True)
        try:
            judgment = await TASK.score_stored_turn(runtime, await runtime.client(), debate.id, 0)
        finally:
            await runtime.aclose()
    assert judgment.score.facts.source == "fact source facts.jsonl"
    [verdict] = judgment.score.facts.verdicts
    assert verdict.evidence_ids == (SURVEY.id,) and verdict.verdict == "supported" and verdict.calls == 1


async def test_an_elasticsearch_fact_source_is_one_index_of_a_cluster_named_without_its_credentials(tmp_path):
    source = await open_fact_source("http://reader:hunter22secret@127.0.0.1:9/facts", no_base, tmp_path)
    try:
        assert source.retriever.index == "facts" and "hunter22secret" not in source.name
        assert source.name.startswith("fact source http://") and source.name.endswith("@127.0.0.1:9/facts")
    finally:
        await source.retriever.aclose()
    with pytest.raises(ArgtuiError, match="expected http"):
        await open_fact_source("http://127.0.0.1:9200/", no_base, tmp_path)


async def test_claims_are_checked_against_a_real_elasticsearch_index(osmem_es):
    """The fact source of an Elasticsearch index (an osmem-server here) decides as the embedded
    one: a statement stating the claim supports it with no model call, a negated one is asked."""
    url, node_class = osmem_es
    stated = Argument(id="who-1", text="Measles vaccines prevent measles.", topic="vaccines")
    retriever = ElasticsearchRetriever(connect_elasticsearch(url, node_class=node_class),
                                       f"argtui-facts-{uuid.uuid4().hex[:10]}", url=url)
    try:
        await retriever.push([stated, NEGATED], 2)
        with FakeServer([chat_reply("contradicted")]) as fake:
            async with LLMClient(fake.profile()) as client:
                supported, supported_usage = await judge_claim(client, retriever, "measles vaccines prevent measles")
                negated, negated_usage = await judge_claim(client, retriever, "Vaccines cause autism")
            asked = verdict_requests(fake)
    finally:
        await retriever.client.indices.delete(index=retriever.index)
        await retriever.aclose()
    assert (supported.verdict, supported.evidence_ids[0], supported_usage.calls) == ("supported", "who-1", 0)
    assert (negated.verdict, negated_usage.calls) == ("contradicted", 1)
    assert len(asked) == 1 and NEGATED.text in asked[0]


async def test_the_configured_fact_source_and_its_content_are_part_of_the_judge(tmp_path):
    """A verdict checked against one source is never reused for another: the config's source
    (when --facts is not given) and a statements file's content are in the judge's identity."""
    facts = write_statements(tmp_path / "facts.jsonl", {"id": SURVEY.id, "text": SURVEY.text})
    runtime = Runtime()
    try:
        with FakeServer(scripted([], "supported")) as fake:
            runtime.config.add_backend(fake.profile(), make_default=True)
            client = await runtime.client()

            async def judge_of(options):
                return await judge_id(TASK, client, "inspire", await TASK.settled_options(runtime, options))

            on_base = await judge_of(InspireOptions())
            runtime.config.inspire = InspireSettings(facts=str(facts))
            configured = await judge_of(InspireOptions())
            assert configured != on_base and configured == await judge_of(InspireOptions(facts=str(facts)))
            write_statements(facts, {"id": SURVEY.id, "text": "Families pay nothing for uniforms."})
            assert await judge_of(InspireOptions()) != configured
            assert await judge_of(InspireOptions(facts="base")) == on_base
    finally:
        await runtime.aclose()


async def test_a_message_is_asked_for_as_many_claims_and_derivations_as_it_has_sentences():
    one = "Uniforms save parents money over a school year."
    five = "Uniforms are cheap. They last. Parents buy fewer clothes. Nobody is mocked. Dr. Lee agrees."
    with FakeServer(scripted([], "supported")) as fake:
        async with LLMClient(fake.profile()) as client:
            for text in (one, five):
                await extract_claims(client, TOPIC, text)
                await translate(client, text, TOPIC)

    def asked(body: dict) -> tuple[int, int]:
        schema = body["response_format"]["json_schema"]["schema"]
        return schema["properties"][next(iter(schema["properties"]))]["maxItems"], body["max_tokens"]

    claims = [asked(b) for b in fake.bodies if b["messages"][-1]["content"].startswith("List the factual claims")]
    derivations = [asked(b) for b in fake.bodies if b["messages"][0]["content"].startswith("Translate the reasoning")]
    assert [limit for limit, _ in claims] == [1, MAX_CLAIMS] and [limit for limit, _ in derivations] == [1, MAX_DERIVATIONS]
    assert claims[0][1] < claims[1][1] and derivations[0][1] < derivations[1][1]  # the caps follow the schemas
    extraction_prompts = [b["messages"][-1]["content"] for b in fake.bodies if "List at most" in b["messages"][-1]["content"]]
    assert ["List at most 1;" in p for p in extraction_prompts] == [True, False]
