"""Garbage from the judge model: invalid judgments are kept as values with their raw text,
a failing Analyzer stage 1 is tried twice and then not repeated for every turn, and P(yes)
sums both spellings of yes."""

from __future__ import annotations

import json
import math

import httpx
import pytest

from engines.grice import ReasonCache, builtin_pool, judge_metric, judge_turn, parse_method
from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from store.grice import GriceRepository

CONTEXT = builtin_pool().demos()[0][1].context


def _profile() -> BackendProfile:
    return BackendProfile(name="fake", kind="llamacpp", base_urls=["http://fake.test/v1"], model="m", timeout_s=5)


def _server(answer):
    """A fake server: `answer(body)` gives (content, top logprobs of the first token or None)."""
    bodies = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        content, top = answer(body)
        choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        if top is not None:
            choice["logprobs"] = {"content": [{"token": content, "logprob": top[0][1],
                                               "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}]}
        return httpx.Response(200, json={"choices": [choice], "usage": {"prompt_tokens": 7, "completion_tokens": 1}})

    return httpx.MockTransport(handler), bodies


async def test_an_answer_outside_yes_and_no_is_an_invalid_judgment_with_its_raw_text():
    transport, bodies = _server(lambda body: ("Maybe, it depends.", None))
    async with LLMClient(_profile(), transport=transport) as client:
        judgment = await judge_turn(client, CONTEXT, "ZSL")
    assert len(bodies) == 4  # no rationale is asked for an invalid answer
    for result in judgment.metrics.values():
        assert not result.valid and result.answer is None and result.p_yes is None
        assert result.raw == "Maybe, it depends." and result.error
    assert not judgment.valid


async def test_p_yes_sums_both_spellings_of_yes():
    top = [("Yes", math.log(0.3)), ("yes", math.log(0.25)), ("No", math.log(0.45))]
    transport, bodies = _server(lambda body: ("No", top) if "grammar" in body else ("Short reason.", None))
    async with LLMClient(_profile(), transport=transport) as client:
        judgment = await judge_metric(client, CONTEXT, "relation", parse_method("ZSL"))
    assert judgment.p_yes == pytest.approx(0.55)
    assert judgment.answer == "yes"  # the answer follows P(yes) at 0.5, not the sampled spelling
    assert judgment.source == "logprobs" and judgment.rationale == "Short reason."
    assert bodies[1]["messages"][-2] == {"role": "assistant", "content": "Yes"}


async def test_invalid_stage1_is_tried_twice_then_remembered_and_not_stored(db):
    def answer(body):
        if "response_format" in body:
            return '{"yes": "unfinished', None  # cut-off JSON
        return "Yes", [("Yes", math.log(0.9)), ("No", math.log(0.1))]

    transport, bodies = _server(answer)
    repo = GriceRepository(db)
    reasons = ReasonCache(repo)
    async with LLMClient(_profile(), transport=transport) as client:
        first = await judge_metric(client, CONTEXT, "quality", parse_method("Analyzer3"), reasons=reasons)
        second = await judge_metric(client, CONTEXT, "quality", parse_method("Analyzer3"), reasons=reasons)
    stage1 = [b for b in bodies if "response_format" in b]
    assert len(stage1) == 2 and stage1[0]["temperature"] == 0.0 and stage1[1]["temperature"] > 0
    assert len(bodies) == 2  # no yes/no call without reasons, and the second turn asked nothing
    for result in (first, second):
        assert not result.valid and "stage 1" in result.error and result.raw == '{"yes": "unfinished'
    assert first.calls == 2 and second.calls == 0
    assert repo.reasons_count() == 0
