"""A debate turn a student can rely on, under Textual's pilot against the fake server: the
message-length limit, the turn's deadline, stopping a turn and running it again, quitting
mid-turn, and reopening a debate whose turn was interrupted."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console
from textual.widgets import Input, Static

from argtui.app import ArgtuiApp
from argtui.config import ConfigError, Paths, load_config
from engines.debate.messages import count_words, split_message, trim_message
from engines.debate.records import DebateRecords
from engines.debate.settings import DebateSettings
from fakes import FakeServer, Gate, Reply, is_backend_check, schema_answer
from screens.choice import ChoiceDialog
from screens.debate import DebateScreen, MessageView
from store import Database
from store.debates import DebateRepository

CLAIM = "School uniforms should be mandatory"
REPLY = "Uniforms hide bullying rather than stop it"  # every string the fake answers
MESSAGE = "Uniforms reduce bullying because nobody is mocked for their clothes."


@pytest.fixture
def fake() -> FakeServer:
    with FakeServer(schema_answer(REPLY)) as server:
        yield server


def configure(fake: FakeServer, **debate) -> int:
    """The fake as the default backend, the `[debate]` settings given; a new debate's id."""
    config = load_config()
    config.debate = DebateSettings(**debate)
    config.add_backend(fake.profile(kind="openai", retries=0, timeout_s=30), make_default=True)
    db = Database(Paths.resolve().database)
    debate_id = DebateRepository(db).create(CLAIM, "pro", backend="fake").id
    db.close()
    return debate_id


def stored_turns(debate_id: int):
    db = Database(Paths.resolve().database)
    try:
        return DebateRecords(DebateRepository(db)).turns(debate_id)
    finally:
        db.close()


def shown(view: MessageView) -> str:
    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(view.render())
    return console.export_text()


async def open_debate(pilot, until, debate_id: int) -> DebateScreen:
    await pilot.app.push_screen(DebateScreen(debate_id))
    screen = pilot.app.screen
    # the app's backend probe has been answered and the judges' preparation at opening is done,
    # so from now on every request is the turn's
    await until(pilot, lambda: screen.session is not None and pilot.app.backend_status is not None
                and all(worker.is_finished for worker in screen.workers if worker.group == "prepare"))
    screen.action_next_grice_strategy()  # BEST -> ZSL and mad -> vanilla: fewer calls per turn
    screen.action_next_component_method()
    return screen


async def send(pilot, screen: DebateScreen, text: str) -> None:
    screen.query_one("#message", Input).value = text
    screen.query_one("#message", Input).focus()
    await pilot.press("enter")


def test_the_debate_table_of_the_config_sets_the_limits(argtui_home):
    argtui_home.mkdir(parents=True, exist_ok=True)
    (argtui_home / "config.toml").write_text("[debate]\nmax_message_words = 40\nturn_timeout_s = 90\n")
    assert load_config().debate == DebateSettings(max_message_words=40, turn_timeout_s=90)
    (argtui_home / "config.toml").write_text("[debate]\nmax_message_words = 0\n")
    with pytest.raises(ConfigError, match=r"\[debate\]: max_message_words"):
        load_config()


def test_splitting_keeps_every_word_and_cuts_after_sentences():
    text = "One two three. Four five six seven! Eight nine.\n\nTen eleven twelve thirteen fourteen fifteen."
    parts = split_message(text, 5)
    assert parts == ["One two three.", "Four five six seven!", "Eight nine.", "Ten eleven twelve thirteen fourteen",
                     "fifteen."]
    assert " ".join(parts).split() == text.split()
    assert trim_message(text, 5) == "One two three. Four five" and trim_message("a b", 5) == "a b"


async def test_a_message_over_the_limit_is_not_sent_and_trimming_or_splitting_is_on_request(fake, until):
    debate_id = configure(fake)
    app = ArgtuiApp()
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await open_debate(pilot, until, debate_id)
        probed = len(fake.bodies)
        text = " ".join(f"word{i}." if i % 20 == 19 else f"word{i}" for i in range(2000))
        await send(pilot, screen, text)
        await until(pilot, lambda: isinstance(app.screen, ChoiceDialog))
        question = str(app.screen.query_one("#question", Static).render())
        assert "2,000 words" in question and "at most 250" in question and "Nothing was sent" in question
        assert len(fake.bodies) == probed and stored_turns(debate_id) == []
        box = screen.query_one("#message", Input)
        assert box.has_class("-over") and box.border_subtitle == "2000/250 words"

        await pilot.press("escape")  # keep editing: the draft is as it was
        assert app.screen is screen and box.value == text

        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ChoiceDialog))
        await pilot.press("t")
        assert box.value == trim_message(text, 250) and count_words(box.value) == 250

        box.value = text
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ChoiceDialog))
        await pilot.press("s")
        parts = split_message(text, 250)
        assert box.value == parts[0] and screen._queued == parts[1:]
        assert [count_words(part) for part in parts] == [240] * 8 + [80]  # cut after the 12th sentence of 20 words
        assert len(fake.bodies) == probed and stored_turns(debate_id) == []  # nothing is sent unasked

        await pilot.press("enter")  # the first part goes; the next one takes its place
        await until(pilot, lambda: len(stored_turns(debate_id)) == 2)
        assert stored_turns(debate_id)[0].content == parts[0] and box.value == parts[1]


