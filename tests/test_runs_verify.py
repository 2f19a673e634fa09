"""`argtui runs verify`: stored verdicts of real runs on the embedded model recomputed from their
cached answers with no mismatch, and a verdict whose stored numbers were edited in the database found."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from argtui.cli import main
from argtui.config import embedded_profile, load_config
from argtui.runtime import Runtime
from conftest import write_rad_debates
from engines.inspire.subjective import LEVELS
from engines.llm.client import LLMClient
from engines.llm.embedded import reproducibility
from engines.student.ballots import end_debate
from fakes import FakeServer, chat_reply
from test_ballot import answer, stored_debate


@pytest.fixture
def patient_profile(llama_profile):
    # Two shared cores: a turn's concurrent calls queue behind each other.
    return llama_profile.model_copy(update={"timeout_s": 600.0})


def _verify(capsys) -> tuple[int, dict]:
    code = main(["runs", "verify", "--json"])
    return code, json.loads(capsys.readouterr().out)


def _tamper(task: str, path: str, value: object) -> tuple[int, str, str]:
    """Set one field of the first stored verdict of `task` (SQLite's json_set), as a hand edit would;
    its run, judge and item."""
    with sqlite3.connect(load_config().paths.database) as conn:
        row_id, run_id, judge, item = conn.execute(
            "SELECT id, run_id, judge, item FROM judgment WHERE task = ? ORDER BY id LIMIT 1", (task,)
        ).fetchone()
        conn.execute("UPDATE judgment SET verdict = json_set(verdict, ?, json(?)) WHERE id = ?",
                     (path, json.dumps(value), row_id))
    return run_id, judge, item


def test_a_real_grice_run_verifies_and_an_edited_p_yes_is_found(patient_profile, tmp_path, capsys):
    load_config().add_backend(patient_profile, make_default=True)
    debates = write_rad_debates(tmp_path / "debates.jsonl", debates=3)
    assert main(["eval", "grice", "--debates", str(debates), "--limit", "3", "--strategy", "zsl",
                 "--no-rationale", "--json"]) == 0
    capsys.readouterr()

    code, found = _verify(capsys)
    assert (code, found["verdicts"], found["mismatches"]) == (0, 6, [])  # 3 debates of 2 turns
    assert found["recomputed"] == 6 and found["not_recomputable"] == []

    with sqlite3.connect(load_config().paths.database) as conn:
        [stored] = conn.execute("SELECT json_extract(verdict, '$.data.metrics.quantity.p_yes') FROM judgment "
                                "ORDER BY id LIMIT 1").fetchone()
    edited = 0.25 if stored >= 0.5 else 0.75  # its answer no longer the one at the threshold either
    run_id, judge, item = _tamper("grice", "$.data.metrics.quantity.p_yes", edited)
    code, found = _verify(capsys)
    assert code == 1 and found["recomputed"] == 6
    checks = {m["check"]: m for m in found["mismatches"]}
    assert set(checks) == {"quantity: P(yes) read again from its answer", "quantity: the answer at P(yes) ≥ 0.5"}
    reread = checks["quantity: P(yes) read again from its answer"]
    assert (reread["run"], reread["judge"], reread["item"], reread["task"]) == (run_id, judge, item, "grice")
    assert reread["stored"] == f"{edited:g}" and f"{stored:.6g}" in reread["expected"].split(" or ")

    assert main(["runs", "verify"]) == 1
    printed = capsys.readouterr().out
    assert "6 stored verdicts: 6 recomputed from their answers, 2 mismatches, 0 not recomputable" in printed
    assert item in printed and "quantity: P(yes) read again from its answer" in printed

    assert main(["runs", "--json"]) == 0  # a server argtui did not start: whether it batches is not known
    [run] = json.loads(capsys.readouterr().out)
    assert run["id"] == run_id and run["reproducible"].startswith("unknown: argtui did not start this server")


def test_a_run_records_that_a_server_batching_several_slots_is_not_reproducible():
    embedded = embedded_profile()
    assert reproducibility(embedded).startswith("no: llama-server computes up to 4 requests in one batch")
    assert reproducibility(embedded.model_copy(update={"slots": 1})) == "yes: one slot"


def test_a_real_inspire_run_shows_and_verifies_its_levels_and_an_edited_distribution_is_found(
    patient_profile, tmp_path, capsys
):
    load_config().add_backend(patient_profile, make_default=True)
    debates = write_rad_debates(tmp_path / "debates.jsonl", debates=1)  # 4 turns
    assert main(["eval", "inspire", "--debates", str(debates), "--limit", "3", "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    levels = result["levels"]
    assert [(turn["position"], turn["role"]) for turn in levels] == [(0, "user"), (1, "assistant"),
                                                                    (2, "user"), (3, "assistant")]
    read = 0
    for turn in levels:
        for name, dimension in turn["dimensions"].items():
            distribution = dimension["distribution"]
            assert dimension["level"] in range(1, 6)
            if distribution:  # greedy: the emitted level is the likeliest of what it was scored from
                read += 1
                assert set(distribution) == set(LEVELS) and dimension["rule"] == "expected"
                assert distribution[str(dimension["level"])] == max(distribution.values())
            else:
                assert dimension["rule"] == "argmax" and dimension["unread"], (turn, name)

    code, found = _verify(capsys)
    assert (code, found["verdicts"], found["mismatches"]) == (0, 4, [])
    assert found["recomputed"] + len(found["not_recomputable"]) == 4
    assert found["recomputed"] >= 1, found["not_recomputable"]

    # The stored clarity distribution of the first turn moved to another level, as a misread one would be.
    with sqlite3.connect(load_config().paths.database) as conn:
        [level] = conn.execute("SELECT json_extract(verdict, '$.data.score.subjective.dimensions.clarity.level') "
                               "FROM judgment ORDER BY id LIMIT 1").fetchone()
    other = "5" if level != 5 else "1"
    run_id, judge, item = _tamper("inspire", "$.data.score.subjective.dimensions.clarity.distribution",
                                  {name: 0.9 if name == other else 0.025 for name in LEVELS})
    code, found = _verify(capsys)
    assert code == 1, found
    checks = {m["check"] for m in found["mismatches"]}
    assert "clarity: the emitted label of a greedy answer is the most probable" in checks
    assert "clarity: the probability-weighted level" in checks
    assert all((m["run"], m["judge"], m["item"]) == (run_id, judge, item) for m in found["mismatches"])


def test_a_ballot_naming_a_turn_its_debate_lacks_is_found(capsys):
    """A ballot answer stored as the server gave it verifies; edited to rewrite a turn the debate does not
    have (or to another winner than its answer's), it is a mismatch."""
    with FakeServer([chat_reply(answer())]) as fake:
        profile = fake.profile(name="fake", kind="llamacpp")
        load_config().add_backend(profile, make_default=True)

        async def end_one() -> None:
            runtime = Runtime()
            try:
                async with LLMClient(profile) as client:
                    await end_debate(runtime, client, stored_debate(runtime.db))
            finally:
                await runtime.aclose()

        asyncio.run(end_one())
    code, found = _verify(capsys)
    assert (code, found["verdicts"], found["recomputed"], found["mismatches"]) == (0, 1, 1, [])

    _tamper("ballot", "$.data.rewrite_turn", 7)
    _tamper("ballot", "$.data.winner", "student")
    code, found = _verify(capsys)
    assert code == 1
    assert {(m["check"], m["stored"]) for m in found["mismatches"]} >= {("the rewrite is a turn of the debate", "7")}
    assert any(m["check"] == "the ballot as its answer says" and "'student'" in m["stored"] for m in found["mismatches"])
