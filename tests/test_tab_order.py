"""Tab walks every non-debate screen's focusable widgets in reading order; Esc closes an opened
selector before it leaves a screen; a stray letter in a selector draws nothing; leaving the
Rating screen with values set but not confirmed asks first."""

from __future__ import annotations

from typing import Callable

import pytest
from textual.screen import Screen
from textual.widgets import Select, Static

from argtui.app import ArgtuiApp
from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from screens.agreement import AgreementScreen
from screens.arena import ArenaScreen
from screens.choice import ChoiceDialog
from screens.components import ComponentsScreen
from screens.datasets import DatasetsScreen
from screens.glossary import GlossaryScreen
from screens.help import HelpScreen
from screens.home import HomeScreen
from screens.leaderboard import LeaderboardScreen
from screens.rating import RatingScreen
from screens.runs import RunsScreen
from store.critiques import CritiqueRepository


def focused_id(app: ArgtuiApp) -> str | None:
    """The focused widget's id, its type for one without (a TabbedContent's tab strip)."""
    focused = app.focused
    return None if focused is None else focused.id or type(focused).__name__


def with_demo_set(app: ArgtuiApp) -> None:
    import_critiques(CritiqueRepository(app.services.db), DEMO_PATH)


def help_over_home(app: ArgtuiApp) -> Screen:
    return HelpScreen(app.screen)


# screen, what to store first, the focus at the start, then after each Tab (the last wraps to the first)
TAB_ORDERS: dict[str, tuple[Callable[[ArgtuiApp], Screen] | None, Callable | None, list[str | None]]] = {
    "home": (None, None, ["modes", "modes"]),
    "arena": (lambda app: ArenaScreen(task="pairwise", seed=1), None,
              ["task", "filter-dimension", "item-scroll", "item-side-a", "item-side-b", "cards", "task"]),
    "arena-components": (lambda app: ArenaScreen(task="components", seed=1), None,  # a task with no filters
                         ["task", "item-scroll", "cards", "task"]),
    "leaderboard": (lambda app: LeaderboardScreen(), None,
                    ["judge", "dimension", "topic", "ContentTabs", "agreement-table", "judge"]),
    "rating": (lambda app: RatingScreen(rater="tab"), with_demo_set, ["editor", "editor"]),
    "agreement": (lambda app: AgreementScreen(), with_demo_set,
                  ["tables", "versus-reference", "versus-others", "progress", "tables"]),
    "components": (lambda app: ComponentsScreen(), None,
                   ["documents", "document-scroll", "detail-scroll", "text", "documents"]),
    "datasets": (lambda app: DatasetsScreen(), None, ["sources", "sources"]),
    "runs": (lambda app: RunsScreen(), None, ["runs", "runs"]),
    "help": (help_over_home, None, ["help-scroll", "help-scroll"]),
    "glossary": (lambda app: GlossaryScreen(), None, ["glossary-scroll", "glossary-scroll"]),
}


@pytest.mark.parametrize("name", TAB_ORDERS)
async def test_tab_walks_the_screen_in_reading_order(offline_backend, until, name):
    make_screen, store, expected = TAB_ORDERS[name]
    app = ArgtuiApp()
    if store is not None:
        store(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        if make_screen is not None:
            await app.push_screen(make_screen(app))
        screen = app.screen
        await pilot.pause(0.3)
        await app.workers.wait_for_complete()
        await pilot.pause()
        walked = [focused_id(app)]
        for _ in expected[1:]:
            await pilot.press("tab")
            walked.append(focused_id(app))
        assert walked == expected, walked
        assert app.screen is screen


@pytest.mark.parametrize("make_screen, select_id", [
    (lambda: ArenaScreen(task="pairwise", seed=1), "task"),
    (lambda: LeaderboardScreen(), "dimension"),
])
async def test_esc_closes_an_opened_selector_and_keeps_the_screen(offline_backend, until, make_screen, select_id):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        screen = make_screen()
        await app.push_screen(screen)
        await pilot.pause(0.3)
        select = screen.query_one(f"#{select_id}", Select)
        select.focus()
        await pilot.press("enter")
        assert select.expanded
        await pilot.press("escape")
        assert not select.expanded and app.screen is screen and app.focused is select


async def test_in_the_arena_letters_typed_into_the_task_selector_draw_nothing_and_esc_steps_back(offline_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        screen = ArenaScreen(task="components", seed=1)
        await app.push_screen(screen)
        await until(pilot, lambda: screen.item is not None)
        drawn = screen.item
        assert focused_id(app) == "task"  # the screen starts on its task selector
        await pilot.press("n")  # closed, the selector leaves the letter keys to the screen
        await until(pilot, lambda: screen.item is not drawn)
        drawn = screen.item
        await pilot.press("enter", "n")  # opened, it searches its list with them
        await pilot.pause(0.3)
        assert screen.query_one("#task", Select).expanded and screen.item is drawn
        await pilot.press("escape")  # closes the list
        assert focused_id(app) == "task" and footer_escape(screen) == "Leave selector"
        await pilot.press("escape")  # out of the selector, still on the Arena
        assert app.focused is None and app.screen is screen and footer_escape(screen) == "Back"
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)


def footer_escape(screen: Screen) -> str:
    """What the footer says Esc does now."""
    return screen.active_bindings["escape"].binding.description


async def test_the_leaderboard_leaves_its_selector_then_the_screen_with_two_escapes(offline_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        screen = LeaderboardScreen()
        await app.push_screen(screen)
        await pilot.pause(0.3)
        assert isinstance(app.focused, Select) and footer_escape(screen) == "Leave selector"
        await pilot.press("escape")
        assert app.focused is None and app.screen is screen and footer_escape(screen) == "Back"
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
        await app.push_screen(LeaderboardScreen())
        await pilot.pause(0.3)
        app.screen.query_one("#agreement-table").focus()  # off the selectors, Esc leaves at once
        await pilot.pause()
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)


async def test_leaving_the_rating_screen_with_unconfirmed_values_asks_first(offline_backend, until):
    app = ArgtuiApp()
    with_demo_set(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        screen = RatingScreen(rater="ask")
        await app.push_screen(screen)
        await pilot.pause()
        await pilot.press("7", "escape")
        assert isinstance(app.screen, ChoiceDialog)
        assert screen.state.critique.uid in str(app.screen.query_one("#question", Static).render())
        await pilot.press("escape")  # Esc in the question keeps the values and the screen
        assert app.screen is screen and [c.uid for c in screen.state.unsaved] == [screen.state.critique.uid]
        await pilot.press("escape", "l")
        assert isinstance(app.screen, HomeScreen)
        assert CritiqueRepository(app.services.db).ratings("ask") == []


async def test_leaving_the_rating_screen_with_everything_confirmed_does_not_ask(offline_backend, until):
    app = ArgtuiApp()
    with_demo_set(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        screen = RatingScreen(rater="calm")
        await app.push_screen(screen)
        await pilot.pause()
        await pilot.press("7", "backspace")  # undone: nothing left to lose
        assert screen.state.unsaved == []
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
