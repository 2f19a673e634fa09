"""InspireScore: facts against a fixture index, a scored 2-turn debate on the real llama-server,
candidates and the DPO preference export."""

from __future__ import annotations

import json
import sys

import pytest

from argtui.cli import main
from argtui.config import load_config
from conftest import write_rad_debates
from engines.debate.records import DebateRecords, TurnSteps
from engines.debate.schemas import FinalSelection, StrategyAnalysis
from engines.inspire.facts import VERDICTS, check_facts, judge_claim, states_word_for_word
from engines.judging.store import JudgmentStore
from engines.tasks.inspire_turns import turn_judgment
from engines.inspire.score import DIMENSION_TITLES, DIMENSIONS, inspire_scores_by_debate
from engines.llm.client import LLMClient
from engines.retrieval.embedded import EmbeddedIndex, TantivyRetriever
from engines.retrieval.types import Argument
from store.debates import DebateRepository

SUPPORTING = Argument(id="fixture-support", text="School uniforms reduce bullying in schools.", topic="uniforms")
UNRELATED = Argument(id="fixture-unrelated", text="Volcanoes erupt molten lava near the coast.", topic="volcanoes")
TRL_DPO_FIELDS = ("prompt", "chosen", "rejected")  # TRL's standard preference dataset columns


@pytest.fixture
def patient_profile(llama_profile):
    # Two shared cores: a turn's concurrent calls queue behind each other.
    return llama_profile.model_copy(update={"timeout_s": 600.0})


@pytest.fixture
def fixture_index(tmp_path) -> TantivyRetriever:
    index = EmbeddedIndex(tmp_path / "facts-index")
    index.create([SUPPORTING, UNRELATED], 2)
    return TantivyRetriever(index)


async def test_a_claim_the_index_supports_is_supported_with_the_fixtures_evidence(fixture_index, patient_profile):
    async with LLMClient(patient_profile) as client:
        supported, no_call = await judge_claim(client, fixture_index, "school uniforms reduce bullying in schools")
        judged, usage = await judge_claim(client, fixture_index, "Uniforms make schools calmer places.")
        unrelated, no_usage = await judge_claim(client, fixture_index, "Penguins swim in cold oceans.")
    # Stated word for word by the fixture (case and punctuation aside): supported, with its evidence id.
    assert supported.verdict == "supported" and supported.evidence_ids[0] == SUPPORTING.id and no_call.calls == 0
    # Evidence found but not stated: the model decides with the evidence in the prompt.
    assert judged.evidence_ids == (SUPPORTING.id,) and usage.calls == 1 and judged.verdict in VERDICTS
    assert sum(judged.distribution.values()) == pytest.approx(1.0)
    assert unrelated.verdict == "no evidence" and unrelated.evidence_ids == () and no_usage.calls == 0


def test_a_claim_is_stated_by_a_passage_only_as_a_whole_sentence():
    assert states_word_for_word("A study ran. School UNIFORMS reduce   bullying!", "school uniforms reduce bullying.")
    assert not states_word_for_word("School UNIFORMS reduce bullying, a study says", "Uniforms reduce bullying.")
    assert not states_word_for_word("School uniforms reduce bullying", "forms reduce bullying")
    assert not states_word_for_word("School uniforms reduce bullying", "uniforms bullying")


async def test_s_fa_is_the_share_of_extracted_claims_supported(fixture_index, patient_profile):
    async with LLMClient(patient_profile) as client:
        check, usage = await check_facts(
            client, fixture_index, "School uniforms", "School uniforms reduce bullying in schools. Penguins swim."
        )
    assert check.valid, check.error
    supported = [v for v in check.verdicts if v.verdict == "supported"]
    assert check.score == (len(supported) / len(check.verdicts) if check.verdicts else None)
    known = {SUPPORTING.id, UNRELATED.id}
    assert all(set(v.evidence_ids) <= known for v in check.verdicts)
    assert usage.calls == 1 + sum(v.calls for v in check.verdicts)


