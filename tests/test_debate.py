"""The debate trainer: pipeline against the real llama-server and tantivy index, failures,
storage, the RAD export shape."""

from __future__ import annotations

import gzip
import json

import pytest

from argtui.config import load_config
from argtui.runtime import Runtime
from engines.components.records import text_key, typed_item, verdict_of
from engines.components.types import ComponentResult, Span, Turn
from engines.debate.exchange import DebateExchange
from engines.debate.export import exchanges, full_record, rad_run
from engines.debate.messages import trim_message
from engines.debate.opponent import BotTurn, EvidenceItem, StepFinished, StepStarted, TurnCompleted, TurnFailed
from engines.debate.pipeline import STEPS, partial_reply
from engines.debate.replies import WORD_LIMIT
from engines.debate.records import ComponentRecord, DebateRecords, GriceRecord, TurnSteps
from engines.debate.schemas import SearchPlan, SearchQuery, StrategyAnalysis
from engines.debate.session import DebateSession, JudgingChoice
from engines.grice.types import GriceContext, GriceJudgment, MetricJudgment
from engines.judging.store import JudgmentStore
from engines.judging.verdict import JudgeId
from engines.llm.client import LLMClient
from engines.retrieval.types import Argument
from engines.tasks.debate_judges import TaskJudges, grice_item
from engines.tasks.grice import turn_verdict
from fakes import FakeServer, chat_reply
from store.debates import DebateRepository

CLAIM = "School uniforms should be mandatory"



def test_partial_reply_follows_a_streaming_json_object():
    assert partial_reply('{"response": "Uniforms cost') == "Uniforms cost"
    assert partial_reply('{"response": "a \\"quoted\\" wo') == 'a "quoted" wo'
    assert partial_reply('{"response": "ends with escape \\') == "ends with escape "
    assert partial_reply('{"justification": "x"') == ""


def test_a_reply_is_trimmed_to_the_word_limit():
    text = " ".join(f"w{i}" for i in range(80))
    assert trim_message(text, WORD_LIMIT).split() == [f"w{i}" for i in range(WORD_LIMIT)]


def test_exchanges_pair_messages_with_the_reply_that_answered_them(db):
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "pro")
    repository.add_turn(debate.id, "user", "first")
    repository.add_turn(debate.id, "assistant", "", error="step strategy: invalid")
    repository.add_turn(debate.id, "user", "second")
    repository.add_turn(debate.id, "assistant", "reply")
    pairs = exchanges(DebateRecords(repository).turns(debate.id))
    assert [(u.content, b.content) for u, b in pairs] == [("second", "reply")]


def garbage_backend(server: FakeServer) -> LLMClient:
    server.answer = [chat_reply('{"tone": "Loud"', finish_reason="length", prompt_tokens=10, completion_tokens=5)]
    return LLMClient(server.profile(name="garbage", kind="vllm"))


async def test_invalid_step_output_gives_level_0_s_answer_marked_with_the_stored_failure(db, retriever, fake_server):
    client = garbage_backend(fake_server)
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "pro")
    session = DebateSession(repository, debate, client, retriever)
    session.add_user_message("Uniforms stop bullying.")
    events = []
    stored, outcome, failure = await session.bot_turn(events.append)
    assert failure is None and not any(isinstance(event, TurnFailed) for event in events)
    fell_back = outcome.fallback_from
    assert fell_back.step == "strategy" and '{"tone": "Loud"' in fell_back.raw
    assert "invalid output after 2 attempts" in fell_back.error
    # Retried once with a new seed, then given up; each cut answer asked again with a larger cap first.
    assert client.accounting.requests == 4
    [used] = outcome.used_arguments
    assert outcome.reply == used.text.strip() and outcome.level == 2
    assert stored.error is None and stored.content == outcome.reply and stored.fallback_from == fell_back
    assert [event.step for event in events if isinstance(event, StepStarted)] == ["strategy", "fallback"]
    assert DebateRecords(repository).turns(debate.id)[1] == stored
    assert [t.role for t in session.history()] == ["user", "assistant"]  # level 0's answer is dialogue
    await client.aclose()


STRATEGY = StrategyAnalysis(
    tone="Respectful", justification_tone="calm", style="Logical", justification_style="clear",
    approach_strategy="Focused", justification_approach="weakest point", type_of_arguments="Logical",
    justification_type="facts", perspective="Practical/pragmatic", justification_perspective="schools",
)


