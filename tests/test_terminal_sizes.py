"""Every screen at 80×24 shows its title, its footer keys and its focused widget; it survives a
resize to 40×12 (still running, still answering keys) and shows the same again back at 80×24."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Awaitable, Callable

import pytest
from rich.console import Console
from textual.command import CommandPalette
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.scrollbar import ScrollBar, ScrollBarCorner
from textual.widgets import Footer, OptionList, Static

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from screens.agreement import AgreementScreen
from screens.arena import ArenaScreen, JudgePicker
from screens.choice import ChoiceDialog
from screens.components import ComponentsScreen
from screens.datasets import DatasetsScreen
from screens.debate import DebateScreen, MessageView, TranscriptScreen
from screens.new_debate import NewDebateScreen
from screens.help import HelpScreen
from screens.home import HomeScreen
from screens.leaderboard import LeaderboardScreen
from screens.rating import HistoryView, RatingScreen, TextPrompt
from screens.runs import RunsScreen
from store.critiques import CritiqueRepository
from store.runs import RunRepository
from test_components_screen import store_debated_document
from test_debate_screen import stored_debate
from test_leaderboard import insert_judges
from test_rating_screen import RATED

FULL, SMALL = (80, 24), (40, 12)


def screen_lines(app: ArgtuiApp) -> list[str]:
    """The terminal's text as the user sees it (what `export_screenshot` draws, as plain text),
    scroll bars blanked: a thumb's sub-cell position is not content."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    compositor = app.screen._compositor
    console.print(compositor.render_update(full=True, screen_stack=app._background_screens))
    lines = [line.ljust(width) for line in console.export_text().splitlines()]
    for widget, (region, clip) in compositor.visible_widgets.items():
        if isinstance(widget, (ScrollBar, ScrollBarCorner)):
            bar = region.intersection(clip)
            for y in range(bar.y, bar.bottom):
                lines[y] = lines[y][:bar.x] + " " * bar.width + lines[y][bar.right:]
    return lines


def visible_region(app: ArgtuiApp, widget) -> Region:
    geometry = app.screen.find_widget(widget)
    return geometry.region.intersection(geometry.clip)


async def settle(app: ArgtuiApp, pilot: Pilot) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def open_mode(app: ArgtuiApp, pilot: Pilot, name: str) -> None:
    """Open a mode from Home as a user does: highlight it, press Enter."""
    modes = app.screen.query_one("#modes", OptionList)
    modes.highlighted = next(i for i, mode in enumerate(app.screen.modes) if mode.name == name)
    await pilot.press("enter")
    await settle(app, pilot)


async def until_shows(pilot: Pilot, selector: str, words: str, tries: int = 400) -> None:
    for _ in range(tries):
        if words in str(pilot.app.screen.query_one(selector, Static).render()):
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{selector} never showed {words!r}: {pilot.app.screen.query_one(selector, Static).render()}")


# ---------------------------------------------------------------- how a user reaches each screen


async def home(app, pilot):
    pass


async def help_screen(app, pilot):
    await pilot.press("question_mark")


async def new_debate(app, pilot):
    await open_mode(app, pilot, "debate")


async def debate(app, pilot):
    stored_debate(app.services.config.paths.data_dir.parent)
    await open_mode(app, pilot, "debate")
    app.screen.query_one("#debates", OptionList).focus()
    await pilot.press("enter")  # continue the past debate
    await until_shows(pilot, "#status", "ready")  # nothing is asked of the closed backend before a message
    list(app.screen.query(MessageView))[-1].focus()
    await pilot.pause()


async def transcript(app, pilot):
    await debate(app, pilot)
    list(app.screen.query(MessageView))[0].focus()
    await pilot.pause()
    app.screen.query_one("#component-list", OptionList).focus()
    await pilot.press("down", "enter")


async def choice(app, pilot):
    """The too-long-message question (the config lowers the limit to three words)."""
    await open_mode(app, pilot, "debate")
    await pilot.press(*"Uniforms help", "enter")
    await until_shows(pilot, "#status", "ready")
    await pilot.press(*"uniforms reduce bullying at school", "enter")
    await pilot.pause()


async def rater_prompt(app, pilot):
    await open_mode(app, pilot, "rating")  # no rater yet: asked for a name


async def rating(app, pilot):
    await rater_prompt(app, pilot)
    await pilot.press(*"alice", "enter")
    await pilot.press("d")  # the empty screen imports the demo set
    await settle(app, pilot)
    app.clear_notifications()


async def history(app, pilot):
    await rating(app, pilot)
    await pilot.press(*RATED, "enter", "h")
    app.clear_notifications()


async def agreement(app, pilot):
    import_critiques(CritiqueRepository(app.services.db), DEMO_PATH)
    await open_mode(app, pilot, "agreement")


async def arena(app, pilot):
    await open_mode(app, pilot, "arena")
    await settle(app, pilot)  # the judges fail at once: the backend is closed


async def judge_picker(app, pilot):
    await arena(app, pilot)
    await pilot.press("c")


async def leaderboard(app, pilot):
    insert_judges(app.services.db)
    await open_mode(app, pilot, "leaderboard")


