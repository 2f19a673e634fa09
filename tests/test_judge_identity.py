"""A judge's identity is the digest of the requests it sends: its task's own judge renders them for
a fixed probe item against a client that sends nothing. A private prompt text or a token cap
changed is a new judge; the same judge is the same identity; the fact source the config chooses
is part of it; taking it asks no server."""

from __future__ import annotations

import inspect
import random
import sys

import pytest

import engines.grice.prompts as grice_prompts
from argtui.runtime import Runtime
from engines.inspire.settings import InspireSettings
from engines.judging import identity
from engines.judging.identity import judge_id
from engines.judging.options import TaskOptions
from engines.judging.task import TaskItem, default_options
from engines.judging.verdict import Verdict
from engines.llm.client import LLMClient
from engines.tasks.grice import TASK as GRICE
from engines.tasks.inspire import TASK as INSPIRE
from engines.tasks.inspire import InspireOptions
from engines.tasks.pairwise import TASK as PAIRWISE
from fakes import FakeServer, chat_reply

# The toy task's prompt, private to this module as a task's own prompt text may be.
_QUESTION = "Is {body} odd? Answer yes or no."


class BareToyTask:
    """A task of the bare protocol (no base class), all of it in this file: it asks its prompt."""

    name = "toy-asking"
    title = "Toy: asks whether a number is odd"
    labels = ("yes", "no")
    Options = TaskOptions
    options = TaskOptions.task_options()
    variant_flag = "rule"

    def variants(self):
        return ("plain",)

    def filters(self, ctx):
        return {}

    def items(self, ctx, options):
        return [TaskItem(f"n{n}", f"number {n}", str(n)) for n in range(3)]

    def draw(self, ctx, rng: random.Random, **filters):
        return TaskItem("n3", "number 3", "3")

    def judge_variant(self, variant, options):
        return variant

    def concurrency(self, variant, client, options):
        return 1

    async def judge(self, ctx, item, variant, client, options):
        answer = await client.chat([{"role": "user", "content": _QUESTION.format(body=item.body)}])
        return Verdict(label=answer.text.strip().lower())


@pytest.fixture(autouse=True)
def fresh_identities(monkeypatch):
    """Identities are kept for the process; each test takes its own anew."""
    monkeypatch.setattr(identity, "_known", {})


async def identities(fake: FakeServer, monkeypatch, change, task, variant, options):
    """The judge's identity before and after `change` (a monkeypatch), and the requests the server got."""
    async with LLMClient(fake.profile(kind="llamacpp")) as client:
        before = await judge_id(task, client, variant, options)
        change()
        monkeypatch.setattr(identity, "_known", {})
        after = await judge_id(task, client, variant, options)
    return before, after


async def test_a_private_prompt_text_changed_is_a_new_judge_and_nothing_is_asked(monkeypatch):
    options = default_options(GRICE)
    with FakeServer([chat_reply("Yes")]) as fake:
        before, after = await identities(
            fake, monkeypatch,
            lambda: monkeypatch.setitem(grice_prompts._SPEAKER, "assistant", "Bot"),
            GRICE, "ZSL", options,
        )
        assert fake.bodies == []  # the probe sends nothing
    assert (before.profile, before.model, before.variant, before.options, before.sampling) == (
        after.profile, after.model, after.variant, after.options, after.sampling)
    assert before.prompts != after.prompts and before.name != after.name


async def test_a_streamed_request_is_part_of_the_judge(monkeypatch):
    """The Grice rationale is streamed (so an answer the model did not mean is stopped early): the
    probe records it as any request, so its text is part of the judge."""
    options = default_options(GRICE)
    with FakeServer([chat_reply("Yes")]) as fake:
        before, after = await identities(
            fake, monkeypatch, lambda: monkeypatch.setattr(grice_prompts, "RATIONALE_REQUEST", "Explain your answer."),
            GRICE, "ZSL", options,
        )
        assert fake.bodies == []
    assert before.prompts != after.prompts and before.name != after.name


