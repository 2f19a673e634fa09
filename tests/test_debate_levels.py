"""Opponent levels, reply checks and step time limits, against the real tantivy index and a
fake backend that scripts the model's answers and counts the requests."""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace

import httpx
import pytest

from argtui.runtime import Runtime
from engines.debate import prompts
from engines.debate.exchange import DebateExchange
from engines.debate.levels import (
    LEVELS, default_level, get_level, labels_during_reply, opponent,
)
from engines.debate.opponent import (
    FALLBACK_STEP,
    DebateSetup,
    DialogueTurn,
    DraftWriting,
    ReplyProgress,
    ReplyRejected,
    StepFailed,
    StepFinished,
    StepStarted,
    TurnCompleted,
    TurnFailed,
    counter_arguments,
)
from engines.debate.pipeline import STEPS
from engines.debate.records import DebateRecords
from engines.debate.replies import WORD_LIMIT, check_text, unlabelled
from engines.debate.session import DebateSession, JudgingChoice
from engines.errors import ArgtuiError
from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from engines.tasks.debate_judges import TaskJudges
from fakes import FakeServer, Reply, chat_reply, error_reply, schema_instance, stream_reply
from store.debates import DebateRepository
from store.llm_cache import ResponseCache

CLAIM = "We should abandon the use of school uniform"  # a topic of the bundled corpus
SETUP = DebateSetup(CLAIM, "con")  # the student defends uniforms, the bot argues for abandoning them
MESSAGE = "School uniforms reduce bullying because nobody is mocked for their clothes."
HISTORY = [DialogueTurn("user", MESSAGE)]
ECHO = "A string with the response to your last opponent message. This answer has to be of a maximum of 60 words."
TOO_LONG = " ".join(["word"] * (WORD_LIMIT + 1))
REPLY_TEMPLATES = (prompts.RESPONSE_GENERATION, prompts.RETRY_NOTE)



def fake_client(server: FakeServer) -> LLMClient:
    return LLMClient(server.profile(kind="vllm", retries=0))


async def run(bot, history=HISTORY) -> list:
    return [event async for event in bot.run_turn(SETUP, history)]


def streamed(text: str) -> Reply:
    """A streamed answer in a few pieces."""
    return stream_reply(*(text[i : i + 20] for i in range(0, len(text), 20)))


def stance_checks(server: FakeServer) -> list[dict]:
    return [body for body in server.bodies if "structured_outputs" in body]


# ---------------------------------------------------------------- the reply checks (pure)


@pytest.mark.parametrize("text", [
    ECHO,
    "This answer has to be of a maximum of 60 words.",
    "justification_tone: uniforms are cheap",
    "Uniforms are cheap, uniforms are cheap, uniforms are cheap.",
    "As Turn N showed, uniforms are cheap.",
    TOO_LONG,
    "",
])
def test_the_text_checks_reject_echoes_loops_placeholders_long_and_empty_replies(text):
    assert check_text(text, REPLY_TEMPLATES) is not None


@pytest.mark.parametrize("text", [
    "My response: Uniforms are an added burden on poor parents.",
    "Reply: Uniforms are an added burden on poor parents.",
    "1. Uniforms are an added burden on poor parents.",
])
def test_a_reply_loses_the_label_a_model_writes_before_it(text):
    assert unlabelled(text, REPLY_TEMPLATES) == "Uniforms are an added burden on poor parents."


def test_a_reply_may_reuse_the_dialogue_and_the_arguments_it_was_given():
    reply = ("Uniforms do not stop bullying: school uniforms are an added burden on already poor parents "
             "and not the money-saver they like to claim.")
    assert check_text(reply, REPLY_TEMPLATES) is None
    assert check_text(" ".join(f"word{n}" for n in range(WORD_LIMIT)), REPLY_TEMPLATES) is None
    assert check_text("Uniforms cost.", REPLY_TEMPLATES, complete=False).kind == "length"


# ---------------------------------------------------------------- the levels


def test_levels_are_numbered_named_and_described_for_the_screen():
    assert [(level.number, bool(level.name), bool(level.description)) for level in LEVELS] == [
        (0, True, True), (1, True, True), (2, True, True)]
    assert get_level(2).steps == STEPS and [step for step, _ in get_level(1).steps] == ["retrieval", "reply"]
    with pytest.raises(ArgtuiError, match="no opponent level 3"):
        get_level(3)


