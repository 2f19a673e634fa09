"""The component classifier without a model: segmentation, masking, the debate's flow, evaluation, metrics.

A scripted OpenAI-compatible server (httpx.MockTransport) stands in for the
model where the test is about what argtui sends and how it counts answers,
including garbage ones.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import httpx
import pytest

from engines.components import (
    LABELS,
    ClassifierSettings,
    Span,
    assign_debaters,
    classify_component,
    component_rng,
    label_components,
    mark_document,
    segment,
    top_two,
)
from engines.components.evaluation import evaluation_report, run_evaluation, run_name
from engines.components.formatting import ARG_CLOSE, ARG_OPEN, TARGET_CLOSE, TARGET_OPEN
from engines.components.records import load_result
from engines.datasets.ukp_essays import Essay, EssayComponent, load_ukp_essays
from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from store.components import ComponentRepository

UKP = "ukp-argument-annotated-essays-v2"
FIRST_TOKENS = {"MajorClaim": "Major", "Claim": "Cl", "Premise": "Prem"}
TAGS = re.compile(r"</?(?:TARGET|ARG)>")

ESSAY_TEXT = (
    "Should towns keep their libraries?\n\n"
    "I believe that towns must keep their public libraries. Libraries are more than shelves of books. "
    "For example, many people borrow laptops there. Moreover, children learn to love reading in them.\n\n"
    "In conclusion, a town without a library is poorer."
)


def component(ident: str, label: str, surface: str) -> EssayComponent:
    start = ESSAY_TEXT.index(surface)
    return EssayComponent(ident, label, start, start + len(surface), surface)


ESSAY = Essay(
    "essay900",
    ESSAY_TEXT,
    (
        component("T1", "MajorClaim", "towns must keep their public libraries"),
        component("T2", "Claim", "Libraries are more than shelves of books"),
        component("T3", "Claim", "many people borrow laptops there"),
        component("T4", "Premise", "children learn to love reading in them"),
        component("T5", "Premise", "a town without a library is poorer"),
    ),
    (),
)


class ScriptedServer:
    """Answers a constrained choice with the label scripted for the target, anything else with text."""

    def __init__(self, answers: dict[str, str], text: str = "I defend my label."):
        self.answers, self.text = answers, text
        self.bodies: list[dict] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        if "grammar" not in body:
            return self._reply(self.text, None)
        target = re.search(r"<TARGET>(.*?)</TARGET>", body["messages"][-1]["content"])
        if target is None:  # a verdict after a reasoning turn: find the target in the question before it
            target = re.search(r"<TARGET>(.*?)</TARGET>", body["messages"][-3]["content"])
        answer = self.answers.get(target.group(1), "Premise")
        return self._reply(answer, FIRST_TOKENS.get(answer) if body.get("logprobs") else None)

    @staticmethod
    def _reply(content: str, first_token: str | None) -> httpx.Response:
        choice = {"index": 0, "message": {"content": content}, "finish_reason": "stop"}
        if first_token is not None:
            # The chosen label is most likely; the others follow at fixed log probabilities.
            others = [FIRST_TOKENS[label] for label in LABELS if FIRST_TOKENS[label] != first_token]
            top = [(first_token, math.log(0.6)), (others[0], math.log(0.3)), (others[1], math.log(0.1))]
            choice["logprobs"] = {"content": [{
                "token": first_token, "logprob": top[0][1],
                "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top],
            }]}
        return httpx.Response(200, json={"choices": [choice], "usage": {"prompt_tokens": 10, "completion_tokens": 4}})


def scripted_client(server: ScriptedServer) -> LLMClient:
    profile = BackendProfile(name="scripted", kind="llamacpp", base_urls=["http://scripted"], model="m", retries=0)
    return LLMClient(profile, transport=httpx.MockTransport(server))


def spans_of(essay: Essay) -> list[Span]:
    return [Span(c.start, c.end, c.text) for c in essay.components]


# ---------------------------------------------------------------------- segmentation


def test_segment_gives_exact_spans_without_markers_or_final_punctuation():
    text = (
        "I firmly believe that homework should be abolished. For example, pupils in Finland get little "
        "homework, yet they score highly, because rested pupils learn better. However, some argue that "
        "practice matters; e.g. arithmetic needs drills. Dr. Smith disagrees!\n\nIn conclusion, schools "
        "should drop homework. Ok."
    )
    spans = segment(text)
    assert all(text[s.start : s.end] == s.text for s in spans)
    assert [s.text for s in spans] == [
        "homework should be abolished",
        "pupils in Finland get little homework, yet they score highly",
        "rested pupils learn better",
        "some argue that practice matters",
        "e.g. arithmetic needs drills",
        "Dr. Smith disagrees",
        "schools should drop homework",
    ]
    assert segment("  ") == [] and segment("Yes. No.") == []


@pytest.mark.shared_data
def test_segmentation_recovers_most_ukp_components(shared_data):
    essays = load_ukp_essays(shared_data / UKP, "test")
    exact = near = total = 0
    for essay in essays:
        spans = segment(essay.text)
        for c in essay.components:
            total += 1
            overlaps = [
                (min(s.end, c.end) - max(s.start, c.start)) / (max(s.end, c.end) - min(s.start, c.start))
                for s in spans
                if min(s.end, c.end) > max(s.start, c.start)
            ]
            near += max(overlaps, default=0) >= 0.5
            exact += any(s.start == c.start and s.end == c.end for s in spans)
    print(f"UKP test components: {exact / total:.3f} found exactly, {near / total:.3f} with overlap >= 0.5")
    assert near / total >= 0.9 and exact / total >= 0.6


# ---------------------------------------------------------------------- masking


def test_mark_document_tags_target_and_masks_the_rest():
    spans = spans_of(ESSAY)
    marked = mark_document(ESSAY.text, spans, 1)
    assert marked.count(TARGET_OPEN) == 1 and marked.count(ARG_OPEN) == len(spans) - 1
    assert f"{TARGET_OPEN}Libraries are more than shelves of books{TARGET_CLOSE}" in marked
    assert f"{ARG_OPEN}towns must keep their public libraries{ARG_CLOSE}" in marked
    assert TAGS.sub("", marked) == ESSAY.text
    with pytest.raises(ValueError, match="does not match"):
        mark_document(ESSAY.text, [Span(0, 5, "xxxxx")], 0)
    with pytest.raises(ValueError, match="out of order"):
        mark_document(ESSAY.text, list(reversed(spans)), 0)


@pytest.mark.shared_data
def test_masking_never_leaks_a_label_on_the_whole_corpus(shared_data):
    for essay in load_ukp_essays(shared_data / UKP):
        spans = spans_of(essay)
        for target in range(len(spans)):
            marked = mark_document(essay.text, spans, target)
            assert TAGS.sub("", marked) == essay.text
            assert marked.count(TARGET_OPEN) == 1 and marked.count(ARG_OPEN) == len(spans) - 1
            for label in LABELS:  # a label word appears only where the essay itself says it
                assert marked.count(label) == essay.text.count(label)


async def test_what_is_sent_does_not_depend_on_gold_labels(db):
    """Two essays with the same text and components but other gold labels yield the same requests."""
    relabelled = Essay(
        ESSAY.id, ESSAY.text,
        tuple(EssayComponent(c.id, LABELS[(LABELS.index(c.label) + 1) % 3], c.start, c.end, c.text)
              for c in ESSAY.components),
        (),
    )
    requests = []
    for essay in (ESSAY, relabelled):
        server = ScriptedServer({})
        async with scripted_client(server) as client:
            for target in range(len(essay.components)):
                await classify_component(client, essay.text, spans_of(essay), target, "mad", key=str(target))
        requests.append(server.bodies)
    assert requests[0] == requests[1]
    sent = json.dumps(requests[0])
    assert "essay900" not in sent


# ---------------------------------------------------------------------- the debate


def test_top_two_breaks_ties_towards_frequent_types():
    assert top_two({"MajorClaim": 0.7, "Claim": 0.2, "Premise": 0.1}) == ("MajorClaim", "Claim")
    assert top_two({"Claim": 1.0, "MajorClaim": 0.0, "Premise": 0.0}) == ("Claim", "Premise")
    assert top_two({}) == ("Premise", "Claim")


def test_debater_assignment_is_seeded_and_both_orders_occur():
    distribution = {"MajorClaim": 0.1, "Claim": 0.6, "Premise": 0.3}
    first = [assign_debaters(distribution, component_rng(0, f"essay/T{i}")) for i in range(40)]
    again = [assign_debaters(distribution, component_rng(0, f"essay/T{i}")) for i in range(40)]
    other_seed = [assign_debaters(distribution, component_rng(1, f"essay/T{i}")) for i in range(40)]
    assert first == again and first != other_seed
    assert set(first) == {("Claim", "Premise"), ("Premise", "Claim")}
    counts = Counter(first)
    assert min(counts.values()) >= 10  # roughly fair, not merely possible


async def test_mad_runs_manager_four_turns_and_a_constrained_judge():
    target_text = ESSAY.components[1].text
    server = ScriptedServer({target_text: "Claim"})
    async with scripted_client(server) as client:
        result = await classify_component(client, ESSAY.text, spans_of(ESSAY), 1, "mad", seed=3, key="k")
    assert result.valid and result.label == "Claim" and not result.skipped
    assert result.distribution == pytest.approx({"MajorClaim": 0.3, "Claim": 0.6, "Premise": 0.1})
    assert result.distribution_source == "logprobs"
    assert {result.proponent_label, result.opponent_label} == {"Claim", "MajorClaim"}
    assert [t.role for t in result.transcript] == ["proponent", "opponent", "proponent", "opponent", "judge"]
    assert [t.label for t in result.transcript[:4]] == [result.proponent_label, result.opponent_label] * 2
    assert result.calls == 7 == len(server.bodies) and result.cached_calls == 0
    assert result.prompt_tokens == 70 and result.seconds > 0
    manager, *turns, reason, verdict = server.bodies
    assert "grammar" in manager and manager["temperature"] == 0.0 and manager["logprobs"]
    assert all(body["temperature"] == 0.7 and "seed" in body and "grammar" not in body for body in turns)
    assert "Debate so far" not in turns[0]["messages"][-1]["content"]
    assert "Proponent (" in turns[1]["messages"][-1]["content"]
    assert "Respond to the Opponent's counterargument" in turns[2]["messages"][-1]["content"]
    assert reason["temperature"] == 0.0 and "You are the Judge" in reason["messages"][-1]["content"]
    assert "grammar" in verdict and verdict["messages"][-2] == {"role": "assistant", "content": "I defend my label."}
    # Every role shares the system message that holds the document.
    assert len({json.dumps(body["messages"][0]) for body in server.bodies}) == 1


async def test_a_confident_manager_skips_the_debate():
    server = ScriptedServer({ESSAY.components[0].text: "MajorClaim"})
    settings = ClassifierSettings(skip_threshold=0.5)
    async with scripted_client(server) as client:
        result = await classify_component(client, ESSAY.text, spans_of(ESSAY), 0, "mad", settings=settings)
    assert result.skipped and result.label == "MajorClaim" and result.calls == 1 and result.transcript == ()
    assert "0.60 exceeds 0.50" in result.reason


async def test_vanilla_and_chain_of_thought():
    server = ScriptedServer({ESSAY.components[3].text: "Premise"}, text="It supports the claim before it.")
    async with scripted_client(server) as client:
        vanilla = await classify_component(client, ESSAY.text, spans_of(ESSAY), 3, "vanilla")
        cot = await classify_component(client, ESSAY.text, spans_of(ESSAY), 3, "cot")
    assert vanilla.label == "Premise" and vanilla.calls == 1 and vanilla.transcript == ()
    assert cot.label == "Premise" and cot.calls == 2
    assert [t.role for t in cot.transcript] == ["reasoning"] and cot.reason == "It supports the claim before it."
    with pytest.raises(ValueError, match="method"):
        await classify_component(client, ESSAY.text, spans_of(ESSAY), 3, "oracle")


async def test_label_components_segments_free_text_and_reports_each_component():
    text = "Cities should ban cars from their centres. Traffic there is slow, because the streets are narrow."
    server = ScriptedServer({"Cities should ban cars from their centres": "MajorClaim"})
    finished = []
    async with scripted_client(server) as client:
        results = await label_components(
            client, text, method="vanilla", on_component=lambda index, result: finished.append(index)
        )
        with pytest.raises(ValueError):
            await label_components(client, text, [Span(0, 4, "nope")])
    assert [r.span.text for r in results] == [
        "Cities should ban cars from their centres", "Traffic there is slow", "the streets are narrow",
    ]
    assert [r.label for r in results] == ["MajorClaim", "Premise", "Premise"]
    assert sorted(finished) == [0, 1, 2]
    assert all(text[r.span.start : r.span.end] == r.span.text for r in results)


# ---------------------------------------------------------------------- evaluation


async def test_evaluation_scores_stored_predictions_counts_invalid_and_resumes(db):
    answers = {
        "towns must keep their public libraries": "MajorClaim",
        "Libraries are more than shelves of books": "Claim",
        "many people borrow laptops there": "Premise",
        "children learn to love reading in them": "Premise",
        "a town without a library is poorer": "Banana",  # not a label: invalid, counted as wrong
    }
    server = ScriptedServer(answers)
    repository = ComponentRepository(db)
    settings = ClassifierSettings()
    run = run_name("vanilla", "scripted", "m", settings, 0)
    async with scripted_client(server) as client:
        first = await run_evaluation(client, repository, [ESSAY], run=run, method="vanilla", judge="scripted")
        assert first.progress.done == 5 and first.progress.invalid == 1 and len(server.bodies) == 5
        again = await run_evaluation(client, repository, [ESSAY], run=run, method="vanilla", judge="scripted")
        assert again.progress.skipped == 5 and len(server.bodies) == 5  # resumed: nothing asked again
    evaluation = evaluation_report(repository, [ESSAY], run)
    report = evaluation.report
    # gold MC C C P P, predicted MC C P P invalid (hand-computed):
    # MajorClaim P=R=F1=1; Claim P=1 R=1/2 F1=2/3; Premise P=1/2 R=1/2 F1=1/2.
    assert report.per_class["MajorClaim"].f1 == pytest.approx(1.0)
    assert report.per_class["Claim"].f1 == pytest.approx(2 / 3)
    assert report.per_class["Premise"].precision == pytest.approx(1 / 2)
    assert report.per_class["Premise"].f1 == pytest.approx(1 / 2)
    assert report.macro_f1 == pytest.approx((1 + 2 / 3 + 1 / 2) / 3)
    assert report.weighted_f1 == pytest.approx((1 * 1 + 2 / 3 * 2 + 1 / 2 * 2) / 5)
    assert report.accuracy == pytest.approx(3 / 5) and report.invalid == 1 and report.n == 5
    assert report.confusion["Claim"] == {"MajorClaim": 0, "Claim": 1, "Premise": 1, "invalid": 0}
    assert report.confusion["Premise"] == {"MajorClaim": 0, "Claim": 0, "Premise": 1, "invalid": 1}
    assert evaluation.calls_per_component == 1.0 and evaluation.components == 5
    stored = repository.predictions(run)
    invalid = next(p for p in stored if p.component == "T5")
    assert invalid.label is None and invalid.raw == "Banana" and invalid.gold == "Premise"


async def test_mad_transcripts_are_stored_and_read_back(db):
    server = ScriptedServer({}, text="The structure says so.")
    repository = ComponentRepository(db)
    run = run_name("mad", "scripted", "m", ClassifierSettings(), 0)
    assert ":seed0:rounds2:" in run
    async with scripted_client(server) as client:
        await run_evaluation(client, repository, [ESSAY], run=run, method="mad", judge="scripted")
    predictions = repository.predictions(run)
    assert len(predictions) == 5 and all(p.calls == 7 for p in predictions)
    result = load_result(repository, predictions[2], ESSAY.text)
    assert result.span.text == ESSAY.components[2].text
    assert [t.role for t in result.transcript] == ["proponent", "opponent", "proponent", "opponent", "judge"]
    assert all(t.text == "The structure says so." for t in result.transcript)
    assert result.proponent_label in LABELS and result.judge_distribution
    assert evaluation_report(repository, [ESSAY], run).calls_per_component == 7.0


def test_eval_components_needs_the_data_and_names_what_is_wrong(monkeypatch, tmp_path, capsys):
    from argtui.cli import main
    from engines.datasets.ukp_essays import DATA_ENV

    monkeypatch.delenv(DATA_ENV, raising=False)
    assert main(["eval", "components"]) == 2
    assert "--data PATH" in capsys.readouterr().err
    brat = tmp_path / "brat-project-final"
    brat.mkdir()
    (brat / "essay001.txt").write_text("Short text here.")
    (brat / "essay001.ann").write_text("T1\tClaim 0 5\tShort\nT2\tClaim 0 99\tShort text here.\n")
    assert main(["eval", "components", "--data", str(tmp_path), "--split", "all"]) == 2
    err = capsys.readouterr().err
    assert "essay001.ann, line 2" in err and "outside the text" in err
