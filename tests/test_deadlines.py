"""A call's deadline follows its token budget and the speed the backend was measured to answer
at: a long budget on a slow server is not cut at the profile's timeout_s, and a call past the
deadline its budget gives is cut with a message naming that limit."""

from __future__ import annotations

import asyncio
import time

import pytest

from engines.llm.client import LLMClient
from engines.llm.deadlines import SAFETY_FACTOR, GenerationSpeed
from engines.llm.profile import Sampling
from engines.llm.types import BackendError
from fakes import FakeServer, Reply, chat_reply, stream_reply

MESSAGES = [{"role": "user", "content": "Argue for school uniforms."}]
TIMEOUT_S = 2.0
MEASURED_TOKENS = 10  # the first answer: 10 tokens in about 0.5 s, some 20 tokens/s


def measured_then(later: Reply, measure_delay_s: float = 0.5):
    """A server whose answers without a budget take `measure_delay_s` for MEASURED_TOKENS
    tokens, and whose answers with a budget are `later`."""

    def answer(body: dict) -> Reply:
        if body.get("max_tokens") is None:
            reply = chat_reply("Uniforms cost less.", completion_tokens=MEASURED_TOKENS)
            return Reply(json=reply.json, delay_s=measure_delay_s)
        return later

    return answer


def client_for(fake: FakeServer) -> LLMClient:
    return LLMClient(fake.profile(kind="llamacpp", timeout_s=TIMEOUT_S, retries=2), backoff_base_s=0)


def test_the_limit_is_timeout_s_until_a_budget_needs_longer_at_the_measured_speed():
    speed = GenerationSpeed(timeout_s=300)
    assert speed.tokens_per_s is None and speed.limit(4096).seconds == 300
    assert speed.limit(4096).reason == "the profile's timeout_s; no answer has measured the server's speed yet"
    speed.record(tokens=40, seconds=10)  # a long answer and a short one: 50 tokens in 20 s
    speed.record(tokens=10, seconds=10)
    assert speed.tokens_per_s == pytest.approx(2.5)
    assert speed.limit(300).seconds == 300  # 2 × 300 / 2.5 = 240 s: within timeout_s
    long = speed.limit(4096)
    assert long.seconds == pytest.approx(SAFETY_FACTOR * 4096 / 2.5)
    assert str(long) == "3276.8 s (2 × the time 4096 tokens take at the measured 2.5 tokens/s)"
    assert str(speed.limit(None)) == "300 s (the profile's timeout_s)"  # no budget: the server decides


def test_the_profile_s_speed_stands_for_the_speed_until_an_answer_measures_it():
    speed = GenerationSpeed(timeout_s=120, profile_tokens_per_s=6.0)  # as `config use` measured a CPU server
    assert not speed.measured and speed.tokens_per_s == 6
    assert str(speed.limit(2048)) == "682.7 s (2 × the time 2048 tokens take at the profile's tokens_per_s, 6)"
    assert str(speed.limit(32)) == "120 s (the profile's timeout_s)"
    speed.record(tokens=10, seconds=5)  # under a run's load: 2 tokens/s
    assert speed.measured and speed.tokens_per_s == 2
    assert speed.limit(2048).reason == "2 × the time 2048 tokens take at the measured 2 tokens/s"


async def test_a_budget_that_needs_longer_than_timeout_s_is_not_cut_at_timeout_s():
    slow = Reply(json=chat_reply("A long argument.", completion_tokens=80).json, delay_s=4.0)
    with FakeServer(measured_then(slow)) as fake:
        async with client_for(fake) as client:
            await client.chat(MESSAGES)
            speed = client.speed.tokens_per_s
            assert speed is not None and speed <= MEASURED_TOKENS / 0.5
            assert client.speed.limit(80).seconds >= 8  # 2 × 80 / at most 20 tokens/s
            started = time.perf_counter()
            answer = await client.chat(MESSAGES, Sampling(max_tokens=80))
            assert time.perf_counter() - started > 3.9  # well past timeout_s
        assert answer.text == "A long argument."
        assert len(fake.bodies) == 2


