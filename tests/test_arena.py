"""The Arena: the pairwise task, the generic screen under the pilot (drawing, filters,
revealing, judge errors, live answers from the real llama-server) and a snapshot."""

from __future__ import annotations

import math
import random

import pytest
from textual.widgets import Select, Static

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.judging import task as registry
from engines.judging.task import TaskItem
from engines.judging.verdict import Verdict
from engines.pairwise.prompts import LABELS
from screens.arena import ArenaScreen, JudgeCard, JudgeColumn, distribution_text

PAIRWISE = registry.task("pairwise")


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


# ---------------------------------------------------------------------- the task as the Arena uses it


def test_pairwise_task_draws_deterministically_and_honours_its_filter():
    first = PAIRWISE.draw(None, random.Random(4))
    again = PAIRWISE.draw(None, random.Random(4))
    assert first.title == again.title and first.body == again.body
    assert "Argument A (" in first.body and "Argument B (" in first.body
    assert first.reference.split()[0] in LABELS and "published" in first.reference
    assert PAIRWISE.filters(None) == {"dimension": ("logical", "rhetorical", "dialectical")}
    rhetorical = PAIRWISE.draw(None, random.Random(4), dimension="rhetorical")
    assert "· rhetorical ·" in rhetorical.title and "rhetorically stronger" in rhetorical.body
    assert rhetorical.payload.dimension == "rhetorical"


class EchoTask:
    """A task that exists only in this test: it answers without a model."""

    name, title, labels, options, variant_flag = "echo", "Echo: says yes", ("yes", "no"), (), "rule"

    def variants(self):
        return ("always",)

    def filters(self, ctx):
        return {"colour": ("red", "blue")}

    def draw(self, ctx, rng, colour="red"):
        return TaskItem(f"echo/{colour}", f"echo item · {colour}", "Say yes.", reference="yes")

    async def judge(self, ctx, item, variant, client, options):
        return Verdict(label="yes", distribution={"yes": 0.75, "no": 0.25}, detail="echoed", seconds=0.01)


@pytest.fixture
def echo_task():
    task = registry.register(EchoTask())
    yield task
    registry.unregister(task.name)


async def test_a_task_registered_anywhere_is_offered_and_judged_in_the_arena(echo_task, offline_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = ArenaScreen(task="echo", seed=1, judges=[JudgeColumn(offline_backend, "always")])
        await app.push_screen(screen)
        assert "echo" in [task.name for task in screen.arena_tasks]
        await until(pilot, lambda: screen.item is not None)
        assert screen.item.title == "echo item · red"
        screen.query_one("#filter-colour", Select).value = "blue"
        await until(pilot, lambda: screen.item.key == "echo/blue")
        card = screen.query_one(JudgeCard)
        await until(pilot, lambda: card.answer is not None)
        rendered = str(card.render())
        assert card.answer.label == "yes" and "75%" in rendered and "echoed" in rendered


def test_distribution_bars():
    text = distribution_text(LABELS, {"A": 0.62, "B": 0.2, "Tie": 0.18}).plain.splitlines()
    assert text[0] == "A   ██████░░░░  62%"
    assert text[2] == "Tie ██░░░░░░░░  18%"


# ---------------------------------------------------------------------- the screen


async def test_arena_draws_filters_reveals_and_shows_judge_errors(offline_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ArenaScreen(task="pairwise", seed=11, judges=[JudgeColumn(offline_backend, "zero")],
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
    columns = [JudgeColumn(llama_profile.name, "zero"), JudgeColumn(llama_profile.name, "cot")]
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ArenaScreen(task="pairwise", seed=3, judges=columns)
        await app.push_screen(screen)
        cards = list(screen.query(JudgeCard))
        assert [c.column for c in cards] == columns
        await until(pilot, lambda: all(c.answer is not None for c in cards), timeout_s=240)
        for card in cards:
            answer = card.answer
            assert answer.label in LABELS and answer.valid
            assert math.isclose(sum(answer.distribution.values()), 1.0)  # the grammar admits only labels
            assert answer.seconds > 0 and len(answer.data["run_labels"]) == 3
            rendered = str(card.render())
            assert f"{answer.seconds:.2f} s" in rendered and "Tie " in rendered
            assert "majority of 3 runs" in answer.detail


def test_arena_snapshot(offline_backend, snap_compare, until):
    async def draw_and_reveal(pilot):
        screen = ArenaScreen(task="pairwise", seed=7, judges=[JudgeColumn(offline_backend, "few")],
                             auto_judge=False)
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None and pilot.app.backend_status is not None)
        await pilot.press("r")
        await pilot.pause()

    assert snap_compare(ArgtuiApp(), terminal_size=(80, 24), run_before=draw_and_reveal)
