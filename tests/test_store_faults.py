"""The store when the disk, the database or its server misbehaves: a full disk, a PostgreSQL
server killed mid-write or one that accepts and never answers, a lock held for long, two
processes creating one rater, a run killed with kill -9, a runaway answer.

Every failure is one line that names the database, what happened and the bound that applied;
nothing half-written stays behind (or the next run removes it); a run whose process is gone
shows as interrupted; an answer is stored once. A full disk is a tmpfs of the test's own
(`SmallDisk`: mounting needs root, as in CI); a killed server is a PostgreSQL cluster of the
test's own (`PostgresCluster`), the shared one (`db_url`) stays up for the others.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from sqlmodel import func, select
from textual.widgets import DataTable

import store.db
from argtui.app import ArgtuiApp
from argtui.config import load_config
from engines.judging.runner import RunSpec, run_tracked
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import RAW_MAX_CHARS, JudgeId, Verdict
from engines.llm.servers import free_loopback_port
from fakes import FakeServer, Reply, SmallDisk, blackhole, chat_reply, lock_held_elsewhere
from postgres_cluster import PostgresCluster, require_postgres_binaries
from screens.runs import RunsScreen
from store import Database, StoreError
from store.critiques import (
    CritiqueImport, CritiqueRepository, NewCritique, NewPosition, Rater, StagedCritique, StagedPosition, StagedRating,
)
from store.holders import Holder
from store.judgments import JudgeColumns, JudgmentRepository, NewJudgment
from store.llm_cache import ResponseCache
from store.runs import LEASE_S, BatchRun, RunRepository, RunState
from store.texts import LONG_TEXT_CHARS, StoredText
from store.write_behind import FLUSH_INTERVAL_S

VALUES = dict(centrality=0.7, strength=0.8, correctness=0.9, clarity=0.6, dead_weight=0.1, single_issue=1.0,
              overall=0.6)
PAIRWISE = ["--prompt", "zero", "--mode", "logprob", "--dimension", "logical"]


def argtui(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "argtui", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout)


def error_lines(err: str) -> list[str]:
    """What a failed command told the user: its `error:` lines (progress bars aside)."""
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith("error:")]


def write_bulk_file(path: Path, rows: int, width: int = 300) -> Path:
    """A JSONL critique file of `rows` critiques of `width` characters (ten per position), one rating each."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(rows):
            out.write(json.dumps({
                "position_id": f"bulk-p{i // 10}", "position": f"Position {i // 10}.",
                "critique_id": f"bulk-c{i}", "critique": f"Critique {i}: " + "x" * width,
                "ratings": [{"rater": "bulk-rater", **VALUES}],
            }) + "\n")
    return path


def staged_rows(db: Database) -> int:
    with db.read() as session:
        return sum(session.exec(select(func.count(table.id))).one()
                   for table in (StagedPosition, StagedCritique, StagedRating))


def critique_count(db: Database) -> int:
    return sum(len(p.critiques) for p in CritiqueRepository(db).positions())


@pytest.fixture
def small_disk(tmp_path) -> SmallDisk:
    try:
        with SmallDisk(tmp_path / "small-disk") as disk:
            yield disk
    except PermissionError as exc:
        pytest.skip(f"{exc}: a full disk is a tmpfs of the test's own, which needs root (as in CI)")


@pytest.fixture(scope="module")
def own_postgres() -> PostgresCluster:
    """A PostgreSQL server for this module alone: its tests kill it."""
    require_postgres_binaries()
    cluster = PostgresCluster()
    cluster.start()
    yield cluster
    cluster.remove()