def test_the_probe_takes_every_argument_a_client_stream_takes():
    """A judge calls the probe as it calls a client: an argument the probe lacks would stop the judge
    there, and what it asks after would be left out of its identity."""
    assert inspect.signature(identity.RequestProbe.stream).parameters.keys() == \
        inspect.signature(LLMClient.stream).parameters.keys()


async def test_a_token_cap_changed_is_a_new_judge(monkeypatch):
    options = default_options(PAIRWISE)
    with FakeServer([chat_reply("A")]) as fake:
        before, after = await identities(
            fake, monkeypatch, lambda: monkeypatch.setattr("engines.pairwise.judge.LABEL_MAX_TOKENS", 17),
            PAIRWISE, "zero", options,
        )
        assert fake.bodies == []
    assert before.options == after.options and before.prompts != after.prompts and before.name != after.name


async def test_the_same_judge_taken_twice_is_the_same_identity_and_another_variant_is_another(monkeypatch):
    options = default_options(GRICE)
    with FakeServer([chat_reply("Yes")]) as fake:
        async with LLMClient(fake.profile()) as client:
            first = await judge_id(GRICE, client, "BEST", options)
            assert await judge_id(GRICE, client, "BEST", options) == first  # kept for the process
            monkeypatch.setattr(identity, "_known", {})
            assert await judge_id(GRICE, client, "BEST", default_options(GRICE)) == first  # rendered anew
            other = await judge_id(GRICE, client, "Analyzer5", options)
        # A backend of another kind receives other request fields; the judge is the same.
        async with LLMClient(fake.profile(kind="vllm")) as client:
            monkeypatch.setattr(identity, "_known", {})
            assert await judge_id(GRICE, client, "BEST", options) == first
        assert fake.bodies == []
    assert other.prompts not in ("", first.prompts)


async def test_the_configured_fact_source_is_part_of_the_inspire_judge(tmp_path):
    facts = tmp_path / "facts.jsonl"
    facts.write_text('{"id": "s1", "text": "Families pay for school uniforms."}\n', encoding="utf-8")
    runtime = Runtime()
    try:
        with FakeServer([chat_reply("{}")]) as fake:
            runtime.config.add_backend(fake.profile(), make_default=True)
            client = await runtime.client()

            async def judge_of():
                settled = await INSPIRE.settled_options(runtime, InspireOptions())
                return await judge_id(INSPIRE, client, "inspire", settled)

            on_base = await judge_of()
            runtime.config.inspire = InspireSettings(facts=str(facts))
            on_facts = await judge_of()
            assert fake.bodies == []
    finally:
        await runtime.aclose()
    assert on_base.prompts and on_facts.name != on_base.name


async def test_a_bare_protocol_task_is_a_new_judge_when_its_private_prompt_text_changes(monkeypatch):
    task = BareToyTask()
    with FakeServer([chat_reply("yes")]) as fake:
        before, after = await identities(
            fake, monkeypatch,
            lambda: monkeypatch.setattr(sys.modules[__name__], "_QUESTION", "Is {body} an odd number? Say yes or no."),
            task, "plain", TaskOptions(),
        )
        assert fake.bodies == []
    assert before.prompts and before.prompts != after.prompts and before.name != after.name


class AskingForeverTask(BareToyTask):
    """A judge whose loop never ends on the answers it gets."""

    name = "toy-asking-forever"

    async def judge(self, ctx, item, variant, client, options):
        asked = 0
        while True:
            asked += 1
            await client.chat([{"role": "user", "content": f"Question {asked}: is {item.body} odd?"}])


async def test_a_judge_that_never_stops_asking_is_digested_by_its_first_requests(monkeypatch):
    task = AskingForeverTask()
    with FakeServer([chat_reply("yes")]) as fake:
        async with LLMClient(fake.profile()) as client:
            first = await judge_id(task, client, "plain", TaskOptions())
            monkeypatch.setattr(identity, "_known", {})
            assert await judge_id(task, client, "plain", TaskOptions()) == first
            monkeypatch.setattr(identity, "PROBE_MAX_REQUESTS", 10)
            monkeypatch.setattr(identity, "_known", {})
            fewer = await judge_id(task, client, "plain", TaskOptions())
        assert fake.bodies == []
    assert first.prompts and fewer.prompts != first.prompts