async def test_a_call_past_the_deadline_of_its_budget_is_cut_naming_that_limit():
    hung = Reply(json=chat_reply("too late").json, delay_s=60)
    with FakeServer(measured_then(hung)) as fake:
        async with client_for(fake) as client:
            await client.chat(MESSAGES)
            limit = client.speed.limit(40)  # 2 × 40 / at most 20 tokens/s: 4 s or more
            assert limit.seconds >= 4 > TIMEOUT_S
            started = time.perf_counter()
            with pytest.raises(BackendError) as caught:
                await client.chat(MESSAGES, Sampling(max_tokens=40))
            waited = time.perf_counter() - started
        assert limit.seconds - 0.1 < waited < limit.seconds + 2
        assert len(fake.bodies) == 2  # not sent again
    message = str(caught.value)
    assert f"no answer within {limit};" in message
    assert "the time 40 tokens take at the measured" in message and "timeout_s" not in limit.reason


async def test_without_a_measured_speed_a_budget_waits_timeout_s_and_says_so():
    hung = Reply(json=chat_reply("too late").json, delay_s=60)
    with FakeServer([hung]) as fake:  # no /slots: the server does not count its tokens either
        async with client_for(fake) as client:
            started = time.perf_counter()
            with pytest.raises(BackendError, match=r"no answer within 2 s \(the profile's timeout_s; no answer has "
                                                   r"measured the server's speed yet\)") as caught:
                await client.chat(MESSAGES, Sampling(max_tokens=4096))
            assert time.perf_counter() - started < TIMEOUT_S + 2
    # How to wait longer: the profile's own table in the config file.
    assert str(caught.value).endswith("; to wait longer, raise timeout_s in [backends.fake] of the config file "
                                      "(argtui config path prints where it is)")


async def test_a_call_in_flight_gets_the_longer_limit_when_another_answer_measures_the_speed():
    """The first calls of a run go out before anything is measured: the first answer to come
    back moves the deadline of the long ones still waiting."""
    slow = Reply(json=chat_reply("A long argument.", completion_tokens=80).json, delay_s=4.0)
    with FakeServer(measured_then(slow)) as fake:
        async with client_for(fake) as client:
            long, short = await asyncio.gather(
                client.chat(MESSAGES, Sampling(max_tokens=80)), client.chat(MESSAGES)
            )
        assert (long.text, short.text) == ("A long argument.", "Uniforms cost less.")


async def test_streamed_answers_measure_the_speed_too():
    streamed = Reply(events=stream_reply("Uniforms", " cost", " less.").events, delay_s=0.5)
    with FakeServer([streamed]) as fake:
        async with client_for(fake) as client:
            [*_, completion] = [event async for event in client.stream(MESSAGES)]
            assert completion.usage.completion_tokens == 3
            speed = client.speed.tokens_per_s
    assert completion.usage.latency_s >= 0.5 and speed == pytest.approx(3 / completion.usage.latency_s)


async def test_a_first_call_past_timeout_s_is_measured_by_the_tokens_the_server_counted():
    """Before any answer, llama-server's /slots says how far the answers in progress are: a busy
    slot's 24 tokens in 1.6 s (15 tokens/s) give a 200-token call some 27 s. An idle slot's
    count is of an answer already given, and is left out."""
    slow = Reply(json=chat_reply("A long argument.", completion_tokens=120).json, delay_s=4.0)
    slots = [{"id": 0, "is_processing": True, "next_token": [{"n_decoded": 24}]},
             {"id": 1, "is_processing": False, "next_token": [{"n_decoded": 900}]}]
    with FakeServer([slow], routes={"/slots": slots}) as fake:
        async with client_for(fake) as client:
            started = time.perf_counter()
            answer = await client.chat(MESSAGES, Sampling(max_tokens=200))
            waited = time.perf_counter() - started
        assert answer.text == "A long argument." and waited > TIMEOUT_S + 1
        assert [r.path for r in fake.received].count("/slots") == 1
        assert len(fake.bodies) == 1


@pytest.mark.llm
async def test_a_first_long_answer_of_the_real_server_outlasts_timeout_s(llama_profile):
    """On the real llama-server, a first call whose answer takes longer than timeout_s (a count
    to 1,000 in up to 1,024 tokens, against 1 s: more than 1,000 tokens/s would be needed to beat
    it, some three times the fastest machine seen) is answered: its deadline comes from the
    slots' count of tokens, then from the answer."""
    profile = llama_profile.model_copy(update={"timeout_s": 1.0, "retries": 0})
    counting = [{"role": "user", "content": "Count from 1 to 1000, one number per line."}]
    async with LLMClient(profile) as client:
        started = time.perf_counter()
        answer = await client.chat(counting, Sampling(temperature=0, max_tokens=1024))
        waited = time.perf_counter() - started
        speed = client.speed.tokens_per_s
    assert waited > profile.timeout_s and answer.usage.completion_tokens > 100
    assert speed is not None and speed > 1
