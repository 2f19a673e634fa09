"""Fault injection: the client against a fake server that times out, fails, drops or talks nonsense,
and how it finds out which kind of server it talks to."""

from __future__ import annotations

from contextlib import aclosing

import asyncio
import json
import time

import pytest
from pydantic import BaseModel

from engines.llm.adapters import gbnf_choice, parse_label
from engines.llm.client import LLMClient
from engines.llm.parsing import label_distribution
from engines.llm.profile import BackendProfile, Sampling
from engines.llm.servers import free_loopback_port
from engines.llm.status import probe
from engines.llm.types import BackendError, Completion, TextDelta, TokenLogprob, Usage
from store.llm_cache import ResponseCache
from fakes import FakeServer, Reply, chat_reply, disconnect, error_reply, stream_reply

MESSAGES = [{"role": "user", "content": "hi"}]


def client_for(fake: FakeServer, kind="llamacpp", retries=3, timeout_s=5.0) -> LLMClient:
    return LLMClient(fake.profile(kind=kind, retries=retries, timeout_s=timeout_s), backoff_base_s=0)


async def test_500_then_success_is_retried(fake_server):
    fake_server.answer = [error_reply(500, "boom"), chat_reply("fine")]
    async with client_for(fake_server) as client:
        assert (await client.chat(MESSAGES)).text == "fine"
    assert len(fake_server.bodies) == 2


async def test_retry_after_sets_the_wait(fake_server):
    fake_server.answer = [error_reply(429, "slow down", {"Retry-After": "1"}), chat_reply("fine")]
    async with client_for(fake_server) as client:
        assert (await client.chat(MESSAGES)).text == "fine"
    first, second = fake_server.received
    assert second.at - first.at >= 0.95  # the backoff alone would not wait (base 0)
    assert client.accounting.retries == 1


async def test_persistent_503_surfaces_as_backend_error_after_retries(fake_server):
    fake_server.answer = [error_reply(503, "overloaded")]
    async with client_for(fake_server, retries=2) as client:
        with pytest.raises(BackendError) as caught:
            await client.chat(MESSAGES)
    assert caught.value.status == 503
    assert "overloaded" in str(caught.value)
    assert len(fake_server.bodies) == 3
    assert client.accounting.retries == 2


async def test_client_error_is_not_retried(fake_server):
    fake_server.answer = [error_reply(400, "bad field")]
    async with client_for(fake_server) as client:
        with pytest.raises(BackendError, match="bad field"):
            await client.chat(MESSAGES)
    assert len(fake_server.bodies) == 1


async def test_a_dropped_connection_is_retried(fake_server):
    fake_server.answer = [disconnect(), chat_reply("back")]
    async with client_for(fake_server) as client:
        assert (await client.chat(MESSAGES)).text == "back"
    assert client.accounting.retries == 1


async def test_non_json_body_is_a_backend_error(fake_server):
    fake_server.answer = [Reply(text="<html>proxy</html>")]
    async with client_for(fake_server) as client:
        with pytest.raises(BackendError, match="non-JSON"):
            await client.chat(MESSAGES)


@pytest.mark.parametrize("body", [[1, 2], {"choices": "none"}, {"choices": [{"index": 0, "message": "hi"}]}])
async def test_json_of_an_unexpected_shape_is_a_backend_error(fake_server, body):
    fake_server.answer = [Reply(json=body)]
    async with client_for(fake_server) as client:
        with pytest.raises(BackendError, match="unexpected shape"):
            await client.chat(MESSAGES)


async def test_connection_refused_names_the_profile_and_url():
    url = f"http://127.0.0.1:{free_loopback_port()}/v1"
    profile = BackendProfile(name="fake", kind="llamacpp", base_urls=[url], model="m", retries=1)
    async with LLMClient(profile, backoff_base_s=0) as client:
        with pytest.raises(BackendError) as caught:
            await client.chat(MESSAGES)
    message = str(caught.value)
    assert "'fake'" in message and url in message and "ConnectError after 2 attempts" in message


