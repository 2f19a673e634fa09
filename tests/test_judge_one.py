"""One path to judge an item (`engines.judging.judge_one`): every front end that judges one item
(the Arena, the Coach, a live debate's Grice maxims, `label_text`, the drills) stores its verdict
under the judge `run_task` with the same options settles on, so a batch run judges it no more."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from fsrs import Card

from argtui.app import ArgtuiApp
from argtui.config import load_config
from argtui.runtime import Runtime
from engines.debate.records import DebateRecords, GriceRecord, MetricRecord, StoredTurn
from engines.grice import DEFAULT_STRATEGY, METRICS
from engines.grice.types import GriceContext
from engines.inspire.settings import InspireSettings
from engines.judging import task as registry
from engines.judging.evaluate import run_task
from engines.judging.judge_one import JudgedItem, judge_one, settle
from engines.judging.store import JudgmentStore, arena_key
from engines.judging.task import TaskItem, default_options
from engines.judging.verdict import JudgeId, JudgeVariant, Verdict
from engines.student.drills import answer_drill, drill_of
from engines.tasks.components import TASK as COMPONENTS, label_text
from engines.tasks.debate_judges import TaskJudges, grice_item
from engines.tasks.grice import TASK as GRICE
from engines.tasks.inspire import TASK as INSPIRE, VARIANT, InspireOptions
from screens.arena import ArenaScreen, JudgeCard, JudgeColumn
from screens.glossary import JudgeName
from store.debates import DebateRepository
from store.drills import DrillCard, DrillRepository
from store.students import StudentRepository
from test_inspire_facts import SURVEY, TOPIC, write_statements
from test_judging_core import ToyTask, items

MESSAGE = "Families pay a lot for uniforms, a survey found."
REPLY = "Uniforms cost families money every year, and a survey found that they pay a lot for them."


@pytest.fixture
def patient(llama_profile):
    """The llama-server profile as the config's default, patient on two shared cores."""
    profile = llama_profile.model_copy(update={"timeout_s": 600.0})
    load_config().add_backend(profile, make_default=True)
    return profile


@pytest.fixture
def configured_facts(tmp_path, patient):
    """A fact source chosen by the config file alone: the inspire judge's identity names it only
    when its options are settled (`task.settled_options`)."""
    facts = write_statements(tmp_path / "facts.jsonl", {"id": SURVEY.id, "text": SURVEY.text})
    config = load_config()
    config.inspire = InspireSettings(facts=str(facts))
    config.save()
    return facts


@pytest.mark.llm
async def test_judge_one_stores_under_the_run_tasks_judge_after_telling_the_answer(patient):
    toy = registry.declared(ToyTask())  # of the bare protocol: the base's defaults fill in the rest
    runtime = Runtime()
    store = JudgmentStore(runtime.db, toy.name)
    told: list[tuple[JudgedItem, int]] = []

    async def shown(judged: JudgedItem) -> None:
        told.append((judged, len(store.judged(judged.judge))))  # what was stored when the answer was told

    try:
        client = await runtime.client()
        [item] = items(2)[1:]
        judged = await judge_one(runtime, toy, client, "parity", default_options(toy), item, on_answer=shown)
        in_arena = await judge_one(runtime, toy, client, "parity", default_options(toy), item,
                                   store_as=arena_key(item.key))
        run = await run_task(runtime, toy, client, "parity", default_options(toy), [item])
    finally:
        await runtime.aclose()
    assert told == [(judged, 0)] and judged.verdict.label == "yes" and judged.verdict.seconds > 0
    assert run.judge == judged.judge == in_arena.judge and run.outcome.judged_now == 0  # judge_one's verdict kept
    assert store.judged(judged.judge) == {item.key, arena_key(item.key)} and in_arena.item.key == arena_key(item.key)


@pytest.mark.llm
async def test_the_arena_eval_inspire_and_the_coach_are_one_judge(configured_facts, patient, until):
    runtime = Runtime()
    repository = DebateRepository(runtime.db)
    debate = repository.create(TOPIC, "pro", backend=patient.name)
    DebateRecords(repository).add_message(debate.id, MESSAGE)
    store = JudgmentStore(runtime.db, INSPIRE.name)
    try:
        client = await runtime.client()
        # The Coach, as a live debate scores the student's turn (TaskJudges.coach).
        judgment, _ = await TaskJudges(runtime, client).coach(debate.id, DebateRecords(repository).turns(debate.id)[0])
        options = InspireOptions(debate=debate.id)
        run = await run_task(runtime, INSPIRE, client, VARIANT, options, INSPIRE.items(runtime, options))
    finally:
        await runtime.aclose()
    assert judgment.score.facts.source == f"fact source {configured_facts.name}"
    # `argtui eval inspire --debate ID` is the Coach's judge: the turn is not judged again.
    assert (run.outcome.judged_now, run.outcome.resumed) == (0, 1)
    assert [stored.judge for stored in store.judges()] == [run.judge]

    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = ArenaScreen(task="inspire", seed=0, judges=[JudgeColumn(patient.name, VARIANT)])
        await app.push_screen(screen)
        card = screen.query_one(JudgeCard)
        await until(pilot, lambda: card.answer is not None, timeout_s=900)
        await until(pilot, lambda: store.arena_items(run.judge) == 1)
    assert card.judge == run.judge and [stored.judge for stored in store.judges()] == [run.judge]


