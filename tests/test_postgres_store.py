"""The whole store on either backend (`db_url`: SQLite, and PostgreSQL when a server is given):
schema version, ratings and their rules, judgments and the cache, imports by the CLI, the Rating screen."""

from __future__ import annotations

import json

import pytest
from sqlalchemy.exc import DatabaseError
from sqlmodel import select

from argtui.app import ArgtuiApp
from argtui.cli import main
from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from engines.llm.servers import free_loopback_port
from screens.rating import RatingScreen
from store import Database, StoreError
from store.critiques import (
    Critique, CritiqueError, CritiquePosition, CritiqueRepository, NewCritique, NewPosition, NewRating,
)
from store.judgments import JudgeColumns, JudgmentRepository, NewJudgment
from store.llm_cache import ResponseCache
from store.migrations import SCHEMA_VERSION, write_schema_version
from store.runs import RunRepository, RunState

VALUES = dict(centrality=0.8, strength=0.6, correctness=0.9, clarity=0.7, dead_weight=0.1, single_issue=1.0, overall=0.5)


@pytest.fixture
def store_db(db_url) -> Database:
    database = Database(db_url)
    yield database
    database.close()


def test_the_schema_version_is_kept_and_a_newer_one_refused(db_url, store_db):
    assert store_db.schema_version == SCHEMA_VERSION
    Database(db_url).close()  # opening again changes nothing
    with store_db.connection() as conn:
        write_schema_version(conn, SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match="newer than this argtui"):
        Database(db_url)


def test_a_read_session_sees_one_snapshot_while_another_process_commits(db_url, store_db):
    repo = CritiqueRepository(store_db)
    repo.import_items([NewPosition("p1", "P.")], [NewCritique("c1", "p1", "C.")], [])
    other = Database(db_url)  # another process's connection
    try:
        with store_db.read() as session:
            before = len(session.exec(select(CritiquePosition)).all())
            CritiqueRepository(other).import_items([NewPosition("p2", "Q.")], [NewCritique("c2", "p2", "D.")], [])
            critiques = session.exec(select(Critique)).all()
        assert (before, len(critiques)) == (1, 1)  # not the critique of a position it did not see
        assert len(repo.positions()) == 2  # a new session sees the import
    finally:
        other.close()


def test_ratings_revisions_and_their_rules(store_db):
    repo = CritiqueRepository(store_db)
    repo.import_items([NewPosition("p1", "P.")], [NewCritique("c1", "p1", "C.", source="expert")], [])
    c1 = repo.positions()[0].critiques[0].id
    assert repo.reveal_source(c1, "ann") == "expert" and repo.revealed_critique_ids("ann") == {c1}
    first = repo.add_rating(c1, "ann", VALUES, source_seen=True)
    with pytest.raises(CritiqueError, match="already rated"):
        repo.add_rating(c1, "ann", VALUES)
    revised = repo.add_rating(c1, "ann", {**VALUES, "overall": 0.9}, revises_id=first.id, reason="second look")
    assert [r.values["overall"] for r in repo.history(c1, "ann")] == [0.5, 0.9]
    assert revised.revises_uid == first.uid and revised.created_at.tzinfo is not None
    assert [r.uid for r in repo.ratings("ann")] == [revised.uid] and repo.progress("ann") == (1, 1)
    for statement in ("UPDATE critique_rating SET overall = 0.1", "DELETE FROM critique_rating"):
        with pytest.raises(DatabaseError, match="append-only"):
            with store_db.connection() as conn:
                conn.exec_driver_sql(statement)
    assert len(repo.ratings(which="all")) == 2


