"""Answers the client cannot read: stream events that are not objects, numbers of thousands of
digits, brackets nested 100,000 deep. A model's answer of that kind is an invalid answer with
its reason (counted, never a failed run) and is cached as it came; `--retry-invalid` asks the
items stored as invalid again, past the cache. A server's reply of that kind (the envelope
around the answers) is a BackendError that says what it sent, never another exception."""

from __future__ import annotations

import json
import threading

import pytest
from pydantic import BaseModel

from argtui.cli import main
from argtui.config import load_config
from argtui.runtime import Runtime
from engines.components.classifier import label_components
from engines.components.types import Span
from engines.debate.exchange import DebateExchange
from engines.debate.levels import get_level
from engines.debate.session import DebateSession, JudgingChoice
from engines.llm.client import LLMClient
from engines.llm.types import BackendError
from engines.tasks.debate_judges import TaskJudges
from fakes import FakeServer, Reply, chat_reply, error_reply, stream_reply
from store.debates import DebateRepository

MESSAGES = [{"role": "user", "content": "Which argument is stronger?"}]
DIGITS = "1" * 5000  # past Python's 4,300-digit limit on reading integers
DEEP = "[" * 100_000  # past every JSON parser's nesting limit
UNREADABLE_ANSWERS = {"5,000 digits": DIGITS, "100,000 brackets": DEEP, "a label nested deep": '{"label": ' + DEEP}


def client_for(fake: FakeServer, kind: str = "llamacpp") -> LLMClient:
    return LLMClient(fake.profile(kind=kind, retries=0), backoff_base_s=0)


# ---------------------------------------------------------------------- a model's answer


@pytest.mark.parametrize("answer", UNREADABLE_ANSWERS.values(), ids=UNREADABLE_ANSWERS)
async def test_an_unreadable_label_is_an_invalid_choice_with_the_raw_answer(fake_server, answer):
    fake_server.answer = lambda body: chat_reply(*[answer] * body.get("n", 1))
    async with client_for(fake_server) as client:
        choice = await client.choose(MESSAGES, ["A", "B", "Tie"])
        votes = await client.choose(MESSAGES, ["A", "B", "Tie"], votes=3)
    assert not choice.valid and choice.raw == answer and choice.distribution == {}
    assert not votes.valid


class Reason(BaseModel):
    reason: str
    score: int


@pytest.mark.parametrize(
    ("answer", "why"),
    [(DIGITS, "number out of range"), (DEEP, "recursion limit exceeded"),
     ('{"reason": "ok", "score": ' + DIGITS + "}", "number out of range")],
    ids=["digits", "brackets", "a field of 5,000 digits"],
)
async def test_an_unreadable_structured_answer_is_invalid_with_its_reason(fake_server, answer, why):
    fake_server.answer = [chat_reply(answer)]
    async with client_for(fake_server) as client:
        [result] = await client.structured(MESSAGES, Reason)
    assert not result.valid and result.raw == answer and why in result.error


@pytest.mark.parametrize("method", ["vanilla", "smart"])
async def test_a_5000_digit_answer_leaves_the_component_unlabelled(fake_server, method):
    text = "Uniforms should stay. They cost parents less than fashion does."
    spans = [Span(0, 21, "Uniforms should stay."), Span(22, len(text), text[22:])]
    fake_server.answer = [chat_reply(DIGITS)]
    async with client_for(fake_server) as client:
        results = await label_components(client, text, spans, method=method)
    assert [result.label for result in results] == [None, None]
    assert all(result.raw == DIGITS for result in results)


# ---------------------------------------------------------------------- eval pairwise and --retry-invalid


def pairwise_args(*extra: str) -> list[str]:
    return ["eval", "pairwise", "--dimension", "logical", "--topics", "20", "--limit", "2", "--bootstrap", "0",
            "--json", *extra]


