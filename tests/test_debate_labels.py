"""No label of the Debate screens is cut: at 80×24 and 120×40 every side tab, footer key, the
header and the strategy card's labels show whole, and the past-debates list shows each claim."""

from __future__ import annotations

import pytest
from textual.errors import NoWidget
from textual.widgets import Footer, Input, OptionList
from textual.widgets._footer import FooterKey
from textual.widgets._tabbed_content import ContentTab, ContentTabs

from argtui.app import ArgtuiApp
from screens.debate import SIDE_TABS, MessageView
from screens.new_debate import NewDebateScreen
from screens.widgets.strategy import strategy_fields
from store import Database
from store.debates import DebateRepository
from test_debate_screen import CLAIM, stored_debate
from test_debate_screen import open_debate
from test_terminal_sizes import screen_lines

SIZES = [(80, 24), (120, 40)]


def shown_in(app: ArgtuiApp, widget) -> str:
    """The widget's text as drawn, or what of it is left when it is clipped."""
    region = widget.content_region.intersection(app.screen.find_widget(widget).clip)
    lines = screen_lines(app)
    return " ".join(lines[y][region.x:region.right].strip() for y in range(region.y, region.bottom)).strip()


def assert_whole(shown: str, form: str) -> None:
    assert not shown.endswith("…") and shown == form, f"{shown!r} is not {form!r}"


def footer_laid_out(app: ArgtuiApp) -> bool:
    """The footer has keys and every one has its place on screen: after a focus change the footer
    removes its keys and mounts new ones, which the next refresh lays out."""
    keys = list(app.screen.query_one(Footer).query(FooterKey))
    try:
        for key in keys:
            app.screen.find_widget(key)
    except NoWidget:
        return False
    return bool(keys)


def assert_tabs_and_footer_whole(app: ArgtuiApp) -> None:
    tabs = {tab.id.removeprefix(ContentTab._PREFIX): tab for tab in app.screen.query(ContentTab)}
    assert set(tabs) == set(SIDE_TABS)
    for pane, name in SIDE_TABS.items():
        assert_whole(shown_in(app, tabs[pane]), name)
    keys = list(app.screen.query_one(Footer).query(FooterKey))
    assert keys, "the footer shows no key"
    for key in keys:
        assert_whole(shown_in(app, key), f"{key.key_display} {key.description}".strip())


@pytest.mark.parametrize("size", SIZES, ids=lambda size: "{}x{}".format(*size))
async def test_side_tabs_footer_header_and_strategy_card_show_whole(size, closed_backend, argtui_home, until):
    debate_id = stored_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=size) as pilot:
        screen = await open_debate(app, pilot, until, debate_id)
        message, reply = screen.query(MessageView)
        for focused in (message, reply):  # the student's message opens Parts, the reply Steps
            focused.focus()
            await pilot.pause()
            await until(pilot, lambda: footer_laid_out(app))
            assert_tabs_and_footer_whole(app)
        shown = "\n".join(screen_lines(app))
        assert f"argtui — {screen.sub_title}" in shown and screen.sub_title.endswith("1 turn of 5")
        side = screen_lines(app)
        strategy = reply.message.steps.strategy
        for label, choice, _why in strategy_fields(strategy):  # each field's label heads a line of the card
            assert any(line.split("│")[-1].startswith(f"{label}: ") for line in side), f"{label}: missing\n{shown}"
        screen.query_one(ContentTabs).focus()  # in the side panel, Esc goes back to the message box
        await pilot.pause()
        await until(pilot, lambda: footer_laid_out(app))
        assert "esc To message" in {shown_in(app, key) for key in screen.query(FooterKey)}
        assert_tabs_and_footer_whole(app)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: "{}x{}".format(*size))
async def test_a_failed_turn_shows_retry_whole(size, closed_backend, until):
    app = ArgtuiApp()
    repository = DebateRepository(app.services.db)
    debate = repository.create(CLAIM, "pro", backend="closed")
    repository.add_turn(debate.id, "user", "Uniforms reduce bullying.")
    repository.add_turn(debate.id, "assistant", "", error="the backend is down", state="failed")
    async with app.run_test(size=size) as pilot:
        screen = await open_debate(app, pilot, until, debate.id)
        screen.query_one(Input).focus()
        await pilot.pause()
        await until(pilot, lambda: footer_laid_out(app))
        assert "^r Retry" in {shown_in(app, key) for key in screen.query(FooterKey)}
        assert_tabs_and_footer_whole(app)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: "{}x{}".format(*size))
async def test_past_debates_show_the_whole_claim_and_turns(size, closed_backend, argtui_home):
    stored_debate(argtui_home)
    long_claim = "Governments should fund public transport from a tax on private cars in every city centre"
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    DebateRepository(db).create(long_claim, "con", backend="closed")
    db.close()
    app = ArgtuiApp()
    async with app.run_test(size=size) as pilot:
        await app.push_screen(NewDebateScreen())
        await pilot.pause()
        app.clear_notifications()  # a toast is not the list
        await pilot.pause()
        shown = shown_in(app, app.screen.query_one("#debates", OptionList))
        for claim, facts in ((CLAIM, "you pro · Full · 1 turn · score –"), (long_claim, "you con · Full · 0 turns")):
            words = " ".join(shown.split())
            assert " ".join(claim.split()) in words, f"{claim!r} not whole in {shown!r}"
            assert facts in words, f"{facts!r} not in {shown!r}"