class Answer(BaseModel):
    answer: str


async def test_malformed_json_output_is_an_invalid_result_with_raw_text(fake_server):
    fake_server.answer = [chat_reply('{"answer": "yes"')]
    async with client_for(fake_server) as client:
        [result] = await client.structured(MESSAGES, Answer)
    assert not result.valid
    assert result.value is None
    assert result.raw == '{"answer": "yes"'
    assert result.error


async def test_schema_violation_is_invalid_and_names_the_field(fake_server):
    fake_server.answer = [chat_reply('{"reply": "yes"}')]
    async with client_for(fake_server) as client:
        [result] = await client.structured(MESSAGES, Answer)
    assert not result.valid and "answer" in result.error


async def test_garbage_choice_is_invalid_with_raw_text(fake_server):
    fake_server.answer = [chat_reply("Maybe C")]
    async with client_for(fake_server) as client:
        choice = await client.choose(MESSAGES, ["A", "B", "Tie"])
    assert not choice.valid
    assert choice.raw == "Maybe C"
    assert choice.distribution == {}


# ---------------------------------------------------------------------- streaming


async def test_stream_retries_a_503_before_the_first_byte(fake_server):
    fake_server.answer = [error_reply(503), stream_reply("Hel", "lo")]
    async with client_for(fake_server) as client:
        events = [event async for event in client.stream(MESSAGES)]
    assert [e.text for e in events[:-1]] == ["Hel", "lo"]
    assert events[-1].text == "Hello"
    assert events[-1].usage.completion_tokens == 2
    assert len(fake_server.bodies) == 2


async def test_stream_dropped_before_any_delta_is_retried(fake_server):
    fake_server.answer = [disconnect(), stream_reply("Hel", "lo")]
    async with client_for(fake_server) as client:
        events = [event async for event in client.stream(MESSAGES)]
    assert [e.text for e in events] == ["Hel", "lo", "Hello"]
    assert client.accounting.retries == 1


async def test_stream_dropped_mid_reply_fails_without_repeating_text(fake_server):
    fake_server.answer = [stream_reply("Hel", "lo", drop_after=1), stream_reply("Hel", "lo")]
    seen = []
    async with client_for(fake_server) as client:
        with pytest.raises(BackendError, match="the stream broke after 3 characters"):
            async for event in client.stream(MESSAGES):
                seen.append(event)
    assert seen == [TextDelta("Hel")]
    assert len(fake_server.bodies) == 1 and client.accounting.retries == 0


async def test_a_stream_stopped_early_still_counts_the_tokens_it_streamed(fake_server):
    fake_server.answer = [stream_reply("One", " two", " three", " four")]
    async with client_for(fake_server) as client:
        async with aclosing(client.stream(MESSAGES)) as events:
            async for event in events:
                if event.text == " two":
                    break  # as a reply cut at its first blank line
        usage = client.accounting.usage
    assert (usage.calls, usage.completion_tokens, usage.prompt_tokens) == (1, 2, 0)


async def test_the_prompt_tokens_a_server_reused_from_its_cache_are_counted(fake_server):
    reply = chat_reply("OK", prompt_tokens=40)
    reply.json["usage"]["prompt_tokens_details"] = {"cached_tokens": 32}
    fake_server.answer = [reply]
    async with client_for(fake_server) as client:
        [completion] = await client.samples(MESSAGES, 1)
    assert (completion.usage.reused_prompt_tokens, completion.usage.computed_prompt_tokens) == (32, 8)


async def test_an_answer_that_is_no_event_stream_is_a_backend_error(fake_server):
    fake_server.answer = [Reply(json={"error": "streaming is not supported"})]
    async with client_for(fake_server) as client:
        with pytest.raises(BackendError, match="event stream"):
            [event async for event in client.stream(MESSAGES)]
    assert len(fake_server.bodies) == 1


# ---------------------------------------------------------------------- adapters


