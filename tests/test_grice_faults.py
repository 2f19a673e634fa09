"""Garbage from the judge model: invalid judgments are kept as values with their raw text,
a failing Analyzer stage 1 is tried twice and then not repeated for every turn, P(yes)
sums both spellings of yes, and the task's verdict on a turn names the metric that failed."""

from __future__ import annotations

import math
import random

import pytest

from argtui.runtime import Runtime
from engines.grice import METRICS, ReasonCache, builtin_pool, judge_metric, judge_turn, parse_method
from engines.judging.task import TaskItem, default_options
from engines.llm.client import LLMClient
from engines.tasks.grice import TASK, GriceItem, metric_judgments
from fakes import FakeServer, Reply, chat_reply, logprob_entry
from store.grice import GriceRepository

CONTEXT = builtin_pool().demos()[0][1].context


def _client(server: FakeServer) -> LLMClient:
    return LLMClient(server.profile(kind="llamacpp", timeout_s=5))


def _server(fake: FakeServer, answer) -> list[dict]:
    """Script the fake server: `answer(body)` gives (content, top logprobs of the first token or None)."""

    def reply(body: dict) -> Reply:
        content, top = answer(body)
        logprobs = None if top is None else [logprob_entry(content, top[0][1], top)]
        return chat_reply(content, logprobs=logprobs, prompt_tokens=7)

    fake.answer = reply
    return fake.bodies


async def test_an_answer_outside_yes_and_no_is_an_invalid_judgment_with_its_raw_text(fake_server):
    bodies = _server(fake_server, lambda body: ("Maybe, it depends.", None))
    async with _client(fake_server) as client:
        judgment = await judge_turn(client, CONTEXT, "ZSL")
    assert len(bodies) == 4  # no rationale is asked for an invalid answer
    for result in judgment.metrics.values():
        assert not result.valid and result.answer is None and result.p_yes is None
        assert result.raw == "Maybe, it depends." and result.error
    assert not judgment.valid


async def test_p_yes_sums_both_spellings_of_yes(fake_server):
    top = [("Yes", math.log(0.3)), ("yes", math.log(0.25)), ("No", math.log(0.45))]
    bodies = _server(fake_server, lambda body: ("No", top) if "grammar" in body else ("Short reason.", None))
    async with _client(fake_server) as client:
        judgment = await judge_metric(client, CONTEXT, "relation", parse_method("ZSL"))
    assert judgment.p_yes == pytest.approx(0.55)
    assert judgment.answer == "yes"  # the answer follows P(yes) at 0.5, not the sampled spelling
    assert judgment.source == "logprobs" and judgment.rationale == "Short reason."
    assert bodies[1]["messages"][-2] == {"role": "assistant", "content": "Yes"}


async def test_invalid_stage1_is_tried_twice_then_remembered_and_not_stored(db, fake_server):
    def answer(body):
        if "response_format" in body:
            return '{"yes": "unfinished', None  # cut-off JSON
        return "Yes", [("Yes", math.log(0.9)), ("No", math.log(0.1))]

    bodies = _server(fake_server, answer)
    repo = GriceRepository(db)
    reasons = ReasonCache(repo)
    async with _client(fake_server) as client:
        first = await judge_metric(client, CONTEXT, "quality", parse_method("Analyzer3"), reasons=reasons)
        second = await judge_metric(client, CONTEXT, "quality", parse_method("Analyzer3"), reasons=reasons)
    stage1 = [b for b in bodies if "response_format" in b]
    assert len(stage1) == 2 and stage1[0]["temperature"] == 0.0 and stage1[1]["temperature"] > 0
    assert len(bodies) == 2  # no yes/no call without reasons, and the second turn asked nothing
    for result in (first, second):
        assert not result.valid and "stage 1" in result.error and result.raw == '{"yes": "unfinished'
    assert first.calls == 2 and second.calls == 0
    assert repo.reasons_count() == 0


async def test_the_task_verdict_keeps_every_metric_and_names_the_invalid_one(fake_server):
    def answer(body):
        if "grammar" not in body:
            return "Short reason.", None
        if "Quality metric" in body["messages"][-1]["content"]:
            return "Maybe", None
        return "Yes", [("Yes", math.log(0.8)), ("No", math.log(0.2))]

    bodies = _server(fake_server, answer)
    runtime = Runtime()
    turn = TaskItem("d/0", "d · turn 1", "", payload=GriceItem(CONTEXT, METRICS, {}))
    try:
        async with _client(fake_server) as client:
            verdict = await TASK.judge(runtime, turn, "ZSL", client, default_options(TASK))
            assert len(bodies) == 7  # four answers, three rationales
            arena = TASK.draw(runtime, random.Random(0), metric="quality")
            single = await TASK.judge(runtime, arena, "ZSL", client, default_options(TASK))
    finally:
        await runtime.aclose()
    assert verdict.invalid_reason == "quality: the judge answered neither yes nor no"
    assert verdict.raw == "quality: Maybe" and verdict.label is None
    assert "quality invalid" in verdict.detail and "relation yes 0.80" in verdict.detail
    metrics = metric_judgments(verdict)
    assert list(metrics) == list(METRICS) and metrics["relation"].rationale == "Short reason."
    assert metrics["relation"].p_yes == pytest.approx(0.8) and metrics["quality"].answer is None
    assert verdict.usage.calls == 7 and verdict.usage.prompt_tokens == 7 * 7
    assert single.label is None and single.distribution == {} and single.raw == "quality: Maybe"
    assert single.detail == "ZSL: the judge answered neither yes nor no"
