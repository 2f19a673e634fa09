"""The command palette offers every action of the Arena, Leaderboard, Components, Agreement,
Datasets and Runs screens, those the footer hides included, and runs them."""

from __future__ import annotations

from typing import Callable

import pytest
from textual.screen import Screen
from textual.widgets import TabbedContent

from argtui.app import ArgtuiApp
from screens.agreement import AgreementScreen
from screens.arena import ArenaScreen
from screens.components import ComponentsScreen
from screens.datasets import DatasetsScreen
from screens.help import describe
from screens.home import HomeScreen
from screens.leaderboard import LeaderboardScreen
from screens.palette import ScreenCommands
from screens.runs import RunsScreen
from test_tab_order import with_demo_set

SCREENS: dict[str, tuple[Callable[[], Screen], Callable | None]] = {
    "arena": (lambda: ArenaScreen(task="pairwise", seed=1), None),
    "leaderboard": (LeaderboardScreen, None),
    "components": (ComponentsScreen, None),
    "agreement": (AgreementScreen, with_demo_set),
    "datasets": (DatasetsScreen, None),
    "runs": (RunsScreen, None),
}


async def opened(app: ArgtuiApp, pilot, make_screen: Callable[[], Screen]) -> Screen:
    for _ in range(100):
        if isinstance(app.screen, HomeScreen):
            break
        await pilot.pause(0.05)
    await app.push_screen(make_screen())
    await pilot.pause(0.3)
    await app.workers.wait_for_complete()
    await pilot.pause()
    return app.screen


@pytest.mark.parametrize("name", SCREENS)
async def test_every_action_of_the_screen_is_in_the_palette(offline_backend, name):
    make_screen, store = SCREENS[name]
    app = ArgtuiApp()
    if store is not None:
        store(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot, make_screen)
        offered = [entry.text for entry in ScreenCommands(screen).entries()]
        hidden = 0
        for binding in type(screen).BINDINGS:
            in_force = app._check_action_state(binding.action, screen)
            if in_force is False:  # the other of two bindings on one key (Esc: leave a field, or the screen)
                continue
            assert in_force, f"{binding.action} is disabled at the start"
            assert any(text.startswith(f"{describe(binding)} (") for text in offered), (binding, offered)
            hidden += not binding.show
        assert any(text.startswith("Back (") or text.startswith("Leave selector (") for text in offered)
        if name in ("arena", "leaderboard"):
            assert hidden, "a key the footer hides reaches the palette"


async def test_a_key_the_footer_hides_runs_from_the_palette(offline_backend):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await opened(app, pilot, LeaderboardScreen)
        tabs = screen.query_one(TabbedContent)
        assert tabs.active == "agreement"
        [previous] = [entry for entry in ScreenCommands(screen).entries() if entry.text.startswith("Previous tab (")]
        await previous.run()  # what the palette does with the entry it was given
        await pilot.pause()
        assert tabs.active == "audit"  # from the first tab back to the last
