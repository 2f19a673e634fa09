"""Student profiles and their Elo ratings against the opponent levels: the arithmetic, one result
per debate, levels rated by every student's results, the `argtui students` command, and a
schema-6 database opening with its debates kept."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table, inspect, text

from argtui.cli import main
from engines.student.ratings import (
    K_FACTOR,
    LEVEL_START,
    START_STUDENT,
    RatingChange,
    elo_update,
    expected,
    level_rating,
    record_result,
    student_rating,
)
from store import Database, StoreError
from store.debates import DebateRepository, DebateTurn
from store.migrations import SCHEMA_VERSION, write_schema_version
from store.students import RatingEvent, StudentRepository

CLAIM = "School uniforms should be mandatory"


def test_elo_against_hand_computed_values():
    # 1000 against 1150: 10 ** (150 / 400) = 10 ** 0.375 = 2.37137, expected 1 / 3.37137 = 0.29661.
    assert K_FACTOR == 32 and LEVEL_START[1] == 1150 and START_STUDENT == 1000
    assert expected(1000, 1150) == pytest.approx(0.29661, abs=1e-5)
    assert expected(1150, 1000) == pytest.approx(1 - 0.29661, abs=1e-5)
    # A win: 1000 + 32 × (1 − 0.29661) = 1022.508; the opponent 1150 + 32 × (0 − 0.70339) = 1127.492.
    assert elo_update(1000, 1150, 1.0) == pytest.approx(1022.508, abs=1e-3)
    assert elo_update(1150, 1000, 0.0) == pytest.approx(1127.492, abs=1e-3)
    # A loss: 1000 + 32 × (0 − 0.29661) = 990.508.
    assert elo_update(1000, 1150, 0.0) == pytest.approx(990.508, abs=1e-3)
    assert expected(1300, 1300) == 0.5 and elo_update(1300, 1300, 1.0, k=16) == 1308.0


def student_debate(db, name: str, level: int) -> int:
    student = StudentRepository(db).get_or_add(name)
    return DebateRepository(db).create(CLAIM, "pro", level=level, student_id=student.id).id


def test_a_debate_is_rated_once_whatever_is_asked_again(db):
    debate_id = student_debate(db, "Ann", 1)
    change = record_result(db, debate_id, student_won=True)
    assert change == RatingChange(student="Ann", level=1, score=1.0, student_before=1000.0,
                                  student_after=pytest.approx(1022.508, abs=1e-3), level_before=1150.0,
                                  level_after=pytest.approx(1127.492, abs=1e-3))
    assert record_result(db, debate_id, student_won=False) == change  # the stored result, not a second one
    [event] = StudentRepository(db).rating_events()
    assert event.debate_id == debate_id and event.score == 1.0
    ann = StudentRepository(db).get("Ann")
    assert student_rating(db, ann.id) == change.student_after and level_rating(db, 1) == change.level_after
    with pytest.raises(StoreError, match=f"debate {debate_id} already has a rating result"):
        StudentRepository(db).add_rating_event(RatingEvent(
            student_id=ann.id, debate_id=debate_id, level=1, score=0.0, student_before=0, student_after=0,
            level_before=0, level_after=0))


def test_a_debate_without_a_student_is_not_rated(db):
    debate = DebateRepository(db).create(CLAIM, "con", level=0)
    assert record_result(db, debate.id, student_won=True) is None
    assert StudentRepository(db).rating_events() == [] and level_rating(db, 0) == LEVEL_START[0]


def test_a_level_is_moved_by_every_student_s_results(db):
    ann, ben = student_debate(db, "Ann", 2), student_debate(db, "Ben", 2)
    student_debate(db, "Cem", 0)  # another level: not counted
    first = record_result(db, ann, student_won=True)
    # Ann 1000 beats 1300: expected 1 / (1 + 10 ** 0.75) = 0.15098; 1000 + 32 × 0.84902 = 1027.169,
    # the level 1300 − 32 × 0.84902 = 1272.831.
    assert (first.student_after, first.level_after) == (pytest.approx(1027.169, abs=1e-3),
                                                         pytest.approx(1272.831, abs=1e-3))
    second = record_result(db, ben, student_won=False)
    # Ben 1000 loses to 1272.831: expected 1 / (1 + 10 ** (272.831 / 400)) = 0.17214; Ben
    # 1000 − 32 × 0.17214 = 994.492, the level 1272.831 + 32 × 0.17214 = 1278.340.
    assert second.level_before == first.level_after
    assert (second.student_after, second.level_after) == (pytest.approx(994.492, abs=1e-3),
                                                          pytest.approx(1278.340, abs=1e-3))
    assert level_rating(db, 2) == second.level_after and level_rating(db, 0) == LEVEL_START[0]
    students = StudentRepository(db)
    assert student_rating(db, students.get("Ben").id) == second.student_after
    assert student_rating(db, students.get("Cem").id) == START_STUDENT
    assert [e.debate_id for e in students.rating_events(level=2)] == [ann, ben]
    assert [e.debate_id for e in students.rating_events(student_id=students.get("Ann").id)] == [ann]


def test_profiles_have_unique_non_blank_names(db):
    students = StudentRepository(db)
    ann = students.add("  Ann ")
    assert ann.name == "Ann" and students.get("Ann") == ann and students.by_id(ann.id) == ann
    with pytest.raises(StoreError, match="'Ann' exists already"):
        students.add("Ann")
    with pytest.raises(StoreError, match="needs a name"):
        students.add("   ")
    assert students.get_or_add("Ann") == ann
    students.add("Aaron")
    assert [s.name for s in students.list()] == ["Aaron", "Ann"]


def test_a_student_s_debates_oldest_first_and_an_ended_debate_keeps_its_end(db):
    repository = DebateRepository(db)
    first, second = student_debate(db, "Ann", 0), student_debate(db, "Ann", 1)
    student_debate(db, "Ben", 0)
    ann = StudentRepository(db).get("Ann")
    assert [d.id for d in StudentRepository(db).debates_of(ann.id)] == [first, second]
    assert repository.get(first).ended_at is None
    ended = repository.end(first).ended_at
    assert ended is not None and repository.end(first).ended_at == ended == repository.get(first).ended_at
    with pytest.raises(KeyError):
        repository.end(9999)


def test_the_students_command_adds_and_lists_profiles_with_rating_and_debates(capsys, argtui_home):
    assert main(["students"]) == 0
    assert "No students yet" in capsys.readouterr().out
    assert main(["students", "--add", "Ann"]) == 0
    assert "added student Ann (rating 1000)" in capsys.readouterr().out
    assert main(["students", "--add", "Ann"]) == 1
    assert "'Ann' exists already" in capsys.readouterr().err
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    try:
        debate_id = student_debate(db, "Ann", 1)
        record_result(db, debate_id, student_won=True)
        student_debate(db, "Ben\x1b[2J", 0)  # a name is data: its control characters are shown, never sent
    finally:
        db.close()
    assert main(["students"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["Ann", "1023", "1"] in rows and ["Ben␛[2J", "1000", "1"] in rows


# The debate table as schema 6 had it: no student, no end.
SCHEMA_6_DEBATE = Table(
    "debate", MetaData(),
    Column("id", Integer, primary_key=True), Column("claim", String, nullable=False),
    Column("user_side", String, nullable=False), Column("backend", String, nullable=False),
    Column("level", Integer, nullable=False, server_default="2"), Column("created_at", DateTime, nullable=False),
    Column("updated_at", DateTime, nullable=False),
)


def test_a_schema_6_database_keeps_its_debates_and_gains_students(db_url):
    db = Database(db_url)
    with db.connection() as conn:
        for table in ("rating_event", "debate_turn_analysis", "debate_turn", "debate"):
            conn.execute(text(f"DROP TABLE {table}"))
        SCHEMA_6_DEBATE.create(conn)
        DebateTurn.__table__.create(conn)
        when = datetime(2026, 1, 1, tzinfo=timezone.utc)
        conn.execute(SCHEMA_6_DEBATE.insert(), [
            {"claim": CLAIM, "user_side": "pro", "backend": "gpu", "level": level, "created_at": when,
             "updated_at": when} for level in (0, 2)
        ])
        conn.execute(DebateTurn.__table__.insert(), [
            {"debate_id": 1, "position": 0, "role": "user", "content": "Uniforms cost money.", "state": "done",
             "created_at": when}
        ])
        write_schema_version(conn, 6)
    db.close()
    db = Database(db_url)
    try:
        assert db.schema_version == SCHEMA_VERSION == 8
        with db.read() as session:
            columns = {column["name"] for column in inspect(session.connection()).get_columns("debate")}
        assert {"student_id", "ended_at"} <= columns
        repository = DebateRepository(db)
        assert [(d.id, d.level, d.student_id, d.ended_at) for d, _ in sorted(repository.list(), key=lambda r: r[0].id)
                ] == [(1, 0, None, None), (2, 2, None, None)]
        assert [t.content for t in repository.turns(1)] == ["Uniforms cost money."]
        assert record_result(db, 1, student_won=True) is None  # nobody was named then
        ann = StudentRepository(db).add("Ann")
        debate = repository.create(CLAIM, "con", level=1, student_id=ann.id)
        assert repository.end(debate.id).ended_at is not None
        assert record_result(db, debate.id, student_won=False).student_after < START_STUDENT
    finally:
        db.close()
