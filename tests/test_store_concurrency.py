"""Several writers on one database: waits are bounded, imports are all or nothing, kill -9 loses
nothing confirmed, and a rater, an import and a batch eval write at once without a lost write.

Every test runs on SQLite and on PostgreSQL (the `db_url` fixture), except those about SQLite's lock.
`ARGTUI_SOAK_S` sets how long the three writers run together (default 12 s per backend; `.ci/run` sets 60).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import event, func
from sqlmodel import select

import store.critiques.staging
import store.db
from argtui.app import ArgtuiApp
from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from fakes import FakeServer, chat_reply
from screens.rating import RatingScreen
from store import Database, StoreError
from store.critiques import (
    Critique,
    CritiqueError,
    CritiqueImport,
    CritiqueRepository,
    NewCritique,
    NewPosition,
    NewRating,
    StagedCritique,
    StagedPosition,
    StagedRating,
)
from store.judgments import JudgmentRepository

RATED = "7896196"  # the seven dimensions, tenths (single issue is yes/no: 9 is yes)
VALUES = dict(centrality=0.7, strength=0.8, correctness=0.9, clarity=0.6, dead_weight=0.1, single_issue=1.0, overall=0.6)
SOAK_S = float(os.environ.get("ARGTUI_SOAK_S", "12"))
RUBRIC_REPLY = json.dumps({"reasoning": "It attacks the main premise.", "centrality": 0.9, "strength": 0.5,
                           "correctness": 0.8, "clarity": 0.9, "dead_weight": 0.0, "single_issue": 1, "overall": 0.6})


def write_bulk_file(path: Path, rows: int, prefix: str = "bulk") -> Path:
    """A JSONL critique file of `rows` critiques (ten per position), each with one rating."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(rows):
            out.write(json.dumps({
                "position_id": f"{prefix}-p{i // 10}", "position": f"Position {i // 10} of {prefix}.",
                "critique_id": f"{prefix}-c{i}", "critique": f"Critique {i} of {prefix}.",
                "ratings": [{"rater": f"{prefix}-rater", **VALUES}],
            }) + "\n")
    return path


def critique_count(db: Database, prefix: str = "") -> int:
    with db.read() as session:
        return session.exec(select(func.count(Critique.id)).where(Critique.uid.startswith(prefix))).one()


def staged_rows(db: Database) -> int:
    with db.read() as session:
        return sum(session.exec(select(func.count(table.id))).one() for table in (StagedPosition, StagedCritique, StagedRating))


def assert_intact(db: Database) -> None:
    if db.dialect == "sqlite":
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"


def argtui(*args: str) -> list[str]:
    return [sys.executable, "-m", "argtui", *args]


# ---------------------------------------------------------------------- SQLite's write lock


