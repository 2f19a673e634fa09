"""An SVG snapshot of every screen at 80×24 and at 120×40, each with realistic stored data.

Nothing in them depends on the run: the backend is the closed one (its error reads the same
every run), debates, judges and runs are stored with fixed contents and times, the Arena
draws with a seed, the clocks of running work are frozen, and ARGTUI_HOME is a relative
path so the config and data locations the screens show are the same on every machine.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import text
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Input, TabbedContent, TabPane

from argtui.app import ArgtuiApp
from engines.debate.opponent import StepFinished, StepStarted
from screens.arena import ArenaScreen
from screens.debate import DebateScreen, MessageView
from screens.leaderboard import LeaderboardScreen
from store.runs import RunRepository
from test_leaderboard import CLOSE, insert_judges
from test_terminal_sizes import (agreement, components, datasets, debate, help_screen, home, new_debate, open_mode,
                                 rating, settle)

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}
FROZEN_CLOCK = 1000.0  # what time.perf_counter() returns to the debate widgets
MESSAGE = "Uniforms save parents money, so every family can afford school."
PARTIAL_REPLY = "Uniforms cost families more at first: each child needs several sets, and"
UPDATED_AT = datetime(2025, 5, 1, 10, 0)


class FrozenClock:
    """Stands in for the `time` module of the modules that draw spinners and clocks."""

    @staticmethod
    def perf_counter() -> float:
        return FROZEN_CLOCK


async def debate_mid_turn(app: ArgtuiApp, pilot: Pilot) -> None:
    """The stored debate, then a second message with the bot's reply streaming in its last step,
    driven through the screen's state as a live turn drives it."""
    await debate(app, pilot)
    screen = app.screen
    assert isinstance(screen, DebateScreen) and screen.session is not None
    earlier = screen.state.messages[-1]
    message = screen.state.add_message(screen.session.add_user_message(MESSAGE))
    message.begin()
    message.labels_after_reply = True
    reply = screen.state.add_reply(message)
    reply.begin(limit_s=screen.settings.turn_timeout_s)
    reply.started = FROZEN_CLOCK - 14
    for step, seconds in (("strategy", 3.2), ("queries", 1.4), ("retrieval", 0.3), ("selection", 4.1),
                          ("final", 2.6)):
        reply.follow(StepStarted(step))
        reply.follow(StepFinished(step, earlier.steps, tuple(earlier.evidence), seconds))
    reply.follow(StepStarted("reply"))
    reply.step_started = FROZEN_CLOCK - 2
    reply.streamed = PARTIAL_REPLY
    log = screen.query_one("#log", VerticalScroll)
    await log.mount_all([MessageView(message), MessageView(reply)])
    await pilot.pause()
    screen.query(MessageView).last().focus()  # the side panel shows the running turn's steps
    await pilot.pause()


async def arena(app: ArgtuiApp, pilot: Pilot) -> None:
    await app.push_screen(ArenaScreen(task="pairwise", seed=7))
    await settle(app, pilot)  # the judges fail at once: the backend is closed


def leaderboard_tab(tab: str):
    async def open_tab(app: ArgtuiApp, pilot: Pilot) -> None:
        insert_judges(app.services.db)
        await app.push_screen(LeaderboardScreen(judge=CLOSE, topic=20))
        await settle(app, pilot)
        app.screen.query_one(TabbedContent).active = tab
        await settle(app, pilot)

    return open_tab


async def runs(app: ArgtuiApp, pilot: Pilot) -> None:
    run = RunRepository(app.services.db).open("eval", "pairwise zero", {}, 10, task="pairwise",
                                              judge="m@closed zero")
    with app.services.db.engine.begin() as conn:  # a fixed time for the "updated" column
        conn.execute(text("UPDATE batch_run SET updated_at = :at WHERE id = :id"), {"at": UPDATED_AT, "id": run.id})
    await open_mode(app, pilot, "runs")


LEADERBOARD_TABS = ("agreement", "judges", "rankings", "distributions", "scatter", "tasks", "audit")
SCREENS = {
    "home": home,
    "new-debate": new_debate,
    "debate-mid-turn": debate_mid_turn,
    "debate-done": debate,
    "arena": arena,
    **{f"leaderboard-{tab}": leaderboard_tab(tab) for tab in LEADERBOARD_TABS},
    "rating": rating,
    "agreement": agreement,
    "components": components,
    "datasets": datasets,
    "runs": runs,
    "help": help_screen,
}


async def test_the_leaderboard_cases_cover_every_tab(closed_backend):
    app = ArgtuiApp()
    async with app.run_test() as pilot:
        await app.push_screen(LeaderboardScreen())
        await pilot.pause()
        assert [pane.id for pane in app.screen.query(TabPane)] == list(LEADERBOARD_TABS)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", SCREENS)
def test_screen_snapshot(name, size, closed_backend, argtui_home, monkeypatch, snap_compare):
    monkeypatch.chdir(argtui_home.parent)
    monkeypatch.setenv("ARGTUI_HOME", argtui_home.name)  # shown relative, the same on every run
    for module in ("screens.debate_state", "screens.widgets.transcript", "screens.widgets.strategy"):
        monkeypatch.setattr(f"{module}.time", FrozenClock)

    async def open_screen(pilot: Pilot) -> None:
        await SCREENS[name](pilot.app, pilot)
        await settle(pilot.app, pilot)
        pilot.app.clear_notifications()  # a toast is not the screen's content
        for box in pilot.app.screen.query(Input):
            box.cursor_blink = False  # a blinking cursor is shown or not depending on the moment
        await pilot.pause()

    assert snap_compare(ArgtuiApp(), terminal_size=SIZES[size], run_before=open_screen)
