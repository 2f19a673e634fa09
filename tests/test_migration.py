"""A database made by an earlier release (schema 1: `tests/data/argtui-v1.sqlite3`, written
by its own `argtui eval pairwise|critiques|grice|components` and `argtui components` commands
on the embedded model; schema 3: written here and set back) opens with this one, and every
judgment is carried forward under the name of what it ran with."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from store import Database
from store.identity import judge_name, options_digest
from store.judgments import upsert
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
        assert db.schema_version == SCHEMA_VERSION == 8
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
        # it answered within 320 tokens, no longer the default
        assert names["critiques"] == [f"SmolLM2-135M-Instruct@embedded simple #{options_digest({'max_tokens': 320})}"]
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


def test_judges_of_changed_defaults_are_renamed_to_what_they_ran_with(tmp_path):
    path = tmp_path / "argtui.sqlite3"
    db = Database(path)
    plain = {  # (task, variant): the name schema 3 gave a judge run with no options -> the options it ran with
        ("critiques", "rubric"): {"max_tokens": 320},
        ("pairwise", "few/runs3@t1"): {"fewshot_rule": "literal"},
        ("pairwise", "zero/runs3@t1"): {},
        ("components", "mad"): {"turn_tokens": 96, "judge_tokens": 96},
        ("components", "cot"): {"reasoning_tokens": 128},
        ("components", "vanilla"): {},
    }
    given = judge_name("gpu", "m", "mad", "0badcafe")  # run with options then: its name stays
    rows = [(task, variant, judge_name("gpu", "m", variant)) for task, variant in plain] + [("components", "mad", given)]
    with db.connection() as conn:
        upsert(conn, [{"task": task, "judge": judge, "profile": "gpu", "model": "m", "variant": variant,
                       "item": f"item-{n}", "reference": None, "valid": True, "verdict": {}, "run_id": None}
                      for n, (task, variant, judge) in enumerate(rows)])
    run = RunRepository(db).open("eval-critiques", "rubric", {}, 1, task="critiques", judge=judge_name("gpu", "m", "rubric"))
    db.close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 3")
    db = Database(path)
    try:
        with db.read() as session:
            stored = set(session.connection().execute(text("SELECT task, variant, judge FROM judgment")).all())
        expected = {(task, variant, judge_name("gpu", "m", variant, options_digest(options)))
                    for (task, variant), options in plain.items()} | {("components", "mad", given)}
        assert stored == expected
        assert RunRepository(db).get(run.id).judge == judge_name("gpu", "m", "rubric", options_digest({"max_tokens": 320}))
    finally:
        db.close()
