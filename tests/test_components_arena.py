"""The `components` task as the Arena uses it: drawing items (UKP test essays or the built-in
examples) and judging one with each method."""

from __future__ import annotations

import random

import pytest

from argtui.config import load_config
from argtui.runtime import Runtime
from engines.components import LABELS
from engines.components.formatting import TARGET_OPEN
from engines.judging.task import default_options, tasks
from engines.tasks.components import EXAMPLE_TEXTS, TASK
from test_components import ScriptedServer, scripted_client

UKP = "ukp-argument-annotated-essays-v2"


@pytest.fixture
def examples_ctx():
    """No [datasets] entry for the essays: the Arena uses the example paragraphs."""
    runtime = Runtime()
    yield runtime
    runtime.db.close()


@pytest.fixture
def essays_ctx(shared_data):
    config = load_config()
    config.datasets["ukp-essays"] = str(shared_data / UKP)
    runtime = Runtime(config)
    yield runtime
    runtime.db.close()


def test_the_task_is_registered_with_its_labels_and_methods(examples_ctx):
    assert TASK in tasks()
    assert (TASK.name, TASK.labels, TASK.variant_flag) == ("components", LABELS, "method")
    assert TASK.variants() == ("mad", "vanilla", "cot", "smart") and TASK.filters(examples_ctx) == {}


def test_without_the_corpus_items_come_from_example_paragraphs(examples_ctx):
    items = [TASK.draw(examples_ctx, random.Random(seed)) for seed in range(12)]
    assert all(item.reference is None and "no gold label" in item.title for item in items)
    assert {item.payload.text for item in items} <= set(EXAMPLE_TEXTS)
    for item in items:
        target = item.payload.spans[item.payload.target]
        assert item.body[slice(*item.highlight)] == target.text  # the component under judgment
        number = EXAMPLE_TEXTS.index(item.payload.text) + 1
        assert item.key == f"example{number}/S{item.payload.target + 1}"
    assert len({item.key for item in items}) > 3  # the draws differ
    assert TASK.draw(examples_ctx, random.Random(3)) == TASK.draw(examples_ctx, random.Random(3))


@pytest.mark.shared_data
async def test_with_the_corpus_items_are_gold_components_of_test_essays(essays_ctx):
    item = TASK.draw(essays_ctx, random.Random(7))
    essay_id, component_id = item.key.split("/")
    assert essay_id.startswith("essay") and item.title.startswith(f"{essay_id} · {component_id}")
    target = item.payload.spans[item.payload.target]
    assert item.reference in LABELS
    assert item.body[slice(*item.highlight)] == target.text and TARGET_OPEN not in item.body
    assert len(item.body) < 1000  # an excerpt around the target, not the whole essay
    server = ScriptedServer({target.text: "MajorClaim"})
    async with scripted_client(server) as client:
        verdict = await TASK.judge(essays_ctx, item, "vanilla", client, default_options(TASK))
    assert verdict.label == "MajorClaim" and verdict.label in LABELS
    assert set(verdict.distribution) == set(LABELS) and sum(verdict.distribution.values()) == pytest.approx(1.0)


async def test_judging_answers_with_label_distribution_and_debate(examples_ctx):
    item = TASK.draw(examples_ctx, random.Random(0))
    target = item.payload.spans[item.payload.target].text
    server = ScriptedServer({target: "Claim"}, text="Its role is to support the thesis.")
    async with scripted_client(server) as client:
        mad = await TASK.judge(examples_ctx, item, "mad", client, default_options(TASK))
        vanilla = await TASK.judge(examples_ctx, item, "vanilla", client, default_options(TASK))
    assert mad.valid and mad.label == "Claim" and mad.raw == "Claim"
    assert set(mad.distribution) == set(LABELS) and sum(mad.distribution.values()) == pytest.approx(1.0)
    assert mad.seconds > 0 and mad.usage.calls == 7
    assert mad.detail.startswith("Manager: ") and "Judge: Its role is to support the thesis." in mad.detail
    assert "Proponent (" in mad.detail and "Opponent (" in mad.detail
    assert [turn["role"] for turn in mad.data["transcript"]] == ["proponent", "opponent", "proponent", "opponent", "judge"]
    assert vanilla.label == "Claim" and vanilla.distribution["Claim"] == pytest.approx(0.6) and vanilla.usage.calls == 1


async def test_an_invalid_answer_keeps_the_raw_output(examples_ctx):
    item = TASK.draw(examples_ctx, random.Random(1))
    target = item.payload.spans[item.payload.target].text
    async with scripted_client(ScriptedServer({target: "Thesis"})) as client:
        verdict = await TASK.judge(examples_ctx, item, "vanilla", client, default_options(TASK))
    assert verdict.label is None and not verdict.valid and verdict.raw == "Thesis"
    assert "MajorClaim, Claim, Premise" in verdict.invalid_reason