def test_an_import_with_revision_chains_and_its_rerun(store_db):
    repo = CritiqueRepository(store_db)
    items = (
        [NewPosition("p1", "P.")], [NewCritique("c1", "p1", "C.")],
        [NewRating("r1", "c1", "ann", VALUES), NewRating("r2", "c1", "ann", VALUES, revises_uid="r1", reason="a"),
         NewRating("r3", "c1", "ann", VALUES, revises_uid="r2", reason="b"), NewRating("j1", "c1", "judge-x", VALUES)],
    )
    counts = repo.import_items(*items)
    assert (counts.positions, counts.critiques, counts.ratings, counts.raters) == (1, 1, 4, ["ann", "judge-x"])
    assert [(r.uid, r.revises_uid) for r in repo.ratings("ann", which="all")] == [("r1", None), ("r2", "r1"), ("r3", "r2")]
    assert repo.import_items(*items).already_stored == 4
    with pytest.raises(CritiqueError, match="differs from the stored text"):
        repo.import_items([NewPosition("p1", "Another text.")], [], [])
    with pytest.raises(CritiqueError, match="already been revised"):
        repo.import_items([], [NewCritique("c1", "p1", "C.")],
                          [NewRating("r4", "c1", "ann", VALUES, revises_uid="r1", reason="branch")])


def test_judgments_the_cache_and_runs_are_replaced_not_doubled(store_db):
    judgments, judge = JudgmentRepository(store_db), JudgeColumns("p", "m", "v")
    judgments.save("t", judge, [NewJudgment("i1", {"value": 1}, True), NewJudgment("i2", {}, False)])
    judgments.save("t", judge, [NewJudgment("i1", {"value": 2}, True)])
    assert judgments.verdicts("t", judge.name) == {"i1": {"value": 2}, "i2": {}}
    assert [(row.judgments, row.invalid) for row in judgments.judges("t")] == [(2, 1)]
    cache = ResponseCache(store_db)
    cache.put("k", "m", {"text": "a"})
    cache.put("k", "m", {"text": "b"})
    assert cache.get("k") == {"text": "b"} and cache.count() == 1
    runs = RunRepository(store_db)
    run = runs.open("eval-t", "n", {"judge": "j"}, total=3)
    runs.update(run.id, state=RunState.DONE, done=3)
    assert [(r.state, r.done) for r in runs.list()] == [(RunState.DONE, 3)]


def test_the_cli_imports_all_or_nothing_and_exports_every_rating(db_url, store_db, tmp_path, capsys):
    assert main(["import", "critiques", "--demo", "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["critiques"] == 51 and counts["ratings"] > 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"position_id": "new-p", "position": "P.", "critique_id": "new-c", "critique": "C."}) + "\n"
                   + json.dumps({"position_id": "new-p", "position": "P.", "critique_id": "c2", "critique": "D.",
                                 "ratings": [{"rater": "x", "overall": 2}]}) + "\n", encoding="utf-8")
    assert main(["import", "critiques", str(bad)]) != 0
    assert "bad.jsonl" in capsys.readouterr().err
    repo = CritiqueRepository(store_db)
    assert not any(c.uid == "new-c" for p in repo.positions() for c in p.critiques)
    out = tmp_path / "export.jsonl"
    assert main(["export", "critiques", "--output", str(out)]) == 0
    exported = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sum(len(r["ratings"]) for r in exported) == counts["ratings"]


async def test_rating_by_keyboard_lands_in_the_configured_database(db_url, argtui_home):
    argtui_home.mkdir(parents=True, exist_ok=True)
    (argtui_home / "config.toml").write_text(
        'default_backend = "offline"\n[backends.offline]\nkind = "openai"\n'
        f'base_urls = ["http://127.0.0.1:{free_loopback_port()}/v1"]\nretries = 0\ntimeout_s = 2\n'
    )
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        import_critiques(CritiqueRepository(app.services.db), DEMO_PATH)
        await app.push_screen(RatingScreen(rater="lee"))
        await pilot.pause()
        await pilot.press(*"7896196", "enter", "n", *"5555555", "enter")
        await app.workers.wait_for_complete()  # the saves run off the UI thread
        await pilot.pause()
    database = Database(db_url)
    try:
        stored = CritiqueRepository(database).ratings("lee")
        assert [(r.critique_uid, r.values["overall"]) for r in stored] == [("demo-p01-c1", 0.6), ("demo-p01-c2", 0.5)]
    finally:
        database.close()
