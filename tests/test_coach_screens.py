"""The student coach's screens: the student picker (offered at start, adds and picks), the Ballot
(judged through the real judging core against a scripted server, shown whole, saved as Markdown)
and Progress (plots over three stored debates, and what it says with fewer than two)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, LoadingIndicator, OptionList, Static
from textual_plotext import PlotextPlot

from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.llm.embedded import EMBEDDED_MODEL_NAME
from engines.student.ratings import record_result
from fakes import FakeServer, chat_reply
from screens.ballot import DEMONSTRATION, BallotScreen, ballot_path
from screens.home import HomeScreen
from screens.progress import ProgressScreen
from screens.students import StudentPickerScreen
from store.debates import DebateRepository
from store.students import StudentRepository
from test_progress import INSPIRE_JUDGE, debate_of, dialogue_of, inspire_score, save_grice, save_inspire
from test_terminal_sizes import settle

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}
MESSAGES = ["Uniforms stop bullying. Nobody is mocked for their clothes.", "Uniforms also save parents money."]
BALLOT_ANSWER = {
    "winner": "student",
    "reason": "Turn 1 answered the bullying point directly with a reason, while the bot's reply to turn 2 "
              "repeated costs without evidence.",
    "points": "28 to 27",
    "fix": "Back the money claim with a figure or an example a parent would recognise.",
    "rewrite_from": "Uniforms also save parents money.",
    "rewrite_to": "A uniform costs about 60 euros a year, less than the branded clothes pupils compete over.",
}


def screen_text(app: ArgtuiApp) -> str:
    return "\n".join(str(widget.render()) for widget in app.screen.query(Static) if widget.display)


def ballot_calls(server: FakeServer) -> int:
    """The model calls asking for a ballot (the backend check asks its own question)."""
    return sum("response_format" in body for body in server.bodies)


def stored_students(app: ArgtuiApp, *names: str) -> list:
    students = StudentRepository(app.services.db)
    return [students.add(name) for name in names]


def stored_debate(app: ArgtuiApp, student_id: int, level: int = 1) -> int:
    """A debate of two exchanges, each student message scored by the Coach and each reply by the Grice judge."""
    db = app.services.db
    debate_id = debate_of(db, student_id, level, MESSAGES)
    dialogue = dialogue_of(db, debate_id)
    save_inspire(db, INSPIRE_JUDGE, debate_id, dialogue, 0, inspire_score((0.75, 1.0, 0.75, 1.0), 1.0, ("supported",)))
    save_inspire(db, INSPIRE_JUDGE, debate_id, dialogue, 2, inspire_score((0.25, 0.5, 0.5, 1.0), 0.0, ("no evidence",)))
    replies = [turn for turn in dialogue if turn.role == "assistant"]
    save_grice(db, debate_id, dialogue, replies[0], {"quantity": 0.8, "quality": 0.6, "relation": 0.9, "manner": 0.7})
    save_grice(db, debate_id, dialogue, replies[1], {"quantity": 0.4, "quality": 0.3, "relation": 0.6, "manner": 0.5})
    return debate_id


def three_debates(app: ArgtuiApp) -> int:
    """Ann's three debates at levels 0, 1 and 2: won, lost, won; scored a little better each time."""
    db = app.services.db
    [ann] = stored_students(app, "Ann")
    results = (True, False, True)
    for level, won in enumerate(results):
        debate_id = debate_of(db, ann.id, level, [f"Debate {level + 1}: uniforms stop bullying.",
                                                  f"Debate {level + 1}: families save money."])
        dialogue = dialogue_of(db, debate_id)
        step = level * 0.25
        save_inspire(db, INSPIRE_JUDGE, debate_id, dialogue, 0,
                     inspire_score((0.25 + step / 2, 0.5 + step, 0.25, 0.75), step * 2, ("supported",)))
        save_inspire(db, INSPIRE_JUDGE, debate_id, dialogue, 2,
                     inspire_score((0.25, 0.5, 0.25 + step, 1.0), None, ("no evidence",)))
        reply = [turn for turn in dialogue if turn.role == "assistant"][0]
        save_grice(db, debate_id, dialogue, reply,
                   {"quantity": 0.5 + step, "quality": 0.4, "relation": 0.9 - step, "manner": 0.6})
        DebateRepository(db).end(debate_id)
        record_result(db, debate_id, student_won=won)
    return ann.id


@pytest.fixture
def ballot_server(argtui_home):
    """The default backend ("gpu", as the stored debates name it) answers the ballot; its model is
    the embedded one's, so the ballot is a demonstration."""
    with FakeServer([chat_reply(json.dumps(BALLOT_ANSWER))], models=(EMBEDDED_MODEL_NAME,)) as server:
        load_config().add_backend(server.profile(name="gpu", model=EMBEDDED_MODEL_NAME, retries=0), make_default=True)
        yield server