def test_what_a_session_stores_reads_back_as_the_same_records(db):
    repository = DebateRepository(db)
    records = DebateRecords(repository)
    debate = repository.create(CLAIM, "pro")
    message = records.add_message(debate.id, "Uniforms stop bullying. They are cheap.")
    query = SearchQuery(opponent_idea="uniforms stop bullying", field_to_look="ATTACK", justification="main")
    argument = Argument("ibm-1", "Bullies find other targets.", "uniforms", attacks="Uniforms", source="ibm",
                        tags=("school",), relation="attacks")
    steps = TurnSteps(strategy=STRATEGY, queries=SearchPlan(SEARCH_1=query))
    bot = BotTurn(
        reply="Bullies find other targets.", words=4, length_action=None, strategy=STRATEGY, queries=[query],
        evidence=[EvidenceItem(argument, "attack", 1, "attacks", 2.5, selected=True, final=True, used=True),
                  EvidenceItem(Argument("ibm-2", "Unused.", "uniforms"), "text", 1, None, 1.0),
                  EvidenceItem(Argument("ibm-3", "A chain's base.", "uniforms"), "support", 1, "supports", 0.5,
                               context=True)],
        steps=steps, seconds=3.0,
    )
    reply = records.add_reply(debate.id, bot)
    assert reply.steps == steps and reply.seconds == 3.0
    assert [(row.id, row.tags, row.relation, row.relation_found, row.used, row.context) for row in reply.evidence] == [
        ("ibm-1", ["school"], "attacks", "attacks", True, False), ("ibm-2", [], None, None, False, False),
        ("ibm-3", [], None, "supports", False, True)]
    judgment = GriceJudgment("BEST", {"quality": MetricJudgment(
        metric="quality", method="Analyzer5", answer="no", p_yes=0.2, rationale="unsupported", raw="No",
        source="logprobs", seconds=0.5)}, seconds=0.6)
    grice = GriceRecord.of(judgment)
    # The judgments live in the judgment store; the turns link to them.
    grice_judge = JudgeId.of("local", "m", "BEST")
    item = grice_item(debate.id, reply, GriceContext([("user", message.content)], reply.content))
    JudgmentStore(db, "grice").save(grice_judge, [(item, turn_verdict(judgment))])
    records.link_judgment(reply.id, "grice", "BEST", grice_judge.name, "grice", [item.key])
    result = ComponentResult(Span(0, 24, "Uniforms stop bullying."), "mad", "Claim", {"Claim": 0.7, "Premise": 0.3},
                             transcript=(Turn("proponent", "A stance.", "Claim"),), reason="the thesis")
    components = [ComponentRecord.of(result)]
    parts_judge = JudgeId.of("local", "m", "mad")
    JudgmentStore(db, "components").save(parts_judge, [(typed_item(message.content, result.span), verdict_of(result))])
    records.link_judgment(message.id, "components", "mad", parts_judge.name, "components",
                          [text_key(message.content, result.span)])
    user, bot_turn = records.turns(debate.id)
    assert user.components == components and user.grice is None and user.steps is None
    assert bot_turn.grice == grice and bot_turn.components is None
    assert (bot_turn.grice.metrics["quality"].answer, bot_turn.grice.metrics["quality"].p_yes) == ("no", 0.2)
    assert user.components[0].transcript[0].label == "Claim" and user.components[0].span.end == 24
    assert bot_turn.evidence == reply.evidence and [a.method for a in bot_turn.analyses] == ["BEST"]
    assert bot_turn.analyses[0].judge == grice_judge.name and bot_turn.analyses[0].link.items == [item.key]
    JudgmentStore(db, "grice").save(grice_judge, [(item, turn_verdict(GriceJudgment("BEST", {}, seconds=0.1)))])
    assert records.turns(debate.id)[1].grice.metrics == {}  # judged again: the turn shows the store's verdict


