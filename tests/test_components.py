"""The component classifier without a model: segmentation, masking, the debate's flow, the
`components` task (evaluation, metrics, resume, output), its stored verdicts and their migration.

A scripted OpenAI-compatible server (tests/fakes.py) stands in for the
model where the test is about what argtui sends and how it counts answers,
including garbage ones.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from argtui.cli import main
from argtui.runtime import Runtime
from engines.components import (
    LABELS,
    ClassifierSettings,
    ComponentResult,
    Span,
    Turn,
    assign_debaters,
    classify_component,
    component_rng,
    label_components,
    mark_document,
    segment,
    top_two,
)
from engines.components.formatting import ARG_CLOSE, ARG_OPEN, TARGET_CLOSE, TARGET_OPEN
from engines.components.records import (
    document_components,
    essay_key,
    labelled_documents,
    result_of,
    text_key,
    verdict_of,
)
from engines.datasets.ukp_essays import DATA_ENV, Essay, EssayComponent, load_ukp_essays
from engines.errors import ArgtuiError
from engines.judging.evaluate import run_task
from engines.judging.identity import judge_id
from engines.judging.store import JudgmentStore
from engines.judging.task import default_options
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from engines.llm.types import Usage
from engines.tasks.components import COUNT_DEFAULTS, DEFAULT_TURN_TOKENS, TASK, label_text
from fakes import FakeServer, Reply, chat_reply, logprob_entry
from store import Database
from store import components as store_components
from store.components import copy_v1, text_digest

UKP = "ukp-argument-annotated-essays-v2"
FIRST_TOKENS = {"MajorClaim": "Major", "Claim": "Cl", "Premise": "Prem"}
TAGS = re.compile(r"</?(?:TARGET|ARG)>")
DIGEST = re.compile(r" #[0-9a-f]{8}$")  # what a judge's name carries of its prompts, sampling and options

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

    def __call__(self, body: dict) -> Reply:
        self.bodies.append(body)
        if "grammar" not in body:
            return self._reply(self.text, None)
        target = re.search(r"<TARGET>(.*?)</TARGET>", body["messages"][-1]["content"])
        if target is None:  # a verdict after a reasoning turn: find the target in the question before it
            target = re.search(r"<TARGET>(.*?)</TARGET>", body["messages"][-3]["content"])
        answer = self.answers.get(target.group(1), "Premise")
        return self._reply(answer, FIRST_TOKENS.get(answer) if body.get("logprobs") else None)

    @staticmethod
    def _reply(content: str, first_token: str | None) -> Reply:
        logprobs = None
        if first_token is not None:
            # The chosen label is most likely; the others follow at fixed log probabilities.
            others = [FIRST_TOKENS[label] for label in LABELS if FIRST_TOKENS[label] != first_token]
            top = [(first_token, math.log(0.6)), (others[0], math.log(0.3)), (others[1], math.log(0.1))]
            logprobs = [logprob_entry(first_token, top[0][1], top), logprob_entry(content[len(first_token):], 0.0)]
        return chat_reply(content, logprobs=logprobs, prompt_tokens=10, completion_tokens=4)


@asynccontextmanager
async def scripted_client(server: ScriptedServer):
    with FakeServer(server) as fake:
        async with LLMClient(fake.profile(name="scripted", kind="llamacpp", retries=0)) as client:
            yield client


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
    assert result.usage.calls == 7 == len(server.bodies) and result.usage.cached_calls == 0
    assert result.usage.prompt_tokens == 70 and result.usage.completion_tokens == 28 and result.seconds > 0
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
    assert result.skipped and result.label == "MajorClaim" and result.usage.calls == 1 and result.transcript == ()
    assert "0.60 exceeds 0.50" in result.reason


async def test_vanilla_and_chain_of_thought():
    server = ScriptedServer({ESSAY.components[3].text: "Premise"}, text="It supports the claim before it.")
    async with scripted_client(server) as client:
        vanilla = await classify_component(client, ESSAY.text, spans_of(ESSAY), 3, "vanilla")
        cot = await classify_component(client, ESSAY.text, spans_of(ESSAY), 3, "cot")
    assert vanilla.label == "Premise" and vanilla.usage.calls == 1 and vanilla.transcript == ()
    assert cot.label == "Premise" and cot.usage.calls == 2
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


# ---------------------------------------------------------------------- the task: evaluation and storage


@pytest.fixture
def runtime():
    runtime = Runtime()
    yield runtime
    runtime.db.close()


def write_brat(folder: Path, *essays: Essay) -> Path:
    """The essays as a UKP release folder (brat standoff files only)."""
    brat = folder / "brat-project-final"
    brat.mkdir(parents=True)
    for essay in essays:
        (brat / f"{essay.id}.txt").write_text(essay.text, encoding="utf-8")
        (brat / f"{essay.id}.ann").write_text(
            "".join(f"{c.id}\t{c.label} {c.start} {c.end}\t{c.text}\n" for c in essay.components), encoding="utf-8"
        )
    return folder


ANSWERS = {
    "towns must keep their public libraries": "MajorClaim",
    "Libraries are more than shelves of books": "Claim",
    "many people borrow laptops there": "Premise",
    "children learn to love reading in them": "Premise",
    "a town without a library is poorer": "Banana",  # not a label: invalid, counted as wrong
}


async def test_eval_scores_every_component_counts_invalid_and_resumes(runtime, tmp_path):
    server = ScriptedServer(ANSWERS)
    options = default_options(TASK, data=write_brat(tmp_path, ESSAY), split="all")
    TASK.check_options(options)
    items = TASK.items(runtime, options)
    assert [item.key for item in items] == [f"essay900/T{n}" for n in range(1, 6)]
    assert [item.reference for item in items] == [c.label for c in ESSAY.components]
    async with scripted_client(server) as client:
        first = await run_task(runtime, TASK, client, "vanilla", options, items)
        assert first.outcome.judged_now == 5 and first.outcome.progress.invalid == 1 and len(server.bodies) == 5
        again = await run_task(runtime, TASK, client, "vanilla", options, items)
    assert again.outcome.resumed == 5 and again.outcome.judged_now == 0 and len(server.bodies) == 5
    data = again.report.data
    # gold MC C C P P, predicted MC C P P invalid (hand-computed):
    # MajorClaim P=R=F1=1; Claim P=1 R=1/2 F1=2/3; Premise P=1/2 R=1/2 F1=1/2.
    assert data["per_class"]["MajorClaim"]["f1"] == pytest.approx(1.0)
    assert data["per_class"]["Claim"]["f1"] == pytest.approx(2 / 3)
    assert data["per_class"]["Premise"]["precision"] == pytest.approx(1 / 2)
    assert data["macro_f1"] == pytest.approx((1 + 2 / 3 + 1 / 2) / 3)
    assert data["weighted_f1"] == pytest.approx((1 * 1 + 2 / 3 * 2 + 1 / 2 * 2) / 5)
    assert data["accuracy"] == pytest.approx(3 / 5) and data["invalid"] == 1 and data["n"] == 5
    assert data["confusion"]["Claim"] == {"MajorClaim": 0, "Claim": 1, "Premise": 1, "invalid": 0}
    assert data["confusion"]["Premise"] == {"MajorClaim": 0, "Claim": 0, "Premise": 1, "invalid": 1}
    assert data["calls_per_component"] == 1.0 and data["components"] == 5 and data["essays"] == 1
    assert data["tokens_per_component"] == 14.0 and data["method"] == "vanilla"
    scores, confusion = again.report.tables
    assert scores.rows[1] == ("Claim", 1.0, 0.5, pytest.approx(2 / 3), 2)
    assert "macro F1 0.722" in scores.caption and "invalid 1 of 5" in scores.caption
    assert confusion.columns[-1] == "invalid" and confusion.rows[2] == ("Premise", 0, 0, 1, 1)
    assert again.judge.name == f"m@scripted vanilla #{again.judge.digest}"  # its prompts and sampling digested
    assert again.report.title == f"vanilla on 1 essays (all), 5 components; judge {again.judge.name}"
    assert "1.00 calls" in again.report.notes[0]
    store = JudgmentStore(runtime.db, "components")
    invalid = store.load(again.judge, items)["essay900/T5"]
    assert invalid.label is None and invalid.raw == "Banana" and not invalid.valid
    assert ("essay900/T5", "Premise") in [(item, reference) for item, reference, _ in store.labelled(again.judge)]


async def test_mad_verdicts_keep_the_transcript_and_the_view_finds_them(runtime, tmp_path):
    server = ScriptedServer({}, text="The structure says so.")
    options = default_options(TASK, data=write_brat(tmp_path, ESSAY), split="all")
    items = TASK.items(runtime, options)
    async with scripted_client(server) as client:
        run = await run_task(runtime, TASK, client, "mad", options, items)
    assert run.judge.name == f"m@scripted mad #{run.judge.digest}" and run.report.data["calls_per_component"] == 7.0
    assert [row["component"] for row in run.report.predictions] == [c.id for c in ESSAY.components]
    assert run.report.predictions[1]["gold"] == "Claim" and len(run.report.predictions[1]["transcript"]) == 5
    [entry] = labelled_documents(runtime.db)
    assert (entry.name, entry.source, entry.text, entry.judge) == ("essay900", "ukp-essays", ESSAY.text, run.judge)
    components = document_components(runtime.db, entry)
    assert [c.result.span.text for c in components] == [c.text for c in ESSAY.components]
    assert [c.gold for c in components] == [c.label for c in ESSAY.components]
    third = components[2].result
    assert third.method == "mad" and third.usage.calls == 7
    assert [t.role for t in third.transcript] == ["proponent", "opponent", "proponent", "opponent", "judge"]
    assert all(t.text == "The structure says so." for t in third.transcript)
    assert third.proponent_label in LABELS and third.judge_distribution


def test_a_result_round_trips_through_its_verdict():
    span = Span(ESSAY.components[1].start, ESSAY.components[1].end, ESSAY.components[1].text)
    result = ComponentResult(
        span, "mad", "Claim", {"MajorClaim": 0.1, "Claim": 0.6, "Premise": 0.3}, "logprobs",
        transcript=(Turn("proponent", "It is a claim.", "Claim"), Turn("judge", "Claim it is.")),
        reason="Claim it is.", raw="Claim", proponent_label="Claim", opponent_label="Premise",
        judge_distribution={"Claim": 0.9, "Premise": 0.1}, usage=Usage(prompt_tokens=50, calls=7, cached_calls=3),
        seconds=2.5,
    )
    verdict = verdict_of(result)
    assert verdict.valid and verdict.label == "Claim" and verdict.distribution == result.distribution
    assert verdict.data["span"] == {"start": span.start, "end": span.end, "text": span.text}
    assert verdict.usage.calls == 7 and verdict.seconds == 2.5 and verdict.detail.startswith("Manager: MajorClaim 0.10")
    assert result_of(Verdict.model_validate_json(verdict.model_dump_json()), "mad") == result
    invalid = verdict_of(replace(result, label=None, raw="Thesis"))
    assert not invalid.valid and invalid.raw == "Thesis" and "MajorClaim, Claim, Premise" in invalid.invalid_reason


async def test_judge_names_carry_the_method_and_what_changes_answers():
    profile = BackendProfile(name="gpu", model="org/m", base_urls=["http://127.0.0.1:9/v1"])

    async def name(method: str, **overrides) -> tuple[str, str]:
        """The judge's variant and options digest (its name also digests the prompts)."""
        options = default_options(TASK, **overrides)
        TASK.check_options(options)
        judge = await judge_id(TASK, client, method, options)
        assert judge.name == f"org/m@gpu {judge.variant} #{judge.digest}" and judge.prompts
        return judge.variant, judge.options

    async with LLMClient(profile) as client:  # never asked anything: the model is in the profile
        plain = await name("mad")
        assert plain == await name("mad", votes=1, turn_tokens=DEFAULT_TURN_TOKENS)  # the defaults, given
        assert await name("mad", manager="gpu", judge="gpu") == plain  # the judge's own profile
        assert await name("mad", manager="small") != await name("mad", debaters="small") != plain
        assert len({await name("cot", **{budget: 512}) for budget in COUNT_DEFAULTS if budget != "votes"}) == 3
        assert await name("mad", seed=3) == ("mad/seed3", plain[1])
        assert await name("vanilla", seed=3) == await name("vanilla")
        assert await name("mad", votes=3) != plain
        assert await name("mad", votes=3) != await name("mad", votes=3, skip_threshold=0.9)
    with pytest.raises(ArgtuiError, match="probability"):
        TASK.check_options(default_options(TASK, skip_threshold=1.5))
    with pytest.raises(ArgtuiError, match="--judge-tokens must be at least 1"):
        TASK.check_options(default_options(TASK, judge_tokens=0))
    with pytest.raises(ArgtuiError, match="--manager sets a role of mad: add --method mad"):
        TASK.check_options(default_options(TASK, manager="small", variant=["vanilla", "COT"]))


