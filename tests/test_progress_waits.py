"""Every wait shows what is done and for how long: the Debate screen's Grice judging, labelling and
Coach count their maxims, components and score parts as they finish while their clock ticks, as do a
drill's judging and the ballot, the student's message
shows before the bot answers; `argtui components` says its progress on stderr, never on --json's stdout;
on the embedded model it labels with the Debate screen's method, and a method whose answers cannot fit
the model's context is refused before any request."""

from __future__ import annotations

import json
import re

from textual.widgets import Input, Static, TextArea

from argtui.app import ArgtuiApp
from argtui.cli import main
from argtui.config import load_config
from engines.components.records import labelled_documents
from engines.grice.questions import METRICS
from engines.llm.embedded import EMBEDDED_MODEL_NAME
from engines.student.drills import plan_drills
from engines.tasks.ballot import BALLOT_PROMPT
from fakes import Gate, chat_reply, is_backend_check
from screens.ballot import BallotScreen
from screens.debate import DebateScreen, MessageView
from screens.drills import DrillsScreen
from screens.home import HomeScreen
from screens.students import StudentPickerScreen
from screens.widgets.coach import CoachPanel
from store.students import StudentRepository
from store import Database
from test_components_llm import PARAGRAPH, llama_env  # noqa: F401 (a fixture)
from test_coach_screens import BALLOT_ANSWER, ballot_server, stored_debate, stored_students  # noqa: F401
from test_debate_panels import SLOW, asks, debate_app, new_debate, send, shown
from test_drills import MESSAGE as WORDY, weak_spot
from test_terminal_sizes import settle

FIRST = "School uniforms reduce bullying because nobody is mocked for their clothes."
SECOND = "Parents also save money when every child wears the same simple clothes."


def seconds_shown(line: str, what: str) -> int | None:
    """The seconds a `what N of M · S s` progress reads (None: it is not shown)."""
    found = re.search(rf"{what} \d+ of \d+ · (\d+)(?:/\d+)? s", line)
    return int(found.group(1)) if found else None


async def test_the_reply_line_counts_the_maxims_judged_and_the_seconds_while_one_is_held(
        argtui_home, fake_server, until):
    gate = Gate(lambda body: chat_reply("yes"), lambda body: asks(body, SLOW))
    fake_server.answer = gate
    async with debate_app(fake_server).run_test(size=(120, 40)) as pilot:
        try:
            screen, _message, reply = await send(pilot, argtui_home, until)
            done = f"Grice {len(METRICS) - 1} of {len(METRICS)}"
            await until(pilot, lambda: done in shown(reply.render()), timeout_s=120)
            assert reply.message.grice is not None and SLOW not in reply.message.grice.metrics  # still held
            assert gate.held >= 1
            # The clock moves while nothing else does.
            first = seconds_shown(shown(reply.render()), "Grice")
            assert first is not None
            await until(pilot, lambda: (seconds_shown(shown(reply.render()), "Grice") or 0) > first, timeout_s=30)
            assert done in shown(reply.render())
            # The judging does not hold the next message: it is sent and shown while the maxim waits.
            screen.query_one("#message", Input).value = SECOND
            await pilot.press("enter")
            await until(pilot, lambda: any(SECOND in shown(view.render()) for view in screen.query(MessageView)))
            assert SLOW not in reply.message.grice.metrics
        finally:
            gate.open()
        await until(pilot, lambda: reply.message.grice_started is None, timeout_s=60)
        await pilot.pause()
        line = shown(reply.render())
        assert " of " not in line and line.count("? yes") == len(METRICS)


async def test_the_message_counts_its_components_labelled_while_one_is_held_and_shows_at_once(
        argtui_home, fake_server, until):
    gate = Gate(lambda body: chat_reply("Premise"),
                lambda body: f"<TARGET>{SECOND.split()[0]}" in str(body["messages"][-1].get("content")))
    fake_server.answer = gate
    async with debate_app(fake_server).run_test(size=(120, 40)) as pilot:
        try:
            await pilot.app.push_screen(DebateScreen(new_debate(argtui_home, "fake")))
            screen = pilot.app.screen
            await until(pilot, lambda: screen.session is not None, timeout_s=300)
            # One answer a component: the last of the three (the first sentence holds two) waits at the gate.
            screen.choice.component_method = "vanilla"
            screen.query_one("#message", Input).value = f"{FIRST} {SECOND}"
            await pilot.press("enter")
            # The student's message is on screen at once, before any reply is.
            await until(pilot, lambda: len(screen.query(MessageView)) >= 1)
            first_view = screen.query(MessageView).first()
            assert first_view.message.role == "user" and FIRST in shown(first_view.render())
            await until(pilot, lambda: "Labels 2 of 3" in shown(first_view.render()), timeout_s=120)
            assert first_view.message.components is not None and len(first_view.message.components) == 2
            assert seconds_shown(shown(first_view.render()), "Labels") is not None
        finally:
            gate.open()
        await until(pilot, lambda: first_view.message.state == "done", timeout_s=60)
        await pilot.pause()
        assert "Labels" not in shown(first_view.render())
        assert [c.label for c in first_view.message.components] == ["Premise"] * 3


def test_components_on_the_embedded_model_labels_with_the_debate_method_and_says_its_progress_on_stderr(
        llama_env, capsys, argtui_home):
    assert main(["components", PARAGRAPH, "--json"]) == 0  # no --method: the backend's
    out, err = capsys.readouterr()
    components = json.loads(out)  # stdout holds the JSON alone
    assert len(components) == 3 and {c["method"] for c in components} == {"vanilla"}
    assert "Labelling (vanilla)" in err
    assert all(f"[{done}/3] " in err for done in (1, 2, 3))
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    [entry] = labelled_documents(db)
    assert " vanilla #" in entry.judge.name
    db.close()


