"""Keys pressed while one screen hands over to the next: the Debate screen becomes the current
screen before its widgets are mounted, and F3/F4 (or any action) then reach for a side panel that
is not there yet. They are ignored, one debate is stored, and an error no screen handles is kept
in logs/argtui.log."""

from __future__ import annotations

import asyncio
import logging

import pytest
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, RadioButton, TabbedContent

from argtui.app import ArgtuiApp
from argtui.config import Paths
from argtui.logs import LOG_NAME, log_to_file
from screens.debate import DebateScreen
from screens.new_debate import NewDebateScreen
from store.debates import DebateRepository

CLAIM = "We should abandon the use of school uniform"  # level 0 answers it from the bundled base


async def test_actions_of_a_debate_screen_not_mounted_yet_are_ignored(closed_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        debate_id = DebateRepository(app.services.db).create(CLAIM, "pro", backend="closed", level=0).id
        mounted = app.push_screen(DebateScreen(debate_id))  # current now, its widgets mounted later
        screen = app.screen
        assert isinstance(screen, DebateScreen) and not screen.is_mounted
        for action in ("next_tab", "previous_tab", "to_message", "retry", "end_debate", "toggle_questions"):
            assert await app.run_action(action, screen) is False  # not run: nothing to reach for yet
        await mounted
        await until(pilot, lambda: screen.session is not None, timeout_s=120)
        assert await app.run_action("next_tab", screen)  # mounted: the keys work
        assert screen.query_one("#side", TabbedContent).active == "evidence-tab"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_f3_f4_pressed_during_the_hand_over_from_new_debate_do_not_crash(closed_backend, until, size):
    app = ArgtuiApp()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await app.push_screen(NewDebateScreen(CLAIM))
        app.screen.query_one("#level-0", RadioButton).value = True
        app.screen.query_one("#claim-input", Input).focus()
        app.post_message(events.Key("enter", None))
        while not isinstance(app.screen, DebateScreen):  # the hand-over: current before its widgets are there
            await asyncio.sleep(0)
        assert not app.screen.is_mounted
        # Keys as the terminal delivers them, without waiting for the app as `pilot.press` would: a second
        # Enter (no second debate), then F4 and F3 at once and every 0.07 s for 2 s.
        for index, key in enumerate(["enter", *(["f4", "f4", "f3"] * 10)]):
            app.post_message(events.Key(key, None))
            if index >= 4:
                await asyncio.sleep(0.07)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        await until(pilot, lambda: screen.session is not None, timeout_s=120)
        assert [debate.claim for debate, _ in DebateRepository(app.services.db).list()] == [CLAIM]
        assert screen.query_one("#side", TabbedContent).active in ("steps-tab", "evidence-tab", "grice-tab",
                                                                    "components-tab", "coach-tab")


class _Broken(Screen):
    BINDINGS = [Binding("x", "break", "Break")]

    def action_break(self) -> None:
        raise RuntimeError("a bug in a screen")


async def test_an_error_no_screen_handles_is_kept_in_the_log(closed_backend):
    path = log_to_file(Paths.resolve().data_dir)
    assert path is not None and path.name == LOG_NAME
    handlers = [h for h in logging.getLogger("argtui").handlers if getattr(h, "baseFilename", None) == str(path)]
    try:
        app = ArgtuiApp()
        with pytest.raises(RuntimeError, match="a bug in a screen"):
            async with app.run_test(size=(80, 24)) as pilot:
                await pilot.pause()
                await app.push_screen(_Broken())
                await pilot.press("x")
        logged = path.read_text(encoding="utf-8")
        assert "the app stopped on an unhandled error" in logged
        assert "RuntimeError: a bug in a screen" in logged and "action_break" in logged  # the traceback
    finally:
        for handler in handlers:
            logging.getLogger("argtui").removeHandler(handler)
            handler.close()
