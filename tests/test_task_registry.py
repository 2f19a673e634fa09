"""A task owns itself: a task defined only here, registered, shows in `argtui eval --list` and its
generated flags, the Arena (answering with an option set in its Options dialog), the Leaderboard,
the glossary and the palette, with no other edit."""

from __future__ import annotations

import json
import random
from typing import Annotated, Literal

import pytest
from textual.widgets import Input, Select, Static

from argtui.app import ArgtuiApp
from argtui.cli import main
from engines.errors import ArgtuiError
from engines.judging import task as registry
from engines.judging.options import OptionInfo, PositiveCount, TaskOptions
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskBase, TaskItem, TaskReport, VariantName, default_options
from engines.judging.verdict import Verdict
from screens.arena import ArenaScreen, JudgeCard, JudgeColumn
from screens.glossary import GlossaryScreen, glossary
from screens.leaderboard import LeaderboardScreen
from screens.palette import ScreenCommands
from screens.task_options import OptionsDialog

NAME = "toy-odd"
PAIRWISE = registry.task("pairwise")


class OddOptions(TaskOptions):
    numbers: Annotated[PositiveCount, OptionInfo("how many numbers to judge", metavar="N")] = 4
    odd_answer: Annotated[Literal["yes", "no"], OptionInfo(
        "what the judge answers for an odd number", label="answer for odd", role="judge")] = "yes"


class OddTask(TaskBase):
    """Is the number odd? Everything a front end shows of it is declared here."""

    name = NAME
    title = "Toy: is the number odd?"
    labels = ("yes", "no")
    variant_flag = "rule"
    variant_section = "Toy rules"
    variant_names = {
        "parity": VariantName("Parity rule", "Parity", "odd numbers are answered with --odd-answer"),
        "always": VariantName("Always yes", "Always", "every number is answered yes"),
    }
    Options = OddOptions

    def variants(self) -> tuple[str, ...]:
        return ("parity", "always")

    def items(self, ctx, options: OddOptions) -> list[TaskItem]:
        return [TaskItem(f"n{n}", f"number {n}", str(n), reference="yes" if n % 2 else "no", payload=n)
                for n in range(options.numbers)]

    def draw(self, ctx, rng: random.Random, **filters: str) -> TaskItem:
        return TaskItem("n3", "number 3", "3", reference="yes", payload=3)

    async def judge(self, ctx, item: TaskItem, variant: str, client, options: OddOptions) -> Verdict:
        label = "yes" if variant == "always" else options.odd_answer if item.payload % 2 else "no"
        return Verdict(label=label, distribution={label: 1.0})

    def report(self, ctx, judge, items, verdicts, options: OddOptions, run_id: int) -> TaskReport:
        right = sum(verdicts[item.key].label == item.reference for item in items)
        return TaskReport(f"{right} of {len(items)} right", data={"right": right})


@pytest.fixture
def odd_task():
    task = registry.register(OddTask())
    yield task
    registry.unregister(task.name)


def test_the_base_class_gives_the_defaults_and_the_model_gives_the_options(odd_task):
    assert odd_task.filters(None) == {} and odd_task.judge_variant("parity", None) == "parity"
    assert odd_task.probe_item(None, None).key == "n3" and odd_task.variant_name("other").title == "other"
    assert [(o.flag, o.control, o.judge_option) for o in odd_task.options] == [
        ("--numbers", "text", False), ("--odd-answer", "select", True)]
    options = default_options(odd_task, odd_answer="no")
    assert isinstance(options, OddOptions) and (options.numbers, options.odd_answer, options.limit) == (4, "no", None)
    with pytest.raises(ArgtuiError, match="--numbers must be at least 1"):
        default_options(odd_task, numbers=0)


