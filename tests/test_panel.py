"""A panel of judges as one judge (engines/judging/panel.py): three fixture judges, each a tracked run
of fixed verdicts in a real SQLite store, and their panel run through the same runner. The panel
votes as built (a tie goes to the higher mean probability, then the label order), its identity
changes with any member's, and `argtui audit` lists it beside its members."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest

from argtui.cli import main
from argtui.commands.eval import panel_members
from argtui.config import Paths
from engines.judging import task as registry
from engines.judging.evaluate import TaskRun
from engines.judging.panel import NO_VALID_MEMBER, combine, run_panel
from engines.judging.runner import RunSpec, run_tracked
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem, TaskReport, default_options
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.types import Usage
from store.db import Database

PAIRWISE = registry.task("pairwise")
ONE = JudgeId.of("gpu", "m1", "zero/swap@t0", prompts="p1")
TWO = JudgeId.of("gpu", "m1", "few/swap@t0", prompts="p1")
THREE = JudgeId.of("cpu", "m2", "zero/swap@t0", prompts="p1")
USAGE = Usage(calls=2, prompt_tokens=100, completion_tokens=2)


def swap(label: str | None, first: str | None, second: str | None, distribution: dict | None = None) -> Verdict:
    """A swap-mode verdict: its label, its answers as shown and swapped, its label probabilities."""
    if label is None:
        return Verdict.invalid("not one of A, B, Tie", usage=USAGE, seconds=1.0, data={"run_labels": [first, second]})
    return Verdict(label=label, data={"run_labels": [first, second]}, distribution=distribution or {},
                   usage=USAGE, seconds=1.0)


# Per item (of four), each member's verdict; then what the panel answers, and how.
VERDICTS = {
    ONE: [swap("A", "A", "B", {"A": 0.6, "B": 0.3, "Tie": 0.1}), swap("A", "A", "B", {"A": 0.5, "B": 0.3, "Tie": 0.2}),
          swap("A", "A", "A"), swap(None, None, None)],
    TWO: [swap("A", "A", "B", {"A": 0.7, "B": 0.2, "Tie": 0.1}), swap("B", "B", "A", {"A": 0.1, "B": 0.8, "Tie": 0.1}),
          swap("B", "A", "B"), swap(None, None, None)],
    THREE: [swap("B", "B", "A", {"A": 0.2, "B": 0.8, "Tie": 0.0}), swap("Tie", "Tie", "Tie", {"A": 0.2, "B": 0.3, "Tie": 0.5}),
            swap(None, "A", None), swap(None, None, None)],
}


@dataclass
class Context:
    """What a panel run uses of the application: its database."""

    db: Database


def pairs(db: Database):
    options = default_options(PAIRWISE, dimension=["logical"], topics=[20], limit=4, mode="swap", bootstrap=0)
    return options, PAIRWISE.items(Context(db), options)


async def member_runs(db: Database, members=VERDICTS) -> list[TaskRun]:
    """Each fixture judge as a tracked run of its fixed verdicts, stored as a judge's are."""
    options, items = pairs(db)
    runs = []
    for judge, verdicts in members.items():
        given = dict(zip((item.key for item in items), verdicts))

        async def fixed(item, given=given):
            return given[item.key]

        outcome = await run_tracked(db, RunSpec("pairwise", judge, {}), items, fixed)
        runs.append(TaskRun(judge, outcome, TaskReport(judge.name)))
    return runs


async def test_three_judges_vote_by_majority_and_a_tie_goes_to_the_higher_mean_probability(db):
    options, items = pairs(db)
    panel = await run_panel(Context(db), PAIRWISE, await member_runs(db), options, items)
    assert panel.judge == JudgeId.of_panel([ONE, TWO, THREE])
    assert panel.outcome.judged_now == 4 and panel.outcome.progress.invalid == 1
    stored = JudgmentStore(db, "pairwise").load(panel.judge, items)
    first, split, halved, none = (stored[item.key] for item in items)

    # Two of three say A: A, the probabilities averaged, and each order voted as the seed's runs are.
    assert first.label == "A" and first.data["votes"] == ["A", "A", "B"]
    assert first.distribution == pytest.approx({"A": 0.5, "B": 1.3 / 3, "Tie": 0.2 / 3})
    assert first.data["run_labels"] == ["A", "B"]
    assert "tie" not in first.detail
    # A, B and Tie once each: B has the highest mean probability (0.467 against 0.267 and 0.267).
    assert split.label == "B" and split.detail.endswith("tie broken by mean probability")
    assert split.data["run_labels"] == ["Tie", "Tie"]  # no order has a majority
    # One invalid member, A against B with no probabilities: the first label of A, B, Tie.
    assert halved.label == "A" and halved.detail.endswith("1 invalid; tie broken by label order")
    assert halved.data["votes"] == ["A", "B", None]
    assert halved.data["run_labels"] == ["A", "Tie"]  # as shown both valid members said A; swapped, one each
    # No member valid: the panel's verdict is invalid, and says why.
    assert none.invalid_reason == NO_VALID_MEMBER and none.label is None
    # What a panel's answer cost: every member's answers and time.
    assert first.usage == Usage(calls=6, prompt_tokens=300, completion_tokens=6)
    assert first.seconds == pytest.approx(3.0)
    assert panel.report.title == f"{panel.judge.name} vs experts"