def test_the_default_level_depends_on_the_backend():
    assert default_level(BackendProfile(name="embedded", kind="llamacpp", embedded=True)) in (0, 1)
    assert default_level(BackendProfile(name="gpu", kind="vllm", model="meta-llama/Llama-3.1-8B-Instruct")) == 2


async def test_level_0_answers_with_a_stored_argument_word_for_word_and_no_model_call(retriever, fake_server):
    fake_server.answer = [error_reply(500)]  # any model call would fail the turn
    client = fake_client(fake_server)
    events = await run(opponent(0, client, retriever), HISTORY)
    turn = events[-1].turn
    assert isinstance(events[-1], TurnCompleted) and fake_server.bodies == [] and turn.requests == 0
    assert [type(e) for e in events] == [StepStarted, ReplyProgress, StepFinished, TurnCompleted]
    [used] = turn.used_arguments
    [stored] = await retriever.get([used.id])
    assert turn.reply == stored.text and turn.level == 0 and not turn.fallback
    # on the bot's side of the claim: the student is against abandoning uniforms, the argument supports it
    assert stored.topic == CLAIM and stored.relation == "supports"
    assert turn.steps.retrieval.graphs[0].idea == MESSAGE and turn.steps.level == 0
    await client.aclose()


async def test_level_0_does_not_repeat_an_argument_it_already_gave(retriever, fake_server):
    client = fake_client(fake_server)
    bot = opponent(0, client, retriever)
    first = (await run(bot))[-1].turn
    history = [*HISTORY, DialogueTurn("assistant", first.reply), DialogueTurn("user", MESSAGE)]
    second = (await run(bot, history))[-1].turn
    assert second.reply != first.reply and second.used_arguments[0].topic == CLAIM
    await client.aclose()


async def test_a_debate_runs_the_bot_of_its_level_and_stores_the_level(db, retriever, fake_server):
    client = fake_client(fake_server)
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "con", level=0)
    session = DebateSession(repository, debate, client, retriever)
    session.add_user_message(MESSAGE)
    stored, outcome, failure = await session.bot_turn()
    assert failure is None and fake_server.bodies == []
    assert stored.level == 0 and stored.content == outcome.reply
    assert [row.id for row in stored.used_arguments] == [a.id for a in outcome.used_arguments]
    assert DebateRecords(repository).turns(debate.id)[1].level == 0
    await client.aclose()


def quick_backend(*drafts: str):
    """Level 1's answers: the drafts in turn (streamed), "no" to every stance check."""
    answers = iter(drafts)

    def answer(body: dict) -> Reply:
        return streamed(next(answers)) if body.get("stream") else chat_reply("no")

    return answer


async def test_level_1_adapts_the_best_argument_in_one_model_call(retriever, fake_server):
    reply = "Uniforms do not end bullying; children still find reasons to mock each other."
    fake_server.answer = quick_backend(reply)
    client = fake_client(fake_server)
    events = await run(opponent(1, client, retriever))
    turn = events[-1].turn
    assert turn.reply == reply and turn.level == 1 and not turn.fallback
    generations = [body for body in fake_server.bodies if body.get("stream")]
    assert len(generations) == 1 and len(stance_checks(fake_server)) == 1  # one draft, one stance check
    [used] = turn.used_arguments
    assert f'"{used.text}"' in generations[0]["messages"][0]["content"]  # the argument it was asked to adapt
    assert [e.step for e in events if isinstance(e, StepStarted)] == ["retrieval", "reply"]
    await client.aclose()


async def test_a_draft_the_stance_check_rejects_is_written_again(retriever, fake_server):
    drafts = iter(["Uniforms are great and stop bullying.", "Bullies find other targets anyway."])
    stances = iter(["yes", "no"])  # the first draft argues the student's side

    def answer(body: dict) -> Reply:
        return streamed(next(drafts)) if body.get("stream") else chat_reply(next(stances))

    fake_server.answer = answer
    client = fake_client(fake_server)
    events = await run(opponent(1, client, retriever))
    [rejected] = [e for e in events if isinstance(e, ReplyRejected)]
    assert "opponent's side" in rejected.reason and rejected.text == "Uniforms are great and stop bullying."
    turn = events[-1].turn
    assert turn.reply == "Bullies find other targets anyway." and not turn.fallback
    assert turn.steps.reply.rejected[0].kind == "stance"
    # Only the draft that passed becomes the reply; each draft streams as a draft until then.
    assert [e.text for e in events if isinstance(e, ReplyProgress)] == ["Bullies find other targets anyway."]
    writing = [e for e in events if isinstance(e, DraftWriting)]
    assert {e.attempt for e in writing} == {1, 2} and writing[-1].words == 5
    drafts = {e.attempt: e.text for e in writing}  # the last text of each
    assert drafts == {1: "Uniforms are great and stop bullying.", 2: "Bullies find other targets anyway."}
    assert len([e for e in writing if e.attempt == 1]) > 1  # it grew piece by piece
    await client.aclose()


