"""Grice judges against the real llama-server: Analyzer reasons derived once and reused,
live per-metric callbacks, the task in the Arena, and `argtui eval grice` end to end on a
tiny RAD-shaped file (official run shape, scores with labels, a rerun that asks nothing)."""

from __future__ import annotations

import json
import random

import pytest

from argtui.cli import main
from argtui.config import load_config
from argtui.runtime import Runtime
from engines.grice import METRICS, ReasonCache, builtin_pool, judge_metric, judge_turn, parse_method, prompt_pool
from engines.judging.task import default_options
from engines.llm.client import LLMClient
from engines.llm.servers import free_loopback_port
from engines.tasks.grice import TASK
from store import Database
from store.grice import GriceRepository
from test_grice import rad_files

pytestmark = pytest.mark.llm


@pytest.fixture
def patient_profile(llama_profile):
    """The test server's profile with room for a CPU shared with other work."""
    return llama_profile.model_copy(update={"timeout_s": 600.0})


def _demo_contexts():
    return [example.context for _, example in builtin_pool().demos()]


async def test_analyzer_reasons_are_derived_once_then_reused_from_the_store(patient_profile, db):
    repo = GriceRepository(db)
    reasons = ReasonCache(repo)
    first_context, second_context = _demo_contexts()[:2]
    analyzer1 = parse_method("Analyzer1")
    async with LLMClient(patient_profile) as client:
        first = await judge_metric(client, first_context, "manner", analyzer1, reasons=reasons)
        assert reasons.stage1_calls in (1, 2)  # a second try only after an invalid first output
        assert first.valid and first.method == "Analyzer1" and first.source == "logprobs"
        assert first.answer in ("yes", "no") and 0.0 <= first.p_yes <= 1.0 and first.rationale
        assert first.calls == reasons.stage1_calls + 2  # stage 1, the yes/no call, the rationale

        requests_before = client.accounting.requests
        second = await judge_metric(client, second_context, "manner", analyzer1, reasons=reasons, rationale=False)
        assert reasons.stage1_calls == first.calls - 2  # no second stage-1 call
        assert client.accounting.requests - requests_before == 1 and second.calls == 1
    assert repo.reasons_count() == 1

    # A new process: the reasons come from SQLite, not from the model.
    reopened = Database(db.path)
    restarted = ReasonCache(GriceRepository(reopened))
    try:
        async with LLMClient(patient_profile) as client:
            third = await judge_metric(client, second_context, "manner", analyzer1, reasons=restarted, rationale=False)
            assert client.accounting.requests == 1 and restarted.stage1_calls == 0
    finally:
        reopened.close()
    assert third.valid and third.calls == 1


async def test_judge_turn_reports_each_metric_as_it_finishes(patient_profile):
    finished = []
    async with LLMClient(patient_profile) as client:
        judgment = await judge_turn(client, _demo_contexts()[2], "ZSL", on_metric=finished.append, rationale=False)
        assert client.accounting.requests == 4
    assert sorted(j.metric for j in finished) == sorted(METRICS)
    assert list(judgment.metrics) == list(METRICS) and judgment.strategy == "ZSL"
    assert judgment.valid and judgment.calls == 4
    assert judgment.seconds >= max(j.seconds for j in finished)


async def test_the_task_judges_an_arena_item_live(patient_profile):
    runtime = Runtime()
    item = TASK.draw(runtime, random.Random(1), metric="relation")
    try:
        async with LLMClient(patient_profile) as client:
            verdict = await TASK.judge(runtime, item, "ZSL", client, default_options(TASK))
    finally:
        await runtime.aclose()
    assert verdict.valid and verdict.label in ("yes", "no")
    assert verdict.distribution["yes"] + verdict.distribution["no"] == pytest.approx(1.0)
    assert (verdict.distribution["yes"] >= 0.5) == (verdict.label == "yes")
    assert verdict.detail.startswith("ZSL: ") and len(verdict.detail) > len("ZSL: ")
    assert verdict.seconds > 0 and verdict.usage.calls == 2  # the answer and its rationale


def test_eval_grice_end_to_end_then_a_rerun_asks_the_model_nothing(patient_profile, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # one line per printed row
    config = load_config()
    config.add_backend(patient_profile, make_default=True)
    debates, labels = rad_files(tmp_path)
    output = tmp_path / "run" / "grice.jsonl"
    argv = ["eval", "grice", "--debates", str(debates), "--labels", str(labels), "--strategy", "zsl", "--no-rationale"]

    assert main(argv + ["--output", str(output), "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    variant = f"ZSL pool=builtin:{prompt_pool().digest[:8]}"
    assert result["judge"].startswith(f"{patient_profile.model}@{patient_profile.name} {variant} #")
    assert (result["debates"], result["turns"], result["judged_now"], result["resumed"]) == (2, 4, 4, 0)
    assert result["usage"]["calls"] == 16 and result["per_turn"]["calls"] == 4.0  # one call per metric
    assert result["output"] == str(output) and result["config"]["rationale"] is False
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [line["id"] for line in lines] == ["deb-0", "deb-1"]
    turns = [turn for line in lines for turn in line["userTurnsEvaluations"]]
    assert len(turns) == 4 and all(list(turn) == ["Quantity", "Quality", "Relation", "Manner"] for turn in turns)
    assert all(isinstance(turn[d]["score"], float) and 0.0 <= turn[d]["score"] <= 1.0 for turn in turns for d in turn)
    scores = result["scores"]["metrics"]
    assert (scores["relation"]["labelled"], scores["relation"]["unlabelled"]) == (2, 2)
    assert scores["quantity"]["positives"] == 3 and scores["manner"]["labelled"] == 3
    gold_yes = [0, 2, 3]  # the turns labelled yes for quantity
    said_yes = sum(turns[t]["Quantity"]["score"] >= 0.5 for t in gold_yes)
    assert scores["quantity"]["positive_class"]["recall"] == pytest.approx(said_yes / 3)
    always_yes = result["reference_scores"]["always yes"]["metrics"]
    assert always_yes["quantity"]["positive_class"] == pytest.approx({"precision": 3 / 4, "recall": 1.0, "f1": 6 / 7})
    assert result["reference_scores"]["random"]["seed"] == 0

    # The backend is gone: every turn is stored, so nothing is asked and the same run file is written.
    dead = patient_profile.model_copy(update={"base_urls": [f"http://127.0.0.1:{free_loopback_port()}/v1"]})
    config.add_backend(dead, make_default=True)
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Positive class (yes), as the official evaluator" in printed
    assert "Two-class macro (mean of yes and no), as the paper reports" in printed
    assert "always yes" in printed and "random (seed 0)" in printed and "mean" in printed
    assert "0 judged now, 4 resumed" in printed and "0 LLM answers" in printed
    default = load_config().paths.data_dir / "runs" / f"eval-grice-{result['run_id']}" / "run.jsonl"
    assert f"run file (official sub-task 2 shape): {default}" in printed
    assert default.read_text(encoding="utf-8") == output.read_text(encoding="utf-8")

    # Another selection of the same turns is answered from the store as well.
    assert main(argv + ["--limit", "1", "--json"]) == 0
    [limited] = json.loads(capsys.readouterr().out)["results"]
    assert (limited["turns"], limited["judged_now"], limited["resumed"], limited["usage"]["calls"]) == (2, 0, 2, 0)