def good_votes(body: dict) -> Reply:
    return chat_reply(*["A", "B", "A"][: body.get("n", 1)], prompt_tokens=40)


def results_of(capsys) -> dict:
    [result] = json.loads(capsys.readouterr().out)["results"]
    return result


@pytest.mark.parametrize("answer", UNREADABLE_ANSWERS.values(), ids=UNREADABLE_ANSWERS)
def test_unreadable_answers_are_stored_as_invalid_and_retried_only_when_asked(capsys, answer):
    with FakeServer(lambda body: chat_reply(*[answer] * body.get("n", 1))) as fake:
        load_config().add_backend(fake.profile(kind="llamacpp"), make_default=True)
        assert main(pairwise_args()) == 0
        first = results_of(capsys)
        assert (first["judged_now"], first["invalid"]) == (2, 2)

        fake.answer = good_votes  # the same server, now answering well
        asked = len(fake.bodies)
        assert main(pairwise_args()) == 0
        again = results_of(capsys)
        assert len(fake.bodies) == asked  # invalid verdicts are verdicts: nothing is asked again
        assert (again["judged_now"], again["resumed"], again["invalid"]) == (0, 2, 2)

        assert main(pairwise_args("--retry-invalid")) == 0
        retried = results_of(capsys)
        assert len(fake.bodies) == asked + 2  # one request (n=3) per pair, past the cached answers
        assert (retried["judged_now"], retried["resumed"], retried["invalid"]) == (2, 0, 0)
        assert retried["run_id"] == first["run_id"]

        assert main(pairwise_args()) == 0
        assert results_of(capsys)["invalid"] == 0 and len(fake.bodies) == asked + 2


def test_retry_invalid_asks_exactly_the_items_stored_as_invalid(capsys):
    answered, lock = [], threading.Lock()

    def first_unreadable(body: dict) -> Reply:  # the server's threads answer the pairs at once
        with lock:
            first = not answered
            answered.append(body)
        return chat_reply(*[DIGITS if first else "B"] * body.get("n", 1))

    with FakeServer(first_unreadable) as fake:
        load_config().add_backend(fake.profile(kind="llamacpp"), make_default=True)
        assert main(pairwise_args()) == 0
        assert results_of(capsys)["invalid"] == 1
        invalid_prompt = answered[0]["messages"]

        fake.answer = good_votes
        assert main(pairwise_args("--retry-invalid")) == 0
        retried = results_of(capsys)
    assert (retried["judged_now"], retried["resumed"], retried["invalid"]) == (1, 1, 0)
    assert [body["messages"] for body in fake.bodies[2:]] == [invalid_prompt]