# ---------------------------------------------------------------- the picker


async def test_the_picker_is_offered_at_start_and_adds_and_picks_a_new_student(closed_backend):
    app = ArgtuiApp()
    stored_students(app, "Ann", "Ben")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, StudentPickerScreen)
        listed = app.screen.query_one("#students", OptionList)
        assert [str(listed.get_option_at_index(i).prompt).split("  ")[0] for i in range(listed.option_count)] == [
            "Ann", "Ben"]
        assert "rating 1000 · no rated debate yet" in str(listed.get_option_at_index(0).prompt)
        await pilot.press("n", *"Cleo", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, HomeScreen)
        assert app.student is not None and app.student.name == "Cleo"
        assert [s.name for s in StudentRepository(app.services.db).list()] == ["Ann", "Ben", "Cleo"]
        assert "Student Cleo  rating 1000" in str(app.screen.query_one("#student", Static).render())


async def test_enter_picks_a_listed_student_a_taken_name_is_refused_and_esc_skips(closed_backend):
    app = ArgtuiApp()
    stored_students(app, "Ann", "Ben")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert app.student.name == "Ben" and isinstance(app.screen, HomeScreen)
        await pilot.press("s")  # Home's key: switch student
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, StudentPickerScreen)
        assert picker.query_one("#students", OptionList).highlighted == 1  # the current one
        await pilot.press("n", *"Ann", "enter")
        await pilot.pause()
        assert app.screen is picker and "'Ann' exists already" in str(picker.query_one("#picker-error").render())
        await pilot.press("escape")  # out of the name box, back to the list
        assert isinstance(app.focused, OptionList)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen) and app.student.name == "Ben"  # skipping keeps the current one


async def test_student_flag_makes_the_student_current_without_asking(closed_backend):
    app = ArgtuiApp(student="Dana")
    stored_students(app, "Ann")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, HomeScreen) and app.student.name == "Dana"


async def test_progress_from_home_asks_for_a_student_first(closed_backend):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, HomeScreen) and app.student is None  # no database yet: nothing asked
        modes = app.screen.query_one("#modes", OptionList)
        modes.highlighted = next(i for i, mode in enumerate(app.screen.modes) if mode.name == "progress")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, StudentPickerScreen)
        await pilot.press(*"Eve", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ProgressScreen) and app.student.name == "Eve"
        assert "After 2 debates the plots appear" in screen_text(app)
        assert not app.screen.query_one("#charts").display


async def test_drills_open_for_the_current_student_and_the_palette_lists_the_coach(closed_backend):
    from screens.drills import DrillsScreen

    app = ArgtuiApp(student="Ann")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert {"Open Progress", "Open Drills", "Open Student"} <= set(titles)
        modes = app.screen.query_one("#modes", OptionList)
        modes.highlighted = next(i for i, mode in enumerate(app.screen.modes) if mode.name == "drills")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DrillsScreen) and app.screen.student_id == app.student.id


# ---------------------------------------------------------------- the ballot


async def test_the_ballot_is_judged_shown_whole_rated_once_and_saved_as_markdown(ballot_server):
    app = ArgtuiApp(student="Ann")
    [ann] = stored_students(app, "Ann")
    debate_id = stored_debate(app, ann.id)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await app.push_screen(BallotScreen(debate_id))
        await settle(app, pilot)
        screen = app.screen
        text = screen_text(app)
        assert "You win" in text and "you 28 · bot 27" in text.replace("  ", " ")
        assert "scale 25–30: 25 poor · 27.5 average · 30 outstanding" in text
        assert BALLOT_ANSWER["reason"] in text
        assert "Strongest · turn 1\nInspireScore 0.92" in text and "Weakest · turn 2\nInspireScore 0.38" in text
        assert "Quantity 0.80" in text  # the Grice maxims of the reply to the strongest turn
        assert "Rewrite of turn 2" in text and BALLOT_ANSWER["rewrite_to"] in text
        assert "Ann 1000 → 1023 (+23)" in text and "against level 1 Quick: 1150 → 1127" in text
        assert screen.query_one("#ballot-demo").display and DEMONSTRATION in text
        assert ballot_calls(ballot_server) == 1
        assert DebateRepository(app.services.db).get(debate_id).ended_at is not None
        await pilot.press("m")
        await pilot.pause()
        path = ballot_path(app.services.data_dir, debate_id)
        assert path.is_file() and BALLOT_ANSWER["rewrite_to"] in path.read_text(encoding="utf-8")
        assert str(path) in str(screen.query_one("#ballot-status", Static).render())
        await pilot.press("escape")
        await app.push_screen(BallotScreen(debate_id))  # opened again: the stored ballot, the same rating
        await settle(app, pilot)
        assert ballot_calls(ballot_server) == 1
        assert len(StudentRepository(app.services.db).rating_events(ann.id)) == 1


