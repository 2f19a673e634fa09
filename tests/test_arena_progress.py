"""The Arena and the Leaderboard as a demo-giver meets them: a judge that takes its time shows
its clock and its LLM answers so far; the Arena opens on the task chosen last time, after a
restart too; the Leaderboard opens on what the Arena judged."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import DataTable, Select, Static, TabbedContent

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.judging import task as registry
from engines.judging.store import JudgmentStore
from engines.llm.types import Usage
from fakes import FakeServer, chat_reply, schema_answer
from screens.arena import ArenaScreen, JudgeCard, JudgeColumn, clock, judging_progress
from screens.leaderboard import LeaderboardScreen
from screens.ui_state import load_ui_state, state_path
from test_arena import EchoTask

PROGRESS = re.compile(r"judging… (\d+) s · (\d+) LLM answers? so far")
MAD_ANSWERS = 12  # the Manager and its 5 sampled votes, 2 rounds of 2 debaters, the Judge's reason and its label
ANSWER_DELAY_S = 0.8


def first_and_other_task() -> tuple[str, str]:
    """The task the Arena opens on by default, and another that draws with no dataset installed."""
    first = registry.tasks()[0].name
    return first, "pairwise" if first != "pairwise" else "components"


def data_dir() -> Path:
    return load_config().paths.data_dir


def use_backend(fake: FakeServer, name: str = "slow") -> str:
    load_config().add_backend(fake.profile(name=name, kind="llamacpp", retries=0, timeout_s=30), make_default=True)
    return name


def rendered(card: JudgeCard) -> str:
    return str(card.render())


def status_of(board: LeaderboardScreen) -> str:
    return str(board.query_one("#status", Static).render())


def test_the_progress_line_says_how_long_and_how_many_answers():
    assert clock(4.7) == "4 s" and clock(412.2) == "6 min 52 s"
    assert judging_progress("waiting for the backend", 3.2, Usage()) == "waiting for the backend… 3 s"
    assert judging_progress("judging", 75, Usage(calls=1, completion_tokens=9)) == (
        "judging… 1 min 15 s · 1 LLM answer so far (9 tokens)")
    assert judging_progress("judging", 8, Usage(calls=3, cached_calls=2, completion_tokens=40)) == (
        "judging… 8 s · 3 LLM answers so far (40 tokens, 2 cached)")


async def test_a_judging_column_shows_its_clock_and_its_own_answers_so_far(argtui_home, until):
    """MAD-ACC asks seven answers of a slow server: its card ticks and counts them while a vanilla
    column of the same backend answers after one; the clock stops with the answer."""
    def answer(body: dict):
        # As many labels as asked: without logprobs the Manager's votes are sampled in one request.
        return replace(chat_reply(*["Claim"] * body.get("n", 1), completion_tokens=4), delay_s=ANSWER_DELAY_S)

    with FakeServer(answer) as fake:
        profile = use_backend(fake)
        app = ArgtuiApp()
        async with app.run_test(size=(120, 40)) as pilot:
            screen = ArenaScreen(task="components", seed=2,
                                 judges=[JudgeColumn(profile, "mad"), JudgeColumn(profile, "vanilla")])
            await app.push_screen(screen)
            mad, vanilla = screen.query(JudgeCard)
            await until(pilot, lambda: (m := PROGRESS.search(rendered(mad))) and int(m[1]) >= 1 and int(m[2]) >= 2,
                        timeout_s=30)
            seen = int(PROGRESS.search(rendered(mad))[1])
            # The clock ticks on while the debate goes on.
            await until(pilot, lambda: (m := PROGRESS.search(rendered(mad))) and int(m[1]) > seen, timeout_s=30)
            await until(pilot, lambda: mad.answer is not None and vanilla.answer is not None, timeout_s=60)
            assert mad.answer.label == "Claim" and vanilla.answer.label == "Claim"
            # Each column counted its own answers, though both asked the same server.
            assert mad.meter.usage.calls == mad.answer.usage.calls == MAD_ANSWERS
            assert vanilla.meter.usage.calls == vanilla.answer.usage.calls == 1
            answered = rendered(mad)
            assert "judging" not in answered and "Claim" in answered
            await pilot.pause(1.5)  # a tick later the answer is still what the card shows
            assert rendered(mad) == answered


class BrokenTask(EchoTask):
    """A task that exists only in this test: its judge breaks down after a while."""

    name, title = "broken", "Broken: fails"

    async def judge(self, ctx, item, variant, client, options):
        raise RuntimeError("no label today")


@pytest.fixture
def broken_task():
    task = registry.register(BrokenTask())
    yield task
    registry.unregister(task.name)


async def test_a_judge_that_breaks_down_stops_its_clock_and_says_so(broken_task, offline_backend, until):
    async with ArgtuiApp().run_test(size=(100, 30)) as pilot:
        screen = ArenaScreen(task="broken", seed=1, judges=[JudgeColumn(offline_backend, "always")])
        await pilot.app.push_screen(screen)
        card = screen.query_one(JudgeCard)
        await until(pilot, lambda: card.has_class("-failed"))
        failed = rendered(card)
        assert failed == "the judge failed unexpectedly: RuntimeError: no label today"
        await pilot.pause(1.5)  # no tick brings "judging…" back
        assert rendered(card) == failed


async def test_the_arena_opens_on_the_task_chosen_last_time_after_a_restart(offline_backend, until):
    first, chosen = first_and_other_task()
    async with ArgtuiApp().run_test(size=(100, 30)) as pilot:
        screen = ArenaScreen(seed=1, auto_judge=False)
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None)
        assert screen.arena_task.name == first  # nothing remembered yet
        screen.query_one("#task", Select).value = chosen
        await until(pilot, lambda: screen.arena_task.name == chosen and screen.item is not None)
    assert load_ui_state(data_dir()).arena_task == chosen

    async with ArgtuiApp().run_test(size=(100, 30)) as pilot:  # the app started anew, same home
        screen = ArenaScreen(seed=1, auto_judge=False)
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None)
        await pilot.pause()
        assert screen.arena_task.name == chosen and screen.query_one("#task", Select).value == chosen
        assert screen.item.key == registry.task(chosen).draw(pilot.app.services, random.Random(1)).key

    async with ArgtuiApp().run_test(size=(100, 30)) as pilot:  # a task asked for wins
        screen = ArenaScreen(task=first, seed=1, auto_judge=False)
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None)
        assert screen.arena_task.name == first


async def test_an_unreadable_memory_opens_the_first_task_and_is_replaced(offline_backend, until):
    first, chosen = first_and_other_task()
    path = state_path(data_dir())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    async with ArgtuiApp().run_test(size=(100, 30)) as pilot:
        screen = ArenaScreen(seed=1, auto_judge=False)
        await pilot.app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None)
        assert screen.arena_task.name == first
        screen.query_one("#task", Select).value = chosen
        await until(pilot, lambda: screen.arena_task.name == chosen)
    assert load_ui_state(path.parent).arena_task == chosen


async def test_after_arena_judgments_the_leaderboard_opens_on_them(argtui_home, until):
    """The Arena judges pairs of a dimension other than the Leaderboard's first one: it opens
    on that dimension with the judge's row, not on the experts' row alone."""
    with FakeServer(schema_answer("A")) as fake:
        profile = use_backend(fake)
        app = ArgtuiApp()
        async with app.run_test(size=(100, 30)) as pilot:
            arena = ArenaScreen(task="pairwise", seed=5, judges=[JudgeColumn(profile, "zero")], auto_judge=False)
            await app.push_screen(arena)
            await until(pilot, lambda: arena.item is not None)
            card, store, judged = arena.query_one(JudgeCard), JudgmentStore(app.services.db, "pairwise"), arena.item
            arena.query_one("#filter-dimension", Select).value = "dialectical"
            for _ in range(3):
                await until(pilot, lambda: arena.item not in (None, judged)
                            and arena.item.payload.dimension == "dialectical")
                judged = arena.item
                await pilot.press("j")
                await until(pilot, lambda: card.answer is not None, timeout_s=30)
                await pilot.press("n")
            await until(pilot, lambda: store.judges() and store.arena_items(store.judges()[0].judge) >= 3)
            await app.pop_screen()

            board = LeaderboardScreen()
            await app.push_screen(board)
            await until(pilot, lambda: board.board is not None and board.standings is not None, timeout_s=60)
            await pilot.pause()
            assert board.dimension == "dialectical" and board.query_one("#dimension", Select).value == "dialectical"
            status = status_of(board)
            assert status.startswith("dialectical · all topics · 1 stored judge(s)") and "from the Arena" in status
            assert board.query_one("#agreement-table", DataTable).row_count == 2  # the experts and the judge
            assert board.query_one(TabbedContent).active == "agreement"

            board.query_one("#dimension", Select).value = "logical"  # a dimension asked for is kept
            await until(pilot, lambda: status_of(board).startswith("logical ·"), timeout_s=60)
            await pilot.press("R")
            await until(pilot, lambda: status_of(board).startswith("logical ·"), timeout_s=60)
            assert board.dimension == "logical" and "no stored judge in this scope (1 elsewhere)" in status_of(board)


async def test_with_only_other_tasks_judged_the_leaderboard_opens_on_all_tasks(argtui_home, until):
    with FakeServer(lambda body: chat_reply("Claim")) as fake:
        profile = use_backend(fake)
        app = ArgtuiApp()
        async with app.run_test(size=(100, 30)) as pilot:
            arena = ArenaScreen(task="components", seed=3, judges=[JudgeColumn(profile, "vanilla")])
            await app.push_screen(arena)
            card = arena.query_one(JudgeCard)
            await until(pilot, lambda: card.answer is not None, timeout_s=30)
            store = JudgmentStore(app.services.db, "components")
            await until(pilot, lambda: store.judges() != [])
            await app.pop_screen()

            board = LeaderboardScreen()
            await app.push_screen(board)
            await until(pilot, lambda: board.board is not None and board.standings is not None, timeout_s=60)
            await pilot.pause()
            assert board.query_one(TabbedContent).active == "tasks"
            table = board.query_one("#tasks-table", DataTable)
            cells = [str(table.get_row_at(n)[1]) for n in range(table.row_count)]
            assert any("+1 Arena" in cell for cell in cells)