@pytest.mark.parametrize(
    "kind, field",
    [("vllm", "structured_outputs"), ("llamacpp", "grammar"), ("openai", "response_format")],
)
async def test_choice_constraint_follows_the_backend_kind(fake_server, kind, field):
    fake_server.answer = [chat_reply(json.dumps({"label": "B"}) if kind == "openai" else "B")]
    async with client_for(fake_server, kind=kind) as client:
        choice = await client.choose(MESSAGES, ["A", "B"])
    assert field in fake_server.bodies[0]
    assert choice.label == "B"
    assert choice.distribution == {"A": 0.0, "B": 1.0} and choice.source == "text"


def test_one_label_parser_reads_the_bare_label_or_a_label_object():
    labels = ["A", "B", "Tie"]
    assert parse_label(" Tie\n", labels) == "Tie"
    assert parse_label('{"label": "B"}', labels) == "B"
    for garbage in ("Argument A", "{broken", '{"label": "C"}', '["A"]', '{"label": ["A"]}', '"A"'):
        assert parse_label(garbage, labels) is None, garbage


async def test_n_samples_in_one_request_where_the_backend_supports_it(fake_server):
    fake_server.answer = [chat_reply("x", "y", "z", prompt_tokens=40, completion_tokens=3)]
    async with client_for(fake_server, kind="vllm") as client:
        samples = await client.samples(MESSAGES, 3)
    [body] = fake_server.bodies
    assert body["n"] == 3
    assert [s.text for s in samples] == ["x", "y", "z"]
    assert [s.usage.prompt_tokens for s in samples] == [40, 0, 0]  # prefilled once


async def test_llama_server_gets_at_most_four_samples_per_request(fake_server):
    fake_server.answer = lambda body: chat_reply(*(["s"] * body.get("n", 1)))
    async with client_for(fake_server, kind="llamacpp") as client:
        samples = await client.samples(MESSAGES, 6)
    assert len(samples) == 6
    assert sorted(body.get("n", 1) for body in fake_server.bodies) == [2, 4]


def test_label_distribution_from_top_logprobs_after_a_json_prefix():
    text = '{"label": "Tie"}'
    tokens = ['{"', "label", '":', ' "', "T", "ie", '"}']
    entries = tuple(
        TokenLogprob(t, -0.1, (("T", -0.5), ("A", -1.5), ("B", -2.0), ("x", -0.1)) if t == "T" else ())
        for t in tokens
    )
    completion = Completion(text, "stop", Usage(), entries)
    dist = label_distribution(["A", "B", "Tie"], completion, "Tie", text.find("Tie"), greedy=True).distribution
    assert max(dist, key=dist.get) == "Tie"
    assert abs(sum(dist.values()) - 1) < 1e-12
    assert dist["A"] > dist["B"] > 0


def test_gbnf_choice_quotes_labels():
    assert gbnf_choice(["A", 'say "B"']) == 'root ::= "A" | "say \\"B\\""'


# ---------------------------------------------------------------------- kind detection


@pytest.mark.parametrize(
    "server, kind, field",
    [
        (dict(owned_by="vllm", version="0.11.0"), "vllm", "structured_outputs"),
        (dict(props={"default_generation_settings": {}, "total_slots": 4}), "llamacpp", "grammar"),
        (dict(owned_by="vllm"), "openai", "response_format"),  # claims vLLM but has no /version
        (dict(owned_by="openai"), "openai", "response_format"),
    ],
)
async def test_an_unnamed_kind_is_detected_once(server, kind, field):
    with FakeServer([chat_reply("B")], **server) as fake:
        async with client_for(fake, kind=None) as client:
            choices = await asyncio.gather(*(client.choose(MESSAGES, ["A", "B"]) for _ in range(3)))
            assert await client.kind() == kind
    assert all(choice.label == "B" for choice in choices)
    assert all(field in body for body in fake.bodies)
    assert [r.path for r in fake.received].count("/v1/models") == 1