def test_eval_inspire_scores_every_turn_and_the_debate(patient_profile, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    load_config().add_backend(patient_profile, make_default=True)
    debates = write_rad_debates(tmp_path / "debates.jsonl", debates=1)  # 2 exchanges: 4 turns

    assert main(["eval", "inspire", "--debates", str(debates), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [result] = out["results"]
    assert result["turns"] == 4 and result["judged_now"] == 4
    [debate] = result["debates"].values()
    assert debate["turns"] == 4 and debate["overall"] is not None
    assert debate["student"] is not None and debate["bot"] is not None
    rows = {row["dimension"]: row for row in result["dimensions"]}
    assert set(rows) == {*(DIMENSION_TITLES[d] for d in DIMENSIONS), "overall"}
    overall = rows["overall"]
    assert overall["turns"] == 4 and overall["low"] <= overall["mean"] <= overall["high"]
    assert result["per_turn"]["calls"] >= 3  # subjective, translation and claim extraction at least
    assert 0.0 <= result["translations_parsed_share"] <= 1.0
    assert {"judge", "dimension", "mean", "low", "high", "turns"} <= set(out["summary"]["dimensions"][0])
    print(
        f"\nInspireScore per turn on the embedded model: {result['per_turn']['calls']:.1f} calls, "
        f"{result['per_turn']['prompt_tokens']:.0f} prompt tokens, {result['per_turn']['seconds']:.1f} s; "
        f"translations parsed {result['translations_parsed_share']:.2f}",
        file=sys.stderr,
    )


def _stored_debate(db_path_runtime) -> int:
    repository = DebateRepository(db_path_runtime)
    debate = repository.create("School uniforms should be mandatory", "pro", backend="test-llama")
    records = DebateRecords(repository)
    records.add_message(debate.id, "Uniforms reduce bullying because everyone looks the same.")
    steps = TurnSteps(
        level=2,
        strategy=StrategyAnalysis(
            tone="Respectful", justification_tone="calm", style="Logical", justification_style="clear",
            approach_strategy="Focused", justification_approach="one point", type_of_arguments="Logical",
            justification_type="facts", perspective="Economic", justification_perspective="cost",
        ),
        final=FinalSelection(
            aspect_argument_1="cost", retrieved_argument_1="Uniforms cost families money every year.",
            justification_argument_1="cost matters",
        ),
    )
    turn = records.start_reply(debate.id)
    repository.update_turn(turn.id, state="done", content="Uniforms cost families money every year.",
                           steps_json=steps.model_dump_json(exclude_none=True))
    return debate.id


def test_candidates_become_preference_pairs_that_trl_reads(patient_profile, tmp_path, capsys):
    from argtui.runtime import Runtime

    load_config().add_backend(patient_profile, make_default=True)
    runtime = Runtime()
    debate_id = _stored_debate(runtime.db)

    assert main(["eval", "inspire", "--debate", str(debate_id), "--candidates", "3", "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert result["turns"] == 2
    scores = inspire_scores_by_debate(runtime.db)
    assert set(scores) == {debate_id} and 0.0 <= scores[debate_id] <= 1.0

    store = JudgmentStore(runtime.db, "inspire")
    [judge] = store.judges()
    bot = [t for t in map(turn_judgment, store.latest(judge.judge).values()) if t.role == "assistant"]
    assert len(bot) == 1 and len(bot[0].candidates) == 3  # one request with n = 3
    replies = bot[0].scored_replies()
    expected = int(bot[0].preferred_pair() is not None)

    output = tmp_path / "pairs.jsonl"
    code = main(["export", "preferences", "--output", str(output)])
    if not expected:  # every reply scored the same on the dimensions both have: no pair to train on
        print(f"all {len(replies)} scored replies tie: the export refuses", file=sys.stderr)
        assert code == 1 and not output.exists()
        return
    assert code == 0
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == expected  # one bot turn: one context
    for line in lines:
        assert all(isinstance(line[name], str) and line[name] for name in TRL_DPO_FIELDS)
        assert line["score_chosen"] > line["score_rejected"]
        assert line["chosen"] != line["rejected"]
        assert line["dimensions"] and set(line["dimensions"]) <= set(DIMENSIONS)
        assert line["coverage_chosen"][0] >= len(line["dimensions"]) and line["coverage_chosen"][1] == len(DIMENSIONS)
        assert line["prompt"].startswith("Debate topic: School uniforms should be mandatory")
