"""`argtui eval pairwise` end to end against the real llama-server: judgments and the run
are stored, a rerun makes no call at all, and the modes differ in answers and prompt tokens."""

from __future__ import annotations

import json

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.judging.store import JudgmentStore
from engines.pairwise.judge import run_labels
from store import Database
from store.llm_cache import ResponseCache
from store.runs import RunRepository, RunState

pytestmark = pytest.mark.llm

SELECTION = ["--dimension", "logical", "--topics", "20", "--bootstrap", "0"]


def use_backend(profile) -> str:
    """Register the test server as the default profile of this test's ARGTUI_HOME."""
    config = load_config()
    # The embedded model shares 2 cores with other work: be patient rather than retry.
    config.add_backend(profile.model_copy(update={"timeout_s": 300}), make_default=True)
    return profile.name


def eval_pairwise(capsys, *args: str) -> dict:
    assert main(["eval", "pairwise", *SELECTION, *args, "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    return result


def test_eval_stores_judgments_and_a_rerun_makes_no_call(llama_profile, capsys, tmp_path):
    profile = use_backend(llama_profile)
    output = tmp_path / "result.json"
    first = eval_pairwise(capsys, "--limit", "2", "--output", str(output))
    assert first["judge"].startswith(f"SmolLM2-135M-Instruct@{profile} zero/runs3@t1 #")
    assert (first["judged_now"], first["resumed"], first["items"]) == (2, 0, 2)
    assert first["usage"]["calls"] == 6 and first["usage"]["cached_calls"] == 0  # three samples per pair
    [row] = first["table"]
    assert row["dimension"] == "logical" and row["pairs"] == 2 and row["invalid"] == first["invalid"]
    assert first["variant"] == "zero/runs3@t1"
    assert first["dimensions"][0]["run_variability"]["items"] == 2

    db = Database(load_config().paths.database)
    try:
        [stored] = JudgmentStore(db, "pairwise").judges()
        assert stored.name == first["judge"] and stored.judge.variant == "zero/runs3@t1"
        verdicts = JudgmentStore(db, "pairwise").latest(stored.judge)
        assert len(verdicts) == 2
        assert all(len(run_labels(v)) == 3 for v in verdicts.values())
        assert all(v.label in ("A", "B", "Tie") or (not v.valid and v.raw) for v in verdicts.values())
        assert ResponseCache(db).count() == 6
        [run] = RunRepository(db).list("eval-pairwise")
        assert run.state == RunState.DONE and run.done == 2 and run.total == 2 and run.id == first["run_id"]
    finally:
        db.close()
    saved = json.loads(output.read_text())["results"][0]
    assert saved["run_id"] == first["run_id"]
    assert len(saved["dimensions"][0]["scores"]) >= 2  # per-argument BT scores in the file

    again = eval_pairwise(capsys, "--limit", "2")
    assert (again["judged_now"], again["resumed"]) == (0, 2)
    assert again["usage"]["calls"] == 0  # not even the cache was asked
    assert again["table"] == first["table"]


def test_logprob_eval_is_stored_and_an_identical_rerun_sends_nothing(llama_profile, capsys):
    profile = use_backend(llama_profile)
    args = ("--limit", "2", "--prompt", "zero", "--mode", "logprob")
    first = eval_pairwise(capsys, *args)
    assert first["judge"].startswith(f"SmolLM2-135M-Instruct@{profile} zero/logprob@t0 #")
    assert first["judged_now"] == 2 and first["usage"]["calls"] == 2  # one answer per pair
    db = Database(load_config().paths.database)
    try:
        [stored] = JudgmentStore(db, "pairwise").judges()
        assert stored.name == first["judge"] and stored.judge.model == llama_profile.model
        verdicts = JudgmentStore(db, "pairwise").latest(stored.judge)
        assert len(verdicts) == 2
        for verdict in verdicts.values():
            assert len(run_labels(verdict)) == 1
            if verdict.valid:
                assert sum(verdict.distribution.values()) == pytest.approx(1.0)
    finally:
        db.close()
    again = eval_pairwise(capsys, *args)
    assert (again["judged_now"], again["resumed"]) == (0, 2)
    assert again["usage"]["calls"] == again["usage"]["cached_calls"] == 0  # zero requests, zero cache reads
    assert again["table"] == first["table"]


def test_answers_and_prompt_tokens_per_judgment_by_mode(llama_profile, capsys, monkeypatch, tmp_path):
    use_backend(llama_profile)
    one = eval_pairwise(capsys, "--limit", "1")["usage"]
    logprob = eval_pairwise(capsys, "--limit", "1", "--mode", "logprob")["usage"]
    # Same pair, same variant: a fresh home, so nothing is resumed or cached.
    monkeypatch.setenv("ARGTUI_HOME", str(tmp_path / "separate"))
    use_backend(llama_profile)
    separate = eval_pairwise(capsys, "--limit", "1", "--run-requests", "separate")["usage"]
    for name, u in (("runs, n=3 in one request", one), ("runs, 3 requests", separate), ("logprob", logprob)):
        print(f"{name}: {u['calls']} answers, {u['prompt_tokens']} prompt tokens per judgment")
    assert one["calls"] == separate["calls"] == 3 and logprob["calls"] == 1
    assert one["prompt_tokens"] > 50
    assert separate["prompt_tokens"] == 3 * one["prompt_tokens"]  # a prefill per request
    assert logprob["prompt_tokens"] == one["prompt_tokens"]