async def test_the_screen_answers_keys_while_the_ballot_is_judged(ballot_server, until):
    ballot_server.answer = [replace(chat_reply(json.dumps(BALLOT_ANSWER)), delay_s=30)]
    app = ArgtuiApp(student="Ann")
    [ann] = stored_students(app, "Ann")
    debate_id = stored_debate(app, ann.id)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await app.push_screen(BallotScreen(debate_id))
        screen = app.screen
        await until(pilot, lambda: ballot_calls(ballot_server) == 1)  # the model is asked, and takes its time
        assert screen.query_one(LoadingIndicator).display
        assert "judging the debate" in str(screen.query_one("#ballot-status", Static).render())
        assert not screen.check_action("save_markdown", ())  # nothing to save yet
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)  # left at once; the judging stops with the screen
        assert StudentRepository(app.services.db).rating_events(ann.id) == []


async def test_a_ballot_that_cannot_be_judged_says_why_and_retries(closed_backend):
    app = ArgtuiApp(student="Ann")
    [ann] = stored_students(app, "Ann")
    debate_id = DebateRepository(app.services.db).create("Uniforms", "pro", backend="closed", student_id=ann.id).id
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await app.push_screen(BallotScreen(debate_id))
        await settle(app, pilot)
        status = str(app.screen.query_one("#ballot-status", Static).render())
        assert status.startswith("the ballot failed: debate ") and "r tries again" in status
        assert not app.screen.query_one("#ballot-body").display
        assert app.screen.check_action("retry", ()) and not app.screen.check_action("save_markdown", ())


# ---------------------------------------------------------------- progress


async def test_progress_plots_three_debates_and_names_the_weakest(closed_backend):
    app = ArgtuiApp(student="Ann")
    ann_id = three_debates(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await app.push_screen(ProgressScreen(ann_id))
        await settle(app, pilot)
        screen = app.screen
        assert screen.has_class("-wide") and screen.query_one("#charts").display
        status = str(screen.query_one("#progress-status", Static).render())
        rating = screen.progress.points[-1].rating
        assert f"Ann · rating {rating:.0f} · 3 debates" == status
        assert [p.level for p in screen.progress.points] == [0, 1, 2]
        for plot, title in (("#rating-plot", "Rating after each debate"),
                            ("#dimensions-plot", "InspireScore dimensions"), ("#maxims-plot", "Grice maxims")):
            assert title in str(screen.query_one(plot, PlotextPlot).render())
        weakest = str(screen.query_one("#weakest", Static).render())
        assert "1. emotional appeal" in weakest and "e.g. debate" in weakest
        assert weakest.count("mean ") == 3


# ---------------------------------------------------------------- snapshots


def _snapshot_home(argtui_home, monkeypatch) -> None:
    monkeypatch.chdir(argtui_home.parent)
    monkeypatch.setenv("ARGTUI_HOME", argtui_home.name)  # shown relative, the same on every run


async def _quiet(pilot: Pilot) -> None:
    await settle(pilot.app, pilot)
    pilot.app.clear_notifications()  # a toast is not the screen's content
    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
def test_picker_snapshot(size, closed_backend, argtui_home, monkeypatch, snap_compare):
    _snapshot_home(argtui_home, monkeypatch)
    app = ArgtuiApp()
    [ann, _] = stored_students(app, "Ann", "Ben")
    for won in (True, True):
        debate_id = DebateRepository(app.services.db).create("Uniforms", "pro", level=0, student_id=ann.id).id
        record_result(app.services.db, debate_id, student_won=won)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_quiet)


@pytest.mark.parametrize("size", SIZES)
def test_ballot_snapshot(size, ballot_server, argtui_home, monkeypatch, snap_compare):
    _snapshot_home(argtui_home, monkeypatch)
    app = ArgtuiApp(student="Ann")
    [ann] = stored_students(app, "Ann")
    debate_id = stored_debate(app, ann.id)

    async def open_ballot(pilot: Pilot) -> None:
        await settle(pilot.app, pilot)
        await pilot.app.push_screen(BallotScreen(debate_id))
        await _quiet(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=open_ballot)


@pytest.mark.parametrize("size", SIZES)
def test_progress_snapshot(size, closed_backend, argtui_home, monkeypatch, snap_compare):
    _snapshot_home(argtui_home, monkeypatch)
    app = ArgtuiApp(student="Ann")
    ann_id = three_debates(app)

    async def open_progress(pilot: Pilot) -> None:
        await settle(pilot.app, pilot)
        await pilot.app.push_screen(ProgressScreen(ann_id))
        await _quiet(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=open_progress)
