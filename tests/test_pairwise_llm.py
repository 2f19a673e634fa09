"""`argtui eval pairwise` end to end against the real llama-server: judgments and the run
are stored, a rerun repeats no call, and the modes differ in requests and prompt tokens."""

from __future__ import annotations

import json

import pytest

from argtui.cli import main
from argtui.config import load_config
from store import Database
from store.llm_cache import ResponseCache
from store.pairwise import PairwiseRepository
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
    judge = use_backend(llama_profile)
    output = tmp_path / "result.json"
    first = eval_pairwise(capsys, "--limit", "2", "--judge", judge, "--output", str(output))
    accounting = first["accounting"]
    assert accounting["judged"] == 2 and accounting["resumed"] == 0
    assert accounting["requests"] - accounting["retries"] == 2  # one request with n=3 per pair
    [row] = first["table"]
    assert row["dimension"] == "logical" and row["pairs"] == 2
    assert first["variant"] == "zero/runs3@t1"
    assert first["dimensions"][0]["run_variability"]["items"] == 2

    db = Database(load_config().paths.database)
    try:
        records = PairwiseRepository(db).judgments(f"SmolLM2-135M-Instruct@{judge}", "zero/runs3@t1")
        assert len(records) == 2
        assert all(len(r.run_labels) == 3 for r in records)
        assert all(r.label in ("A", "B", "Tie") or (r.label is None and r.raw) for r in records)
        cached = ResponseCache(db).count()
        assert cached == 6  # three samples per pair
        [run] = RunRepository(db).list("eval-pairwise")
        assert run.state == RunState.DONE and run.done == 2 and run.total == 2
    finally:
        db.close()
    saved = json.loads(output.read_text())["results"][0]
    assert len(saved["dimensions"][0]["scores"]) >= 2  # per-argument BT scores in the file

    again = eval_pairwise(capsys, "--limit", "2", "--judge", judge)
    assert again["accounting"]["judged"] == 0 and again["accounting"]["resumed"] == 2
    assert again["accounting"]["requests"] == 0 and again["accounting"]["cache_hits"] == 0
    assert again["table"] == first["table"]


def test_requests_and_prompt_tokens_per_judgment_by_mode(llama_profile, capsys, monkeypatch, tmp_path):
    judge = use_backend(llama_profile)
    one = eval_pairwise(capsys, "--limit", "1", "--judge", judge)["accounting"]
    logprob = eval_pairwise(capsys, "--limit", "1", "--judge", judge, "--mode", "logprob")["accounting"]
    # Same pair, same variant: a fresh home, so nothing is resumed or cached.
    monkeypatch.setenv("ARGTUI_HOME", str(tmp_path / "separate"))
    use_backend(llama_profile)
    separate = eval_pairwise(capsys, "--limit", "1", "--judge", judge, "--run-requests", "separate")["accounting"]
    for name, a in (("runs, n=3 in one request", one), ("runs, 3 requests", separate), ("logprob", logprob)):
        print(f"{name}: {a['requests'] - a['retries']} requests, {a['prompt_tokens']} prompt tokens per judgment")
    assert one["requests"] - one["retries"] == 1
    assert separate["requests"] - separate["retries"] == 3
    assert logprob["requests"] - logprob["retries"] == 1
    assert one["prompt_tokens"] > 50
    assert separate["prompt_tokens"] == 3 * one["prompt_tokens"]
    assert logprob["prompt_tokens"] == one["prompt_tokens"]
