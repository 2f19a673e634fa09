"""Fault injection: the client against a fake transport that times out, fails or talks nonsense."""

from __future__ import annotations

import json

import httpx
import pytest
from pydantic import BaseModel

from engines.llm.client import LLMClient, gbnf_choice, label_distribution
from engines.llm.profile import BackendProfile
from engines.llm.servers import free_loopback_port
from engines.llm.types import BackendError, Completion, TokenLogprob, Usage

MESSAGES = [{"role": "user", "content": "hi"}]


def profile(kind="llamacpp", retries=3, url="http://fake.test/v1") -> BackendProfile:
    return BackendProfile(name="fake", kind=kind, base_urls=[url], model="m", retries=retries, timeout_s=5)


def ok(content: str, logprobs: list | None = None) -> httpx.Response:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    return httpx.Response(200, json={"choices": [choice], "usage": {"prompt_tokens": 5, "completion_tokens": 1}})


def scripted(*steps):
    """A transport answering each request with the next step (a Response or an exception)."""
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(json.loads(request.content) if request.content else None)
        step = steps[min(len(calls) - 1, len(steps) - 1)]
        if isinstance(step, Exception):
            raise step
        return step

    return httpx.MockTransport(handler), calls


async def test_timeout_then_success_is_retried():
    transport, calls = scripted(httpx.ReadTimeout("slow"), ok("hello"))
    async with LLMClient(profile(), transport=transport, backoff_base_s=0) as client:
        completion = await client.chat(MESSAGES)
    assert completion.text == "hello"
    assert len(calls) == 2
    assert client.accounting.retries == 1


async def test_500_then_success_is_retried():
    transport, calls = scripted(httpx.Response(500, json={"error": {"message": "boom"}}), ok("fine"))
    async with LLMClient(profile(), transport=transport, backoff_base_s=0) as client:
        assert (await client.chat(MESSAGES)).text == "fine"
    assert len(calls) == 2


async def test_persistent_503_surfaces_as_backend_error_after_retries():
    transport, calls = scripted(httpx.Response(503, json={"error": {"message": "overloaded"}}))
    async with LLMClient(profile(retries=2), transport=transport, backoff_base_s=0) as client:
        with pytest.raises(BackendError) as caught:
            await client.chat(MESSAGES)
    assert caught.value.status == 503
    assert "overloaded" in str(caught.value)
    assert len(calls) == 3


async def test_client_error_is_not_retried():
    transport, calls = scripted(httpx.Response(400, json={"error": {"message": "bad field"}}))
    async with LLMClient(profile(), transport=transport, backoff_base_s=0) as client:
        with pytest.raises(BackendError, match="bad field"):
            await client.chat(MESSAGES)
    assert len(calls) == 1


async def test_non_json_body_is_a_backend_error():
    transport, _ = scripted(httpx.Response(200, text="<html>proxy</html>"))
    async with LLMClient(profile(), transport=transport, backoff_base_s=0) as client:
        with pytest.raises(BackendError, match="non-JSON"):
            await client.chat(MESSAGES)


async def test_connection_refused_names_the_profile_and_url():
    url = f"http://127.0.0.1:{free_loopback_port()}/v1"
    async with LLMClient(profile(retries=1, url=url), backoff_base_s=0) as client:
        with pytest.raises(BackendError) as caught:
            await client.chat(MESSAGES)
    message = str(caught.value)
    assert "'fake'" in message and url in message and "ConnectError" in message


class Answer(BaseModel):
    answer: str


async def test_malformed_json_output_is_an_invalid_result_with_raw_text():
    transport, _ = scripted(ok('{"answer": "yes"'))
    async with LLMClient(profile(), transport=transport) as client:
        [result] = await client.structured(MESSAGES, Answer)
    assert not result.valid
    assert result.value is None
    assert result.raw == '{"answer": "yes"'
    assert result.error


async def test_schema_violation_is_invalid_and_names_the_field():
    transport, _ = scripted(ok('{"reply": "yes"}'))
    async with LLMClient(profile(), transport=transport) as client:
        [result] = await client.structured(MESSAGES, Answer)
    assert not result.valid and "answer" in result.error


async def test_garbage_choice_is_invalid_with_raw_text():
    transport, _ = scripted(ok("Maybe C"))
    async with LLMClient(profile(), transport=transport) as client:
        choice = await client.choose(MESSAGES, ["A", "B", "Tie"])
    assert not choice.valid
    assert choice.raw == "Maybe C"
    assert choice.distribution == {}


async def test_stream_retries_a_503_before_the_first_byte():
    body = (
        'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n'
        'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
        "data: [DONE]\n\n"
    )
    transport, calls = scripted(httpx.Response(503), httpx.Response(200, text=body))
    async with LLMClient(profile(), transport=transport, backoff_base_s=0) as client:
        events = [event async for event in client.stream(MESSAGES)]
    assert [e.text for e in events[:-1]] == ["Hel", "lo"]
    assert events[-1].text == "Hello"
    assert events[-1].usage.completion_tokens == 2
    assert len(calls) == 2


@pytest.mark.parametrize(
    "kind, field",
    [("vllm", "structured_outputs"), ("llamacpp", "grammar"), ("openai", "response_format")],
)
async def test_choice_constraint_follows_the_backend_kind(kind, field):
    content = json.dumps({"label": "B"}) if kind == "openai" else "B"
    transport, calls = scripted(ok(content))
    async with LLMClient(profile(kind=kind), transport=transport) as client:
        choice = await client.choose(MESSAGES, ["A", "B"])
    assert field in calls[0]
    assert choice.label == "B"
    assert choice.distribution == {"A": 0.0, "B": 1.0} and choice.source == "text"


async def test_n_samples_in_one_request_where_the_backend_supports_it():
    response = httpx.Response(200, json={
        "choices": [
            {"index": i, "message": {"content": t}, "finish_reason": "stop"} for i, t in enumerate("xyz")
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 3},
    })
    transport, calls = scripted(response)
    async with LLMClient(profile(kind="vllm"), transport=transport) as client:
        samples = await client.samples(MESSAGES, 3)
    assert len(calls) == 1 and calls[0]["n"] == 3
    assert [s.text for s in samples] == ["x", "y", "z"]
    assert [s.usage.prompt_tokens for s in samples] == [40, 0, 0]  # prefilled once


def test_label_distribution_from_top_logprobs_after_a_json_prefix():
    text = '{"label": "Tie"}'
    tokens = ['{"', "label", '":', ' "', "T", "ie", '"}']
    entries = tuple(
        TokenLogprob(t, -0.1, (("T", -0.5), ("A", -1.5), ("B", -2.0), ("x", -0.1)) if t == "T" else ())
        for t in tokens
    )
    completion = Completion(text, "stop", Usage(), entries)
    dist = label_distribution(["A", "B", "Tie"], completion, text.find("Tie"))
    assert max(dist, key=dist.get) == "Tie"
    assert abs(sum(dist.values()) - 1) < 1e-12
    assert dist["A"] > dist["B"] > 0


def test_gbnf_choice_quotes_labels():
    assert gbnf_choice(["A", 'say "B"']) == 'root ::= "A" | "say \\"B\\""'