async def components(app, pilot):
    store_debated_document(app.services.db)
    await open_mode(app, pilot, "components")
    await pilot.press("enter")


async def datasets(app, pilot):
    await open_mode(app, pilot, "datasets")
    await until_shows(pilot, "#index-summary", "Not built yet")


async def runs(app, pilot):
    RunRepository(app.services.db).open("eval", "pairwise zero", {}, 10, task="pairwise", judge="m@closed zero")
    await open_mode(app, pilot, "runs")


@dataclass(frozen=True)
class Case:
    open: Callable[[ArgtuiApp, Pilot], Awaitable[None]]
    screen: type[Screen]
    title: str  # what names the screen: the header's sub-title, or a dialog's first words
    config: str = ""  # TOML added to the config file before the app starts
    focus: bool = True  # a widget has focus (the Rating screen's keys are all its own bindings)


CASES = {
    "home": Case(home, HomeScreen, "Home"),
    "help": Case(help_screen, HelpScreen, "Help"),
    "new-debate": Case(new_debate, NewDebateScreen, "New debate"),
    "debate": Case(debate, DebateScreen, "Debate"),
    "transcript": Case(transcript, TranscriptScreen, "Component:"),
    "choice": Case(choice, ChoiceDialog, "Your message is too long", "[debate]\nmax_message_words = 3\n"),
    "rater-prompt": Case(rater_prompt, TextPrompt, "Your rater name"),
    "rating": Case(rating, RatingScreen, "Rating", focus=False),
    "history": Case(history, HistoryView, "first rating"),
    "agreement": Case(agreement, AgreementScreen, "Agreement"),
    "arena": Case(arena, ArenaScreen, "Arena"),
    "judge-picker": Case(judge_picker, JudgePicker, "Judges side by side"),
    "leaderboard": Case(leaderboard, LeaderboardScreen, "Leaderboard"),
    "components": Case(components, ComponentsScreen, "Components"),
    "datasets": Case(datasets, DatasetsScreen, "Datasets & index"),
    "runs": Case(runs, RunsScreen, "Runs"),
}


def footer_descriptions(app: ArgtuiApp) -> list[str]:
    """What the footer of the current screen must show: every enabled binding marked to be shown."""
    return sorted({
        active.binding.description for active in app.screen.active_bindings.values()
        if active.binding.show and active.enabled and active.binding.description
    })


async def open_case(name: str) -> tuple[ArgtuiApp, Case]:
    case = CASES[name]
    if case.config:
        with load_config().paths.config_file.open("a", encoding="utf-8") as config:
            config.write("\n" + case.config)
    return ArgtuiApp(), case


async def show(app: ArgtuiApp, pilot: Pilot, case: Case) -> Screen:
    await case.open(app, pilot)
    await settle(app, pilot)
    assert isinstance(app.screen, case.screen), f"opened {type(app.screen).__name__}"
    app.clear_notifications()  # a toast is not the screen's content
    await pilot.pause()
    return app.screen


@pytest.mark.parametrize("name", CASES)
async def test_screen_shows_its_title_footer_keys_and_focus_at_80x24(name, closed_backend):  # noqa: F811
    app, case = await open_case(name)
    async with app.run_test(size=FULL) as pilot:
        screen = await show(app, pilot, case)
        lines = screen_lines(app)
        assert case.title in "\n".join(lines), "\n".join(lines)
        footers = list(screen.query(Footer))
        if footers:  # a full screen: its keys are on the footer, whole
            footer = visible_region(app, footers[0])
            assert footer.bottom == FULL[1], "the footer is not at the bottom"
            footer_text = "\n".join(lines[footer.y:footer.bottom])
            missing = [words for words in footer_descriptions(app) if words not in footer_text]
            assert not missing, f"footer {footer_text!r} lacks {missing}"
        if not case.focus:
            return
        assert app.focused is not None, "nothing has focus"
        region = visible_region(app, app.focused)
        assert region.area > 0 and Region(0, 0, *FULL).contains_region(region), f"{app.focused} is off screen"


@pytest.mark.parametrize("name", list(CASES))
async def test_screen_survives_40x12_and_comes_back_the_same(name, closed_backend):  # noqa: F811
    app, case = await open_case(name)
    async with app.run_test(size=FULL) as pilot:
        screen = await show(app, pilot, case)
        full = screen_lines(app)

        await pilot.resize_terminal(*SMALL)
        await pilot.pause()
        assert app.is_running and app.screen is screen and app.size == SMALL
        assert len(screen_lines(app)) == SMALL[1]
        await pilot.press("ctrl+p")  # it still answers keys
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen

        await pilot.resize_terminal(*FULL)
        await settle(app, pilot)
        app.clear_notifications()
        await pilot.pause()
        back = screen_lines(app)
        assert back == full, "\n".join(full + ["--- after 40×12:"] + back)


async def test_help_longer_than_80x24_scrolls_by_keyboard(closed_backend):  # noqa: F811
    app = ArgtuiApp()
    async with app.run_test(size=FULL) as pilot:
        await pilot.press("question_mark")
        scroll = app.screen.query_one("#help-scroll")
        assert scroll.max_scroll_y > 0, "the help fits: nothing to scroll"
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 0
