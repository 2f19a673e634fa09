"""The judging core: Verdict and JudgeId round trips, the tracked runner's states and
resume, and the registry seen from `argtui eval --list`."""

from __future__ import annotations

import asyncio
import random
from typing import Annotated

import pytest

from argtui.cli import main
from engines.judging import task as registry
from engines.judging.runner import RunFailed, RunPaused, RunSpec, run_tracked
from engines.judging.store import JudgmentStore
from engines.judging.options import OptionInfo, TaskOptions
from engines.judging.task import TaskItem, TaskReport, default_options
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.types import BackendError, Usage
from store.runs import RunRepository, RunState

JUDGE = JudgeId.of("prof", "model-x", "v1")


def items(count: int) -> list[TaskItem]:
    return [TaskItem(f"i{n}", f"item {n}", f"body {n}", reference="yes" if n % 2 else "no") for n in range(count)]


def test_usage_sums_and_marks_all_cached_only():
    fresh = Usage(prompt_tokens=10, completion_tokens=2, latency_s=0.5, calls=1)
    cached = Usage(prompt_tokens=10, completion_tokens=2, calls=1, cached_calls=1)
    total = sum([fresh, cached, cached], Usage())
    assert (total.prompt_tokens, total.completion_tokens, total.calls, total.cached_calls) == (30, 6, 3, 2)
    assert total.latency_s == 0.5 and not total.cached and (cached + cached).cached
    assert not Usage().cached  # no answer at all is not "from the cache"


def test_verdict_and_judge_id_round_trip():
    verdict = Verdict(label="A", distribution={"A": 0.7, "B": 0.3}, data={"runs": ["A", None]},
                      usage=Usage(prompt_tokens=5, calls=1), seconds=0.2)
    assert Verdict.model_validate_json(verdict.model_dump_json()) == verdict
    bad = Verdict.invalid("not one of A, B", raw="C")
    assert not bad.valid and bad.raw == "C"
    judge = JudgeId.of("gpu", "org/model-7b", "few/runs3@t1", {"pool": "abc"})
    assert judge.name == f"org/model-7b@gpu few/runs3@t1 #{judge.options}" and len(judge.options) == 8
    assert JudgeId.model_validate_json(judge.model_dump_json()) == judge
    assert JudgeId.of("gpu", "m", "zero").name == "m@gpu zero"


async def test_a_run_stores_every_verdict_and_a_rerun_judges_nothing(db):
    calls: list[str] = []

    async def judge(item: TaskItem) -> Verdict:
        calls.append(item.key)
        if item.key == "i2":
            return Verdict.invalid("garbage", raw="???", usage=Usage(calls=1))
        return Verdict(label="yes", usage=Usage(prompt_tokens=3, calls=1))

    seen = []
    spec = RunSpec("toy", JUDGE, {"limit": 4}, concurrency=2)
    outcome = await run_tracked(db, spec, items(4), judge, on_progress=seen.append)
    assert sorted(calls) == ["i0", "i1", "i2", "i3"] and outcome.judged_now == 4
    assert outcome.run.state == RunState.DONE and outcome.progress.invalid == 1
    assert outcome.progress.usage.prompt_tokens == 9 and outcome.progress.usage.calls == 4
    assert seen[-1].state == RunState.DONE and seen[-1].done == 4
    stored = JudgmentStore(db, "toy").load(JUDGE, items(4))
    assert stored["i2"].raw == "???" and stored["i0"].label == "yes"

    calls.clear()
    again = await run_tracked(db, spec, items(4), judge)
    assert calls == [] and again.resumed == 4 and again.run.id == outcome.run.id
    assert again.verdicts == outcome.verdicts


async def test_a_backend_failure_pauses_with_its_cause_and_the_rerun_finishes(db):
    calls: list[str] = []
    down = {"now": True}

    async def judge(item: TaskItem) -> Verdict:
        calls.append(item.key)
        if down["now"] and item.key == "i3":
            raise BackendError("prof", "http://127.0.0.1:9/v1", "ConnectError after 4 attempts")
        return Verdict(label="no", usage=Usage(calls=1))

    spec = RunSpec("toy", JUDGE, {}, concurrency=1)
    with pytest.raises(RunPaused) as stopped:
        await run_tracked(db, spec, items(6), judge)
    assert "ConnectError" in str(stopped.value) and "run the same command again" in str(stopped.value)
    run = RunRepository(db).list()[0]
    assert run.state == RunState.PAUSED and "ConnectError" in run.error and run.done == 3
    assert run.task == "toy" and run.judge == JUDGE.name

    down["now"] = False
    calls.clear()
    outcome = await run_tracked(db, spec, items(6), judge)
    assert calls == ["i3", "i4", "i5"]  # nothing finished is judged again
    assert outcome.run.state == RunState.DONE and outcome.run.error is None


