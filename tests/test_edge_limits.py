"""The edges a hostile user probes: student names that cannot be one (20 kB, a line break, only a
zero-width space) refused alike by the commands and the picker, the top-level --student honoured
by the command after it, a model file name too long for the file system, a runaway answer joined
in a three-run verdict kept once, and a rerun told that --retry-invalid asks its invalid items again."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from textual.widgets import Input, Static

from argtui.app import ArgtuiApp
from argtui.cli import main
from argtui.config import load_config
from engines.judging.store import JudgmentStore
from engines.judging.verdict import RAW_MAX_CHARS, Verdict
from engines.student.names import STUDENT_NAME_MAX_CHARS, StudentNameError, student_name
from fakes import FakeServer, chat_reply
from screens.students import StudentPickerScreen
from store import Database
from store.debates import DebateRepository
from store.students import StudentRepository
from test_store_faults import PAIRWISE, argtui

REFUSED_NAMES = {
    "x" * 20_000: "at most 60 characters, not 20,000",
    "Ann\nBea": "a line break (U+000A)",
    "\u200b": "an invisible or control character (U+200B)",
    "Ann\u202eaeB": "an invisible or control character (U+202E)",  # shown reversed
    "\u3164": "an invisible or control character (U+3164)",  # a Hangul filler: a letter that shows nothing
    "Ann\u034fBea": "an invisible or control character (U+034F)",  # a combining grapheme joiner
    "   ": "needs a name",
    "!!": "at least one letter or digit",
}


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def database() -> Database:
    return Database(load_config().paths.data_dir / "argtui.sqlite3")


def test_a_student_name_is_one_line_of_visible_characters():
    assert STUDENT_NAME_MAX_CHARS == 60
    assert student_name("  Zoë ") == "Zoë"
    assert student_name("می\u200cخواهم") == "می\u200cخواهم"  # a zero-width non-joiner spells some names
    assert student_name("Zoë \u2764\ufe0f") == "Zoë \u2764\ufe0f"  # an emoji's presentation selector
    for name, why in REFUSED_NAMES.items():
        with pytest.raises(StudentNameError, match=re.escape(why)):
            student_name(name)


@pytest.mark.parametrize("name", list(REFUSED_NAMES))
def test_the_commands_refuse_a_name_that_cannot_be_one_in_one_line(name, capsys):
    assert main(["students", "--add", name]) == 1
    assert one_error_line(capsys).startswith("error: a student")
    assert main(["--student", name, "drill", "--list"]) == 1
    assert one_error_line(capsys).startswith("error: a student")
    assert StudentRepository(database()).list() == []


async def test_the_picker_refuses_a_name_that_cannot_be_one(offline_backend):
    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(StudentPickerScreen())
        await pilot.pause()
        field = app.screen.query_one("#new-student", Input)
        field.value = "\u200b"
        await field.action_submit()
        await pilot.pause()
        shown = str(app.screen.query_one("#picker-error", Static).render())
        assert "letter or digit" in shown or "invisible" in shown
        assert StudentRepository(app.services.db).list() == []


def test_the_student_given_before_debate_is_the_debates_student(offline_config, tmp_path, capsys):
    script = tmp_path / "student.txt"
    script.write_text("School uniforms reduce bullying because nobody is mocked for their clothes.\n")
    argv = ["debate", "--claim", "School uniforms should be mandatory", "--level", "0", "--script", str(script)]
    main(["--student", "Ada", *argv])  # played at level 0; its judging then fails on the closed backend
    assert "debate 1: 'School uniforms should be mandatory'" in capsys.readouterr().err
    db = database()
    [ada] = StudentRepository(db).list()
    assert ada.name == "Ada" and [d.student_id for d, _ in DebateRepository(db).list()] == [ada.id]
    assert main(["--student", "Ada", "students"]) == 1
    assert "--student goes with the app, `argtui debate` or `argtui drill`" in one_error_line(capsys)


def test_a_model_file_name_too_long_for_the_file_system_is_one_line(tmp_path, capsys):
    assert main(["serve", "--gguf", str(tmp_path / ("m" * 300 + ".gguf"))]) == 1
    assert one_error_line(capsys).endswith(".gguf: file name too long")


def test_a_runaway_answer_keeps_its_first_characters_and_says_how_long_it_was():
    raw = "7" * 10_000_000
    verdict = Verdict.invalid("not a label", raw=raw)
    assert len(verdict.raw) == RAW_MAX_CHARS and verdict.raw.startswith("7" * 90_000)
    assert verdict.raw.endswith("10,000,000 characters in all, the rest not kept here (the response cache keeps "
                                "each answer)")
    assert Verdict.model_validate(verdict.model_dump(mode="json")).raw == verdict.raw  # read back as stored
    assert Verdict(raw="short").raw == "short"


def test_a_runaway_answer_of_three_runs_takes_its_size_about_once(offline_config, argtui_home):
    size = 2_000_000

    def runaway(body: dict) -> object:  # the same long answer for every run of a pair
        return chat_reply(f"{hash(json.dumps(body['messages']))}-" + "9" * size)

    runs = ["--prompt", "zero", "--mode", "runs", "--runs", "3", "--run-requests", "separate", "--dimension", "logical",
            "--limit", "2"]
    with FakeServer(runaway) as fake:
        load_config().add_backend(fake.profile(kind="openai", retries=0, timeout_s=60))
        done = argtui("eval", "pairwise", *runs, "--judge", "fake", "--json")
    assert done.returncode == 0, done.stderr
    path = argtui_home / "data" / "argtui.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    answers = len({json.dumps(body["messages"]) for body in fake.bodies})
    assert answers == 2 and len(fake.bodies) >= 3 * answers
    assert path.stat().st_size < answers * size * 1.25  # each answer once: not again three times in its verdict
    db = Database(path)
    store = JudgmentStore(db, "pairwise")
    [judge] = store.judges()
    assert all(len(verdict.raw) == RAW_MAX_CHARS for verdict in store.latest(judge.judge).values())
    db.close()


def test_a_rerun_says_how_many_items_are_stored_invalid_and_how_to_ask_them_again(offline_config):
    with FakeServer([chat_reply("no label here")]) as fake:
        load_config().add_backend(fake.profile(kind="openai", retries=0, timeout_s=30))
        first = argtui("eval", "pairwise", *PAIRWISE, "--limit", "3", "--judge", "fake")
        again = argtui("eval", "pairwise", *PAIRWISE, "--limit", "3", "--judge", "fake")
    assert first.returncode == again.returncode == 0, again.stderr
    assert "stored invalid" not in first.stdout
    assert "3 items stored invalid; --retry-invalid asks them again" in again.stdout