async def test_a_rerun_combines_nothing_again_and_members_keep_their_own_verdicts(db):
    options, items = pairs(db)
    members = await member_runs(db)
    await run_panel(Context(db), PAIRWISE, members, options, items)
    again = await run_panel(Context(db), PAIRWISE, await member_runs(db), options, items)
    assert (again.outcome.judged_now, again.outcome.resumed) == (0, 4)
    store = JudgmentStore(db, "pairwise")
    assert {stored.name for stored in store.judges()} == {ONE.name, TWO.name, THREE.name, again.judge.name}
    assert store.load(TWO, items)[items[1].key] == VERDICTS[TWO][1]


def test_a_panel_is_another_judge_when_any_member_changes_and_the_same_in_any_order():
    panel = JudgeId.of_panel([ONE, TWO, THREE])
    assert JudgeId.of_panel([THREE, ONE, TWO]) == panel
    changed = THREE.model_copy(update={"prompts": "p2"})  # the same name but for its digest
    assert JudgeId.of_panel([ONE, TWO, changed]).name != panel.name
    assert JudgeId.of_panel([ONE, TWO]).name != panel.name
    # Members of two profiles are each named with theirs; the digest names the whole identities.
    assert panel.variant == "panel(gpu:few+gpu:zero+cpu:zero)/swap@t0"
    assert panel.profile == "gpu+cpu" and panel.model == "m1+m2"
    assert JudgeId.of_panel([ONE, TWO]).variant == "panel(few+zero)/swap@t0"
    assert panel.is_panel and not ONE.is_panel
    with pytest.raises(ValueError, match="two or more different judges"):
        JudgeId.of_panel([ONE, ONE])


def test_combine_means_values_and_leaves_out_what_a_task_does_not_add():
    critiques = registry.task("critiques")
    verdict = combine(critiques, [(ONE, Verdict(value=2.0)), (TWO, Verdict(value=4.0)), (THREE, Verdict.invalid("x"))])
    assert verdict.valid and verdict.value == 3.0 and verdict.label is None
    assert set(verdict.data) == {"members", "votes"}


def test_panel_members_are_read_as_profile_and_variant():
    assert panel_members("embedded:few, zero") == [("embedded", "few"), (None, "zero")]
    for bad in ("few", "a:few,b:"):
        with pytest.raises(Exception, match="at least two|names no variant"):
            panel_members(bad)


def test_argtui_audit_lists_the_panel_beside_its_members(argtui_home, capsys):
    paths = Paths.resolve()
    paths.data_dir.mkdir(parents=True, exist_ok=True)
    database = Database(paths.database)

    async def stored_panel() -> TaskRun:
        options, items = pairs(database)
        return await run_panel(Context(database), PAIRWISE, await member_runs(database), options, items)

    try:
        panel = asyncio.run(stored_panel())
    finally:
        database.close()
    assert main(["audit", "--task", "pairwise", "--json"]) == 0
    audits = {printed["judge"]: printed for printed in json.loads(capsys.readouterr().out)}
    assert set(audits) == {ONE.name, TWO.name, THREE.name, panel.judge.name}
    figures = {figure["name"]: figure for figure in audits[panel.judge.name]["figures"]}
    # Its orders voted: (A, B) and (Tie, Tie) consistent, (A, Tie) not; the invalid verdict has none.
    assert figures["position consistency"]["items"] == 3
    assert figures["position consistency"]["value"] == pytest.approx(2 / 3)
    assert figures["seconds per 1k"]["value"] == pytest.approx(3000.0)

    assert main(["audit", "--task", "pairwise", "--judge", "panel("]) == 0
    shown = capsys.readouterr().out
    assert panel.judge.name in shown and "position consistency" in shown


class VoteTask:
    """A task that exists only in this test: each variant answers its own label, without a model."""

    name, title, labels, options, variant_flag = "vote", "Vote: yes or no", ("yes", "no"), (), "rule"

    def variants(self):
        return ("yes", "also-yes", "no")

    def filters(self, ctx):
        return {}

    def judge_variant(self, variant, options):
        return variant

    def draw(self, ctx, rng):
        return TaskItem("vote/1", "vote item", "Yes or no?", reference="yes")

    async def judge(self, ctx, item, variant, client, options):
        label = "no" if variant == "no" else "yes"
        return Verdict(label=label, distribution={label: 0.9, "yes" if label == "no" else "no": 0.1},
                       usage=Usage(calls=1, prompt_tokens=10))


