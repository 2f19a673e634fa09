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
