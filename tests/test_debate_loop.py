"""A debate as a new student lives it: the New-debate dialog (levels with their descriptions and
ratings, the student's debate, the Touché claims from the shared data folder), the header's
ratings, an empty message, the Parts tab following the latest message, the transcript saying how
a label came about, level 1's own steps and a draft's length, and the end: Ctrl+E or the last of
`[debate] max_turns` turns opens the ballot, and an ended debate is read-only."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import re

from rich.console import Console
from sqlalchemy import text
from textual.widgets import Input, OptionList, RadioButton, Static, TabbedContent

from argtui.app import ArgtuiApp
from argtui.runtime import Runtime
from engines.datasets.shared import RELEASE_FOLDERS, SHARED_DATA_ENV
from engines.debate.claims import CMV_FILE
from engines.debate.exchange import BotProgress
from engines.debate.levels import LEVELS
from engines.debate.opponent import DraftWriting, ReplyProgress, ReplyRejected, StepStarted
from engines.debate.records import ComponentRecord, SpanRecord, TranscriptTurn
from engines.student.ratings import record_result
from screens.ballot import BallotScreen
from screens.debate import EMPTY_MESSAGE, DebateScreen, MessageView, TranscriptScreen
from screens.debate_state import Message
from screens.new_debate import NewDebateScreen
from screens.widgets.parts import ComponentList
from screens.widgets.strategy import StepsPanel
from screens.widgets.transcript import component_transcript
from store import Database
from store.debates import DebateRepository, TurnState
from store.students import StudentRepository
from test_debate_screen import stored_debate

CLAIM = "We should abandon the use of school uniform"  # a topic of the bundled corpus: level 0 finds arguments
MESSAGE = "School uniforms reduce bullying because nobody is mocked for their clothes."


def plain(renderable) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def database(argtui_home) -> Database:
    return Database(argtui_home / "data" / "argtui.sqlite3")


def new_debate(argtui_home, level: int = 0, student: str | None = None) -> int:
    """A stored debate with no turns yet (level 0: the bot answers from the argument base, no model needed)."""
    db = database(argtui_home)
    student_id = StudentRepository(db).get_or_add(student).id if student else None
    debate_id = DebateRepository(db).create(CLAIM, "pro", backend="closed", level=level, student_id=student_id).id
    db.close()
    return debate_id


def limit_turns(argtui_home, turns: int) -> None:
    with (argtui_home / "config.toml").open("a", encoding="utf-8") as config:
        config.write(f"\n[debate]\nmax_turns = {turns}\n")


async def open_debate(pilot, until, debate_id: int) -> DebateScreen:
    """The debate open and its session ready (without a model: the closed backend answers nothing)."""
    await pilot.app.push_screen(DebateScreen(debate_id))
    screen = pilot.app.screen
    await until(pilot, lambda: screen.session is not None, timeout_s=120)
    return screen


async def refused(pilot, screen: DebateScreen) -> bool:
    """A message typed into an ended debate is not sent, and the status line says why."""
    before = len(screen.state.messages)
    screen.query_one("#message", Input).value = "One more thing."
    await pilot.press("enter")
    for _ in range(400):
        if status(screen).startswith("not sent"):
            break
        await pilot.pause(0.05)
    return len(screen.state.messages) == before and status(screen).startswith("not sent: the debate has ended")


async def send(pilot, until, screen: DebateScreen, message: str = MESSAGE) -> None:
    """The message sent and everything it started over."""
    before = screen.state.exchanges_done
    screen.query_one("#message", Input).value = message
    await pilot.press("enter")
    await until(pilot, lambda: screen.state.exchanges_done > before and not screen._exchanges_running, timeout_s=60)
    await pilot.pause()


def status(screen: DebateScreen) -> str:
    return plain(screen.query_one("#status", Static).render())


# ---------------------------------------------------------------- ending


async def test_ctrl_e_ends_the_debate_with_its_ballot_and_an_ended_debate_opens_read_only(
        closed_backend, argtui_home, until):
    debate_id = new_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_debate(pilot, until, debate_id)
        await pilot.press("ctrl+e")  # nothing said yet: nothing to judge
        assert app.screen is screen and "nothing to judge yet" in status(screen)
        await send(pilot, until, screen)
        await pilot.press("ctrl+e")
        assert isinstance(app.screen, BallotScreen) and app.screen.debate_id == debate_id
        app.pop_screen()
        await pilot.pause()
        assert app.screen is screen and screen.ended
        assert "Ctrl+E shows its ballot" in screen.query_one("#message", Input).placeholder
        assert await refused(pilot, screen)
        ended = plain(screen.query_one("#ended", Static).render())
        assert "The debate has ended after 1 turn" in ended and "Ctrl+E shows its ballot again" in ended
        await pilot.press("ctrl+e")  # the ballot again
        assert isinstance(app.screen, BallotScreen) and app.screen.debate_id == debate_id
    db = database(argtui_home)
    assert DebateRepository(db).get(debate_id).ended_at is not None
    db.close()

    app = ArgtuiApp()  # reopened: read-only, nothing connects or runs
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(DebateScreen(debate_id))
        screen = app.screen
        await pilot.pause()
        assert "Ctrl+E shows its ballot again" in plain(screen.query_one("#ended", Static).render())
        assert screen.session is None and not screen.workers
        assert await refused(pilot, screen)
        assert [view.message.role for view in screen.query(MessageView)] == ["user", "assistant"]
        assert screen.check_action("retry", ()) is False


async def test_after_the_last_turn_the_debate_ends_itself_and_takes_no_more_messages(
        closed_backend, argtui_home, until):
    limit_turns(argtui_home, 2)
    debate_id = new_debate(argtui_home)
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_debate(pilot, until, debate_id)
        assert screen.settings.max_turns == 2 and "0 turns of 2" in screen.sub_title
        await send(pilot, until, screen)
        assert app.screen is screen and not screen._closed_reason  # one more to go
        await send(pilot, until, screen, "Uniforms also save families money on clothes.")
        await until(pilot, lambda: isinstance(app.screen, BallotScreen))
        assert app.screen.debate_id == debate_id and screen.ended
        app.pop_screen()
        await pilot.pause()
        assert "after 2 turns" in plain(screen.query_one("#ended", Static).render())
        assert await refused(pilot, screen)
    db = database(argtui_home)
    assert DebateRepository(db).get(debate_id).ended_at is not None
    db.close()


# ---------------------------------------------------------------- header and New-debate dialog


async def test_the_header_names_the_student_and_the_level_with_their_ratings(closed_backend, argtui_home, until):
    played = new_debate(argtui_home, student="Ana")
    db = database(argtui_home)
    record_result(db, played, student_won=True)  # an even match won: the student +16, the level -16
    db.close()
    hers, nobodys = new_debate(argtui_home, student="Ana"), new_debate(argtui_home)
    app = ArgtuiApp(student="Ana")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(DebateScreen(hers))
        await pilot.pause()
        assert app.screen.sub_title.startswith("Debate · Ana (1016) vs level 0 Retrieval (984) · 0 turns")
        app.pop_screen()
        await app.push_screen(DebateScreen(nobodys))
        await pilot.pause()
        assert app.screen.sub_title.startswith("Debate · level 0 Retrieval (rating 984) · 0 turns")


async def test_the_new_debate_dialog_describes_each_level_and_the_debate_is_the_students(
        closed_backend, argtui_home, tmp_path, monkeypatch, until):
    shared = tmp_path / "shared"
    rad_folder = shared / RELEASE_FOLDERS["touche-rad"]
    rad_folder.mkdir(parents=True)
    debates = [{"id": "cmv-1", "claim": "CMV: Cities should ban cars from their centres.", "simulated_debate": []}]
    with gzip.open(rad_folder / CMV_FILE, "wt", encoding="utf-8") as file:
        file.writelines(json.dumps(debate) + "\n" for debate in debates)
    monkeypatch.setenv(SHARED_DATA_ENV, str(shared))  # and no [datasets] entry
    app = ArgtuiApp(student="Ana")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(NewDebateScreen())
        screen = app.screen
        for level in LEVELS:
            screen.query_one(f"#level-{level.number}", RadioButton).value = True
            await pilot.pause()
            shown = plain(screen.query_one("#level-description", Static).render())
            assert f"level {level.number} {level.name} (rating {1000 + 150 * level.number}): {level.description}" \
                in " ".join(shown.split())
        claims = screen.query_one("#claims", OptionList)
        await until(pilot, lambda: len(screen.claims) > 1)
        assert ("CMV: Cities should ban cars from their centres.", "touche-cmv") == \
            (screen.claims[0].text, screen.claims[0].source) and claims.option_count == len(screen.claims)
        screen.query_one("#level-0", RadioButton).value = True
        screen.query_one("#claim-input", Input).value = CLAIM
        await pilot.press("enter")
        assert isinstance(app.screen, DebateScreen)
        debate_id = app.screen.debate_id
    db = database(argtui_home)
    debate = DebateRepository(db).get(debate_id)
    assert debate.student_id == StudentRepository(db).get("Ana").id and debate.level == 0
    db.close()


def test_a_dataset_is_where_the_config_says_else_in_the_shared_data_folder(argtui_home, tmp_path, monkeypatch):
    runtime = Runtime()
    monkeypatch.setenv(SHARED_DATA_ENV, str(tmp_path))
    assert runtime.dataset_path("ukpconvarg1") is None  # the shared folder holds no such release
    (tmp_path / "ukpconvarg1").mkdir()
    assert runtime.dataset_path("ukpconvarg1") == tmp_path / "ukpconvarg1"
    assert runtime.dataset_path("unknown") is None
    runtime.config.datasets["ukpconvarg1"] = str(tmp_path / "mine")
    assert runtime.dataset_path("ukpconvarg1") == tmp_path / "mine"  # the config's entry first, as it is
    monkeypatch.delenv(SHARED_DATA_ENV)
    assert runtime.dataset_path("touche-rad") is None
    asyncio.run(runtime.aclose())


# ---------------------------------------------------------------- the message box and the side panel


async def test_an_empty_message_says_to_type_one_first(closed_backend, argtui_home, until):
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_debate(pilot, until, new_debate(argtui_home))
        screen.query_one("#message", Input).value = "   "
        await pilot.press("enter")
        await pilot.pause()
        assert status(screen).strip() == EMPTY_MESSAGE and not screen.state.messages


async def test_f4_goes_to_the_side_panel_s_tabs_and_esc_back_to_the_message_box(closed_backend, argtui_home, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_debate(pilot, until, new_debate(argtui_home))
        box = screen.query_one("#message", Input)
        assert screen.focused is box
        await pilot.press("f4")
        assert screen.query_one("#side", TabbedContent).active == "evidence-tab" and screen.focused is not box
        await pilot.press("f3")
        assert screen.query_one("#side", TabbedContent).active == "steps-tab"
        await pilot.press("escape")
        assert app.screen is screen and screen.focused is box  # back to the message box, still debating
        await pilot.press("escape")
        assert app.screen is not screen  # from the message box, Esc leaves


async def test_the_parts_tab_follows_the_latest_student_message(closed_backend, argtui_home, until):
    debate_id = stored_debate(argtui_home)  # a labelled message and its reply
    db = database(argtui_home)
    with db.engine.begin() as conn:  # at level 0 it goes on without a model
        conn.execute(text("UPDATE debate SET level = 0 WHERE id = :id"), {"id": debate_id})
    db.close()
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_debate(pilot, until, debate_id)
        screen.query_one(TabbedContent).active = "components-tab"  # F4 to it: nothing focused
        await pilot.pause()
        parts = screen.query_one(ComponentList)
        assert [c.label for c in parts.components] == ["Claim", "Premise"] and parts.option_count == 2
        await send(pilot, until, screen, "Uniforms also save families money on clothes.")
        assert screen.state.selected.role == "assistant"  # the reply, as it streamed
        latest = screen.state.messages[-2]
        assert latest.role == "user" and latest.components is None  # the closed backend labels nothing
        assert parts.components is None and parts.labelling == latest.state  # the Parts tab shows it
        assert screen.query_one(TabbedContent).active == "components-tab"  # the student stays where they were


def mad_component(label: str, manager: dict[str, float], proponent: str, opponent: str) -> ComponentRecord:
    return ComponentRecord(
        span=SpanRecord(start=0, end=20, text="Uniforms stop bullying"), method="mad", label=label,
        distribution=manager, reason="It supports the claim.",
        transcript=[TranscriptTurn(role="proponent", text="It is the position.", label=proponent),
                    TranscriptTurn(role="opponent", text="It is a reason.", label=opponent),
                    TranscriptTurn(role="judge", text="It supports the claim.")],
    )


def test_the_transcript_says_how_a_label_other_than_the_managers_came_about():
    judged = mad_component("Premise", {"MajorClaim": 1.0, "Claim": 0.0, "Premise": 0.0}, "MajorClaim", "Premise")
    label_line = " ".join(plain(component_transcript(judged)[1]).split())
    assert ("Label: Premise — the Manager put MajorClaim first (100%); the final label is the Judge's verdict "
            "after the Proponent argued for MajorClaim and the Opponent for Premise") in label_line
    outside = mad_component("Claim", {"MajorClaim": 0.7, "Claim": 0.1, "Premise": 0.2}, "Premise", "MajorClaim")
    assert "a label neither argued for" in plain(component_transcript(outside)[1])
    agreed = mad_component("MajorClaim", {"MajorClaim": 0.7, "Claim": 0.1, "Premise": 0.2}, "Premise", "MajorClaim")
    assert "Manager put" not in plain(component_transcript(agreed)[1])
    single = ComponentRecord(span=judged.span, method="vanilla", label="Claim",
                             distribution={"MajorClaim": 0.5, "Claim": 0.3, "Premise": 0.2})
    assert "the model answered Claim, though its distribution put MajorClaim first (50%)" in \
        plain(component_transcript(single)[1])


async def test_the_transcript_screen_explains_the_stored_label(closed_backend, argtui_home):
    debate_id = stored_debate(argtui_home)  # its second component: Premise, where the Manager put Claim first
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(DebateScreen(debate_id))
        list(app.screen.query(MessageView))[0].focus()
        await pilot.pause()
        options = app.screen.query_one("#component-list", OptionList)
        options.focus()
        options.highlighted = 1
        await pilot.press("enter")
        assert isinstance(app.screen, TranscriptScreen)
        shown = " ".join(plain(widget.render()) for widget in app.screen.query(Static))
        assert "the Manager put Claim first (60%)" in " ".join(shown.split())


# ---------------------------------------------------------------- level 1


async def test_a_level_1_reply_names_its_steps_and_streams_a_draft_into_its_bubble(closed_backend, argtui_home, until):
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.push_screen(DebateScreen(new_debate(argtui_home, level=1)))
        screen = app.screen
        await until(pilot, lambda: screen.session is not None or screen.open_failure is not None, timeout_s=120)
        # A turn as the exchange drives it, its reply step writing a draft the checks have not passed yet.
        message = Message("user", state=TurnState.DONE)
        screen.state.messages.append(message)
        reply = screen.state.add_reply(message)
        reply.begin()
        reply.follow(StepStarted("reply"))
        view = MessageView(reply)
        await screen.query_one("#log").mount(view)
        view.focus()
        screen._streaming = view  # the reply being written, as `ReplyStarted` makes it

        async def shows(event) -> str:
            screen._follow(reply, BotProgress(None, event))
            screen._redraw(view)
            await pilot.pause(0.2)  # the reply's refresh timer has run
            return plain(view.render())

        line = await shows(DraftWriting(4, 1, "Uniforms cost families more"))
        assert "Bot: Uniforms cost families more" in line  # the draft streams into the bubble
        assert re.search(r"Reply \d+ s · writing a reply… \(4 words, attempt 1\)", line) and "5 Reply" not in line
        assert "writing a reply… (4 words, attempt 1)" in status(screen)
        steps = plain(screen.query_one(StepsPanel).content)
        assert "Retrieval" in steps and "Reply" in steps and "5 Reply" not in steps
        line = await shows(ReplyRejected("it argues your side", "Uniforms cost families more", 1))
        assert "Uniforms cost" not in line and status(screen) == "draft 1 rejected: it argues your side\n"
        assert "Bot: Bullies" in await shows(DraftWriting(1, 2, "Bullies"))  # the next draft streams in its place
        line = await shows(ReplyProgress("Bullies find other targets."))
        assert reply.drafting is None and "writing a reply" not in line and "Bot: Bullies find other targets." in line
