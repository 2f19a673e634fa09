"""The app under Textual's pilot: Home shows the embedded backend ready, with the demo notice."""

from __future__ import annotations

import asyncio

import pytest
from textual.widgets import OptionList, Static

from argtui.app import ArgtuiApp
from screens.demo_notice import DemoNotice
from screens.help import HelpScreen
from screens.home import HomeScreen
from screens.runs import RunsScreen

pytestmark = pytest.mark.llm


async def wait_for_backend(app: ArgtuiApp, pilot, timeout_s: float = 90) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while app.backend_status is None and loop.time() < deadline:
        await pilot.pause(0.1)
    assert app.backend_status is not None, "backend status never arrived"


async def test_home_shows_the_embedded_backend_ready_and_the_demo_notice():
    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        assert isinstance(app.screen, HomeScreen)
        await wait_for_backend(app, pilot)
        await pilot.pause()
        status = app.backend_status
        assert status.reachable, status.error
        assert status.embedded and status.model == "SmolLM2-135M-Instruct"
        backend_text = str(app.screen.query_one("#backend", Static).render())
        assert "ready" in backend_text and "SmolLM2-135M-Instruct" in backend_text
        notice = app.screen.query_one(DemoNotice)
        assert notice.display and "demonstration only" in str(notice.render())
    assert app.services.embedded_server is None  # stopped on exit


async def test_help_opens_with_question_mark_and_modes_open_from_home():
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
        modes = app.screen.query_one(OptionList)
        runs_index = next(i for i, m in enumerate(app.screen.modes) if m.name == "runs")
        modes.highlighted = runs_index
        await pilot.press("enter")
        assert isinstance(app.screen, RunsScreen)
        await wait_for_backend(app, pilot)


async def test_command_palette_lists_the_modes():
    app = ArgtuiApp()
    async with app.run_test() as pilot:
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert "Open Runs" in titles and "Open Help" in titles and "Recheck backend" in titles
        await wait_for_backend(app, pilot)


def test_modes_listed_from_source_are_the_modes_the_screen_modules_define():
    import importlib
    import pkgutil

    import screens
    from screens.modes import Mode, discover_modes

    defined = {}
    for info in pkgutil.iter_modules(screens.__path__):
        mode = getattr(importlib.import_module(f"screens.{info.name}"), "MODE", None)
        if isinstance(mode, Mode):
            defined[mode.name] = mode
    listed = discover_modes()
    assert [m.name for m in listed] == [m.name for m in sorted(defined.values(), key=lambda m: (m.order, m.title))]
    for mode in listed:
        declared = defined[mode.name]
        assert (mode.title, mode.description, mode.order) == (declared.title, declared.description, declared.order)


def test_home_is_ready_before_other_modes_and_the_store_are_imported(tmp_path):
    import json
    import os
    import subprocess
    import sys

    deferred = ("screens.arena", "screens.leaderboard", "screens.rating", "screens.debate", "screens.palette",
                "screens.glossary", "sqlmodel", "sqlalchemy", "numpy", "tantivy")
    probe = (
        "import json, sys\n"
        "from argtui.app import ArgtuiApp\n"
        "async def ready(pilot):\n"
        f"    print(json.dumps([m for m in {deferred!r} if m in sys.modules]), flush=True)\n"
        "    pilot.app.exit()\n"
        "ArgtuiApp().run(headless=True, auto_pilot=ready)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "ARGTUI_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[0]) == []


async def test_quitting_with_an_unconfirmed_rating_asks_first_and_keeps_it_on_staying(offline_backend, until):
    from engines.critiques.demo import DEMO_PATH
    from engines.critiques.files import import_critiques
    from screens.choice import ChoiceDialog
    from screens.rating import RatingScreen
    from store.critiques import CritiqueRepository

    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        import_critiques(CritiqueRepository(app.services.db), DEMO_PATH)
        rating = RatingScreen(rater="alice")
        await app.push_screen(rating)
        await until(pilot, lambda: bool(rating.state.positions))
        await pilot.press("7", "8")  # two values set, not confirmed
        [draft] = rating.state.unsaved

        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceDialog)
        question = str(app.screen.query_one("#question", Static).render())
        assert "Quit without confirming?" in question and draft.uid in question
        await pilot.press("k")  # keep rating
        await pilot.pause()
        assert app.screen is rating and rating.state.unsaved == [draft]

        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.press("q")  # quit, drop them
        await until(pilot, lambda: app._exit)
    assert app.return_code == 0