async def test_a_labelled_text_is_stored_with_its_text_under_the_batch_judge_name(runtime):
    text = "Cities should ban cars from their centres. Traffic there is slow, because the streets are narrow."
    server = ScriptedServer({"Cities should ban cars from their centres": "MajorClaim"})
    async with scripted_client(server) as client:
        judge, results = await label_text(runtime, client, text, "vanilla", default_options(TASK))
        again, relabelled = await label_text(runtime, client, text, "vanilla", default_options(TASK))
    assert judge == again and judge.name == f"m@scripted vanilla #{judge.digest}"
    [entry] = labelled_documents(runtime.db)  # labelled twice: stored once
    assert entry.source == "typed" and entry.text == text and entry.name == "Cities should ban cars from their …"
    assert set(entry.items) == {text_key(text, r.span) for r in results} and len(entry.items) == 3
    components = document_components(runtime.db, entry)
    assert [c.result for c in components] == relabelled and all(c.gold is None for c in components)
    assert [c.result.label for c in components] == ["MajorClaim", "Premise", "Premise"]


def test_eval_components_needs_the_data_and_names_what_is_wrong(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(DATA_ENV, raising=False)
    assert main(["eval", "components"]) == 1
    assert "--data PATH" in capsys.readouterr().err
    brat = tmp_path / "brat-project-final"
    brat.mkdir()
    (brat / "essay001.txt").write_text("Short text here.")
    (brat / "essay001.ann").write_text("T1\tClaim 0 5\tShort\nT2\tClaim 0 99\tShort text here.\n")
    assert main(["eval", "components", "--data", str(tmp_path), "--split", "all"]) == 1
    err = capsys.readouterr().err
    assert "essay001.ann, line 2" in err and "outside the text" in err
    assert main(["eval", "components", "--data", str(tmp_path), "--skip-threshold", "2"]) == 1
    assert "probability between 0 and 1" in capsys.readouterr().err


def test_eval_components_command_prints_tables_writes_transcripts_and_resumes(monkeypatch, tmp_path, capsys):
    server = ScriptedServer(ANSWERS)
    with FakeServer(server) as fake:
        monkeypatch.setenv("ARGTUI_BASE_URL", fake.url)
        monkeypatch.setenv("ARGTUI_BACKEND_KIND", "llamacpp")
        monkeypatch.setenv("ARGTUI_MODEL", "m")
        output = tmp_path / "out" / "predictions.json"
        argv = ["eval", "components", "--data", str(write_brat(tmp_path / "essays", ESSAY)), "--split", "all",
                "--method", "VANILLA", "cot", "--limit", "1"]
        assert main([*argv, "--json", "--output", str(output)]) == 0
        results = json.loads(capsys.readouterr().out)["results"]
        assert [DIGEST.sub("", r["judge"]) for r in results] == ["m@env vanilla", "m@env cot"]
        assert [r["calls_per_component"] for r in results] == [1.0, 2.0]
        assert all(r["n"] == 5 and r["invalid"] == 1 and r["essays"] == 1 for r in results)
        written = json.loads(output.read_text())
        assert [w["metrics"]["run_id"] for w in written["runs"]] == [r["run_id"] for r in results]
        assert [row["judge"] for row in written["table"]["rows"]] == [r["judge"] for r in results]
        assert written["table"]["rows"][0]["macro_f1"] == round(100 * results[0]["macro_f1"], 1)
        predictions = written["runs"][1]["predictions"]
        assert [p["component"] for p in predictions] == ["T1", "T2", "T3", "T4", "T5"]
        assert predictions[1]["gold"] == "Claim" and predictions[1]["transcript"][0]["role"] == "reasoning"
        asked = len(server.bodies)
        assert asked == 15

        assert main([*argv[:-3], "--method", "vanilla"]) == 0  # stored: nothing is asked again
    table = capsys.readouterr().out
    assert len(server.bodies) == asked
    assert "Per-class scores" in table and "macro F1 0.722" in table and "Confusion matrix" in table
    assert "1.00 calls" in table and "0 judged now, 5 resumed, 1 invalid of 5" in table


# ---------------------------------------------------------------------- migration from schema 1

V1 = Path(__file__).parent / "data" / "argtui-v1.sqlite3"
OLD_TABLES = (
    """CREATE TABLE component_prediction (
        id INTEGER NOT NULL, run VARCHAR NOT NULL, document_id INTEGER NOT NULL, component VARCHAR NOT NULL,
        start INTEGER NOT NULL, "end" INTEGER NOT NULL, gold VARCHAR, method VARCHAR NOT NULL,
        judge VARCHAR NOT NULL, model VARCHAR NOT NULL, label VARCHAR, raw VARCHAR NOT NULL,
        distribution_json VARCHAR NOT NULL, distribution_source VARCHAR NOT NULL,
        judge_distribution_json VARCHAR NOT NULL, proponent_label VARCHAR, opponent_label VARCHAR,
        skipped BOOLEAN NOT NULL, reason VARCHAR NOT NULL, calls INTEGER NOT NULL, cached_calls INTEGER NOT NULL,
        seconds FLOAT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
        created_at DATETIME NOT NULL, PRIMARY KEY (id), UNIQUE (run, document_id, component),
        FOREIGN KEY(document_id) REFERENCES component_document (id))""",
    """CREATE TABLE component_turn (
        id INTEGER NOT NULL, prediction_id INTEGER NOT NULL, position INTEGER NOT NULL, role VARCHAR NOT NULL,
        label VARCHAR, text VARCHAR NOT NULL, PRIMARY KEY (id),
        FOREIGN KEY(prediction_id) REFERENCES component_prediction (id) ON DELETE CASCADE)""",
)
TYPED = "School uniforms should be mandatory. They make pupils equal."


async def test_copy_v1_carries_old_predictions_and_transcripts_into_judgments(db):
    with db.engine.begin() as conn:
        assert copy_v1(conn) == 0  # no old tables: nothing to do
        for table in OLD_TABLES:
            conn.exec_driver_sql(table)
        document = "INSERT INTO component_document (id, source, name, digest, text, created_at) VALUES (?, ?, ?, ?, ?, ?)"
        conn.exec_driver_sql(document, (1, "ukp-essays", "essay900", text_digest(ESSAY.text), ESSAY.text,
                                        "2025-05-01 10:00:00.000000"))
        conn.exec_driver_sql(document, (2, "typed", "School uniforms should be mandatory. They …",
                                        text_digest(TYPED), TYPED, "2025-05-02 10:00:00.000000"))
        prediction = (
            "INSERT INTO component_prediction (id, run, document_id, component, start, \"end\", gold, method, judge, "
            "model, label, raw, distribution_json, distribution_source, judge_distribution_json, proponent_label, "
            "opponent_label, skipped, reason, calls, cached_calls, seconds, prompt_tokens, completion_tokens, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        claim = ESSAY.components[1]
        conn.exec_driver_sql(prediction, (
            1, "ukp-essays:mad:gpu:org/m:seed2:rounds2:votes3:turn64:judge64:skip0.8", 1, "T2", claim.start,
            claim.end, "Claim", "mad", "gpu", "org/m", "Premise", "Premise",
            '{"MajorClaim": 0.0, "Claim": 0.67, "Premise": 0.33}', "votes", '{"Claim": 0.2, "Premise": 0.8}',
            "Claim", "Premise", 0, "It supports the thesis.", 9, 2, 9.5, 700, 90, "2025-05-01 10:05:00.000000",
        ))
        conn.exec_driver_sql(prediction, (
            2, "live:vanilla:embedded", 2, "S1", 0, 35, None, "vanilla", "embedded", "SmolLM2-135M-Instruct",
            None, "Thesis", "{}", "logprobs", "{}", None, None, 0, "", 1, 0, 1.5, 60, 1,
            "2025-05-02 10:05:00.000000",
        ))
        debate = [("proponent", "Claim", "It states a position."), ("opponent", "Premise", "It backs the thesis."),
                  ("judge", None, "It supports the thesis.")]
        for position, (role, label, text) in enumerate(debate):
            conn.exec_driver_sql(
                "INSERT INTO component_turn (prediction_id, position, role, label, text) VALUES (1, ?, ?, ?, ?)",
                (position, role, label, text),
            )
        assert copy_v1(conn) == 2
    store = JudgmentStore(db, "components")
    options = default_options(TASK, seed=2, votes=3, turn_tokens=64, judge_tokens=64, skip_threshold=0.8)
    async with LLMClient(BackendProfile(name="gpu", model="org/m", base_urls=["http://127.0.0.1:9/v1"])) as client:
        rerun = await judge_id(TASK, client, "mad", options)
    [mad] = [stored.judge for stored in store.judges() if stored.judge.variant == rerun.variant]
    assert (mad.profile, mad.model, mad.options != "", mad.prompts) == (rerun.profile, rerun.model, True, "")
    assert rerun.name != mad.name  # a rerun judges anew (its prompts are digested): the old verdicts stay
    [verdict] = store.latest(mad).items()
    assert verdict[0] == essay_key("essay900", "T2")
    assert result_of(verdict[1], "mad") == ComponentResult(
        Span(claim.start, claim.end, claim.text), "mad", "Premise", {"MajorClaim": 0.0, "Claim": 0.67, "Premise": 0.33},
        "votes", transcript=tuple(Turn(role, text, label) for role, label, text in debate),
        reason="It supports the thesis.", raw="Premise", proponent_label="Claim", opponent_label="Premise",
        judge_distribution={"Claim": 0.2, "Premise": 0.8},
        usage=Usage(prompt_tokens=700, completion_tokens=90, calls=9, cached_calls=2), seconds=9.5,
    )
    assert [(item, reference) for item, reference, _ in store.labelled(mad)] == [("essay900/T2", "Claim")]
    live = JudgeId.of("embedded", "SmolLM2-135M-Instruct", "vanilla")  # vanilla has no token limit to name
    [(key, invalid)] = store.latest(live).items()
    assert key == text_key(TYPED, Span(0, 35, TYPED[:35])) and not invalid.valid and invalid.raw == "Thesis"
    assert {(entry.name, entry.judge) for entry in labelled_documents(db)} == {
        ("essay900", mad), ("School uniforms should be mandatory. They …", live),
    }
    assert (
        store_components.DEFAULT_VOTES, store_components.DEFAULT_TURN_TOKENS,
        store_components.DEFAULT_JUDGE_TOKENS, store_components.DEFAULT_REASONING_TOKENS,
    ) == tuple(COUNT_DEFAULTS.values())
    with db.engine.begin() as conn:
        assert copy_v1(conn) == 2  # again: the same judgments, replaced, not doubled
    assert sorted(judge.judgments for judge in store.judges()) == [1, 1]


def test_copy_v1_on_a_database_of_the_previous_release(tmp_path):
    path = tmp_path / "argtui.sqlite3"
    shutil.copy(V1, path)
    db = Database(path)
    try:
        with db.engine.begin() as conn:
            assert copy_v1(conn) == 14
        judge = JudgeId.of("embedded", "SmolLM2-135M-Instruct", "vanilla")
        store = JudgmentStore(db, "components")
        assert [(j.judge, j.judgments, j.invalid) for j in store.judges()] == [(judge, 14, 0)]
        assert len(store.labelled(judge)) == 11
        entries = {entry.name: entry for entry in labelled_documents(db)}
        assert {name: len(entry.items) for name, entry in entries.items()} == {
            "essay004": 11, "School uniforms should be mandatory. They …": 3,
        }
        essay = entries["essay004"]
        components = document_components(db, essay)
        assert all(essay.text[c.result.span.start : c.result.span.end] == c.result.span.text for c in components)
        assert all(c.gold in LABELS and c.result.label in LABELS and c.result.usage.calls == 1 for c in components)
    finally:
        db.close()
