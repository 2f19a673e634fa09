"""A database argtui cannot open: the app opens Home with the reason and what to do, its modes say
why they stay closed, and it quits cleanly; a read-only database still serves the commands that
only read."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import OptionList, Static

from argtui.app import ArgtuiApp
from argtui.config import Paths
from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from engines.llm.servers import free_loopback_port
from fakes import blackhole, read_only_mount
from screens.help import HelpScreen
from screens.home import HomeScreen
from store import Database
from store.critiques import CritiqueRepository
from store.runs import RunRepository


@pytest.fixture(autouse=True)
def unreachable_backend(offline_config) -> None:
    """No model is needed here: the backend probe fails at once instead of starting llama-server."""


def database_path() -> Path:
    return Paths.resolve().database


def a_folder(monkeypatch) -> None:
    database_path().mkdir(parents=True)


def a_text_file(monkeypatch) -> None:
    database_path().parent.mkdir(parents=True)
    database_path().write_text("meeting notes, not a database\n" * 100, encoding="utf-8")


def a_newer_schema(monkeypatch) -> None:
    Database(database_path()).close()
    with sqlite3.connect(database_path()) as conn:
        conn.execute("PRAGMA user_version=99")


def a_closed_postgres_port(monkeypatch) -> None:
    monkeypatch.setenv("ARGTUI_DATABASE_URL", f"postgresql://argtui@127.0.0.1:{free_loopback_port()}/argtui")


CASES = {  # what is wrong, the words of its reason
    "folder": (a_folder, "is a folder, not a database file"),
    "text file": (a_text_file, "not an argtui database, or damaged"),
    "user_version 99": (a_newer_schema, "schema version 99 is newer than this argtui understands"),
    "postgresql, nothing listening": (a_closed_postgres_port, "cannot be reached"),
}


def side_text(app: ArgtuiApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


@pytest.mark.parametrize("case", CASES)
async def test_home_says_why_the_database_cannot_be_opened_and_what_to_do(case, monkeypatch, until):
    make, reason = CASES[case]
    make(monkeypatch)
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.database_problem is not None, timeout_s=30)
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        shown = " ".join(side_text(app, "#database").split())
        assert "cannot be opened" in shown and reason in shown, shown
        assert "What to do" in shown and "start argtui again" in shown
        await until(pilot, lambda: app.backend_status is not None)
        assert "offline" in side_text(app, "#backend")  # the backend's own state, not the database's

        modes = app.screen.query_one(OptionList)
        modes.highlighted = next(i for i, mode in enumerate(app.screen.modes) if mode.name == "runs")
        await pilot.press("enter")
        await pilot.press("s")  # the student picker lists the database's students
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        refusals = [n.message for n in app._notifications if "needs the database" in n.message]
        assert len(refusals) == 2 and all(reason in message for message in refusals), refusals
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "ctrl+q")
    assert app.return_code == 0  # quit, not stopped by an error


async def test_a_server_that_never_answers_leaves_home_live_until_its_connect_timeout(monkeypatch, until):
    with blackhole() as port:
        monkeypatch.setenv("ARGTUI_DATABASE_URL", f"postgresql://argtui@127.0.0.1:{port}/argtui")
        app = ArgtuiApp()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.press("f1")  # the keys work while the database is being opened
            assert isinstance(app.screen, HelpScreen) and app.database_problem is None
            await pilot.press("escape")
            await until(pilot, lambda: app.database_problem is not None, timeout_s=60)
            await pilot.pause()
            assert "connect_timeout" in side_text(app, "#database")


def argtui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "argtui", *args], capture_output=True, text=True, timeout=120)


def test_a_read_only_database_serves_the_commands_that_read_and_a_write_says_why_not():
    db = Database(database_path())
    RunRepository(db).open("eval", "kept-run", {}, 3, task="critiques", judge="fake")
    import_critiques(CritiqueRepository(db), DEMO_PATH)
    db.close()
    writable_export = argtui("export", "critiques")
    assert writable_export.returncode == 0 and writable_export.stdout, writable_export.stderr
    try:
        with read_only_mount(database_path().parent):
            runs = argtui("runs", "--json")
            exported = argtui("export", "critiques")
            write = argtui("students", "--add", "Zed")
    except PermissionError as exc:
        pytest.skip(f"{exc}: a read-only disk is a read-only mount of the test's own, which needs root (as in CI)")
    assert runs.returncode == 0, runs.stderr
    assert [run["name"] for run in json.loads(runs.stdout)] == ["kept-run"]
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == writable_export.stdout
    assert write.returncode == 1 and "Traceback" not in write.stderr
    [line] = write.stderr.strip().splitlines()
    assert "cannot be written" in line and "argtui.sqlite3" in line, line