# ---------------------------------------------------------------- level 2 on a scripted backend


def _choices(prop: dict) -> list[str]:
    """The texts a schema field allows (an enum, a const, or either of them or null)."""
    for option in prop.get("anyOf", [prop]):
        if "enum" in option or "const" in option:
            return option.get("enum") or [option["const"]]
    raise AssertionError(f"no choices in {prop}")


def five_steps(*responses: str, delay_s: float = 0.0):
    """Valid answers to steps 1-3 (read off each request's schema), two arguments in step 4,
    the given step-5 responses in turn naming only the second of them, and "no" to every
    stance check."""
    streams = iter(responses)

    def answer(body: dict) -> Reply:
        if "structured_outputs" in body:
            return chat_reply("no")
        schema = body["response_format"]["json_schema"]["schema"]
        props = schema["properties"]
        if schema["title"] == "FinalSelection":
            aspect, texts = _choices(props["aspect_argument_1"])[0], _choices(props["retrieved_argument_1"])
            final = {"aspect_argument_1": aspect, "retrieved_argument_1": texts[0], "justification_argument_1": "a",
                     "aspect_argument_2": aspect, "retrieved_argument_2": texts[1], "justification_argument_2": "b"}
            return chat_reply(json.dumps(final))
        if schema["title"] == "Reply":
            named = _choices(props["arguments"]["items"])[1]
            return streamed(json.dumps({"response": next(streams), "justification": "j", "arguments": [named]}))
        if schema["title"] == "QuerySelection":  # as many as the schema asks for (three of six)
            count = props["arguments"]["minItems"]
            return chat_reply(json.dumps({"arguments": _choices(props["arguments"]["items"])[:count],
                                          "justification": "the strongest"}))
        return replace(chat_reply(json.dumps(schema_instance(schema, "school uniforms reduce bullying"))),
                       delay_s=delay_s)

    return answer


async def test_used_evidence_is_what_step_5_named_by_id(retriever, fake_server):
    reply = "Bullies pick on other things than clothes, so uniforms change little."
    fake_server.answer = five_steps(reply)
    client = fake_client(fake_server)
    events = await run(opponent(2, client, retriever))
    turn = events[-1].turn
    assert isinstance(events[-1], TurnCompleted) and turn.reply == reply and not turn.fallback
    first, second = turn.steps.final.selected()[0][1], turn.steps.final.selected()[1][1]
    used = {item.argument.id for item in turn.evidence if item.used}
    assert used == {item.argument.id for item in turn.evidence if item.argument.text == second}
    assert not used & {item.argument.id for item in turn.evidence if item.argument.text == first}
    [last] = [e for e in events if isinstance(e, StepFinished) and e.step == "reply"]
    assert {row.id for row in last.evidence if row.used} == used
    await client.aclose()


async def test_an_echo_then_a_61_word_reply_fall_back_to_the_best_argument(retriever, fake_server):
    fake_server.answer = five_steps(ECHO, TOO_LONG)
    client = fake_client(fake_server)
    events = await run(opponent(2, client, retriever))
    turn = events[-1].turn
    best = turn.steps.final.selected()[0][1]
    assert turn.fallback and turn.reply == best and turn.steps.reply.fallback
    assert [d.kind for d in turn.steps.reply.rejected] == ["unmeant", "length"]
    assert [e.attempt for e in events if isinstance(e, ReplyRejected)] == [1, 2]
    assert {item.argument.id for item in turn.evidence if item.used} == {
        item.argument.id for item in turn.evidence if item.argument.text == best}
    replies = [body["messages"][0]["content"] for body in fake_server.bodies if body.get("stream")]
    assert "rejected because it repeats the prompt" in replies[1] and "rejected" not in replies[0]
    assert stance_checks(fake_server) == []  # the text checks failed first: no stance question asked
    await client.aclose()