@pytest.mark.llm
async def test_a_live_debates_grice_judgment_is_the_run_tasks(patient):
    reply = StoredTurn(id=2, position=1, role="assistant", content=REPLY)
    context = GriceContext(dialogue=(("user", MESSAGE),), reply=REPLY)
    heard: list[MetricRecord] = []
    runtime = Runtime()
    try:
        client = await runtime.client()
        stored, record = await TaskJudges(runtime, client).grice(7, reply, context, "ZSL", heard.append)
        expected = (await settle(runtime, GRICE, client, "ZSL", default_options(GRICE))).judge
    finally:
        await runtime.aclose()
    item = grice_item(7, reply, context)
    assert sorted(maxim.metric for maxim in heard) == sorted(METRICS)  # each maxim told as it finished
    assert stored.judge == expected.name and stored.items == (item.key,)
    # Stored under the run's judge with the item's content: a run over the turn judges it no more.
    [verdict] = JudgmentStore(runtime.db, GRICE.name).load(expected, [item]).values()
    assert record == GriceRecord.of_verdict(verdict) and verdict.seconds > 0


@pytest.mark.llm
async def test_label_text_stores_under_the_components_judge_a_run_settles_on(patient):
    runtime = Runtime()
    try:
        client = await runtime.client()
        options = default_options(COMPONENTS)
        judge, results = await label_text(runtime, client, MESSAGE, "vanilla", options)
        expected = (await settle(runtime, COMPONENTS, client, "vanilla", options)).judge
    finally:
        await runtime.aclose()
    assert results and judge == expected
    assert [stored.judge for stored in JudgmentStore(runtime.db, COMPONENTS.name).judges()] == [expected]


def test_a_stored_judges_variant_reads_as_its_code_qualifier_and_params(db):
    """A judge stored with its variant as text (every judge is) is read back with the parts apart:
    a screen shows them without splitting the text again."""
    store = JudgmentStore(db, GRICE.name)
    grice = JudgeId.of("gpu", "m", "BEST pool=builtin:a1d81efc", {"votes": 3})
    pairwise = JudgeId.of("gpu", "m", "few/runs3@t1")
    store.save(grice, [(TaskItem("t1", "turn", "text"), Verdict(label="yes"))])
    [stored] = store.judges()
    assert stored.judge == grice and stored.judge.variant_parts == JudgeVariant(code="BEST", params={"pool": "builtin:a1d81efc"})
    assert pairwise.variant_parts == JudgeVariant(code="few", qualifier="runs3@t1")
    assert JudgeName("grice", grice).variant == "BEST" and JudgeName("grice", grice).rest.startswith("pool=builtin:a1d81efc #")
    assert JudgeName("pairwise", pairwise).short_variant.endswith(" runs3@t1")
    panel = JudgeId.of_panel([pairwise, JudgeId.of("cpu", "m", "zero/runs3@t1")])
    assert panel.variant_parts == JudgeVariant(code="panel(cpu:zero+gpu:few)", qualifier="runs3@t1")
    mixed = JudgeId.of_panel([pairwise, JudgeId.of("gpu", "m", "zero/swap@t0")])
    assert mixed.variant_parts == JudgeVariant(code="panel(few/runs3@t1+zero/swap@t0)")


def drill(runtime: Runtime, kind: str, skill: str, material: str) -> object:
    """A drill of `kind` due now for a new student."""
    now = datetime.now(timezone.utc)
    student = StudentRepository(runtime.db).add("Ann")
    [card] = DrillRepository(runtime.db).add_new([DrillCard(
        student_id=student.id, kind=kind, skill=skill, topic=TOPIC, prompt="answer", material=material,
        card_json=Card(due=now).to_json(), due=now, created_at=now,
    )])
    return drill_of(card)


@pytest.mark.llm
async def test_a_quantity_drill_is_stored_under_the_grice_judge_a_run_settles_on(patient):
    runtime = Runtime()
    rewrite = drill(runtime, "quantity_rewrite", "clarity", REPLY)
    try:
        client = await runtime.client()
        result = await answer_drill(runtime, client, rewrite, "Uniforms cost families money every year.")
        expected = (await settle(runtime, GRICE, client, DEFAULT_STRATEGY, default_options(GRICE))).judge
    finally:
        await runtime.aclose()
    assert result.feedback.startswith("Quantity ")
    store = JudgmentStore(runtime.db, GRICE.name)
    assert [stored.judge for stored in store.judges()] == [expected]
    assert list(store.latest(expected)) == [f"drill:{rewrite.id}/1"]


@pytest.mark.llm
async def test_a_rebuttal_drill_is_stored_under_the_inspire_judge_a_run_settles_on(configured_facts, patient):
    runtime = Runtime()
    rebut = drill(runtime, "rebut", "relevance", "Uniforms are cheap, so every school should require them.")
    try:
        client = await runtime.client()
        await answer_drill(runtime, client, rebut, MESSAGE)
        expected = (await settle(runtime, INSPIRE, client, VARIANT, InspireOptions())).judge
    finally:
        await runtime.aclose()
    store = JudgmentStore(runtime.db, INSPIRE.name)
    assert [stored.judge for stored in store.judges()] == [expected]
    assert list(store.latest(expected)) == [f"drill:{rebut.id}/1"]
