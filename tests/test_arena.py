"""The Arena: the pairwise task, the generic screen under the pilot (drawing, filters,
revealing, judge errors, live answers from the real llama-server) and a snapshot."""

from __future__ import annotations

import math
import random

import pytest
from textual.widgets import Select, Static

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.pairwise.prompts import LABELS
from screens.arena import ArenaScreen, JudgeCard, JudgeColumn, distribution_text
from screens.arena_api import ArenaItem, discover_arena_tasks, draw_item, task_filters
from screens.arena_pairwise import ARENA_TASK, settings_for


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


# ---------------------------------------------------------------------- the task and the contract


def test_pairwise_task_is_discovered_and_draws_deterministically():
    assert ARENA_TASK in discover_arena_tasks()
    first = ARENA_TASK.draw(random.Random(4))
    again = ARENA_TASK.draw(random.Random(4))
    assert first.title == again.title and first.body == again.body
    assert "Argument A (" in first.body and "Argument B (" in first.body
    assert first.reference.split()[0] in LABELS and "published" in first.reference
    rhetorical = ARENA_TASK.draw(random.Random(4), dimension="rhetorical")
    assert "· rhetorical ·" in rhetorical.title and "rhetorically stronger" in rhetorical.body
    assert rhetorical.payload.item.dimension == "rhetorical"


def test_variants_map_to_judge_settings():
    variants = ARENA_TASK.variants()
    assert variants[0] == "zero-shot" and len(variants) == 6
    assert (settings_for("few-shot").strategy, settings_for("few-shot").mode) == ("few", "logprob")
    runs = settings_for("chain-of-thought · 3 runs")
    assert (runs.strategy, runs.mode, runs.runs) == ("cot", "runs", 3)


def test_draw_item_passes_filters_only_to_tasks_that_take_them():
    class Plain:  # a task written against the original contract: draw(rng) only
        name, title, labels = "plain", "Plain", ("yes", "no")

        def variants(self):
            return ["v"]

        def draw(self, rng):
            return ArenaItem("t", "b", None)

    assert task_filters(Plain()) == {}
    assert draw_item(Plain(), random.Random(0), {}).title == "t"
    assert task_filters(ARENA_TASK) == {"dimension": ("logical", "rhetorical", "dialectical")}
    item = draw_item(ARENA_TASK, random.Random(0), {"dimension": "dialectical"})
    assert "dialectical" in item.title
    assert draw_item(ARENA_TASK, random.Random(0), {"dimension": None}).title == ARENA_TASK.draw(random.Random(0)).title


def test_distribution_bars():
    text = distribution_text(LABELS, {"A": 0.62, "B": 0.2, "Tie": 0.18}).plain.splitlines()
    assert text[0] == "A   ██████░░░░  62%"
    assert text[2] == "Tie ██░░░░░░░░  18%"


# ---------------------------------------------------------------------- the screen


async def test_arena_draws_filters_reveals_and_shows_judge_errors(offline_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ArenaScreen(task="pairwise", seed=11, judges=[JudgeColumn(offline_backend, "zero-shot")],
                             auto_judge=False)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None)
        assert text_of(screen, "#item-title") == screen.item.title
        assert "Reference hidden" in text_of(screen, "#reference")
        await pilot.press("r")
        assert text_of(screen, "#reference").startswith(f"Reference: {screen.item.reference}")
        await pilot.press("r")
        assert "Reference hidden" in text_of(screen, "#reference")

        first = screen.item
        screen.query_one("#filter-dimension", Select).value = "rhetorical"
        await until(pilot, lambda: screen.item is not first)
        assert "· rhetorical ·" in screen.item.title

        card = screen.query_one(JudgeCard)
        assert "press j" in str(card.render())
        await pilot.press("j")
        await until(pilot, lambda: card.has_class("-failed"))
        assert "offline" in str(card.render())  # the backend error, named, on the card


@pytest.mark.llm
async def test_arena_judges_answer_live_side_by_side(llama_profile, until):
    load_config().add_backend(llama_profile.model_copy(update={"timeout_s": 300}), make_default=True)
    columns = [JudgeColumn(llama_profile.name, "zero-shot"), JudgeColumn(llama_profile.name, "zero-shot · 3 runs")]
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ArenaScreen(task="pairwise", seed=3, judges=columns)
        await app.push_screen(screen)
        cards = list(screen.query(JudgeCard))
        assert [c.column for c in cards] == columns
        await until(pilot, lambda: all(c.answer is not None for c in cards), timeout_s=240)
        for card in cards:
            answer = card.answer
            assert answer.label in LABELS
            assert math.isclose(sum(answer.distribution.values()), 1.0)
            assert answer.seconds > 0
            rendered = str(card.render())
            assert f"{answer.seconds:.2f} s" in rendered and "Tie " in rendered
        assert "runs:" in cards[1].answer.detail


def test_arena_snapshot(offline_backend, snap_compare, until):
    async def draw_and_reveal(pilot):
        screen = ArenaScreen(task="pairwise", seed=7, judges=[JudgeColumn(offline_backend, "few-shot")],
                             auto_judge=False)
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None and pilot.app.backend_status is not None)
        await pilot.press("r")
        await pilot.pause()

    assert snap_compare(ArgtuiApp(), terminal_size=(80, 24), run_before=draw_and_reveal)
