"""Drills on a student's weak skills: planned from the weakest skills of their debates, judged by
the same judges as the tasks (the derivation drill by the logic checker, with no model), and
rescheduled by FSRS, so a good answer pushes a drill later than a failed one; `argtui drill`
runs the first due drill in the terminal, and the Drills screen does it with a worker."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from rich.text import Text
from textual.widgets import DataTable, Static, TextArea

from argtui.app import ArgtuiApp
from argtui.cli import main
from argtui.runtime import Runtime
from engines.errors import ArgtuiError
from engines.inspire.score import DerivationRecord, LogicResult
from engines.judging.store import JudgmentStore
from engines.llm.client import LLMClient
from engines.student.drills import (
    FALLACIES,
    SCHEDULER,
    answer_drill,
    due_drills,
    grade_of,
    judge_derivation,
    plan_drills,
    student_drills,
)
from engines.student.progress import WeakSpot, student_progress
from engines.tasks.grice import TASK as GRICE
from screens.drills import DrillsScreen
from store.drills import DrillRepository
from store.students import StudentRepository
from test_progress import INSPIRE_JUDGE, debate_of, dialogue_of, inspire_score, save_inspire
from test_terminal_sizes import settle

NOW = datetime.now(timezone.utc) + timedelta(hours=1)  # a review after the drills were planned
FIXED = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
# A valid repair of each of the first two fallacies (same conclusion), and a failed one (the fallacy again).
REPAIRS = (
    "forall x. (Cheap(x) -> Uniform(x)) ; Cheap(school) |- Uniform(school)",
    "~BanCars -> ~CleanAir ; ~BanCars |- ~CleanAir",
)
OWN_INVALID = DerivationRecord(premises=("CostsMoney(uniforms)", "forall x. (Banned(x) -> CostsMoney(x))"),
                               conclusion="Banned(uniforms)", status="invalid")
MESSAGE = "Uniforms cost money, so schools should drop them and families would be better off anyway."


def weak_spot(dimension: str, turn: int = 1, text: str = "") -> WeakSpot:
    """A weak spot of a debate not stored: a derivation drill on it gets a fallacy chosen by the turn."""
    return WeakSpot(dimension=dimension, title=dimension, mean=0.1, example_debate=0, example_turn=turn,
                    example_text=text)


async def two_derivation_drills(db) -> tuple[int, list]:
    """Ann with two derivation drills (the first two fallacies: she has no stored derivation of her own)."""
    ann = StudentRepository(db).add("Ann")
    drills = await plan_drills(db, ann.id, [weak_spot("logical_validity", 1), weak_spot("logical_validity", 2),
                                            weak_spot("logical_validity", 1)], None)  # the last one is the first
    return ann.id, drills


def test_every_fallacy_is_invalid_and_its_repair_valid():
    for fallacy in FALLACIES:
        judged = judge_derivation(fallacy, fallacy)
        assert judged.score == 0.0 and "can all be true while the conclusion is false" in judged.feedback
    for fallacy, repair in zip(FALLACIES, REPAIRS):
        assert judge_derivation(fallacy, repair).score == 1.0


def test_an_answer_with_another_conclusion_or_no_turnstile_fails_with_the_reason():
    changed = judge_derivation(FALLACIES[1], "BanCars -> CleanAir ; BanCars |- CleanAir")
    assert changed.score == 0.0 and "Keep the conclusion ~CleanAir" in changed.feedback
    unreadable = judge_derivation(FALLACIES[1], "BanCars so CleanAir")
    assert unreadable.score is None and "no turnstile" in unreadable.feedback
    assert grade_of(unreadable.score) == grade_of(0.0) == 1  # Again, either way


async def test_a_good_answer_pushes_the_drill_later_than_a_failed_one():
    runtime = Runtime()
    student_id, (first, second) = await two_derivation_drills(runtime.db)
    assert (first.material, second.material) == FALLACIES[:2]
    assert [d.id for d in due_drills(runtime.db, student_id, NOW)] == [first.id, second.id]

    good = await answer_drill(runtime, None, first, REPAIRS[0], now=NOW)  # no model: the logic checker judges
    failed = await answer_drill(runtime, None, second, second.material, now=NOW)
    assert (good.grade_name, good.score, failed.grade_name, failed.score) == ("Easy", 1.0, "Again", 0.0)
    assert failed.next_due - NOW == SCHEDULER.learning_steps[0]  # back within the session
    assert good.next_due - NOW >= timedelta(days=2)
    assert [d.id for d in due_drills(runtime.db, student_id, NOW + timedelta(hours=1))] == [second.id]
    stored = {d.id: d.due for d in student_drills(runtime.db, student_id)}
    assert stored == {first.id: good.next_due, second.id: failed.next_due}

    # The failed drill answered well at its next review moves out to a day or more.
    retry = await answer_drill(runtime, None, due_drills(runtime.db, student_id, failed.next_due)[0],
                               REPAIRS[1], now=failed.next_due)
    assert retry.grade_name == "Easy" and retry.next_due - failed.next_due >= timedelta(days=1)
    reviews = DrillRepository(runtime.db).reviews(second.id)
    assert [(r.grade, r.score, r.answer) for r in reviews] == [(1, 0.0, second.material), (4, 1.0, REPAIRS[1])]


async def test_drills_are_planned_from_the_weakest_skills_of_the_debates(retriever):
    runtime = Runtime()
    db = runtime.db
    ann = StudentRepository(db).add("Ann")
    debate_id = debate_of(db, ann.id, 2, [MESSAGE])
    # emotional appeal, clarity, arrangement, relevance; S_LV; facts: logic, relevance and clarity are weakest
    score = inspire_score((0.9, 0.3, 0.8, 0.25), 0.0, ("supported",))
    save_inspire(db, INSPIRE_JUDGE, debate_id, dialogue_of(db, debate_id), 0,
                 score.model_copy(update={"logic": LogicResult(checks=(OWN_INVALID,), score=0.0)}))
    weak = student_progress(db, ann.id).weakest
    assert [spot.dimension for spot in weak] == ["logical_validity", "relevance", "clarity"]

    drills = await plan_drills(db, ann.id, weak, retriever)
    by_kind = {drill.kind: drill for drill in drills}
    assert [drill.kind for drill in drills] == ["valid_derivation", "rebut", "quantity_rewrite"]
    assert by_kind["valid_derivation"].material == (  # her own invalid step, as the Coach formalised it
        "CostsMoney(uniforms) ; forall x. (Banned(x) -> CostsMoney(x)) |- Banned(uniforms)")
    rebut = by_kind["rebut"].material
    assert rebut and rebut != MESSAGE and (await retriever.search(rebut, k=1))[0].argument.text == rebut
    assert by_kind["quantity_rewrite"].material == MESSAGE
    assert {drill.topic for drill in drills} == {"School uniforms should be mandatory"}
    assert all(drill.due <= datetime.now(timezone.utc) for drill in drills)
    assert await plan_drills(db, ann.id, weak, retriever) == []  # the same weak spots: nothing new
    assert judge_derivation(by_kind["valid_derivation"].material,
                            "forall x. (CostsMoney(x) -> Banned(x)) ; CostsMoney(uniforms) |- Banned(uniforms)"
                            ).score == 1.0


async def test_a_rebuttal_without_the_argument_base_is_not_planned_and_a_model_kind_needs_a_model():
    runtime = Runtime()
    ann = StudentRepository(runtime.db).add("Ann")
    assert await plan_drills(runtime.db, ann.id, [weak_spot("relevance", text=MESSAGE)], None) == []
    [rewrite] = await plan_drills(runtime.db, ann.id, [weak_spot("clarity", text=MESSAGE)], None)
    with pytest.raises(ArgtuiError, match="judged by a model"):
        await answer_drill(runtime, None, rewrite, "One point.")
    assert DrillRepository(runtime.db).reviews(rewrite.id) == []


def test_the_command_runs_the_first_due_drill_with_the_answer_given(capsys):
    import asyncio

    runtime = Runtime()
    student_id, (first, second) = asyncio.run(two_derivation_drills(runtime.db))
    assert main(["drill", "--student", "Ann", "--answer", REPAIRS[0]]) == 0
    out, err = capsys.readouterr()
    assert f"Judging drill {first.id}" in err and " 2/2 " in err  # the progress, on stderr
    assert f"Drill {first.id}: Make the derivation valid (logical validity)" in out and FALLACIES[0] in out
    assert "Easy (score 1.00): This follows." in out and "next due 20" in out
    assert main(["drill", "--list"]) == 0  # the only student
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == [str(second.id), str(first.id)]  # the one still due first
    assert main(["drill", "--student", "Bea"]) == 1
    assert "no student named 'Bea'; the students are Ann" in capsys.readouterr().err


async def test_a_derivation_answer_of_six_premises_is_judged_and_an_endless_answer_is_refused():
    runtime = Runtime()
    ann = StudentRepository(runtime.db).add("Ann")
    [derivation] = await plan_drills(runtime.db, ann.id, [weak_spot("logical_validity", 2)], None)
    chain = "~BanCars -> A1 ; A1 -> A2 ; A2 -> A3 ; A3 -> ~CleanAir ; ~BanCars ; Sunny |- ~CleanAir"  # six premises
    assert (await answer_drill(runtime, None, derivation, chain, now=NOW)).score == 1.0
    [rewrite] = await plan_drills(runtime.db, ann.id, [weak_spot("clarity", text=MESSAGE)], None)
    limit = runtime.debate_settings.max_message_words
    endless = "word " * 42_000  # 210 kB, far past any judge's context
    with pytest.raises(ArgtuiError, match=f"your answer has 42,000 words; .* at most {limit} .*max_message_words"):
        await answer_drill(runtime, None, rewrite, endless)
    assert DrillRepository(runtime.db).reviews(rewrite.id) == []
    judged = await answer_drill(runtime, None, derivation, "P ; " * 200 + "Q |- ~CleanAir", now=NOW)
    assert judged.score is None and "a line may have at most" in judged.feedback  # a line's limits, in words


def test_the_student_given_before_the_command_is_the_drills_student(capsys):
    import asyncio

    runtime = Runtime()
    asyncio.run(two_derivation_drills(runtime.db))
    StudentRepository(runtime.db).add("Bea")
    assert main(["--student", "Ann", "drill", "--list"]) == 0  # two students: without it, one must be named
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert main(["--student", "Bea", "drill", "--student", "Ann", "--list"]) == 1
    assert "two students given" in capsys.readouterr().err


@pytest.mark.llm
async def test_a_rewrite_is_judged_by_the_grice_quantity_question_and_stored(llama_profile):
    runtime = Runtime()
    ann = StudentRepository(runtime.db).add("Ann")
    [rewrite] = await plan_drills(runtime.db, ann.id, [weak_spot("clarity", text=MESSAGE)], None)
    async with LLMClient(llama_profile.model_copy(update={"timeout_s": 600.0})) as client:
        result = await answer_drill(runtime, client, rewrite, "Uniforms cost families money every year.")
    assert result.score is not None and 0.0 <= result.score <= 1.0 and result.feedback.startswith("Quantity ")
    assert result.grade == grade_of(result.score) and result.next_due > rewrite.due
    store = JudgmentStore(runtime.db, GRICE.name)
    [judge] = store.judges()
    assert list(store.latest(judge.judge)) == [f"drill:{rewrite.id}/1"]


async def open_drills(app: ArgtuiApp, pilot) -> DrillsScreen:
    student_id, _ = await two_derivation_drills(app.services.db)
    screen = DrillsScreen(student_id)
    await app.push_screen(screen)
    await settle(app, pilot)
    return screen


async def test_a_drill_opens_with_enter_and_its_answer_is_judged_and_rescheduled(closed_backend):
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_drills(app, pilot)
        table = screen.query_one(DataTable)
        assert [str(table.get_row_at(row)[0]) for row in range(table.row_count)] == ["now", "now"]
        assert screen.sub_title == "Drills · Ann"
        table.focus()
        await pilot.press("enter")
        assert screen.opened is not None and screen.opened.material == FALLACIES[0]
        assert FALLACIES[0] in str(screen.query_one("#drill-material", Static).render())
        await pilot.press("ctrl+r")  # nothing typed yet
        assert "Type an answer first" in str(screen.query_one("#drill-result", Static).render())
        screen.query_one(TextArea).text = REPAIRS[0]
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        result = str(screen.query_one("#drill-result", Static).render())
        assert "Easy (score 1.00): This follows." in result and "Next due 20" in result
        assert [str(table.get_row_at(row)[0]) for row in range(table.row_count)][0] == "now"  # the other one
        assert str(table.get_row_at(1)[0]).endswith("UTC")
        await pilot.press("escape", "escape")  # out of the answer, then back to the list
        assert screen.opened is None and table.display


async def test_a_drill_material_is_never_read_as_markup(closed_backend):
    app = ArgtuiApp()
    async with app.run_test(size=(120, 40)) as pilot:
        db = app.services.db
        ann = StudentRepository(db).add("Ann")
        await plan_drills(db, ann.id, [weak_spot("clarity", text="[bold]costs[/bold] money")], None)
        screen = DrillsScreen(ann.id)
        await app.push_screen(screen)
        await settle(app, pilot)
        screen.open(screen.drills[0])
        await pilot.pause()
        assert "[bold]costs[/bold] money" in str(screen.query_one("#drill-material", Static).render())


SIZES = {"80x24": (80, 24), "120x40": (120, 40)}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("state", ["list", "open"])
def test_drills_screen_snapshot(state, size, closed_backend, argtui_home, monkeypatch, snap_compare):
    monkeypatch.chdir(argtui_home.parent)
    monkeypatch.setenv("ARGTUI_HOME", argtui_home.name)

    async def show(pilot) -> None:
        screen = await open_drills(pilot.app, pilot)
        if state == "open":
            screen.query_one(DataTable).focus()
            await pilot.press("enter")
            answer = screen.query_one(TextArea)
            answer.cursor_blink = False
            answer.text = "forall x. (Cheap(x) -> Uniform(x)) ;"
        await pilot.pause()

    assert snap_compare(ArgtuiApp(), terminal_size=SIZES[size], run_before=show)


def test_result_text_names_the_grade_and_the_next_due_date():
    from engines.student.drills import Drill, DrillResult
    from screens.drills import result_text

    drill = Drill(1, 1, "valid_derivation", "logical_validity", "p", FALLACIES[0], FIXED)
    text = result_text(DrillResult(drill, 1, None, "[red]unreadable[/red]", FIXED + timedelta(minutes=10)))
    assert isinstance(text, Text)
    assert text.plain == "Again (no score): [red]unreadable[/red]\nNext due 2026-03-02 09:10 UTC."