@pytest.fixture
def vote_task():
    task = registry.register(VoteTask())
    yield task
    registry.unregister(task.name)


async def test_a_panel_column_in_the_arena_answers_with_its_judges_and_is_stored_as_the_panel(
    vote_task, offline_backend, until,
):
    from argtui.app import ArgtuiApp
    from screens.arena import ArenaScreen, JudgeCard, JudgeColumn, panel_column

    members = [JudgeColumn(offline_backend, variant) for variant in vote_task.variants()]
    app = ArgtuiApp()
    async with app.run_test(size=(120, 30)) as pilot:
        screen = ArenaScreen(task="vote", seed=1, judges=[*members, panel_column(members)])
        await app.push_screen(screen)
        *judges, panel = screen.query(JudgeCard)
        await until(pilot, lambda: panel.answer is not None)
        assert panel.answer.label == "yes" and panel.answer.data["votes"] == ["yes", "yes", "no"]
        assert panel.answer.distribution == pytest.approx({"yes": 1.9 / 3, "no": 1.1 / 3})
        assert panel.answer.usage.calls == 3
        assert panel.full_title.startswith("Panel of 3: ")
        expected = JudgeId.of_panel([card.judge for card in judges])
        store = JudgmentStore(app.services.db, "vote")
        await until(pilot, lambda: len(store.judges()) == 4)
        assert {stored.name for stored in store.judges()} == {expected.name, *(card.judge.name for card in judges)}
        assert store.arena_items(expected) == 1


def test_eval_refuses_a_panel_naming_one_judge_twice_before_anything_runs(offline_backend, capsys):
    assert main(["eval", "pairwise", "--panel", f"zero,{offline_backend}:ZERO", "--limit", "1"]) == 1
    assert "--panel names a judge twice" in capsys.readouterr().err


@pytest.mark.llm
def test_eval_runs_the_members_then_the_panel_and_a_rerun_asks_nothing(llama_profile, capsys):
    from argtui.config import load_config

    load_config().add_backend(llama_profile.model_copy(update={"timeout_s": 300}), make_default=True)
    command = ["eval", "pairwise", "--dimension", "logical", "--topics", "20", "--limit", "1", "--mode", "logprob",
               "--bootstrap", "0", "--panel", "zero,few", "--json"]
    assert main(command) == 0
    zero, few, panel = json.loads(capsys.readouterr().out)["results"]
    assert " zero/logprob@t0 #" in zero["judge"] and " few/logprob@t0 #" in few["judge"]
    assert panel["judge"].startswith(f"SmolLM2-135M-Instruct@{llama_profile.name} panel(few+zero)/logprob@t0 #")
    assert panel["usage"]["calls"] == zero["usage"]["calls"] + few["usage"]["calls"] == 2
    assert main(command) == 0
    again = json.loads(capsys.readouterr().out)["results"]
    assert [result["judged_now"] for result in again] == [0, 0, 0]
    assert [result["judge"] for result in again] == [zero["judge"], few["judge"], panel["judge"]]


async def test_the_judge_picker_adds_a_panel_of_the_judges_ticked_and_refuses_one_of_one(
    vote_task, offline_backend, until,
):
    from textual.widgets import SelectionList

    from argtui.app import ArgtuiApp
    from screens.arena import ArenaScreen, JudgeCard, JudgeColumn, JudgePicker

    app = ArgtuiApp()
    async with app.run_test(size=(120, 30)) as pilot:
        screen = ArenaScreen(task="vote", seed=1, judges=[JudgeColumn(offline_backend, "yes")])
        await app.push_screen(screen)
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, JudgePicker))
        picker = app.screen
        choices = picker.query_one(SelectionList)
        panel_entry = len(picker.columns)
        choices.select(panel_entry)
        picker.action_confirm()  # one judge ticked: no panel of one
        await pilot.pause()
        assert app.screen is picker
        choices.select(picker.columns.index(JudgeColumn(offline_backend, "no")))
        picker.action_confirm()
        await until(pilot, lambda: app.screen is screen and len(screen.query(JudgeCard)) == 3)
        *_, panel = screen.query(JudgeCard)
        assert panel.column.members == (JudgeColumn(offline_backend, "yes"), JudgeColumn(offline_backend, "no"))
        await until(pilot, lambda: panel.answer is not None)
        # One yes, one no at 0.9 each: the tie goes to the first label of the task's order.
        assert panel.answer.label == "yes" and panel.answer.detail.endswith("tie broken by label order")
