"""Grice judges against the real llama-server: Analyzer reasons derived once and reused,
live per-metric callbacks, the Arena task, and `argtui eval grice` end to end on two
debates of the RAD submissions file (resumable, official run shape, scores with labels)."""

from __future__ import annotations

import json
import random

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.datasets.rad import read_rad_debates
from engines.grice import METRICS, ReasonCache, builtin_pool, judge_metric, judge_turn, parse_method
from engines.llm.client import LLMClient
from screens.arena_grice import GriceArenaTask
from store import Database
from store.grice import GriceRepository

pytestmark = pytest.mark.llm

SUBMISSIONS = "touche25-rad/touche25-rad-submissions-annotations.jsonl.gz"


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


async def test_arena_task_judges_an_item_live(patient_profile):
    task = GriceArenaTask()
    item = task.draw(random.Random(1), metric="relation")
    async with LLMClient(patient_profile) as client:
        answer = await task.judge(item, "ZSL", client)
    assert answer.label in ("yes", "no")
    assert answer.distribution["yes"] + answer.distribution["no"] == pytest.approx(1.0)
    assert answer.detail.startswith("ZSL: ") and len(answer.detail) > len("ZSL: ")
    assert answer.seconds > 0


@pytest.mark.shared_data
def test_eval_grice_end_to_end_on_two_submission_debates(shared_data, patient_profile, tmp_path, capsys):
    config = load_config()
    config.add_backend(patient_profile, make_default=True)
    debates_path = shared_data / SUBMISSIONS
    debates = read_rad_debates(debates_path, limit=2)
    labels_path = tmp_path / "two-labels.jsonl"  # made-up labels, with nulls, to exercise the scoring path
    labels_path.write_text(
        "".join(
            json.dumps([{"quantity": 1, "quality": 0, "relation": None, "manner": (d + t) % 2}
                        for t in range(len(debate.user_turns()))]) + "\n"
            for d, debate in enumerate(debates)
        ),
        encoding="utf-8",
    )
    output = tmp_path / "run" / "grice.jsonl"
    argv = ["eval", "grice", "--debates", str(debates_path), "--labels", str(labels_path), "--limit", "2",
            "--strategy", "ZSL", "--no-rationale", "--output", str(output), "--json"]

    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["debates"], summary["turns"], summary["judged_now"]) == (2, 10, 10)
    assert summary["per_turn"]["calls"] == 4.0  # ZSL without rationale: one call per metric
    lines = output.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == [d.id for d in debates]
    for line in lines:
        turns = json.loads(line)["userTurnsEvaluations"]
        assert len(turns) == 5
        for turn in turns:
            assert list(turn) == ["Quantity", "Quality", "Relation", "Manner"]
            assert all(isinstance(turn[d]["score"], float) and 0.0 <= turn[d]["score"] <= 1.0 for d in turn)
    scores = summary["scores"]["metrics"]
    assert scores["relation"]["labelled"] == 0 and scores["relation"]["unlabelled"] == 10
    assert scores["quantity"]["positives"] == 10 and scores["quality"]["positives"] == 0
    assert scores["manner"]["labelled"] == 10 and scores["manner"]["positives"] == 5
    yes_share = sum(json.loads(line)["userTurnsEvaluations"][t]["Quantity"]["score"] >= 0.5
                    for line in lines for t in range(5)) / 10
    assert scores["quantity"]["recall"] == pytest.approx(yes_share)

    # Rerun: everything is stored, nothing is asked of the model again, same run file.
    first_run = output.read_text(encoding="utf-8")
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["judged_now"], again["resumed"], again["this_invocation"]["requests"]) == (0, 10, 0)
    assert output.read_text(encoding="utf-8") == first_run