async def test_queries_that_find_nothing_are_searched_with_the_student_s_message(retriever, fake_server):
    scripted = five_steps("Bullies pick on other things than clothes, so uniforms change little.")

    def answer(body: dict) -> Reply:
        schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
        if schema.get("title") == "SearchPlan":  # words the base has nothing for, as a small model may write
            return chat_reply(json.dumps(schema_instance(schema, "Qwzx vrrk plomb")))
        return scripted(body)

    fake_server.answer = answer
    client = fake_client(fake_server)
    turn = (await run(opponent(2, client, retriever)))[-1].turn
    assert turn.fallback_from is None and turn.used_arguments
    assert turn.steps.retrieval.message_queries == list(range(1, len(turn.queries) + 1))
    assert {query.opponent_idea for query in turn.queries} == {MESSAGE}
    assert {query.opponent_idea for query in turn.steps.queries.queries()} == {"Qwzx vrrk plomb"}  # as written
    await client.aclose()


# ---------------------------------------------------------------- step time limits


@pytest.mark.parametrize("level, step", [(2, "strategy"), (1, "reply")])
async def test_a_step_past_its_time_limit_gives_level_0_s_answer_naming_the_step(retriever, fake_server, level, step):
    slow = Reply(events=stream_reply("Too late.").events, delay_s=10)

    def answer(body: dict) -> Reply:
        if level == 1:
            return slow
        return five_steps("unused", delay_s=10)(body)

    fake_server.answer = answer
    client = fake_client(fake_server)
    started = time.perf_counter()
    events = await run(opponent(level, client, retriever, step_timeouts={step: 0.5}))
    turn = events[-1].turn
    assert (turn.fallback_from.step, turn.fallback_from.error) == (step, "timed out after 0.5 s")
    # The failed step says so before level 0's answer starts.
    failed = next(i for i, e in enumerate(events) if isinstance(e, StepFailed))
    assert (events[failed].step, events[failed].error) == (step, "timed out after 0.5 s")
    assert events[failed + 1] == StepStarted(FALLBACK_STEP[0])
    assert time.perf_counter() - started < 5  # the step was stopped, not waited for
    level_0 = (await run(opponent(0, client, retriever)))[-1].turn
    assert turn.reply == level_0.reply and turn.level == level and turn.steps.fallback_from == turn.fallback_from
    await client.aclose()


async def test_a_failed_step_whose_message_level_0_cannot_answer_fails_the_turn(retriever, fake_server):
    fake_server.answer = [error_reply(500, "down")]
    client = fake_client(fake_server)
    events = await run(opponent(1, client, retriever), [DialogueTurn("user", "Qwzx vrrk plomb.")])
    failure = events[-1]
    assert isinstance(failure, TurnFailed) and failure.step == "retrieval"
    assert "no argument against this message" in failure.error and not fake_server.bodies


async def test_a_message_not_in_english_is_told_the_base_is(retriever, fake_server):
    german = "Schuluniformen verringern Mobbing, weil niemand wegen seiner Kleidung verspottet wird."
    events = await run(opponent(0, None, retriever), [DialogueTurn("user", german)])
    assert isinstance(events[-1], TurnFailed) and "the argument base is in English" in events[-1].error


# ---------------------------------------------------------------- the real model, through the CLI


