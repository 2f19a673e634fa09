"""The Arena task for argument components, tested directly against the Arena contract."""

from __future__ import annotations

import random

import pytest

from engines.components import LABELS
from engines.components.formatting import TARGET_CLOSE, TARGET_OPEN
from engines.datasets.ukp_essays import DATA_ENV
from screens.arena_api import ArenaAnswer, ArenaItem, discover_arena_tasks, draw_item
from screens.arena_components import ARENA_TASK, EXAMPLE_TEXTS, ComponentsArenaTask
from test_components import ScriptedServer, scripted_client

UKP = "ukp-argument-annotated-essays-v2"


def test_the_task_is_discovered_with_its_labels_and_variants():
    assert ARENA_TASK in discover_arena_tasks()
    assert ARENA_TASK.name == "components" and ARENA_TASK.labels == LABELS
    assert ARENA_TASK.variants() == ["mad", "vanilla", "cot"]


def test_without_the_corpus_items_come_from_example_paragraphs(monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)
    task = ComponentsArenaTask()
    items = [draw_item(task, random.Random(seed)) for seed in range(12)]
    assert all(item.reference is None and "no gold label" in item.title for item in items)
    assert {item.payload.text for item in items} <= set(EXAMPLE_TEXTS)
    for item in items:
        target = item.payload.spans[item.payload.target]
        assert f"{TARGET_OPEN}{target.text}{TARGET_CLOSE}" in item.body
    assert draw_item(task, random.Random(3)) == draw_item(task, random.Random(3))


@pytest.mark.shared_data
def test_with_the_corpus_items_are_gold_components_of_test_essays(shared_data, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(shared_data / UKP))
    task = ComponentsArenaTask()
    assert len(task.essays) == 80
    item = task.draw(random.Random(7))
    essay_id, component_id = item.payload.key.split("/")
    essay = next(e for e in task.essays if e.id == essay_id)
    component = next(c for c in essay.components if c.id == component_id)
    assert item.reference == component.label and item.title.startswith(f"{essay_id} · {component_id}")
    assert f"{TARGET_OPEN}{component.text}{TARGET_CLOSE}" in item.body
    assert len(item.body) < 1000  # an excerpt around the target, not the whole essay


async def test_judging_answers_with_label_distribution_and_debate():
    task = ComponentsArenaTask()
    item = task.draw(random.Random(0))
    target = item.payload.spans[item.payload.target].text
    server = ScriptedServer({target: "Claim"}, text="Its role is to support the thesis.")
    async with scripted_client(server) as client:
        mad = await task.judge(item, "mad", client)
        vanilla = await task.judge(item, "vanilla", client)
    assert isinstance(mad, ArenaAnswer) and mad.label == "Claim" and mad.raw == ""
    assert set(mad.distribution) == set(LABELS) and mad.seconds > 0
    assert mad.detail.startswith("Manager: ") and "Judge: Its role is to support the thesis." in mad.detail
    assert "Proponent (" in mad.detail and "Opponent (" in mad.detail
    assert vanilla.label == "Claim" and vanilla.distribution["Claim"] == pytest.approx(0.6)


async def test_an_invalid_answer_keeps_the_raw_output():
    task = ComponentsArenaTask()
    item = task.draw(random.Random(1))
    target = item.payload.spans[item.payload.target].text
    async with scripted_client(ScriptedServer({target: "Thesis"})) as client:
        answer = await task.judge(item, "vanilla", client)
    assert answer.label is None and answer.raw == "Thesis"


def test_items_are_arena_items():
    assert isinstance(ComponentsArenaTask().draw(random.Random(2)), ArenaItem)
