"""A backend whose server dies as it starts: the end is named (signal and what to do) on Home and
in the CLI, a level-0 debate goes on without a model, the other levels say what is wrong."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Input, Static

from argtui.app import ArgtuiApp
from engines.errors import ArgtuiError
from engines.llm.embedded import BINARY_ENV, MODEL_ENV
from engines.llm.servers import ManagedServer, ServerStartError, exit_description, free_loopback_port
from fakes import dying_server
from screens.debate import DebateScreen, MessageView
from screens.debate_state import NO_MODEL
from screens.widgets.coach import CoachPanel
from store import Database
from store.debates import DebateRepository

CLAIM = "School uniforms should be mandatory"
SIGILL_REASON = ("llama-server was killed by SIGILL (illegal instruction) while starting: "
                 "its build does not match this CPU; build one for it: ./install.sh --build-server")


@pytest.fixture
def crashing_backend(tmp_path, monkeypatch, argtui_home) -> Path:
    """The embedded backend's llama-server dies with SIGILL as it starts, as a build for another
    CPU does; returns the server's log."""
    monkeypatch.setenv(BINARY_ENV, str(dying_server(tmp_path, "ILL")))
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")  # never read: the server dies first
    monkeypatch.setenv(MODEL_ENV, str(model))
    return argtui_home / "data" / "logs" / "llama-server.log"


def new_debate(argtui_home: Path, level: int) -> int:
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    debate = DebateRepository(db).create(CLAIM, "pro", level=level)
    db.close()
    return debate.id


def run_argtui(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "argtui", *argv], capture_output=True, text=True, timeout=300)


# ---------------------------------------------------------------- how a server ended


@pytest.mark.parametrize(("returncode", "described"), [
    (-signal.SIGILL, SIGILL_REASON),
    (-signal.SIGKILL, "llama-server was killed by SIGKILL (killed) while starting: the system may have run out "
                      "of memory, or another program stopped it; close other programs or use a smaller model"),
    (-signal.SIGUSR1, "llama-server was killed by SIGUSR1 while starting"),  # no advice for it: the name alone
    (1, "llama-server exited with code 1 while starting"),
])
def test_how_a_server_ended_is_said_in_words(returncode, described):
    assert exit_description("llama-server", returncode, "while starting") == described


async def test_a_server_killed_while_starting_is_named_with_its_log(tmp_path):
    log = tmp_path / "logs" / "llama-server.log"
    server = ManagedServer("llama-server", [str(dying_server(tmp_path, "KILL"))], free_loopback_port(), log)
    with pytest.raises(ServerStartError) as raised:
        await server.wait_ready(timeout_s=30)
    message = str(raised.value)
    assert isinstance(raised.value, ArgtuiError)  # shown as it is, without a traceback
    assert message.startswith("llama-server was killed by SIGKILL (killed) while starting: ")
    assert f"see {log}" in message and message.endswith("main: loading model")  # the log's tail follows


def test_the_cli_names_the_signal_and_offers_level_0_without_a_traceback(crashing_backend, tmp_path):
    script = tmp_path / "student.txt"
    script.write_text("Uniforms stop bullying about clothes.\n")
    result = run_argtui("debate", "--claim", CLAIM, "--script", str(script), "--level", "1")
    assert result.returncode == 1
    assert SIGILL_REASON in result.stderr and str(crashing_backend) in result.stderr
    assert "--level 0 debates without a model" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_level_0_script_debates_without_a_backend(crashing_backend, tmp_path):
    script = tmp_path / "student.txt"
    script.write_text("Uniforms stop bullying about clothes.\nThey save parents money.\n")
    result = run_argtui("debate", "--claim", CLAIM, "--script", str(script), "--level", "0")
    assert result.returncode == 0, result.stderr
    assert f"no model answers: {SIGILL_REASON}" in result.stderr
    assert result.stderr.count("no Grice judging and no component labels") == 3  # once, then for each turn
    turns = json.loads(result.stdout)["simulation"]["userTurns"]
    assert [turn["utterance"] for turn in turns] == script.read_text().splitlines()
    for turn in turns:  # the counter-argument, word for word, with its source
        [argument] = turn["systemResponse"]["response"]["arguments"]
        assert turn["systemResponse"]["utterance"] == argument["text"].strip()


# ---------------------------------------------------------------- the app


def plain(renderable) -> str:
    """A renderable's text, in lines as long as need be."""
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def screen_text(widget: Static) -> str:
    return plain(widget.content)


