"""The Arena: the pairwise task, the generic screen under the pilot (drawing, filters,
revealing, judge errors, live answers from the real llama-server) and a snapshot."""

from __future__ import annotations

import math
import random

import pytest
from textual.widgets import SelectionList, Select, Static

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.judging import task as registry
from engines.judging.task import TaskItem
from engines.judging.verdict import Verdict
from engines.pairwise.prompts import LABELS
from engines.judging.identity import RequestProbe
from engines.judging.store import JudgmentStore, arena_key
from engines.judging.verdict import JudgeId
from engines.llm.types import Usage
from screens.arena import ArenaScreen, JudgeCard, JudgeColumn, answer_time, item_text
from screens.widgets.distribution import distribution_bars

PAIRWISE = registry.task("pairwise")


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


# ---------------------------------------------------------------------- the task as the Arena uses it


def test_pairwise_task_draws_deterministically_and_honours_its_filter():
    first = PAIRWISE.draw(None, random.Random(4))
    again = PAIRWISE.draw(None, random.Random(4))
    assert first.title == again.title and first.body == again.body and first.sides == again.sides
    a, b = first.sides
    assert a.heading.startswith("Argument A (") and b.heading.startswith("Argument B (") and a.text and b.text
    assert first.reference in LABELS and "published" in first.reference_note
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

    def judge_variant(self, variant, options):
        return variant

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
    text = distribution_bars(LABELS, {"A": 0.62, "B": 0.2, "Tie": 0.18}, 10).plain.splitlines()
    assert text[0] == "A   ██████····  62%"
    assert text[2] == "Tie ██········  18%"


async def test_an_arena_answer_is_stored_as_an_arena_judgment_of_its_judge(echo_task, offline_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = ArenaScreen(task="echo", seed=1, judges=[JudgeColumn(offline_backend, "always")])
        await app.push_screen(screen)
        card = screen.query_one(JudgeCard)
        await until(pilot, lambda: card.answer is not None)
        store = JudgmentStore(app.services.db, "echo")
        await until(pilot, lambda: store.judges() != [])
        (stored,) = store.judges()
        assert stored.judge == JudgeId.of(offline_backend, "offline", "always")
        assert store.judged(stored.judge) == {arena_key("echo/red")}
        assert store.labelled(stored.judge)[0][1] == "yes"  # the reference beside it
        assert store.arena_items(stored.judge) == 1


def test_cached_and_partly_cached_answers_say_so_instead_of_a_time():
    assert answer_time(Verdict(usage=Usage(calls=3, cached_calls=3), seconds=0.001)) == "cached"
    assert answer_time(Verdict(usage=Usage(calls=3, cached_calls=1), seconds=0.4)) == "0.40 s (1 of 3 cached)"
    assert answer_time(Verdict(usage=Usage(calls=1), seconds=1.234)) == "1.23 s"


def test_the_target_span_is_emphasised_and_data_is_never_markup():
    body = "Cars [b]pollute[/b]. Ban them [red]now[/red], says the city."
    text = item_text(body, (body.index("Ban"), body.index(", says")))
    assert text.plain == body
    emphasised = [text.plain[span.start:span.end] for span in text.spans if span.style]
    assert emphasised == ["Ban them [red]now[/red]"]
    assert item_text("no target here").plain == "no target here" and not item_text("no target here").spans


async def test_the_arena_shows_a_component_item_without_raw_target_tags(offline_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ArenaScreen(task="components", seed=2, judges=[JudgeColumn(offline_backend, "vanilla")],
                             auto_judge=False)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None)
        start, end = screen.item.highlight  # the component under judgment
        shown = screen.query_one("#item-body", Static).render()
        assert "<TARGET>" not in str(shown) and "</TARGET>" not in str(shown)
        assert [shown.plain[span.start:span.end] for span in shown.spans if span.style] == [
            screen.item.body[start:end]]


async def test_at_80x24_both_arguments_of_a_pair_are_in_view_and_titles_are_abbreviated(offline_backend, until):
    long_profile = "vllm-llama-3.3-70b-instruct"
    load_config().add_backend(load_config().profile(offline_backend).model_copy(update={"name": long_profile}))
    columns = [JudgeColumn(long_profile, variant) for variant in ("zero", "few", "cot")]
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ArenaScreen(task="pairwise", seed=11, judges=columns, auto_judge=False)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None)
        await pilot.pause()
        for side, heading in (("a", "Argument A ("), ("b", "Argument B (")):
            pane = screen.query_one(f"#item-side-{side}")
            assert str(screen.query_one(f"#item-side-{side}-text", Static).render()).startswith(heading)
            assert pane.region.height >= 3 and pane.region.bottom <= 24  # on screen without scrolling
        cards = list(screen.query(JudgeCard))
        titles = [str(card.border_title) for card in cards]
        assert [title.split(" · ")[0] for title in titles] == ["Zero-shot", "Few-shot", "Reasoning"]
        assert all(" · vll" in title and title.endswith("…") for title in titles)  # the profile, cut
        assert all(len(title) <= card.outer_size.width - 4 for title, card in zip(titles, cards))  # between corners
        assert [str(card.tooltip) for card in cards] == [  # the whole name, code included
            f"{long_profile} · Zero-shot (zero)", f"{long_profile} · Few-shot (few)",
            f"{long_profile} · Chain of thought (cot)"]