def test_retry_invalid_excludes_the_batch_file_options(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(pairwise_args("--retry-invalid", "--export-requests", str(tmp_path / "requests.jsonl")))
    assert exited.value.code == 2
    assert "not allowed with argument --retry-invalid" in capsys.readouterr().err


# ---------------------------------------------------------------------- the server's envelope


@pytest.mark.parametrize(
    ("body", "why"),
    [(DIGITS, "JSON with a number too long to read"), (DEEP + "]" * 100_000, "JSON nested too deeply to read")],
    ids=["digits", "brackets"],
)
async def test_an_unreadable_reply_body_is_a_backend_error_that_says_why(fake_server, body, why):
    fake_server.answer = [Reply(text=body)]
    async with client_for(fake_server) as client:
        with pytest.raises(BackendError, match=why):
            await client.chat(MESSAGES)


@pytest.mark.parametrize(
    "usage", [{"completion_tokens": 1e999}, {"prompt_tokens": "many"}, {"prompt_tokens_details": [1]}],
    ids=["infinite", "a word", "a list"],
)
async def test_token_counts_of_another_shape_are_a_backend_error(fake_server, usage):
    reply = chat_reply("A")
    fake_server.answer = [Reply(json={**reply.json, "usage": usage})]
    async with client_for(fake_server) as client:
        with pytest.raises(BackendError, match="unexpected shape"):
            await client.chat(MESSAGES)


async def test_an_error_status_with_an_unreadable_body_keeps_its_status(fake_server):
    fake_server.answer = [Reply(status=400, text=DIGITS), Reply(status=400, text=DEEP)]
    async with client_for(fake_server) as client:
        for _ in range(2):
            with pytest.raises(BackendError) as caught:
                await client.chat(MESSAGES)
            assert caught.value.status == 400 and "HTTP 400" in str(caught.value)


SHAPE = "sent an event of an unexpected shape"
STREAM_EVENTS = {  # an event's data as sent, and what the error says of it
    "a list": ("[1, 2]", SHAPE),
    "a string": ('"delta"', SHAPE),
    "a number": ("7", SHAPE),
    "5,000 digits": (DIGITS, "sent an event of JSON with a number too long to read"),
    "100,000 brackets": (DEEP, "sent an event of JSON nested too deeply to read"),
    "choices that are a string": ('{"choices": "abc"}', SHAPE),
    "a choice that is a number": ('{"choices": [3]}', SHAPE),
    "usage that is a list": ('{"choices": [], "usage": [1]}', SHAPE),
}


def events_with(data: str) -> list[dict | str]:
    """A streamed answer with the event `data` after its first delta."""
    good = stream_reply("Uniforms", " help.").events
    return [good[0], data, *good[1:]]


@pytest.mark.parametrize(("data", "why"), STREAM_EVENTS.values(), ids=STREAM_EVENTS)
async def test_a_stream_event_of_another_shape_is_a_backend_error(fake_server, data, why):
    fake_server.answer = [Reply(events=events_with(data))]
    seen = []
    async with client_for(fake_server) as client:
        with pytest.raises(BackendError, match=why):
            async for event in client.stream(MESSAGES):
                seen.append(event.text)
    assert seen == ["Uniforms"]


CLAIM = "We should abandon the use of school uniform"  # a topic of the bundled corpus
REPLY = "Bullies find other targets than clothes, so uniforms change little about bullying."


@pytest.mark.parametrize("bad", ["[1, 2]", '"delta"'], ids=["a list", "a string"])
async def test_a_debate_turn_streamed_with_a_non_object_event_falls_back_and_the_debate_goes_on(retriever, bad):
    broken = True

    def answer(body: dict) -> Reply:
        if body.get("stream"):
            reply = stream_reply(*(REPLY[i:i + 12] for i in range(0, len(REPLY), 12)))
            return Reply(events=events_with(bad)) if broken else reply
        return chat_reply("no")  # the stance check: it does not argue the student's side

    with FakeServer(answer) as fake:
        client = LLMClient(fake.profile(kind="vllm", retries=0))
        runtime = Runtime()
        repository = DebateRepository(runtime.db)
        session = DebateSession(repository, repository.create(CLAIM, "con", level=1), client, retriever,
                                choice=JudgingChoice("ZSL", "vanilla"))
        session.pipeline = get_level(1).bot(client, retriever)
        exchange = DebateExchange(session, TaskJudges(runtime, client), coach=False)
        result = await exchange.send("School uniforms reduce bullying because nobody is mocked for clothes.")
        assert result.failure is None and SHAPE in result.bot.fallback_from.error
        assert result.bot_turn.state == "done" and result.bot_turn.fallback_from == result.bot.fallback_from
        broken = False
        result = await exchange.send("Uniforms also save parents money over a school year.")
        assert result.failure is None and result.bot.reply == REPLY
        await client.aclose()
        await runtime.aclose()


async def test_an_error_reply_stays_what_it_was(fake_server):
    fake_server.answer = [error_reply(503, "overloaded")]
    async with client_for(fake_server) as client:
        with pytest.raises(BackendError, match="HTTP 503: overloaded"):
            await client.chat(MESSAGES)
