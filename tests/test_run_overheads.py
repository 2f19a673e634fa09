"""What a batch run costs per item stays flat with the number of calls in flight: an answer moves the
waiting calls' deadlines once per token budget (and none when their limit did not grow), and a run
keeps the garbage collector's scans off its hot path, handing the collector back as it was."""

from __future__ import annotations

import asyncio
import gc

import pytest

from engines.judging.runner import RunFailed, RunSpec, run_tracked
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.deadlines import SAFETY_FACTOR, GenerationSpeed

WAITING = 200
BUDGET = 32


async def waiting_calls(speed: GenerationSpeed, count: int, started: asyncio.Event, release: asyncio.Event):
    deadlines = []

    async def call() -> None:
        async with speed.deadline(BUDGET) as deadline:
            deadlines.append(deadline)
            if len(deadlines) == count:
                started.set()
            await release.wait()

    return deadlines, [asyncio.create_task(call()) for _ in range(count)]


async def test_an_answer_derives_each_budget_s_limit_once_and_moves_every_call_only_when_it_grew():
    speed = GenerationSpeed(timeout_s=10)
    speed.record(tokens=BUDGET, seconds=1)  # fast: every call of the budget gets timeout_s
    started, release = asyncio.Event(), asyncio.Event()
    deadlines, calls = await waiting_calls(speed, WAITING, started, release)
    await started.wait()
    limits = []
    derive = speed.limit
    speed.limit = lambda max_tokens: limits.append(max_tokens) or derive(max_tokens)  # type: ignore[method-assign]

    speed.record(tokens=BUDGET, seconds=1)  # as fast: no call's limit grows
    assert len(limits) <= 2 and {d.seconds for d in deadlines} == {10}

    limits.clear()
    speed.record(tokens=1, seconds=20)  # much slower: the budget needs longer than timeout_s
    longer = SAFETY_FACTOR * BUDGET / speed.tokens_per_s
    assert longer > 10 and len(limits) <= 2  # once before the answer, once after: not once per call
    assert [d.seconds for d in deadlines] == pytest.approx([longer] * WAITING)

    release.set()
    await asyncio.gather(*calls)
    assert not speed._waiting  # the calls that ended are not told of later answers


async def test_a_run_hands_the_garbage_collector_back_as_it_found_it_whether_it_ends_or_fails(db):
    thresholds = gc.get_threshold()
    seen = []

    async def judge(item: TaskItem) -> Verdict:
        seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))
        if item.key == "broken":
            raise ZeroDivisionError("division by zero")
        return Verdict(label="yes")

    items = [TaskItem(f"i{n}", f"item {n}", "") for n in range(3)]
    spec = RunSpec("toy", JudgeId.of("prof", "model-x", "v1"), {}, concurrency=2)
    outcome = await run_tracked(db, spec, items, judge)
    assert outcome.judged_now == 3
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0
    assert all(young > thresholds[0] and frozen for young, frozen in seen)

    with pytest.raises(RunFailed):
        await run_tracked(db, RunSpec("toy", spec.judge, {"other": 1}), [TaskItem("broken", "", "")], judge)
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0


async def test_runs_at_once_keep_the_collector_raised_until_the_last_ends(db):
    thresholds = gc.get_threshold()
    first_done, seen_after = asyncio.Event(), []

    async def quick(item: TaskItem) -> Verdict:
        return Verdict(label="yes")

    async def slow(item: TaskItem) -> Verdict:
        await first_done.wait()
        seen_after.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))
        return Verdict(label="yes")

    judge = JudgeId.of("prof", "model-x", "v1")

    async def first() -> None:
        await asyncio.sleep(0.05)  # the second run is under way by then
        await run_tracked(db, RunSpec("toy", judge, {"run": 1}), [TaskItem("a", "", "")], quick)
        first_done.set()

    await asyncio.gather(first(), run_tracked(db, RunSpec("toy", judge, {"run": 2}), [TaskItem("b", "", "")], slow))
    assert seen_after == [(seen_after[0][0], True)] and seen_after[0][0] > thresholds[0]
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0