def test_a_debate_stored_by_the_previous_release_loads_and_exports(db):
    """Rows written before the records: `model_dump()` of the steps, `asdict` of the judgments."""
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "con")
    user = repository.add_turn(debate.id, "user", "Uniforms limit self-expression.")
    text = "Uniforms are cheap."
    steps = {
        "strategy": STRATEGY.model_dump(),
        "queries": {"SEARCH_1": {"opponent_idea": "self-expression", "field_to_look": "ATTACK",
                                 "justification": "the point"}},
        "retrieval": {"graphs": [{"idea": "self-expression", "goal": "ATTACK", "nodes": [
            {"strategy": "attack", "score": 3.2, "id": "ibm-1", "text": text, "topic": "t", "attacks": "x",
             "supports": None, "tags": [], "source": "ibm", "relation": "attacks"}],
            "edges": [{"source": "ibm-1", "target": "idea", "relation": "attacks"}]}]},
        "selection": {"SEARCH_1": {"arguments": [text], "justification": "best"}},
        "final": {"aspect_argument_1": "ATTACK to self-expression", "retrieved_argument_1": text,
                  "justification_argument_1": "cost"},
        "reply": {"response": "They cut costs.", "justification": "j", "arguments": [text],
                  "length_action": "trimmed"},
    }
    evidence = [{"id": "ibm-1", "text": text, "topic": "t", "attacks": "x", "supports": None, "tags": [],
                 "source": "ibm", "relation": "attacks", "strategy": "attack", "query": 1,
                 "relation_found": "attacks", "score": 3.2, "selected": True, "final": True, "used": True}]
    bot = repository.add_turn(debate.id, "assistant", "They cut costs.", steps_json=json.dumps(steps),
                              evidence_json=json.dumps(evidence), length_action="trimmed", seconds=1.5)
    metric = {"metric": "manner", "method": "Analyzer1", "answer": None, "p_yes": None, "rationale": "",
              "raw": "Perhaps", "source": "", "error": "not yes or no", "calls": 3, "seconds": 0.9,
              "prompt_tokens": 400, "completion_tokens": 9}
    repository.add_analysis(bot.id, "grice", "BEST", json.dumps(
        {"strategy": "BEST", "metrics": {"manner": metric}, "seconds": 1.0}))
    repository.add_analysis(user.id, "components", "cot", json.dumps({"components": [
        {"span": {"start": 0, "end": 31, "text": "Uniforms limit self-expression."}, "method": "cot",
         "label": None, "distribution": {}, "distribution_source": "", "transcript": [], "reason": "",
         "raw": "Thesis", "proponent_label": None, "opponent_label": None, "judge_distribution": {},
         "skipped": False, "calls": 1, "cached_calls": 1, "seconds": 0.2, "prompt_tokens": 80,
         "completion_tokens": 2}]}))
    _, reply = DebateRecords(repository).turns(debate.id)
    assert reply.steps.strategy == STRATEGY and reply.steps.reply.length_action == "trimmed"
    assert reply.steps.retrieval.graphs[0].edges[0].target == "idea"
    assert not reply.steps.retrieval.graphs[0].nodes[0].context and not reply.evidence[0].context  # before the flag
    assert reply.steps.selection["SEARCH_1"].arguments == [text] and reply.steps.final.selected()[0][1] == text
    assert reply.grice.metrics["manner"].error == "not yes or no" and reply.grice.calls == 3

    record = json.loads(json.dumps(full_record(repository, debate)))
    user_record, bot_record = record["turns"]
    assert user_record["steps"] == {} and user_record["analyses"][0]["result"]["components"][0]["raw"] == "Thesis"
    assert list(bot_record["steps"]) == [step for step, _ in STEPS]
    assert bot_record["evidence"][0]["relation_found"] == "attacks"
    assert bot_record["analyses"] == [{"kind": "grice", "method": "BEST", "judge": "", "result": {
        "strategy": "BEST", "seconds": 1.0, "metrics": {"manner": {
            key: metric[key] for key in ("metric", "method", "answer", "p_yes", "rationale", "error", "raw",
                                         "source", "calls", "seconds")}}}}]
    [exchange] = rad_run(debate, DebateRecords(repository).turns(debate.id))["simulation"]["userTurns"]
    assert exchange["systemResponse"]["response"]["arguments"][0]["original"] == "attacks"