def test_a_method_whose_answers_overflow_the_context_is_refused_before_any_request(fake_server, capsys):
    load_config().add_backend(fake_server.profile(kind="llamacpp", model=EMBEDDED_MODEL_NAME, context=4096),
                              make_default=True)
    assert main(["components", PARAGRAPH, "--method", "mad"]) == 1
    err = capsys.readouterr().err
    # The batch limits: 4 debate turns of 2,048 tokens the Judge reads, and its 4,096.
    assert "--method mad does not fit" in err and "12,288 tokens" in err and "context is 4,096 tokens" in err
    assert fake_server.bodies == []
    # Short answers fit: labelled as a debate labels.
    assert main(["components", PARAGRAPH, "--method", "mad", "--turn-tokens", "96", "--judge-tokens", "96"]) == 0
    assert fake_server.bodies


async def test_the_ballot_screen_counts_its_judgment_and_the_seconds_while_the_answer_is_held(ballot_server, until):
    # Only the ballot is held: the app's backend probe goes to the same server, and is answered.
    gate = Gate(lambda body: chat_reply(json.dumps(BALLOT_ANSWER)),
                lambda body: BALLOT_PROMPT.splitlines()[0] in str(body["messages"]))
    ballot_server.answer = gate
    app = ArgtuiApp(student="Ann")
    [ann] = stored_students(app, "Ann")
    debate_id = stored_debate(app, ann.id)
    async with app.run_test(size=(100, 30)) as pilot:
        try:
            await app.push_screen(BallotScreen(debate_id))
            screen = app.screen

            def status() -> str:
                return str(screen.query_one("#ballot-status", Static).render())

            await until(pilot, lambda: gate.held == 1 and seconds_shown(status(), "Ballot") is not None, timeout_s=60)
            first = seconds_shown(status(), "Ballot")
            assert "Ballot 0 of 1 · " in status() and screen.ballot is None
            await until(pilot, lambda: (seconds_shown(status(), "Ballot") or 0) > first, timeout_s=30)
        finally:
            gate.open()
        await until(pilot, lambda: screen.ballot is not None, timeout_s=60)
        assert not screen.query_one("#ballot-progress").display


async def test_the_drills_screen_counts_the_judging_steps_and_the_seconds_while_the_judge_is_held(
        fake_server, until):
    # the drill's judging is held; the app's backend check is answered, or waiting for the app's
    # workers would wait out the gate
    gate = Gate(lambda body: chat_reply("yes"), lambda body: not is_backend_check(body))
    fake_server.answer = gate
    app = debate_app(fake_server)
    ann = StudentRepository(app.services.db).add("Ann")
    [rewrite] = await plan_drills(app.services.db, ann.id, [weak_spot("clarity", text=WORDY)], None)
    async with app.run_test(size=(120, 40)) as pilot:
        try:
            screen = DrillsScreen(ann.id)
            await app.push_screen(screen)
            await settle(app, pilot)
            screen.open(rewrite)
            screen.query_one("#drill-answer", TextArea).text = "Uniforms cost families money every year."
            await pilot.press("ctrl+r")

            def result() -> str:
                return str(screen.query_one("#drill-result", Static).render())

            await until(pilot, lambda: gate.held >= 1 and "Drill 0 of 2 · " in result(), timeout_s=60)
            assert "judging your answer" in result()
            first = seconds_shown(result(), "Drill")
            await until(pilot, lambda: (seconds_shown(result(), "Drill") or 0) > first, timeout_s=30)
        finally:
            gate.open()
        await until(pilot, lambda: "Next due" in result(), timeout_s=60)
        assert "Drill " not in result()


async def test_the_coach_counts_the_parts_of_its_score_while_one_is_held(argtui_home, fake_server, until):
    gate = Gate(lambda body: chat_reply("yes"),
                lambda body: "Translate the reasoning" in str(body["messages"][-1].get("content")))
    fake_server.answer = gate
    async with debate_app(fake_server).run_test(size=(120, 40)) as pilot:
        try:
            screen, _message, _reply = await send(pilot, argtui_home, until)
            panel = screen.query_one(CoachPanel)
            # The subjective scores and the fact check are in; the logic check waits at the gate.
            await until(pilot, lambda: "Coach 2 of 3 · " in shown(panel.content), timeout_s=120)
            assert gate.held >= 1 and panel.in_progress and not panel.judgments
            first = seconds_shown(shown(panel.content), "Coach")
            await until(pilot, lambda: (seconds_shown(shown(panel.content), "Coach") or 0) > first, timeout_s=30)
        finally:
            gate.open()
        await until(pilot, lambda: not panel.in_progress, timeout_s=120)
        assert "Coach 2 of 3" not in shown(panel.content)


async def test_the_student_picker_never_comes_up_over_another_screen_and_home_s_opens_it(closed_backend):
    app = ArgtuiApp()
    [ann, _ben] = stored_students(app, "Ann", "Ben")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, StudentPickerScreen)  # offered at start, on Home
        await pilot.press("escape")
        await settle(app, pilot)
        await app.push_screen(DrillsScreen(ann.id))  # the user went on before the database answered
        await settle(app, pilot)
        app._choose_student()  # what the database's opening does once it is open
        await settle(app, pilot)
        assert isinstance(app.screen, DrillsScreen)
        app.pop_screen()
        await settle(app, pilot)
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, StudentPickerScreen)