async def test_a_bug_in_a_judge_fails_the_run_with_one_line_and_the_traceback_logged(db, caplog):
    async def judge(item: TaskItem) -> Verdict:
        raise KeyError("choices")

    with pytest.raises(RunFailed) as failed:
        await run_tracked(db, RunSpec("toy", JUDGE, {}), items(2), judge)
    assert "KeyError" in str(failed.value) and "traceback is in" in str(failed.value)
    assert "Traceback" in caplog.text and "KeyError" in caplog.text
    run = RunRepository(db).list()[0]
    assert run.state == RunState.FAILED and "KeyError" in run.error


async def test_cancelling_a_run_pauses_it(db):
    started = asyncio.Event()

    async def judge(item: TaskItem) -> Verdict:
        started.set()
        await asyncio.sleep(30)
        return Verdict(label="yes")

    running = asyncio.create_task(run_tracked(db, RunSpec("toy", JUDGE, {}), items(3), judge))
    await started.wait()
    running.cancel("interrupted (Ctrl-C)")
    with pytest.raises(asyncio.CancelledError):
        await running
    run = RunRepository(db).list()[0]
    assert run.state == RunState.PAUSED and run.error == "interrupted (Ctrl-C)"


class ToyOptions(TaskOptions):
    numbers: Annotated[int, OptionInfo("how many numbers")] = 4


class ToyTask:
    """A task that exists only in this test module, of the bare protocol (no base class)."""

    name = "toy-parity"
    title = "Toy: is the number odd?"
    labels = ("yes", "no")
    Options = ToyOptions
    options = ToyOptions.task_options()
    variant_flag = "rule"

    def variants(self):
        return ("parity", "always-yes")

    def filters(self, ctx):
        return {}

    def items(self, ctx, options):
        return items(options.numbers)

    def draw(self, ctx, rng: random.Random, **filters):
        return items(4)[rng.randrange(4)]

    def judge_variant(self, variant, options):
        return variant

    def concurrency(self, variant, client, options):
        return 2

    async def judge(self, ctx, item, variant, client, options):
        label = "yes" if variant == "always-yes" or int(item.key[1:]) % 2 else "no"
        return Verdict(label=label, distribution={label: 1.0})

    def report(self, ctx, judge, items, verdicts, options, run_id):
        right = sum(verdicts[i.key].label == i.reference for i in items)
        return TaskReport(f"{judge.name}: {right}/{len(items)} right", data={"right": right})


@pytest.fixture
def toy_task():
    task = registry.register(ToyTask())
    yield task
    registry.unregister(task.name)


def test_a_registered_task_is_listed_by_eval_list(toy_task, capsys):
    assert main(["eval", "--list"]) == 0
    out = capsys.readouterr().out
    assert "toy-parity" in out and "parity, always-yes" in out
    assert toy_task in registry.tasks()
    assert default_options(toy_task) == ToyOptions(numbers=4)
    assert default_options(toy_task).model_dump() == {
        "judge": None, "limit": None, "seed": 0, "concurrency": None, "output": None, "variant": None, "numbers": 4}
    assert registry.canonical_variant(toy_task, "ALWAYS-yes") == "always-yes"


async def test_a_toy_task_appears_in_eval_list_the_arena_and_the_leaderboard(toy_task, offline_backend, until, capsys):
    from textual.widgets import Select

    from argtui.app import ArgtuiApp
    from screens.arena import ArenaScreen
    from screens.leaderboard import LeaderboardScreen

    assert main(["eval", "--list"]) == 0
    assert "toy-parity" in capsys.readouterr().out
    app = ArgtuiApp()
    JudgmentStore(app.services.db, toy_task.name).save(JUDGE, [(TaskItem("i1", "item 1", "1", reference="yes"), Verdict(label="yes"))])
    async with app.run_test(size=(100, 30)) as pilot:
        arena = ArenaScreen(task="toy-parity", seed=0)
        await app.push_screen(arena)
        await until(pilot, lambda: arena.item is not None)
        picker = arena.query_one("#task", Select)
        assert ("Toy: is the number odd?", "toy-parity") in picker._options and arena.item.key.startswith("i")
        app.pop_screen()
        board = LeaderboardScreen()
        await app.push_screen(board)
        await until(pilot, lambda: board.standings is not None)
        rows = dict((task.name, rows) for task, rows in board.standings)["toy-parity"]
        [standing] = [row for row in rows if row.judge == JUDGE]
        assert standing.accuracy == 1.0
        # The Arena's own judges answered the drawn item: their answers are stored as Arena items.
        store = JudgmentStore(app.services.db, toy_task.name)
        arena = [row for row in rows if row.judge != JUDGE]
        assert arena and all(store.arena_items(row.judge) == row.judgments == 1 for row in arena)
