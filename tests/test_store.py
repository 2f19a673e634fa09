"""Store round trips on a real SQLite file."""

from __future__ import annotations

import sqlite3

import pytest

from store import Database, StoreError
from store.llm_cache import ResponseCache
from store.migrations import SCHEMA_VERSION
from store.runs import RunRepository, RunState


def test_pragmas_and_schema_version(db):
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() >= 5000
    assert db.schema_version == SCHEMA_VERSION


def test_cache_round_trip_survives_reopening(tmp_path):
    path = tmp_path / "cache.sqlite3"
    first = Database(path)
    ResponseCache(first).put("k1", "model-x", {"text": "héllo", "logprobs": [["a", -0.1, []]]})
    first.close()
    again = ResponseCache(Database(path))
    assert again.get("k1") == {"text": "héllo", "logprobs": [["a", -0.1, []]]}
    assert again.get("missing") is None
    assert again.count() == 1


def test_batch_run_progress_is_kept_and_reopened_by_name(db):
    runs = RunRepository(db)
    run = runs.open("eval-test", "judge=x;topic=1", {"judge": "x"}, total=10)
    runs.update(run.id, state=RunState.RUNNING, done=4, invalid=1)
    runs.update(run.id, state=RunState.PAUSED, error="backend down")
    reopened = runs.open("eval-test", "judge=x;topic=1", {"judge": "x"}, total=10)
    assert reopened.id == run.id
    assert (reopened.state, reopened.done, reopened.invalid) == (RunState.PAUSED, 4, 1)
    assert reopened.error == "backend down" and reopened.config == {"judge": "x"}
    finished = runs.update(run.id, state=RunState.DONE, done=10)
    assert finished.error is None
    assert [r.id for r in runs.list("eval-test")] == [run.id]
    assert runs.list("other") == []


def test_a_database_from_a_newer_argtui_is_refused_untouched(tmp_path):
    path = tmp_path / "future.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE keep (x)")
        conn.execute("INSERT INTO keep VALUES (42)")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        Database(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT x FROM keep").fetchall() == [(42,)]


def test_two_databases_on_one_file_see_each_others_writes(tmp_path):
    path = tmp_path / "shared.sqlite3"
    a, b = Database(path), Database(path)
    ResponseCache(a).put("from-a", "m", {"text": "a"})
    ResponseCache(b).put("from-b", "m", {"text": "b"})
    assert ResponseCache(b).get("from-a") == {"text": "a"}
    assert ResponseCache(a).count() == 2


def test_a_damaged_database_file_is_named_not_a_traceback(tmp_path, capsys, monkeypatch):
    from argtui.cli import main

    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    (home / "data" / "argtui.sqlite3").write_bytes(b"not sqlite at all " * 100)
    monkeypatch.setenv("ARGTUI_HOME", str(home))
    assert main(["runs"]) == 1
    err = capsys.readouterr().err
    assert "argtui.sqlite3" in err and "not an argtui database, or damaged" in err and "Traceback" not in err
    assert (home / "data" / "argtui.sqlite3").read_bytes().startswith(b"not sqlite")  # left as it was


def test_a_home_that_is_a_file_is_named_not_a_traceback(tmp_path, capsys, monkeypatch):
    from argtui.cli import main

    home = tmp_path / "home"
    home.write_text("I am a file", encoding="utf-8")
    monkeypatch.setenv("ARGTUI_HOME", str(home))
    assert main(["runs"]) == 1
    err = capsys.readouterr().err
    assert "cannot hold the database" in err and "ARGTUI_HOME" in err and "Traceback" not in err


def test_an_up_to_date_database_is_opened_without_writing_its_version(tmp_path, monkeypatch):
    path = tmp_path / "db.sqlite3"
    Database(path).close()
    statements: list[str] = []
    original = Database._initialise

    def spy(self):
        event_listen = __import__("sqlalchemy").event.listen
        event_listen(self.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
        original(self)

    monkeypatch.setattr(Database, "_initialise", spy)
    Database(path).close()
    assert not any(s.startswith("PRAGMA user_version=") for s in statements)