async def test_home_shows_the_whole_reason_and_the_log_at_80x24(crashing_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.backend_status is not None)
        await pilot.pause()
        backend = app.screen.query_one("#backend", Static)
        shown = " ".join(screen_text(backend).split())  # as wrapped to the column
        assert "unreachable" in shown and SIGILL_REASON in shown and f"see {crashing_backend}" in shown
        log = app.screen.query_one("#backend-log", Static)
        assert log.display and screen_text(log).strip() == "main: loading model"
        side = app.screen.query_one("#side")
        assert log.region.bottom <= side.region.bottom  # nothing of it is cut off at 80×24
        assert backend.region.height == backend.virtual_size.height


async def test_a_level_0_debate_answers_without_a_model_and_says_judging_is_off(crashing_backend, argtui_home, until):
    debate_id = new_debate(argtui_home, level=0)
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(DebateScreen(debate_id))
        screen = app.screen
        assert "level 0 Retrieval (rating" in screen.sub_title  # the level picked, before any session opens
        await until(pilot, lambda: screen.session is not None)
        assert screen.session.judging_off == SIGILL_REASON + f"; see {crashing_backend}"
        assert "Judging off (Grice, parts, Coach): no model answers" in screen_text(screen.query_one("#judges"))
        note = screen_text(screen.query_one("#note", Static))
        assert SIGILL_REASON in note and "The bot still answers from the argument base" in note
        assert "Coach: off, no model answers." in screen_text(screen.query_one(CoachPanel))
        screen.query_one("#message", Input).value = "Uniforms stop bullying about clothes."
        await pilot.press("enter")
        await pilot.pause()
        user, reply = [view.message for view in screen.query(MessageView)]
        await until(pilot, lambda: reply.state != "running", timeout_s=30)
        assert reply.state == "done" and reply.content and reply.error is None
        [used] = [row for row in reply.evidence if row.used]
        assert reply.content == used.text.strip()  # word for word
        assert (user.state, user.components, user.judging_off) == ("done", None, NO_MODEL)
        assert reply.judging_off == NO_MODEL and reply.grice is None
        shown_user, shown_reply = [plain(view.render()) for view in screen.query(MessageView)]
        assert "no labels: no model answers" in shown_user and "Grice: not judged, no model answers" in shown_reply
        status = screen_text(screen.query_one("#status", Static))
        assert status.startswith("reply in") and "not judged: no model answers" in status
        assert screen.check_action("back", ()) is True  # nothing is left running


async def test_a_level_1_debate_says_what_is_wrong_and_tries_again(crashing_backend, argtui_home, until):
    debate_id = new_debate(argtui_home, level=1)
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(DebateScreen(debate_id))
        screen = app.screen
        assert "level 1 Quick (rating" in screen.sub_title
        await until(pilot, lambda: screen.open_failure is not None)
        assert screen.session is None
        box = screen.query_one("#message", Input)
        box.value = "Uniforms stop bullying about clothes."
        await pilot.press("enter")
        status = screen_text(screen.query_one("#status", Static))
        assert "still starting" not in status
        assert status.startswith("not sent, cannot debate (Ctrl+R tries again): ") and SIGILL_REASON in status
        assert box.value == "Uniforms stop bullying about clothes."  # the draft stays
        note = screen_text(screen.query_one("#note", Static))
        assert SIGILL_REASON in note and "Level 0 (Retrieval) needs no model" in note
        starts = crashing_backend.read_text().count("main: loading model")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: crashing_backend.read_text().count("main: loading model") > starts)
        await until(pilot, lambda: screen.open_failure is not None)
        assert screen.session is None and "level 1 Quick (rating" in screen.sub_title


@pytest.mark.llm
async def test_a_level_0_debate_is_judged_once_the_backend_starts(crashing_backend, argtui_home, monkeypatch, until):
    debate_id = new_debate(argtui_home, level=0)
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(DebateScreen(debate_id))
        screen = app.screen
        await until(pilot, lambda: screen.session is not None)
        screen.query_one("#message", Input).value = "Uniforms stop bullying about clothes."
        await pilot.press("enter")
        await pilot.pause()
        user, reply = [view.message for view in screen.query(MessageView)]
        await until(pilot, lambda: reply.state == "done", timeout_s=30)
        monkeypatch.delenv(BINARY_ENV)  # the installed llama-server and model from now on
        monkeypatch.delenv(MODEL_ENV)
        await pilot.press("ctrl+r")  # nothing to run again: it tries the backend
        await until(pilot, lambda: screen.session.client is not None, timeout_s=180)
        assert not screen.judging_off and not screen.query("#note")
        assert screen_text(screen.query_one("#judges")).startswith("Grice judge:")
        assert "Coach: your InspireScore shows here" in screen_text(screen.query_one(CoachPanel))
        assert reply.judging_off == "" and reply.grice is not None  # the reply left unjudged is judged now
        assert (user.judging_off, user.state) == ("", "cancelled")  # Retry labels it