def test_the_toy_task_is_listed_and_its_flags_come_from_its_options(odd_task, offline_backend, capsys):
    assert main(["eval", "--list"]) == 0
    out = capsys.readouterr().out
    assert NAME in out and "parity, always" in out
    with pytest.raises(SystemExit):
        main(["eval", NAME, "--help"])
    usage = capsys.readouterr().out
    assert "--odd-answer {yes,no}" in usage and "what the judge answers for an odd number" in usage
    assert main(["eval", NAME, "--numbers", "0"]) == 1  # bad input, checked by the model
    assert "--numbers must be at least 1" in capsys.readouterr().err
    # The flags reach the task typed: 3 numbers, odd ones answered "no", so only 0 and 2 are right.
    assert main(["eval", NAME, "--numbers", "3", "--odd-answer", "no", "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert result["items"] == 3 and result["right"] == 2


async def test_the_toy_task_shows_in_the_arena_with_an_option_set_there_then_the_leaderboard(
    odd_task, offline_backend, until
):
    app = ArgtuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        arena = ArenaScreen(task=NAME, seed=0, judges=[JudgeColumn(offline_backend, "parity")])
        await app.push_screen(arena)
        assert ("Toy: is the number odd?", NAME) in arena.query_one("#task", Select)._options
        card = arena.query_one(JudgeCard)
        await until(pilot, lambda: card.answer is not None)
        assert card.answer.label == "yes" and card.full_title == f"{offline_backend} · Parity rule (parity)"

        await pilot.press("o")  # the Options dialog, generated from the task's model
        await until(pilot, lambda: isinstance(app.screen, OptionsDialog))
        await pilot.pause()  # its controls mounted
        dialog = app.screen
        assert [option.name for option in dialog.shown_options] == ["odd_answer"]  # numbers changes no answer
        dialog.query_one("#option-odd_answer", Select).value = "no"
        await pilot.press("f10")
        await until(pilot, lambda: app.screen is arena)
        assert arena.task_options.odd_answer == "no"
        await until(pilot, lambda: card.answer is not None and card.answer.label == "no")

        store = JudgmentStore(app.services.db, NAME)
        await until(pilot, lambda: len(store.judges()) == 2)  # the option set is part of the judge
        app.pop_screen()
        board = LeaderboardScreen()
        await app.push_screen(board)
        await until(pilot, lambda: board.standings is not None)
        rows = dict((task.name, rows) for task, rows in board.standings)[NAME]
        assert len(rows) == 2 and sorted(row.accuracy for row in rows) == [0.0, 1.0]


async def test_the_toy_task_is_in_the_glossary_and_the_palette(odd_task, offline_backend):
    entries = [entry for entry in glossary() if entry.section == "Toy rules"]
    assert [entry.term for entry in entries] == ["Parity rule — parity", "Always yes — always"]
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f9")
        assert isinstance(app.screen, GlossaryScreen)
        assert "Parity rule — parity" in str(app.screen.query_one("#glossary", Static).render())
        provider = ScreenCommands(app.screen)
        found = [hit.text async for hit in provider.search("parity rule")]
        assert "Glossary: Parity rule — parity · Toy rules" in found



async def test_a_real_tasks_options_dialog_refuses_a_bad_entry_and_judges_with_a_good_one(offline_backend, until):
    app = ArgtuiApp()
    async with app.run_test(size=(80, 24)) as pilot:
        arena = ArenaScreen(task="pairwise", seed=0, judges=[JudgeColumn(offline_backend, "zero")], auto_judge=False)
        await app.push_screen(arena)
        await until(pilot, lambda: arena.item is not None)
        arena.action_options()
        await until(pilot, lambda: isinstance(app.screen, OptionsDialog))
        await pilot.pause()  # its controls mounted
        dialog = app.screen
        assert [option.name for option in dialog.shown_options] == [
            "mode", "runs", "temperature", "run_requests", "fewshot_rule"]  # what changes the answers
        dialog.query_one("#option-runs", Input).value = "0"
        await pilot.press("f10")
        await pilot.pause()
        assert app.screen is dialog and "--runs must be at least 1" in str(
            dialog.query_one("#options-error", Static).render())
        dialog.query_one("#option-runs", Input).value = "5"
        dialog.query_one("#option-temperature", Input).value = "0.7"
        await pilot.press("f10")
        await until(pilot, lambda: app.screen is arena)
        assert (arena.task_options.runs, arena.task_options.temperature) == (5, 0.7)
        assert PAIRWISE.judge_variant("zero", arena.task_options) == "zero/runs5@t0.7"  # the judge these name


def test_a_task_that_names_no_variant_is_in_the_glossary_by_its_codes():
    class PlainTask(TaskBase):
        name, title, variant_flag = "toy-plain", "Toy: plain", "rule"

        def variants(self) -> tuple[str, ...]:
            return ("first", "second")

    registry.register(PlainTask())
    try:
        entries = [entry for entry in glossary() if entry.section == "Toy: plain (rules)"]
        assert [entry.term for entry in entries] == ["first", "second"] and all(e.definition for e in entries)
    finally:
        registry.unregister("toy-plain")