@pytest.mark.llm
async def test_two_turn_scripted_debate_against_the_real_model(argtui_home, llama_profile, retriever):
    # The five steps' structure is under test, not the shared server's speed: a call may wait
    # behind work an earlier test left on the server.
    profile = llama_profile.model_copy(update={"timeout_s": 300})
    load_config().add_backend(profile, make_default=True)
    runtime = Runtime()
    client = LLMClient(profile)
    repository = DebateRepository(runtime.db)
    debate = repository.create(CLAIM, "pro", backend=llama_profile.name)
    session = DebateSession(repository, debate, client, retriever, choice=JudgingChoice("ZSL", "vanilla"))
    exchange = DebateExchange(session, TaskJudges(runtime, client), coach=False)
    messages = [
        "School uniforms reduce bullying because nobody is mocked for their clothes.",
        "Uniforms also save parents money over a school year.",
    ]
    results = []
    for message in messages:
        events = []
        result = await exchange.send(message, lambda event: events.append(getattr(event, "event", None)))
        events = [event for event in events if event is not None]  # the bot's own events
        results.append(result)
        assert isinstance(events[0], StepStarted) and events[0].step == "strategy"
        assert result.failure is None, result.failure
        assert result.judgment is not None and set(result.judgment.metrics) == {
            "quantity", "quality", "relation", "manner"
        }
        assert result.components and all(c.span.text for c in result.components)
        turn = result.bot
        started = [e.step for e in events if isinstance(e, StepStarted)]
        names = [step for step, _ in STEPS]
        if turn.fallback_from is not None:  # a step the small model failed: level 0 answered, and says so
            assert started == [*names[: names.index(turn.fallback_from.step) + 1], "fallback"]
            assert turn.used_arguments and turn.reply == turn.used_arguments[0].text.strip()
            continue
        assert started == names
        assert 1 <= turn.words <= WORD_LIMIT
        assert 1 <= len(turn.queries) <= 3
        used = turn.used_arguments
        assert used, "the reply names the arguments it used"
        found = await retriever.get([a.id for a in used])
        assert [a.id for a in found] == [a.id for a in used]
        assert isinstance(events[-1], TurnCompleted)
        [last_step] = [e for e in events if isinstance(e, StepFinished) and e.step == "reply"]
        assert {row.id for row in last_step.evidence if row.used} == {a.id for a in used}  # rows repeat across queries
    turns = DebateRecords(repository).turns(debate.id)
    assert [t.role for t in turns] == ["user", "assistant"] * 2
    assert sorted(a.kind for t in turns for a in t.analyses) == ["components", "components", "grice", "grice"]
    for (user, bot), result in zip(exchanges(turns), results):  # reopening gives back what the exchange had
        assert user.components == result.components and bot.grice == result.judgment
        assert bot.content == result.bot.reply and bot.steps.model_dump() == result.bot.steps.model_dump()
    run = rad_run(debate, turns)
    replies = [u["systemResponse"]["response"] for u in run["simulation"]["userTurns"]]
    assert [u["utterance"] for u in run["simulation"]["userTurns"]] == messages
    assert [[a["id"] for a in reply["arguments"]] for reply in replies] == [
        [row.id for row in bot.used_arguments] for _, bot in exchanges(turns)]
    assert [{a["id"] for a in reply["arguments"]} for reply in replies] == [
        {a.id for a in result.bot.used_arguments} for result in results]
    await client.aclose()
    await runtime.aclose()


def key_shape(value):
    """Keys and nesting of a JSON value, with list items merged."""
    if isinstance(value, dict):
        return {key: key_shape(item) for key, item in value.items()}
    if isinstance(value, list):
        shapes = [key_shape(item) for item in value]
        merged = {}
        for shape in shapes:
            if isinstance(shape, dict):
                merged.update(shape)
        return [merged] if merged else []
    return None


@pytest.mark.shared_data
def test_rad_export_has_the_nesting_of_the_official_run_shape(db, shared_data):
    with gzip.open(shared_data / "touche25-rad" / "toy-simulation.genirsim.jsonl.gz", "rt") as handle:
        toy = json.loads(handle.readline())
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "con")
    repository.add_turn(debate.id, "user", "Uniforms limit self-expression.")
    repository.add_turn(
        debate.id, "assistant", "They also cut costs.", seconds=1.5,
        evidence_json=json.dumps([{"id": "ibm-1", "text": "Uniforms are cheap.", "topic": "t", "tags": [],
                                   "attacks": None, "supports": "Uniforms", "relation": "supports", "score": 3.2,
                                   "used": True},
                                  {"id": "ibm-2", "text": "unused", "used": False}]),
    )
    run = rad_run(debate, DebateRecords(repository).turns(debate.id))
    ours, theirs = key_shape(run), key_shape(toy)
    turn, toy_turn = ours["simulation"]["userTurns"][0], theirs["simulation"]["userTurns"][0]
    assert set(ours["simulation"]) == set(theirs["simulation"])
    assert set(ours["simulation"]["configuration"]) == set(theirs["simulation"]["configuration"])
    assert set(turn) == set(toy_turn)
    assert set(turn["systemResponse"]) == set(toy_turn["systemResponse"])
    assert set(turn["systemResponse"]["response"]) == set(toy_turn["systemResponse"]["response"])
    argument_keys = set(turn["systemResponse"]["response"]["arguments"][0])
    toy_argument_keys = set(toy_turn["systemResponse"]["response"]["arguments"][0])
    assert argument_keys == toy_argument_keys - {"key"}  # RAD's "key" is the simulator's own field
    assert [a["id"] for a in run["simulation"]["userTurns"][0]["systemResponse"]["response"]["arguments"]] == ["ibm-1"]