def test_a_card_title_names_the_variant_by_its_task_and_cuts_the_profile_to_the_room_left():
    column = JudgeColumn("vllm-llama-3.3-70b", "cot")
    assert column.title("pairwise") == "vllm-llama-3.3-70b · Chain of thought (cot)"
    assert JudgeColumn("local", "zero").title("components") == "local · zero"  # not a components method
    assert column.short_title("pairwise", 40) == "Reasoning · vllm-llama-3.3-70b"
    assert column.short_title("pairwise", 18) == "Reasoning · vllm-…"
    assert column.short_title("pairwise", 14) == "Reasoning"  # no room for a profile worth reading
    assert column.short_title("pairwise", 6) == "Reaso…"
    assert JudgeColumn("local", "mad").short_title("components", 18) == "Debate · local"
    assert JudgeColumn("local", "FSL1").short_title("grice", 30) == "Few, yes 1 · local"


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


class CountingTask(EchoTask):
    """Echo with two variants that counts its calls; a second call of a variant answers as the
    response cache would (every call cached)."""

    name, title = "counting", "Counting echo"

    def __init__(self):
        self.calls: list[str] = []

    def variants(self):
        return ("always", "again")

    async def judge(self, ctx, item, variant, client, options):
        if isinstance(client, RequestProbe):  # taking the judge's identity: no answer to count
            return Verdict(label="yes")
        cached = variant in self.calls
        self.calls.append(variant)
        return Verdict(label="yes", usage=Usage(calls=1, cached_calls=int(cached)))


async def test_adding_a_judge_keeps_the_answers_and_times_of_the_judges_that_answered(offline_backend, until):
    task = registry.register(CountingTask())
    try:
        app = ArgtuiApp()
        async with app.run_test(size=(100, 30)) as pilot:
            screen = ArenaScreen(task="counting", seed=1, judges=[JudgeColumn(offline_backend, "always")])
            await app.push_screen(screen)
            first = screen.query_one(JudgeCard)
            await until(pilot, lambda: first.answer is not None)
            answered = first.answer
            await pilot.press("c")
            picker = app.screen
            picker.query_one(SelectionList).select(1)  # the "again" column
            picker.action_confirm()
            await until(pilot, lambda: len(screen.query(JudgeCard)) == 2
                        and all(card.answer is not None for card in screen.query(JudgeCard)))
            kept, added = screen.query(JudgeCard)
            assert task.calls == ["always", "again"]  # the first judge was not asked again
            assert kept.answer is answered and "cached" not in str(kept.render())
            assert str(kept.render()).endswith(" s") and added.column.variant == "again"
    finally:
        registry.unregister(task.name)
