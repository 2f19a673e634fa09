"""The tracked runner writes verdicts in batches: they reach the database within the flush
interval and before every state change, and a process killed with kill -9 loses only the
verdicts it had not yet written, which a rerun judges again (and nothing else)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from engines.judging.runner import RunSpec, run_tracked
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.types import BackendError
from store import Database
from store.runs import RunRepository, RunState
from store.write_behind import FLUSH_INTERVAL_S

JUDGE = JudgeId.of("prof", "model-x", "v1")
ITEMS = 30
FLUSHED_BEFORE_PAUSE = 10  # the child's judge waits here until the timer has written the earlier verdicts
BLOCKED_AT = 20  # … and blocks the event loop here, so later verdicts cannot be written before the kill

CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from engines.judging.runner import RunSpec, run_tracked
    from engines.judging.task import TaskItem
    from engines.judging.verdict import JudgeId, Verdict
    from store import Database
    from store.write_behind import FLUSH_INTERVAL_S

    async def judge(item):
        index = int(item.key[1:])
        if index == {flushed}:
            await asyncio.sleep(FLUSH_INTERVAL_S * 5)
        if index == {blocked}:
            print("BLOCKED", flush=True)
            time.sleep(3600)
        return Verdict(label="yes")

    async def main(path):
        items = [TaskItem(f"i{{n}}", f"item {{n}}", "", reference="yes") for n in range({items})]
        await run_tracked(Database(path), RunSpec("toy", JudgeId.of("prof", "model-x", "v1"), {{}}), items, judge)

    asyncio.run(main(sys.argv[1]))
    """
)


def items(count: int) -> list[TaskItem]:
    return [TaskItem(f"i{n}", f"item {n}", "", reference="yes") for n in range(count)]


def test_a_killed_run_loses_only_unwritten_verdicts_and_the_rerun_judges_only_those(tmp_path):
    path = tmp_path / "runs.sqlite3"
    Database(path).close()  # the schema exists before the child writes
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(items=ITEMS, flushed=FLUSHED_BEFORE_PAUSE, blocked=BLOCKED_AT), str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    try:
        line = child.stdout.readline()
        assert line == "BLOCKED\n", child.stderr.read()
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()

    db = Database(path)
    try:
        # The timer wrote the verdicts judged before the pause; the ten judged after it were
        # still buffered when the process died.
        assert set(JudgmentStore(db, "toy").judged(JUDGE)) == {f"i{n}" for n in range(FLUSHED_BEFORE_PAUSE)}
        calls: list[str] = []

        async def judge(item: TaskItem) -> Verdict:
            calls.append(item.key)
            return Verdict(label="no")

        outcome = asyncio.run(run_tracked(db, RunSpec("toy", JUDGE, {}), items(ITEMS), judge))
        assert calls == [f"i{n}" for n in range(FLUSHED_BEFORE_PAUSE, ITEMS)]
        assert outcome.resumed == FLUSHED_BEFORE_PAUSE and outcome.run.state == RunState.DONE
        assert outcome.run.done == ITEMS == len(JudgmentStore(db, "toy").judged(JUDGE))
    finally:
        db.close()


async def test_verdicts_reach_the_database_within_the_flush_interval_not_one_transaction_each(db):
    other = Database(db.path)  # another connection pool, as another process would read
    written: list[set[str]] = []
    release = asyncio.Event()

    async def judge(item: TaskItem) -> Verdict:
        if item.key == "i3":
            written.append(set(JudgmentStore(other, "toy").judged(JUDGE)))  # right after i0..i2 arrived
            await asyncio.sleep(FLUSH_INTERVAL_S * 5)
            written.append(set(JudgmentStore(other, "toy").judged(JUDGE)))
            await release.wait()
        return Verdict(label="yes")

    running = asyncio.create_task(run_tracked(db, RunSpec("toy", JUDGE, {}), items(4), judge))
    try:
        while len(written) < 2:
            await asyncio.sleep(0.01)
        assert written == [set(), {"i0", "i1", "i2"}]
        release.set()
        outcome = await running
        assert outcome.run.state == RunState.DONE and len(JudgmentStore(other, "toy").judged(JUDGE)) == 4
    finally:
        other.close()


@pytest.mark.parametrize("stop", ["cancel", "backend failure", "bug"])
async def test_every_state_change_writes_the_buffered_verdicts_first(db, stop):
    waiting = asyncio.Event()

    async def judge(item: TaskItem) -> Verdict:
        # i0..i4 are judged without yielding to the event loop, so no timer has written them yet.
        if item.key == "i5":
            if stop == "backend failure":
                raise BackendError("prof", "http://127.0.0.1:9/v1", "ConnectError after 4 attempts")
            if stop == "bug":
                raise KeyError("choices")
            waiting.set()
            await asyncio.sleep(3600)
        return Verdict(label="yes")

    running = asyncio.create_task(run_tracked(db, RunSpec("toy", JUDGE, {}, concurrency=1), items(8), judge))
    if stop == "cancel":
        await waiting.wait()
        running.cancel("interrupted (Ctrl-C)")
    with pytest.raises(BaseException):
        await running
    [run] = RunRepository(db).list()
    # Read at once, no waiting for the timer: the stop wrote them, and the run's progress counts them.
    assert set(JudgmentStore(db, "toy").judged(JUDGE)) == {f"i{n}" for n in range(5)}
    assert run.state == (RunState.FAILED if stop == "bug" else RunState.PAUSED) and run.done == 5