@pytest.fixture
def short_lock_wait(monkeypatch) -> None:
    monkeypatch.setattr(store.db, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setattr(store.db, "LOCK_WAIT_S", 1.0)


def hold_write_lock(path: Path, seconds: float | None) -> tuple[sqlite3.Connection, threading.Thread | None]:
    """Another program takes SQLite's write lock; released after `seconds` (None: by the caller)."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    releaser = None
    if seconds is not None:
        releaser = threading.Timer(seconds, lambda: other.execute("COMMIT"))
        releaser.start()
    return other, releaser


def test_a_write_waits_for_the_lock_then_fails_with_a_clear_error_and_stores_nothing(short_lock_wait, db):
    repo = CritiqueRepository(db)
    repo.import_items([NewPosition("p1", "P.")], [NewCritique("c1", "p1", "C."), NewCritique("c2", "p1", "D.")], [])
    c1, c2 = (c.id for c in repo.positions()[0].critiques)
    other, releaser = hold_write_lock(db.path, 0.5)
    started = time.monotonic()
    repo.add_rating(c1, "ann", VALUES)  # waits for the other writer, then saves
    assert time.monotonic() - started >= 0.4
    releaser.join()
    other.execute("BEGIN IMMEDIATE")  # now held for good
    started = time.monotonic()
    with pytest.raises(StoreError, match="locked for over 1 s; nothing was saved"):
        repo.add_rating(c2, "ann", VALUES)
    assert time.monotonic() - started < 5
    other.execute("ROLLBACK")
    other.close()
    assert [r.critique_id for r in repo.ratings("ann")] == [c1]


async def test_the_rating_screen_shows_a_failed_save_and_keeps_the_rating_to_confirm_again(
    argtui_home, offline_config, short_lock_wait
):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        repo = CritiqueRepository(app.services.db)
        import_critiques(repo, DEMO_PATH)
        screen = RatingScreen(rater="kim")
        await app.push_screen(screen)
        await pilot.pause()
        other, _ = hold_write_lock(app.services.db.path, None)
        await pilot.press(*RATED, "enter")
        await app.workers.wait_for_complete()  # the save runs off the UI thread
        await pilot.pause()
        messages = [(n.severity, n.message) for n in app._notifications]
        assert any(severity == "error" and "Not saved" in message and "locked" in message for severity, message in messages)
        critique = screen.state.critique
        assert critique.id not in screen.state.current and screen.state.drafts[critique.id].values == VALUES
        other.execute("ROLLBACK")
        other.close()
        await pilot.press("enter")  # the kept values, confirmed again
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [(r.critique_uid, r.values) for r in repo.ratings("kim")] == [(critique.uid, VALUES)]


# ---------------------------------------------------------------------- imports


def test_an_import_is_staged_in_short_batches_and_published_at_once(db_url, monkeypatch, tmp_path):
    monkeypatch.setattr(store.critiques.staging, "IMPORT_BATCH_ROWS", 50)
    db, observer = Database(db_url), Database(db_url)
    commits = []
    event.listen(db.engine, "commit", lambda conn: commits.append(time.monotonic()))
    publish = CritiqueRepository._publish
    seen_before_publish = []

    def observed_publish(self, import_id, plan):
        seen_before_publish.append((critique_count(observer), staged_rows(observer)))
        publish(self, import_id, plan)

    monkeypatch.setattr(CritiqueRepository, "_publish", observed_publish)
    counts = import_critiques(CritiqueRepository(db), write_bulk_file(tmp_path / "bulk.jsonl", 1000))
    assert (counts.positions, counts.critiques, counts.ratings) == (100, 1000, 1000)
    assert seen_before_publish == [(0, 2100)]  # all staged, none visible
    assert len(commits) >= 2100 // 50
    assert critique_count(observer) == 1000 and staged_rows(observer) == 0
    assert len(CritiqueRepository(observer).ratings("bulk-rater")) == 1000
    again = import_critiques(CritiqueRepository(db), tmp_path / "bulk.jsonl")
    assert (again.critiques, again.ratings, again.already_stored) == (0, 0, 1000)
    db.close(), observer.close()


def test_an_import_that_meets_a_conflicting_write_publishes_nothing(db_url, monkeypatch):
    db = Database(db_url)
    repo = CritiqueRepository(db)
    repo.import_items([NewPosition("p1", "P.")], [NewCritique("c1", "p1", "C.")], [])
    stage = CritiqueRepository._stage

    def stage_then_a_rater_confirms(self, import_id, plan):
        stage(self, import_id, plan)
        repo.add_rating(repo.positions()[0].critiques[0].id, "ann", VALUES)  # while the import is staged

    monkeypatch.setattr(CritiqueRepository, "_stage", stage_then_a_rater_confirms)
    with pytest.raises(CritiqueError, match="another writer stored conflicting items"):
        repo.import_items(
            [NewPosition("p1", "P."), NewPosition("p2", "Q.")], [NewCritique("c1", "p1", "C."), NewCritique("c2", "p2", "D.")],
            [NewRating("x1", "c2", "ann", VALUES), NewRating("x2", "c1", "ann", VALUES)],
        )
    assert critique_count(db) == 1 and staged_rows(db) == 0
    assert [r.critique_uid for r in repo.ratings(which="all")] == ["c1"]  # the rater's, not the import's
    with db.read() as session:
        assert session.exec(select(func.count(CritiqueImport.id))).one() == 0
    db.close()


# ---------------------------------------------------------------------- kill -9

RATER_CHILD = textwrap.dedent(
    """
    import asyncio
    from argtui.app import ArgtuiApp
    from engines.critiques.demo import DEMO_PATH
    from engines.critiques.files import import_critiques
    from screens.rating import RatingScreen
    from store.critiques import CritiqueRepository

    async def main():
        app = ArgtuiApp()
        async with app.run_test(size=(80, 24)) as pilot:
            import_critiques(CritiqueRepository(app.services.db), DEMO_PATH)
            screen = RatingScreen(rater="kim")
            app.push_screen(screen)
            await pilot.pause()
            while True:
                critique = screen.state.critique
                await pilot.press(*"{keys}", "enter")
                await app.workers.wait_for_complete()  # the save runs off the UI thread
                if critique.id in screen.state.current:
                    print("CONFIRMED", critique.uid, flush=True)
                await pilot.press("n")

    asyncio.run(main())
    """
)


def kill_9(child: subprocess.Popen) -> None:
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL


def test_kill_9_right_after_confirmations_keeps_every_confirmed_rating(db_url, offline_config):
    child = subprocess.Popen(
        [sys.executable, "-c", RATER_CHILD.replace("{keys}", RATED)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    confirmed = []
    try:
        while len(confirmed) < 5:
            line = child.stdout.readline()
            assert line.startswith("CONFIRMED "), child.stderr.read() if not line else line
            confirmed.append(line.split()[1])
        kill_9(child)
    finally:
        if child.poll() is None:
            child.kill()
    db = Database(db_url)
    assert_intact(db)
    stored = {r.critique_uid: r.values for r in CritiqueRepository(db).ratings("kim")}
    assert set(confirmed) <= set(stored) and all(stored[uid] == VALUES for uid in confirmed)
    db.close()


def test_kill_9_in_the_middle_of_an_import_leaves_the_database_whole(db_url, offline_config, tmp_path):
    db = Database(db_url)
    repo = CritiqueRepository(db)
    import_critiques(repo, DEMO_PATH)
    demo = repo.positions()[0].critiques[0]
    repo.add_rating(demo.id, "kim", VALUES)
    bulk = write_bulk_file(tmp_path / "bulk.jsonl", 20_000)
    child = subprocess.Popen(argtui("import", "critiques", str(bulk)), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while staged_rows(db) == 0:  # its batches are being written
            assert child.poll() is None and time.monotonic() < deadline, child.stderr.read()
            time.sleep(0.005)
        kill_9(child)
    finally:
        if child.poll() is None:
            child.kill()
    assert_intact(db)
    assert critique_count(db, "bulk-") in (0, 20_000)  # never part of an import
    assert [(r.critique_uid, r.values) for r in repo.ratings("kim")] == [(demo.uid, VALUES)]
    rerun = subprocess.run(argtui("import", "critiques", str(bulk), "--json"), capture_output=True, text=True,
                           env=os.environ.copy(), timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert critique_count(db, "bulk-") == 20_000 and len(repo.ratings("bulk-rater")) == 20_000
    db.close()


# ---------------------------------------------------------------------- three writers at once


def eval_profiles(config: Path, server: FakeServer, count: int) -> None:
    """Judges fake0..fakeN on the fake server: each run writes new judgments and cache rows."""
    with config.open("a", encoding="utf-8") as out:
        for k in range(count):
            out.write(f'[backends.fake{k}]\nkind = "llamacpp"\nbase_urls = ["{server.url}"]\nmodel = "fake-model-{k}"\n'
                      'retries = 0\ntimeout_s = 10\nmax_concurrency = 4\n')


class Writer(threading.Thread):
    """Runs `round(n)` until the deadline; keeps each round's failure."""

    def __init__(self, work, deadline: float):
        super().__init__(daemon=True)
        self.work, self.deadline, self.rounds, self.failures = work, deadline, 0, []

    def run(self) -> None:
        while time.monotonic() < self.deadline:
            result = self.work(self.rounds)
            if result.returncode != 0 or "Traceback" in result.stderr:
                self.failures.append(result.stderr[-2000:])
                return
            self.rounds += 1


async def test_a_rater_an_import_and_a_batch_eval_write_at_once_and_nothing_is_lost(db_url, offline_config, tmp_path):
    limit = 20
    with FakeServer([chat_reply(RUBRIC_REPLY, prompt_tokens=50, completion_tokens=9)]) as server:
        eval_profiles(offline_config, server, 200)
        app = ArgtuiApp()
        async with app.run_test(size=(80, 24)) as pilot:
            import_critiques(CritiqueRepository(app.services.db), DEMO_PATH)
            errors: list[str] = []
            notify = app.notify

            def recording_notify(message, *args, severity="information", **kwargs):
                if severity == "error":
                    errors.append(str(message))
                return notify(message, *args, severity=severity, **kwargs)

            app.notify = recording_notify
            screen = RatingScreen(rater="rater-0")
            await app.push_screen(screen)
            await pilot.pause()

            deadline = time.monotonic() + SOAK_S
            env = os.environ.copy()

            def import_round(n: int) -> subprocess.CompletedProcess:
                bulk = write_bulk_file(tmp_path / f"bulk-{n}.jsonl", 20_000, prefix=f"bulk{n}")
                return subprocess.run(argtui("import", "critiques", str(bulk), "--json"),
                                      capture_output=True, text=True, env=env, timeout=300)

            def eval_round(n: int) -> subprocess.CompletedProcess:
                return subprocess.run(argtui("eval", "critiques", "--judge", f"fake{n}", "--prompt", "simple",
                                             "--limit", str(limit), "--json"),
                                      capture_output=True, text=True, env=env, timeout=300)

            writers = [Writer(import_round, deadline), Writer(eval_round, deadline)]
            for writer in writers:
                writer.start()
            confirmed: set[tuple[str, str]] = set()
            raters, longest_save_s = 0, 0.0
            while time.monotonic() < deadline:
                critique = screen.state.critique
                await pilot.press(*RATED)
                started = time.monotonic()
                await pilot.press("enter")
                await app.workers.wait_for_complete()  # the save runs off the UI thread
                longest_save_s = max(longest_save_s, time.monotonic() - started)
                if critique.id in screen.state.current:
                    confirmed.add((screen.rater, critique.uid))
                if len(screen.state.current) == len(screen.state.critiques):  # all rated: the next rater takes over
                    raters += 1
                    await pilot.press("u")
                    app.screen.query_one("#prompt-input").value = f"rater-{raters}"
                    await pilot.press("enter")
                    await app.workers.wait_for_complete()
                else:
                    await pilot.press("n")
            for writer in writers:
                writer.join(timeout=300)
            assert errors == []
        importer, evaluator = writers
        assert importer.failures == [] and evaluator.failures == []
        assert importer.rounds >= 1 and evaluator.rounds >= 1 and len(confirmed) >= 3

    db = Database(db_url)
    assert_intact(db)
    repo = CritiqueRepository(db)
    stored = {(r.rater, r.critique_uid) for r in repo.ratings() if r.rater.startswith("rater-")}
    assert stored == confirmed
    for n in range(importer.rounds):
        assert critique_count(db, f"bulk{n}-") == 20_000
        assert len(repo.ratings(f"bulk{n}-rater")) == 20_000
    judgments = JudgmentRepository(db)
    for n in range(evaluator.rounds):
        [judge] = [row for row in judgments.judges("critiques") if row.judge.profile == f"fake{n}"]
        assert judge.judgments == limit  # every verdict stored (valid or not: the fake answers one shape)
    assert staged_rows(db) == 0
    print(f"{db.dialect}: {SOAK_S:g} s, {len(confirmed)} ratings confirmed, {importer.rounds} imports of 20000, "
          f"{evaluator.rounds} eval runs of {limit}, longest confirmation {longest_save_s:.2f} s")
    db.close()