@pytest.fixture
def own_postgres_db(own_postgres, monkeypatch) -> str:
    """A fresh database on the module's own server, as every argtui process of the test's."""
    name = f"faults_{os.urandom(6).hex()}"
    with psycopg.connect(own_postgres.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = own_postgres.url.rsplit("/", 1)[0] + f"/{name}"
    monkeypatch.setenv("ARGTUI_DATABASE_URL", url)
    yield url
    if not own_postgres.running:
        own_postgres.start()  # the test killed it and failed before starting it again


# ---------------------------------------------------------------------- a full disk


def test_a_full_disk_refuses_a_rating_with_one_clear_error_and_takes_it_once_there_is_room(small_disk):
    db = Database(small_disk.folder / "argtui.sqlite3")
    repo = CritiqueRepository(db)
    repo.import_items([NewPosition("p1", "P.")], [NewCritique("c1", "p1", "C.")], [])
    critique = repo.positions()[0].critiques[0].id
    small_disk.fill()
    with pytest.raises(StoreError) as refused:
        for n in range(200):  # the first ratings may still fit in pages the file has
            repo.add_rating(critique, f"rater-{n}", VALUES)
    message = str(refused.value)
    assert message.startswith(str(db.path)) and "the disk is full" in message and "nothing was saved" in message
    assert "\n" not in message
    stored = len(repo.ratings())
    small_disk.free()
    repo.add_rating(critique, "after", VALUES)
    assert len(repo.ratings()) == stored + 1
    db.close()


def test_a_full_disk_during_an_import_is_one_line_and_the_next_import_removes_what_it_staged(
    small_disk, offline_config, tmp_path
):
    database = small_disk.folder / "argtui.sqlite3"
    bulk = write_bulk_file(tmp_path / "bulk.jsonl", 5_000)
    Database(database).close()
    small_disk.fill(leave_kb=1_000)  # room for a few staged batches, not for the whole import
    failed = argtui("import", "critiques", str(bulk), ARGTUI_DATABASE_URL=str(database))
    assert failed.returncode == 1
    [line] = error_lines(failed.stderr)
    assert str(database) in line and "the disk is full" in line
    db = Database(database)
    left = staged_rows(db)
    assert left > 0 and "staged rows are removed by the next import" in line  # a full disk takes no deletion
    assert critique_count(db) == 0
    small_disk.free()
    again = argtui("import", "critiques", str(bulk), "--json", ARGTUI_DATABASE_URL=str(database))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["critiques"] == 5_000 and critique_count(db) == 5_000
    assert staged_rows(db) == 0
    with db.read() as session:
        assert session.exec(select(func.count(CritiqueImport.id))).one() == 0
    db.close()


def test_a_full_disk_during_index_build_is_one_line(small_disk):
    home = small_disk.folder / "home"  # the index, the database and the log: all on the full disk
    home.mkdir()
    small_disk.fill()
    failed = argtui("index", "build", ARGTUI_HOME=str(home))
    assert failed.returncode == 1
    [line] = error_lines(failed.stderr)
    assert "No space left on device" in line or "disk is full" in line
    assert "free some space" in line


def test_a_nearly_full_disk_during_index_build_is_one_line_naming_the_index(small_disk):
    home = small_disk.folder / "home"
    home.mkdir()
    small_disk.fill(leave_kb=1_200)  # room for the database and the log, not for the index
    failed = argtui("index", "build", ARGTUI_HOME=str(home))
    assert failed.returncode == 1
    [line] = error_lines(failed.stderr)
    assert f"{home / 'data' / 'index' / 'tantivy'}: cannot write the argument index" in line, line
    assert "disk" in line and "free some space" in line


def test_a_full_disk_mid_eval_is_one_line_closes_the_client_and_pauses_the_run_with_its_cause(
    small_disk, monkeypatch
):
    home = small_disk.folder / "home"  # the config, the database and the log: all on the disk that fills
    monkeypatch.setenv("ARGTUI_HOME", str(home))
    monkeypatch.delenv("ARGTUI_DATABASE_URL", raising=False)
    answer = "A" + " " * 300_000  # answers that each need room: the cache stores them whole
    with FakeServer([Reply(json=chat_reply(answer).json, delay_s=0.2)]) as fake:
        load_config().add_backend(fake.profile(kind="openai", retries=0, timeout_s=10, max_concurrency=1))
        child = subprocess.Popen(
            [sys.executable, "-m", "argtui", "eval", "pairwise", *PAIRWISE, "--limit", "30", "--judge", "fake"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 120
        while len(fake.bodies) < 4:
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.01)
        small_disk.fill(leave_kb=200)
        _, err = child.communicate(timeout=300)
    assert child.returncode == 1
    assert "Unclosed" not in err, err  # the client's connections closed although its cache could not be written
    [line] = error_lines(err)
    assert "the disk is full" in line
    small_disk.free()
    [run] = json.loads(argtui("runs", "--json").stdout)
    # Stopped at its first verdict the disk refused, the run's state still fitted: not "its process is gone".
    assert run["state"] == "paused" and "the disk is full" in run["cause"], run
    assert run["done"] < run["total"] == 30


# ---------------------------------------------------------------------- PostgreSQL: unreachable, locked, killed


def test_a_postgres_address_that_accepts_and_never_answers_fails_after_connect_timeout(offline_config):
    with blackhole() as port:
        started = time.monotonic()
        failed = argtui("export", "critiques", ARGTUI_DATABASE_URL=f"postgresql://argtui@127.0.0.1:{port}/argtui",
                        timeout=120)
        waited = time.monotonic() - started
    assert failed.returncode == 1
    [line] = error_lines(failed.stderr)
    assert f"127.0.0.1:{port}" in line and f"connect_timeout ({store.db.CONNECT_TIMEOUT_S} s)" in line
    assert store.db.CONNECT_TIMEOUT_S <= waited < store.db.CONNECT_TIMEOUT_S + 60


def test_a_lock_held_past_its_bound_fails_the_write_naming_the_bound_and_stores_nothing(db_url, monkeypatch):
    monkeypatch.setattr(store.db, "LOCK_WAIT_S", 1.0)  # PostgreSQL's lock_timeout, SQLite's busy wait
    monkeypatch.setattr(store.db, "BUSY_TIMEOUT_MS", 200)
    db = Database(db_url)
    repo = CritiqueRepository(db)
    repo.import_items([NewPosition("p1", "P.")], [NewCritique("c1", "p1", "C.")], [])
    critique = repo.positions()[0].critiques[0].id
    with lock_held_elsewhere(db), pytest.raises(StoreError) as refused:
        started = time.monotonic()
        repo.add_rating(critique, "ann", VALUES)
    assert 0.9 < time.monotonic() - started < 10
    bound = "PostgreSQL's lock_timeout, 1 s" if db.dialect == "postgresql" else "SQLite's busy wait"
    assert "locked by another program" in str(refused.value) and bound in str(refused.value)
    assert "nothing was saved" in str(refused.value)
    assert repo.ratings() == []
    repo.add_rating(critique, "ann", VALUES)  # the lock released: the same write goes through
    db.close()


def test_two_processes_creating_one_new_rater_at_once_both_get_it(db_url):
    """Insert-or-get: the one that waits for the other's insert finds the rater, never a UniqueViolation."""
    db = Database(db_url)
    repo = CritiqueRepository(db)
    if db.dialect == "sqlite":
        other = sqlite3.connect(db.path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
    else:
        other = psycopg.connect(db_url)
    other.execute("INSERT INTO critique_rater (name, kind, details_json, created_at) "
                  "VALUES ('zoe', 'human', '{}', '2025-01-01 00:00:00')")
    results: list[object] = []
    waiter = threading.Thread(target=lambda: results.append(_ensure(repo, "zoe")))
    waiter.start()
    time.sleep(0.5)  # it now waits for the other insert (PostgreSQL: on the unique index; SQLite: the lock)
    assert waiter.is_alive()
    other.commit() if db.dialect == "postgresql" else other.execute("COMMIT")
    waiter.join(timeout=30)
    other.close()
    [rater] = results
    assert not isinstance(rater, Exception) and rater.name == "zoe"
    with db.read() as session:
        assert session.exec(select(func.count(Rater.id)).where(Rater.name == "zoe")).one() == 1
    db.close()


def _ensure(repo: CritiqueRepository, name: str):
    try:
        return repo.ensure_rater(name, active=True)
    except Exception as exc:  # the test shows what went wrong
        return exc


def test_postgres_killed_mid_import_is_one_line_and_the_next_import_removes_what_it_staged(
    own_postgres, own_postgres_db, offline_config, tmp_path
):
    bulk = write_bulk_file(tmp_path / "bulk.jsonl", 20_000)
    db = Database(own_postgres_db)
    child = subprocess.Popen([sys.executable, "-m", "argtui", "import", "critiques", str(bulk)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while staged_rows(db) == 0:  # its batches are being staged
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.01)
    own_postgres.kill()
    _, err = child.communicate(timeout=120)
    assert child.returncode == 1
    [line] = error_lines(err)
    assert "cannot be reached or closed the connection" in line and "removed by the next import" in line
    own_postgres.start()
    db.engine.dispose()  # its pooled connections died with the server
    assert staged_rows(db) > 0 and critique_count(db) == 0
    again = argtui("import", "critiques", str(bulk), "--json")
    assert again.returncode == 0, again.stderr
    assert critique_count(db) == 20_000 and staged_rows(db) == 0
    db.close()


def test_postgres_killed_mid_eval_leaves_the_run_interrupted_with_the_cause_its_process_noted(
    own_postgres, own_postgres_db, offline_config
):
    assert argtui("import", "critiques", "--demo").returncode == 0
    port = free_loopback_port()  # the rerun's server keeps the address, and so the cached answers
    eval_args = ["eval", "critiques", "--judge", "fake", "--prompt", "simple", "--limit", "20"]
    with FakeServer([Reply(json=chat_reply("A").json, delay_s=0.2)], port=port) as fake:
        load_config().add_backend(fake.profile(kind="openai", retries=0, timeout_s=10, max_concurrency=1))
        child = subprocess.Popen(
            [sys.executable, "-m", "argtui", *eval_args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 120
        while len(fake.bodies) < 8:
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.01)
        own_postgres.kill()
        _, err = child.communicate(timeout=300)
    assert child.returncode == 1
    [line] = error_lines(err)
    assert "cannot be reached or closed the connection" in line
    own_postgres.start()
    listed = argtui("runs", "--json")
    assert listed.returncode == 0, listed.stderr
    [run] = json.loads(listed.stdout)
    # The server was down when the run stopped: its process noted why in the data folder, and the
    # listing says that, not only that the process is gone.
    assert run["state"] == "interrupted" and f"pid {child.pid}" in run["cause"], run
    assert "cannot be reached or closed the connection" in run["cause"] and "is gone" not in run["cause"], run
    assert run["done"] < run["total"] == 20
    with FakeServer([chat_reply("A")], port=port):
        rerun = argtui(*eval_args)
    assert rerun.returncode == 0, rerun.stderr
    [run] = json.loads(argtui("runs", "--json").stdout)
    assert run["state"] == "done" and run["cause"] is None, run  # its stored state voids the note


# ---------------------------------------------------------------------- runs whose process is gone


def test_a_run_killed_with_kill_9_shows_as_interrupted_and_its_rerun_asks_again_only_the_write_behind_window(
    offline_config, argtui_home
):
    delay_s, concurrency = 1.0, 4
    port = free_loopback_port()  # the rerun's server keeps the address, and so the cached answers
    args = [*PAIRWISE, "--limit", "40", "--judge", "fake", "--concurrency", str(concurrency)]
    with FakeServer([Reply(json=chat_reply("A").json, delay_s=delay_s)], port=port) as fake:
        load_config().add_backend(fake.profile(kind="openai", retries=0, timeout_s=30, max_concurrency=concurrency))
        child = subprocess.Popen([sys.executable, "-m", "argtui", "eval", "pairwise", *args],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while len(fake.bodies) < 3 * concurrency + 1:  # the fourth round of calls has just gone out
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.005)
        killed_at = time.monotonic()
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
        first = [(json.dumps(r.body, sort_keys=True), r.at) for r in fake.received if r.path == "/v1/chat/completions"]

    listed = argtui("runs", "--json")
    [run] = json.loads(listed.stdout)
    assert run["state"] == "interrupted" and f"pid {child.pid}" in run["cause"], run
    assert run["done"] < run["total"] == 40

    with FakeServer([chat_reply("A")], port=port) as fake:
        rerun = argtui("eval", "pairwise", *args, "--json")
        again = Counter(json.dumps(body, sort_keys=True) for body in fake.bodies)
    assert rerun.returncode == 0, rerun.stderr
    # Asked again: the calls still in flight at the kill (unanswered), and those answered within
    # the write-behind window before it (the slack: a flush timer late under load). No other.
    window_s = FLUSH_INTERVAL_S + 0.5
    for body, arrived in first:
        answered_at = arrived + delay_s
        if answered_at < killed_at - window_s:
            assert body not in again, f"a call answered {killed_at - answered_at:.2f} s before the kill was asked again"
    reasked = sum(1 for body, _ in first if body in again)
    assert 0 < reasked <= 2 * concurrency
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    assert [r.state for r in RunRepository(db).list()] == [RunState.DONE]
    db.close()


async def test_the_runs_screen_shows_a_run_whose_process_is_gone_as_interrupted(offline_config, argtui_home):
    app = ArgtuiApp()
    async with app.run_test(size=(120, 30)) as pilot:
        runs = RunRepository(app.services.db)
        run = runs.open("eval-toy", "gone", {}, 10, task="toy", judge="model@prof v1")
        runs.update(run.id, state=RunState.RUNNING, done=3)
        with app.services.db.connection() as conn:  # as if a process that has exited ran it
            conn.exec_driver_sql(f"UPDATE batch_run SET pid = {exited_pid()} WHERE id = {run.id}")
        await app.push_screen(RunsScreen())
        await pilot.pause()
        row = [str(cell) for cell in app.screen.query_one(DataTable).get_row_at(0)]
        assert row[3] == "interrupted" and "is gone" in row[7] and row[4].startswith("3/10")


def exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_run_is_interrupted_once_its_process_is_gone_or_its_heartbeat_is_older_than_the_lease(db):
    runs = RunRepository(db)
    run = runs.update(runs.open("eval-toy", "n", {}, 5).id, state=RunState.RUNNING)
    assert (run.host, run.pid) == (Holder.this_process().host, os.getpid())
    assert run.shown_state == RunState.RUNNING and run.cause is None
    now = run.heartbeat_at

    def listed(**columns) -> BatchRun:
        with db.session() as session:
            row = session.get(BatchRun, run.id)
            for name, value in columns.items():
                setattr(row, name, value)
            session.add(row)
        return runs.get(run.id)

    assert listed(pid=exited_pid()).shown_state == RunState.INTERRUPTED  # this host: at once
    elsewhere = listed(host="another-host", pid=1, heartbeat_at=now - timedelta(seconds=LEASE_S / 2))
    assert elsewhere.shown_state == RunState.RUNNING  # another host's: alive while its lease runs
    expired = listed(heartbeat_at=now - timedelta(seconds=LEASE_S + 5))
    assert expired.shown_state == RunState.INTERRUPTED
    assert "pid 1 on another-host" in expired.cause and "stopped renewing its heartbeat" in expired.cause
    assert listed(heartbeat_at=now, state=RunState.PAUSED).shown_state == RunState.PAUSED  # only a running run can be
    assert runs.beat(run.id) is False  # not running here any more: nothing to renew


def test_a_run_stopped_where_the_database_refuses_the_write_shows_the_cause_its_process_noted(
    db, tmp_path, monkeypatch
):
    monkeypatch.setattr(store.db, "LOCK_WAIT_S", 1.0)  # SQLite's busy wait: one attempt
    runs = RunRepository(db)
    run = runs.update(runs.open("eval-toy", "n", {}, 5).id, state=RunState.RUNNING)
    with lock_held_elsewhere(db), pytest.raises(StoreError):
        runs.update(run.id, state=RunState.PAUSED, error="the backend is down")
    noted = runs.get(run.id)  # left running in the database, by a process that is still alive
    assert noted.shown_state == RunState.INTERRUPTED and "stopped it: the backend is down" in noted.cause
    assert [r.cause for r in runs.list()] == [noted.cause]
    elsewhere = RunRepository(Database(db.path, local_dir=tmp_path / "another-host"))
    assert elsewhere.get(run.id).shown_state == RunState.RUNNING  # the note stays on the host that wrote it

    def held_by(pid: int) -> BatchRun:
        with db.session() as session:
            row = session.get(BatchRun, run.id)
            row.pid = pid
            session.add(row)
        return runs.get(run.id)

    assert held_by(os.getppid()).shown_state == RunState.RUNNING  # another process runs it now: not its note
    assert held_by(os.getpid()).shown_state == RunState.INTERRUPTED
    assert runs.update(run.id, state=RunState.RUNNING).cause is None  # a stored state voids the note
    assert runs.get(run.id).shown_state == RunState.RUNNING


async def test_the_runner_renews_the_heartbeat_while_a_slow_item_is_judged(db, monkeypatch):
    monkeypatch.setattr("engines.judging.runner.HEARTBEAT_S", 0.2)
    runs = RunRepository(db)
    beats: list[object] = []

    async def judge(item: TaskItem) -> Verdict:
        for _ in range(4):
            await asyncio.sleep(0.3)
            [run] = runs.list()
            beats.append(run.heartbeat_at)
        return Verdict(label="yes")

    outcome = await run_tracked(db, RunSpec("toy", JudgeId.of("prof", "m", "v1"), {}), [TaskItem("i0", "x", "")], judge)
    assert outcome.run.state == RunState.DONE
    assert len(set(beats)) >= 3, beats  # renewed during the one item, with no verdict written meanwhile


# ---------------------------------------------------------------------- an answer stored once


def test_a_long_answer_is_stored_once_for_the_cache_and_the_judgment(db_url):
    db = Database(db_url)
    answer = "B" + "7" * 2_000_000
    cache, judgments = ResponseCache(db), JudgmentRepository(db)
    cache.put("key-1", "m", {"text": answer, "finish_reason": "length"})
    cache.flush()
    judge = JudgeColumns("p", "m", "zero")
    judgments.save("pairwise", judge, [
        NewJudgment("i1", {"raw": answer, "invalid_reason": "not a label", "detail": "short"}, False),
    ])
    with db.read() as session:
        lengths = session.exec(select(func.length(StoredText.text))).all()
    assert lengths == [len(answer)]  # one copy, whichever rows hold it
    assert ResponseCache(db).get("key-1") == {"text": answer, "finish_reason": "length"}
    assert judgments.verdicts("pairwise", judge.name)["i1"]["raw"] == answer
    short = "A" * (LONG_TEXT_CHARS - 1)
    judgments.save("pairwise", judge, [NewJudgment("i2", {"raw": short}, True)])
    assert judgments.verdicts("pairwise", judge.name)["i2"] == {"raw": short}
    with db.read() as session:
        assert session.exec(select(func.count(StoredText.digest))).one() == 1  # a short text stays in its row
    db.close()


def test_a_runaway_answer_takes_its_size_once_in_the_database(offline_config, argtui_home):
    size, items = 2_000_000, 4

    def runaway(body: dict) -> Reply:  # a different long answer for every call
        prompt = json.dumps(body["messages"])
        return chat_reply(f"{len(prompt)}-{hash(prompt)}-" + "9" * size)

    with FakeServer(runaway) as fake:
        load_config().add_backend(fake.profile(kind="openai", retries=0, timeout_s=60))
        done = argtui("eval", "pairwise", *PAIRWISE, "--limit", str(items), "--judge", "fake", "--json")
    assert done.returncode == 0, done.stderr
    path = argtui_home / "data" / "argtui.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        texts = conn.execute("SELECT count(*) FROM stored_text").fetchone()[0]
    assert texts == 2 * len(fake.bodies) >= 2 * items  # each answer, and what its verdict keeps of it
    # Each answer once (twice would double it): the file holds the answers and little else.
    assert path.stat().st_size < len(fake.bodies) * size * 1.25
    db = Database(path)
    store_ = JudgmentStore(db, "pairwise")
    [judge] = store_.judges()
    # The verdict keeps the answer's beginning and its length; the response cache keeps it whole.
    for verdict in store_.latest(judge.judge).values():
        assert len(verdict.raw) == RAW_MAX_CHARS and "characters in all, the rest not kept here" in verdict.raw
    with db.read() as session:
        lengths = session.exec(select(func.length(StoredText.text))).all()
    assert sum(length > size for length in lengths) == len(fake.bodies)  # each answer whole, once
    db.close()