@pytest.mark.llm
@pytest.mark.parametrize("level", [0, 1])
def test_a_scripted_debate_at_a_quick_level_on_the_real_model(llama_profile, tmp_path, capsys, level):
    from argtui.cli import main
    from argtui.config import load_config
    from argtui.runtime import Runtime
    from engines.debate.settings import DebateSettings

    config = load_config()
    config.debate = DebateSettings(coach=False)  # the levels and their waterfall; the Coach's real run is elsewhere
    config.add_backend(llama_profile.model_copy(update={"timeout_s": 300}), make_default=True)
    script = tmp_path / "student.txt"
    script.write_text(f"{MESSAGE}\nUniforms also save parents money over a school year.\n", encoding="utf-8")
    argv = ["debate", "--claim", CLAIM, "--side", "con", "--level", str(level), "--script", str(script),
            "--grice-strategy", "ZSL", "--component-method", "vanilla", "--timings"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    row = re.compile(r"^\s*(Retrieval|Reply|Components|Grice)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+█")
    waterfall = [match.groups() for match in map(row.match, captured.err.splitlines()) if match]
    steps = [row[0] for row in waterfall]
    assert steps.count("Components") == steps.count("Grice") == steps.count("Retrieval") == 2  # a row each per turn
    assert steps.count("Reply") == 2 * level
    for row in waterfall:
        start, end, computed, reused, generated = float(row[1]), float(row[2]), *map(int, row[3:6])
        assert 0 <= start <= end and computed >= 0 and reused >= 0 and generated >= 0
        assert (generated > 0) == (row[0] != "Retrieval")  # only the retrieval makes no model call
    replies = [turn["systemResponse"]["response"] for turn in json.loads(captured.out)["simulation"]["userTurns"]]
    assert len(replies) == 2 and f"level {level}" in captured.err
    for reply in replies:
        assert 1 <= len(reply["content"].split()) <= WORD_LIMIT
        [argument] = reply["arguments"]
        assert argument["topic"] == CLAIM and (level == 1 or reply["content"] == argument["text"])
    runtime = Runtime()
    try:
        [(debate, turns)] = DebateRepository(runtime.db).list()
        assert debate.level == level and turns == 2  # two messages, each with its reply
        bot_turns = [t for t in DebateRecords(DebateRepository(runtime.db)).turns(debate.id) if t.role == "assistant"]
        assert [t.level for t in bot_turns] == [level, level]
    finally:
        runtime.db.close()


# ---------------------------------------------------------------- what each step costs


async def test_each_step_reports_the_model_calls_it_made_concurrent_ones_included(retriever, fake_server):
    fake_server.answer = five_steps("Bullies pick on other things than clothes, so uniforms change little.")
    client = fake_client(fake_server)
    events = await run(opponent(2, client, retriever))
    finished = {event.step: event.usage for event in events if isinstance(event, StepFinished)}
    queries = len(events[-1].turn.queries)
    assert {step: usage.calls for step, usage in finished.items()} == {
        "strategy": 1, "queries": 1, "retrieval": 0, "selection": queries, "final": 1,
        "reply": 2,  # the streamed draft and its stance check
    }
    assert sum(usage.calls for usage in finished.values()) == len(fake_server.bodies)
    assert finished["selection"].prompt_tokens == 5 * queries  # each scripted answer reports 5 prompt tokens
    await client.aclose()


async def test_a_failed_turn_run_again_draws_new_samples_a_cancelled_one_the_same(db, retriever, fake_server):
    fake_server.answer = lambda body: chat_reply("not json at all")  # step 1 never parses: the turn fails
    client = LLMClient(fake_server.profile(kind="vllm", retries=0), ResponseCache(db))
    repository = DebateRepository(db)
    session = DebateSession(repository, repository.create(CLAIM, "con", level=2), client, retriever)
    session.add_user_message("Qwzx vrrk plomb.")  # nothing in the base: no level-0 answer to fall back to
    failed, _, failure = await session.bot_turn()
    assert failure is not None and failure.step == "strategy"
    first_seeds = [body["seed"] for body in fake_server.bodies]
    fake_server.bodies.clear()
    await session.bot_turn(turn=session.start_reply(again=failed))
    assert fake_server.bodies, "the cached failure was replayed instead of asking the model again"
    assert not {body["seed"] for body in fake_server.bodies} & set(first_seeds)
    await client.aclose()


@pytest.mark.llm
async def test_each_step_may_generate_the_longest_answer_its_schema_allows(llama_profile):
    """Filled to every bound, each step's answer still fits its token cap (the model's own tokenizer counts)."""
    from engines.debate.schemas import (
        SearchPlan, StrategyAnalysis, final_selection_model, query_selection_model, reply_model,
    )
    from engines.llm.budget import max_tokens_for

    prose = "Uniforms, as the council's 2019 report notes, cost 40% less; bullying isn't about clothes. "
    arguments = [(prose * 20)[:length] for length in (600, 350, 120)]

    def longest(schema: dict, defs: dict):
        if "$ref" in schema:
            return longest(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
        if "anyOf" in schema:
            return longest(next(option for option in schema["anyOf"] if option.get("type") != "null"), defs)
        if "enum" in schema or "const" in schema:
            return max(schema.get("enum", [schema.get("const")]), key=len)
        if schema.get("type") == "object":
            return {name: longest(value, defs) for name, value in schema["properties"].items()}
        if schema.get("type") == "array":
            return [longest(schema["items"], defs)] * schema["maxItems"]
        return (prose * 10)[: schema["maxLength"]]

    server = llama_profile.base_urls[0].removesuffix("/v1")
    # The server answers only its key, /tokenize included.
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {llama_profile.api_key()}"}) as http:
        for model in (StrategyAnalysis, SearchPlan, query_selection_model(arguments),
                      final_selection_model(["uniforms to bullying"] * 3, arguments), reply_model(arguments)):
            schema = model.model_json_schema()
            answer = json.dumps(longest(schema, schema.get("$defs", {})), indent=2)
            tokens = (await http.post(f"{server}/tokenize", json={"content": answer})).json()["tokens"]
            assert len(tokens) <= max_tokens_for(model), model.__name__


@pytest.mark.parametrize("during", [True, False])
async def test_a_message_is_labelled_during_the_reply_only_where_the_backend_affords_it(retriever, fake_server,
                                                                                         during):
    reply = "Bullies pick on other things than clothes, so uniforms change little."

    def answer(body: dict) -> Reply:
        if body.get("stream"):
            return replace(streamed(reply), delay_s=0.5)
        return chat_reply("no")  # the stance check, and every labelling question

    fake_server.answer = answer
    client = fake_client(fake_server)
    runtime = Runtime()
    repository = DebateRepository(runtime.db)
    session = DebateSession(repository, repository.create(CLAIM, "con", level=1), client, retriever,
                            choice=JudgingChoice("ZSL", "vanilla"), label_during_reply=during)
    result = await DebateExchange(session, TaskJudges(runtime, client), coach=False).send(MESSAGE)
    assert result.bot is not None and result.user_turn.content == MESSAGE
    stance_start = prompts.STANCE_CHECK.split("{")[0]
    kinds = ["reply" if body.get("stream") else
             "stance" if body["messages"][0]["content"].startswith(stance_start) else "label"
             for body in fake_server.bodies]
    assert "label" in kinds and (kinds.index("label") < kinds.index("stance")) == during, kinds
    await client.aclose()
    await runtime.aclose()


async def test_the_embedded_model_labels_with_one_call_per_component_unless_the_student_picks(db, retriever):
    embedded = LLMClient(BackendProfile(name="embedded", kind="llamacpp", embedded=True, base_urls=["http://127.0.0.1:9/v1"]))
    gpu = LLMClient(BackendProfile(name="gpu", kind="vllm", model="meta-llama/Llama-3.1-8B-Instruct",
                                   base_urls=["http://127.0.0.1:9/v1"]))
    repository = DebateRepository(db)
    methods = [
        DebateSession(repository, repository.create(CLAIM, "con", level=0), client, retriever, choice=choice)
        .choice.component_method
        for client, choice in ((embedded, None), (gpu, None), (embedded, JudgingChoice("ZSL", "mad")))
    ]
    assert methods == ["vanilla", "mad", "mad"]
    await embedded.aclose()
    await gpu.aclose()


def test_the_embedded_model_labels_after_a_reply_it_writes_a_gpu_server_during_any():
    embedded = BackendProfile(name="embedded", kind="llamacpp", embedded=True)
    gpu = BackendProfile(name="gpu", kind="vllm", model="meta-llama/Llama-3.1-8B-Instruct")
    for level in LEVELS:
        # level 0 answers from the argument base: the embedded model is idle while it does
        assert labels_during_reply(embedded, level) == (not level.needs_model)
        assert labels_during_reply(gpu, level)
    assert not LEVELS[0].needs_model and any(level.needs_model for level in LEVELS)


@pytest.mark.parametrize("side, message, bot_relation", [
    ("pro", "Uniforms reduce bullying because nobody is mocked for cheap clothes.", "supports"),
    ("con", "Uniforms take away students' freedom to express themselves.", "attacks"),
])
async def test_a_claim_the_base_words_the_other_way_still_gets_the_bot_s_side(retriever, side, message, bot_relation):
    """'Uniforms should be mandatory' is the negation of the base's topic: the student's side of
    that topic is read off the arguments nearest the message, and the bot takes the other."""
    hits = await counter_arguments(retriever, DebateSetup("School uniforms should be mandatory", side), message)
    assert len(hits) == 3
    assert {(hit.argument.topic, hit.argument.relation) for hit in hits} == {(CLAIM, bot_relation)}