async def test_stopping_a_turn_stops_its_requests_and_retry_runs_it_again(fake, until):
    debate_id = configure(fake)
    app = ArgtuiApp()
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await open_debate(pilot, until, debate_id)
        # Held until stopped: on a loaded machine an answer after a fixed delay may come before the stop.
        held = Gate(schema_answer(REPLY), holds=lambda body: not is_backend_check(body))
        fake.answer = held
        opened = len(fake.bodies)  # the probe and the judges' preparation
        await send(pilot, screen, MESSAGE)
        await until(pilot, lambda: len(fake.bodies) >= opened + 2)  # the bot's first step and the labelling wait
        message, reply = screen.query(MessageView)
        assert reply.message.state == "running" and message.message.state == "running"
        await until(pilot, lambda: "1 Strategy" in shown(reply) and "/180 s · Esc stops" in shown(reply))
        first = shown(reply)
        await pilot.pause(1.1)
        assert shown(reply) != first  # the clock moves while the step is silent

        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ChoiceDialog))
        await pilot.press("s")
        await until(pilot, lambda: reply.message.state == "cancelled" and message.message.state == "cancelled")
        sent = len(fake.bodies)
        held.open()  # a request still in flight would now be answered and followed
        await pilot.pause(2.0)
        assert len(fake.bodies) == sent
        assert [t.state for t in stored_turns(debate_id)] == ["cancelled", "cancelled"]
        assert "Ctrl+R runs the turn again" in shown(reply) and "labelling cancelled" in shown(message)
        assert "ctrl+r" in screen.active_bindings and app.screen is screen  # still here, Retry offered

        fake.answer = schema_answer(REPLY)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: reply.message.state == "done" and message.message.state == "done", 30)
        assert reply.message.content and message.message.components is not None
        turns = stored_turns(debate_id)
        assert [(t.id, t.state) for t in turns] == [(message.message.turn.id, "done"), (reply.message.turn.id, "done")]
        assert turns[1].content == reply.message.content and "ctrl+r" not in screen.active_bindings


async def test_a_backend_that_hangs_gets_level_0_s_answer_at_its_deadline_and_the_debate_goes_on(fake, until):
    debate_id = configure(fake, turn_timeout_s=1.5)
    app = ArgtuiApp()
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await open_debate(pilot, until, debate_id)
        fake.answer = lambda body: Reply(delay_s=120)
        started = time.monotonic()
        await send(pilot, screen, MESSAGE)
        message, reply = screen.query(MessageView)
        await until(pilot, lambda: reply.message.state == "done", 10)
        assert time.monotonic() - started < 5
        fell_back = reply.message.turn.fallback_from
        assert (fell_back.step, fell_back.error) == ("strategy", "no reply within 1.5 s, the turn's time limit")
        assert "no reply within 1.5 s" in shown(reply) and reply.message.content in shown(reply)
        assert message.message.state == "running"  # labelling has no deadline: Esc stops it, the client's timeout ends it
        assert [(t.state, t.error) for t in stored_turns(debate_id)] == [("running", None), ("done", None)]

        fake.answer = schema_answer(REPLY)
        await send(pilot, screen, "Uniforms also save families money.")
        await until(pilot, lambda: len(screen.query(MessageView)) == 4)
        second = list(screen.query(MessageView))[3]
        await until(pilot, lambda: second.message.state == "done", 30)
        assert second.message.content and second.message.error is None
        history = [turn.content for turn in screen.session.history(second.message.turn.position)]
        assert history == [MESSAGE, reply.message.content, "Uniforms also save families money."]


async def test_quitting_mid_turn_is_quick_and_stores_the_turn_as_cancelled(fake, until):
    debate_id = configure(fake)
    app = ArgtuiApp()
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await open_debate(pilot, until, debate_id)
        fake.answer = schema_answer(REPLY, delay_s=60)
        opened = len(fake.bodies)
        await send(pilot, screen, MESSAGE)
        await until(pilot, lambda: len(fake.bodies) >= opened + 2)  # the turn's requests are in flight
        await pilot.press("ctrl+q")
        quit_at = time.monotonic()
    assert time.monotonic() - quit_at < 1.0
    assert [(t.role, t.state) for t in stored_turns(debate_id)] == [("user", "cancelled"), ("assistant", "cancelled")]


@pytest.mark.parametrize("left", ["running", "without a reply"])
async def test_reopening_shows_a_turn_left_running_as_cancelled_and_retry_runs_it(fake, until, left):
    debate_id = configure(fake)
    db = Database(Paths.resolve().database)
    records = DebateRecords(DebateRepository(db))
    message = records.add_message(debate_id, MESSAGE)
    if left == "running":  # argtui was killed mid-turn
        records.set_labelling(message.id, "running")
        records.start_reply(debate_id)
    # else an earlier release was: it stored a reply once it was done, a message's state did not exist
    db.close()
    app = ArgtuiApp()
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await open_debate(pilot, until, debate_id)
        user, bot = screen.query(MessageView)
        assert (user.message.state, bot.message.state) == ("cancelled", "cancelled")
        assert "cancelled · Ctrl+R runs the turn again" in shown(bot) and "labelling cancelled" in shown(user)
        assert "Labels " not in shown(user)
        assert "Ctrl+R retries" in str(screen.query_one("#status", Static).render())
        await pilot.press("ctrl+r")
        await until(pilot, lambda: bot.message.state == "done" and user.message.state == "done", 30)
        assert [(t.position, t.state, t.content) for t in stored_turns(debate_id)] == [
            (0, "done", MESSAGE), (1, "done", bot.message.content)]
        assert bot.message.content
