"""A database made by the previous release (schema 1: `tests/data/argtui-v1.sqlite3`, written
by its own `argtui eval pairwise|critiques|grice|components` and `argtui components` commands
on the embedded model) opens with this one, and every judgment is carried forward."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from store import Database
from store.migrations import SCHEMA_VERSION
from store.runs import RunRepository, RunState

V1 = Path(__file__).parent / "data" / "argtui-v1.sqlite3"


@pytest.fixture
def v1_database(tmp_path) -> Path:
    path = tmp_path / "argtui.sqlite3"
    shutil.copy(V1, path)
    return path


def test_the_fixture_is_a_schema_1_database():
    with sqlite3.connect(V1) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM batch_run").fetchone()[0] == 4


def test_opening_migrates_runs_to_name_their_task(v1_database):
    db = Database(v1_database)
    try:
        assert db.schema_version == SCHEMA_VERSION == 3
        runs = {run.task: run for run in RunRepository(db).list()}
        assert set(runs) == {"pairwise", "critiques", "grice", "components"}
        assert all(run.state == RunState.DONE for run in runs.values())
    finally:
        db.close()
    db = Database(v1_database)  # opening again is a no-op
    try:
        assert len(RunRepository(db).list()) == 4
    finally:
        db.close()


def test_every_task_s_judgments_are_carried_into_the_one_store(v1_database):
    from engines.judging.store import JudgmentStore

    db = Database(v1_database)
    try:
        judges = {task: JudgmentStore(db, task).judges() for task in ("pairwise", "critiques", "grice", "components")}
        names = {task: sorted(j.name for j in found) for task, found in judges.items()}
        assert names["pairwise"] == ["SmolLM2-135M-Instruct@embedded zero/logprob@t0"]
        assert names["critiques"] == ["SmolLM2-135M-Instruct@embedded simple"]
        assert names["grice"] == ["SmolLM2-135M-Instruct@embedded ZSL pool=builtin:a1d81efc #" + names["grice"][0][-8:]]
        assert names["components"] == ["SmolLM2-135M-Instruct@embedded vanilla"]
        counts = {task: sum(j.judgments for j in found) for task, found in judges.items()}
        assert counts == {"pairwise": 2, "critiques": 2, "grice": 3, "components": 14}
        pairwise = JudgmentStore(db, "pairwise")
        labelled = pairwise.labelled(judges["pairwise"][0].judge)
        assert all(reference in ("A", "B", "Tie") for _, reference, _ in labelled) and len(labelled) == 2
    finally:
        db.close()
    with sqlite3.connect(v1_database) as conn:  # the old tables are left as they were
        assert conn.execute("SELECT count(*) FROM pairwise_judgment").fetchone()[0] == 2