async def test_doctor_status_shows_the_detected_kind():
    with FakeServer(owned_by="vllm", version="0.11.0") as fake:
        async with client_for(fake, kind=None) as client:
            status = await probe(client)
    assert status.reachable and status.kind == "vllm" and status.models == ["m"]


async def test_an_unreachable_server_is_not_given_a_kind():
    url = f"http://127.0.0.1:{free_loopback_port()}/v1"
    profile = BackendProfile(name="gone", base_urls=[url], model="m", retries=0)
    async with LLMClient(profile) as client:
        status = await probe(client)
    assert not status.reachable and status.kind is None and "ConnectError" in status.error


async def test_a_slow_answer_meets_one_deadline_and_is_not_sent_twice():
    slow = Reply(json=chat_reply("late").json, delay_s=5)
    with FakeServer([slow]) as fake:
        async with LLMClient(fake.profile(kind="openai", timeout_s=0.5, retries=3), backoff_base_s=0.01) as client:
            started = time.perf_counter()
            with pytest.raises(BackendError, match=r"no answer within 0.5 s .*not sent again"):
                await client.chat([{"role": "user", "content": "hi"}])
            assert time.perf_counter() - started < 3
        assert len(fake.bodies) == 1


async def test_a_trickling_server_cannot_hold_a_call_past_its_deadline():
    trickle = Reply(json=chat_reply("x" * 200).json, trickle_s=0.05)  # each byte well inside a read timeout
    with FakeServer([trickle]) as fake:
        async with LLMClient(fake.profile(kind="openai", timeout_s=1.0, retries=2), backoff_base_s=0.01) as client:
            started = time.perf_counter()
            with pytest.raises(BackendError, match="no answer within 1 s"):
                await client.chat([{"role": "user", "content": "hi"}])
            assert time.perf_counter() - started < 4
        assert len(fake.bodies) == 1


async def test_a_server_that_dies_after_a_500_is_named_as_dead():
    """vLLM's engine dies on a request it cannot compute: a 500 naming it, then no server at all.
    The error names the 500 and the death, not only the refused connections that followed."""
    engine_dead = "EngineCore encountered an issue. See stack trace (above) for the root cause."
    fake = FakeServer([error_reply(500, engine_dead, {"Retry-After": "1"})]).__enter__()
    try:
        async with client_for(fake, kind="vllm", retries=3) as client:
            asking = asyncio.ensure_future(client.chat(MESSAGES))
            while not fake.bodies:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(fake.__exit__, None, None, None)  # the server goes, as vLLM's did
            with pytest.raises(BackendError) as caught:
                await asking
    finally:
        fake.__exit__(None, None, None)
    message = str(caught.value)
    assert "the vLLM engine died: HTTP 500" in message and engine_dead in message, message
    assert "ConnectError" in message and "see the server's log" in message
    assert caught.value.status == 500


async def test_a_server_error_and_a_living_server_is_no_death(fake_server):
    fake_server.answer = [error_reply(503, "overloaded"), disconnect()]
    async with client_for(fake_server, retries=1) as client:
        with pytest.raises(BackendError) as caught:
            await client.chat(MESSAGES)
    assert "died" not in str(caught.value)


async def test_a_profile_that_sends_no_seed_keeps_seeded_attempts_apart(fake_server, db):
    """vLLM's CPU build dies on concurrent seeded requests: such a profile sends none, and the
    seeds still key the cache, so a second attempt is asked, not given the first one's answer."""
    fake_server.answer = [chat_reply("first"), chat_reply("second")]
    cache = ResponseCache(db)
    async with LLMClient(fake_server.profile(kind="vllm", send_seed=False), cache, backoff_base_s=0) as client:
        first = await client.chat(MESSAGES, Sampling(temperature=0.7, seed=1))
        second = await client.chat(MESSAGES, Sampling(temperature=0.7, seed=2))
    assert (first.text, second.text) == ("first", "second")
    assert [("seed" in body) for body in fake_server.bodies] == [False, False]
