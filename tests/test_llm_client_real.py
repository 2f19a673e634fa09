"""The LLM client against a real llama-server with SmolLM2."""

from __future__ import annotations

import asyncio
import math
import time

import httpx
import pytest
from pydantic import BaseModel

from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.types import STOPPED, Completion, TextDelta
from store.llm_cache import ResponseCache

pytestmark = pytest.mark.llm

QUESTION = [
    {"role": "system", "content": "You are a concise assistant."},
    {"role": "user", "content": "Name one colour of the rainbow."},
]


class Verdict(BaseModel):
    answer: str
    confidence: int


async def test_whole_chat_reports_text_and_accounting(llama_profile):
    async with LLMClient(llama_profile) as client:
        completion = await client.chat(QUESTION, Sampling(max_tokens=16, temperature=0))
    assert completion.text.strip()
    assert completion.usage.prompt_tokens > 10
    assert completion.usage.completion_tokens > 0
    assert completion.usage.latency_s > 0
    assert not completion.usage.cached
    assert client.accounting.requests == 1


async def test_streamed_chat_deltas_add_up_to_the_reply(llama_profile):
    deltas, final = [], None
    async with LLMClient(llama_profile) as client:
        async for event in client.stream(QUESTION, Sampling(max_tokens=24, temperature=0)):
            if isinstance(event, TextDelta):
                deltas.append(event.text)
            else:
                final = event
    assert isinstance(final, Completion)
    assert len(deltas) > 1
    assert "".join(deltas) == final.text
    assert final.usage.ttft_s is not None and final.usage.ttft_s <= final.usage.latency_s


async def test_choice_distribution_covers_exactly_the_labels(llama_profile):
    labels = ["A", "B", "Tie"]
    messages = [{"role": "user", "content": "Which is better, argument A or argument B? Answer A, B or Tie."}]
    async with LLMClient(llama_profile) as client:
        choice = await client.choose(messages, labels, Sampling(temperature=0))
    assert choice.valid and choice.label in labels
    assert choice.source == "logprobs"
    assert set(choice.distribution) == set(labels)
    assert math.isclose(sum(choice.distribution.values()), 1.0, abs_tol=1e-9)
    assert choice.distribution[choice.label] == max(choice.distribution.values())


async def test_a_profile_without_a_kind_finds_llama_server(llama_profile):
    labels = ["A", "B", "Tie"]
    messages = [{"role": "user", "content": "Which is better, argument A or argument B? Answer A, B or Tie."}]
    async with LLMClient(llama_profile.model_copy(update={"kind": None})) as client:
        assert await client.kind() == "llamacpp"
        choice = await client.choose(messages, labels, Sampling(temperature=0))
    assert choice.valid and choice.raw in labels  # the grammar held: the bare label, no JSON
    assert client.accounting.requests == 3  # /v1/models and /props to detect, then the choice


async def test_choice_by_votes_counts_samples(llama_profile):
    messages = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]
    async with LLMClient(llama_profile) as client:
        choice = await client.choose(messages, ["yes", "no"], Sampling(temperature=1.0, seed=7), votes=5)
    assert choice.source == "votes"
    assert math.isclose(sum(choice.distribution.values()), 1.0)
    assert all(v * 5 == round(v * 5) for v in choice.distribution.values())


async def test_json_schema_output_parses_into_the_model(llama_profile):
    messages = [{"role": "user", "content": "Is water wet? Reply as JSON with answer and confidence (0-10)."}]
    async with LLMClient(llama_profile) as client:
        [result] = await client.structured(messages, Verdict, Sampling(temperature=0, max_tokens=64))
    assert result.valid, result.error
    assert isinstance(result.value, Verdict)
    assert isinstance(result.value.confidence, int)


async def test_three_samples_with_seeds_are_indexed(llama_profile):
    async with LLMClient(llama_profile) as client:
        samples = await client.samples(QUESTION, 3, Sampling(temperature=1.0, max_tokens=12, seed=11))
    assert [s.sample_index for s in samples] == [0, 1, 2]
    assert all(s.text for s in samples)
    assert client.accounting.requests == 1  # one request with n=3
    assert samples[0].usage.prompt_tokens > 0 and samples[1].usage.prompt_tokens == 0


async def test_logprobs_come_with_top_alternatives(llama_profile):
    async with LLMClient(llama_profile) as client:
        completion = await client.chat(QUESTION, Sampling(max_tokens=5, temperature=0), top_logprobs=5)
    assert completion.logprobs
    first = completion.logprobs[0]
    assert first.logprob <= 0
    assert 1 <= len(first.top) <= 5


async def test_identical_call_to_the_same_server_is_served_from_the_cache(llama_profile, db):
    cache = ResponseCache(db)
    sampling = Sampling(max_tokens=12, temperature=0)
    async with LLMClient(llama_profile, cache) as client:
        first = await client.chat(QUESTION, sampling)
    assert cache.count() == 1
    # A new client of the same server and cache (as after a restart): no request at all.
    async with LLMClient(llama_profile, cache) as client:
        again = await client.chat(QUESTION, sampling)
        streamed = [event async for event in client.stream(QUESTION, sampling)]
    assert again.text == first.text
    assert again.usage.cached
    assert streamed[-1].text == first.text
    assert client.accounting.requests == 0
    assert client.accounting.cache_hits == 2


async def test_samples_resume_from_the_cache(llama_profile, db):
    cache = ResponseCache(db)
    sampling = Sampling(max_tokens=8, temperature=1.0, seed=3)
    async with LLMClient(llama_profile, cache) as client:
        two = await client.samples(QUESTION, 2, sampling)
        three = await client.samples(QUESTION, 3, sampling)
    assert [c.text for c in three[:2]] == [c.text for c in two]
    assert client.accounting.requests == 2  # the second call asked only for the third sample


def busy_slots(server) -> int:
    """How many of `server`'s slots are writing an answer now."""
    answer = httpx.get(f"{server.url.removesuffix('/v1')}/slots", headers={"Authorization": f"Bearer {server.api_key}"})
    return sum(bool(slot["is_processing"]) for slot in answer.raise_for_status().json())


async def test_a_stream_stopped_where_the_caller_says_stops_the_server_writing(llama_server, llama_profile, db):
    """An answer stopped by `stop_when` is that text, finished STOPPED and not cached, and the
    server stops writing it at once (the whole answer takes some 8 s here)."""
    counting = [{"role": "user", "content": "Count from 1 to 300, separated by commas."}]
    sampling = Sampling(max_tokens=400, temperature=0)
    async with LLMClient(llama_profile, ResponseCache(db)) as client:
        events = [event async for event in client.stream(counting, sampling, stop_when=lambda text: len(text) >= 12)]
        stopped = events[-1]
        assert isinstance(stopped, Completion) and stopped.finish_reason == STOPPED
        assert stopped.text == "".join(event.text for event in events[:-1]) and 12 <= len(stopped.text) < 40
        idle_after = time.monotonic() + 2.0
        while busy_slots(llama_server) and time.monotonic() < idle_after:
            await asyncio.sleep(0.05)
        assert busy_slots(llama_server) == 0
        again = [event async for event in client.stream(counting, sampling, stop_when=lambda text: len(text) >= 12)]
    assert again[-1].text == stopped.text and not again[-1].usage.cached  # asked again, not replayed
