"""The tracked runner: judging many items as one resumable batch run.

It owns every state change of a run, so no copy of this logic lives in a
command or a screen:

* RUNNING while it works, renewing the run's heartbeat (a run whose process was
  killed shows as interrupted: `store.runs`);
* PAUSED when the backend fails after its retries, when the database does (a
  full disk, its server gone), on Ctrl-C, on SIGTERM or when the caller cancels
  it, with the cause saved (if the database still takes that write);
* FAILED when the judge raises anything else (a bug): the traceback goes to
  the log, the user gets one line;
* DONE when every item has a stored verdict.

`run_states` is that state machine on its own, which a run that judges no items
(`argtui index push`) goes through too.

An invalid verdict counts as a verdict: a rerun keeps it. With `retry_invalid` the
items stored as invalid are judged again, their calls asking the backend instead of
the response cache (which holds the answers that could not be read).

Verdicts (invalid ones too) are stored through a write-behind buffer: the
ones of each `FLUSH_INTERVAL_S` in one transaction, and all of them before
every state change (PAUSED, FAILED, DONE, a cancellation, SIGTERM) and at
exit. So a rerun of the same command judges only what is missing (after a
`kill -9`, the verdicts of the last interval too), and the response cache
answers any call that was in flight at the interruption.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import threading
import time
import traceback
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import AsyncIterator, Awaitable, Callable, Iterator, Sequence

from engines.errors import ArgtuiError
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.batch import RequestDeferred
from engines.llm.client import asking_anew
from engines.llm.types import BackendError, Usage
from engines.timing import Stopwatch, timed
from store.db import Database, StoreError
from store.runs import HEARTBEAT_S, BatchRun, RunRepository, RunState
from store.write_behind import WriteBehind

log = logging.getLogger("argtui.runs")
SAVE_INTERVAL_S = 1.0  # how often progress is written for the Runs screen to follow
TERMINATED = "terminated (SIGTERM)"
RUN_GC_YOUNG = 10_000  # allocations between collections of young objects while a run judges


@dataclass(frozen=True)
class RunProgress:
    """What a progress bar, a TUI panel or a test is told after every item."""

    run_id: int
    task: str
    judge: str
    total: int
    done: int
    resumed: int
    invalid: int
    usage: Usage  # of the verdicts judged in this invocation
    state: RunState = RunState.RUNNING

    @property
    def remaining(self) -> int:
        return self.total - self.done


@dataclass
class RunOutcome:
    run: BatchRun
    progress: RunProgress
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # every item's, stored ones included
    judged_now: int = 0
    wall_s: float = 0.0
    kept_invalid: int = 0  # invalid verdicts stored before this invocation and kept (not retried)

    @property
    def resumed(self) -> int:
        return self.progress.resumed


class RunPaused(ArgtuiError):
    """The run stopped for a reason outside the code (backend, Ctrl-C, SIGTERM); a rerun resumes."""

    def __init__(self, progress: RunProgress, cause: str):
        self.progress, self.cause = progress, cause
        super().__init__(
            f"paused after {progress.done}/{progress.total} items: {cause}. "
            "Finished items are stored; run the same command again to resume."
        )


class RunDeferred(RunPaused):
    """Items whose calls went to a batch file (`engines.llm.batch`): they have no verdict yet."""

    def __init__(self, progress: RunProgress, deferred: int):
        self.deferred = deferred
        super().__init__(progress, f"{deferred} items wait for batch results")


class RunFailed(ArgtuiError):
    """A judge raised an unexpected error: the run is FAILED, the traceback is in the log."""


@dataclass(frozen=True)
class RunSpec:
    """What identifies a run: the same spec resumes the same run."""

    task: str
    judge: JudgeId
    selection: dict  # which items: dataset, limits, seed …
    concurrency: int = 1
    # Whether a fresh run gives the same numbers (`engines.llm.embedded.reproducibility`): recorded, not identity.
    reproducible: str = ""

    @property
    def name(self) -> str:
        scope = " ".join(f"{k}={v}" for k, v in sorted(self.selection.items()) if v is not None)
        return f"{self.judge.name} {scope}".strip()


class _Terminated(Exception):
    pass


async def run_tracked(
    db: Database,
    spec: RunSpec,
    items: Sequence[TaskItem],
    judge: Callable[[TaskItem], Awaitable[Verdict]],
    *,
    on_progress: Callable[[RunProgress], None] = lambda progress: None,
    retry_invalid: bool = False,
) -> RunOutcome:
    """Judge every item without a stored verdict of `spec.judge` on its current content (`TaskItem.digest`),
    or with an invalid one when `retry_invalid`, at most `spec.concurrency` at once; each verdict's
    `seconds` is the time its item took."""
    runs = RunRepository(db)
    store = JudgmentStore(db, spec.task)
    keys = [item.key for item in items]
    if len(set(keys)) != len(keys):
        raise ValueError(f"task {spec.task!r}: item keys are not unique")
    run = runs.open(
        f"eval-{spec.task}", spec.name, {"judge": spec.judge.model_dump(), **spec.selection,
                                     **({"reproducible": spec.reproducible} if spec.reproducible else {})}, len(items),
        task=spec.task, judge=spec.judge.name,
    )
    stored = store.load(spec.judge, items)
    retried = {key for key, verdict in stored.items() if retry_invalid and not verdict.valid}
    stored = {key: verdict for key, verdict in stored.items() if key not in retried}
    todo = [item for item in items if item.key not in stored]
    verdicts: dict[str, Verdict] = dict(stored)
    counts = {"invalid": sum(1 for v in stored.values() if not v.valid), "now": 0, "deferred": 0}
    usage = Usage()
    stopwatch = Stopwatch()
    written = {"done": len(stored), "invalid": counts["invalid"], "at": time.monotonic()}  # what the database holds

    def progress(state: RunState = RunState.RUNNING) -> RunProgress:
        return RunProgress(
            run.id, spec.task, spec.judge.name, len(items), len(verdicts), len(stored),
            counts["invalid"], usage, state,
        )

    failed_writes: list[StoreError] = []  # verdicts the database refused: the run stops before its next item

    def write(rows: list[tuple[TaskItem, Verdict]]) -> None:
        try:
            store.save(spec.judge, rows, run.id)
        except StoreError as exc:
            failed_writes.append(exc)  # the buffer keeps the rows and tries again; the run stops
            raise
        written["done"] += len(rows)
        written["invalid"] += sum(not verdict.valid for _, verdict in rows)
        if time.monotonic() - written["at"] > SAVE_INTERVAL_S:
            runs.update(run.id, done=written["done"], invalid=written["invalid"])
            written["at"] = time.monotonic()

    unwritten: WriteBehind[str, tuple[TaskItem, Verdict]] = WriteBehind(write, f"verdicts of run {run.id}")

    def stop(state: RunState, cause: str) -> None:
        try:
            unwritten.flush()  # the stored progress never counts a verdict that is not stored
        except StoreError as exc:
            # The run's state and cause are still stored if the database takes that short write (a
            # nearly full disk may): a listing then says why it stopped, not that its process is gone.
            lost = cause if str(exc) == cause else f"{cause}; its last verdicts could not be stored: {exc}"
            runs.update(run.id, state=state, done=written["done"], invalid=written["invalid"], error=lost)
            raise
        current = progress()
        runs.update(run.id, state=state, done=current.done, invalid=current.invalid, error=cause)

    queue: asyncio.Queue[TaskItem] = asyncio.Queue()
    for entry in todo:
        queue.put_nowait(entry)

    async def worker() -> None:
        nonlocal usage
        while True:
            if failed_writes:
                # Stopped at once, the run's state and cause may still fit where its verdicts did not
                # (a nearly full disk): a listing then says why it stopped.
                raise StoreError(str(failed_writes[0]))
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                with asking_anew() if item.key in retried else nullcontext():
                    verdict, seconds = await timed(judge(item))
            except RequestDeferred:  # nothing to store until the batch's answers are imported
                counts["deferred"] += 1
                continue
            # Every item is timed here, the one clock of a run: a task's judge need not time itself.
            # A verdict made of verdicts judged before (a panel's) keeps their time, which is longer.
            verdict = verdict.model_copy(update={"seconds": max(seconds, verdict.seconds)})
            unwritten.put(item.key, (item, verdict))
            verdicts[item.key] = verdict
            counts["now"] += 1
            counts["invalid"] += not verdict.valid
            usage = usage + verdict.usage
            on_progress(progress())

    runs.update(run.id, done=len(stored), invalid=counts["invalid"])
    on_progress(progress())
    with _fewer_collections():
        async with run_states(runs, run, progress, stop):
            workers = [asyncio.create_task(worker()) for _ in range(max(1, min(spec.concurrency, len(todo))))]
            try:
                await asyncio.gather(*workers)
            finally:
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
            if not counts["deferred"]:
                unwritten.flush()  # within the run's states: a database that fails it pauses the run with the cause
    if counts["deferred"]:
        deferred = RunDeferred(progress(RunState.PAUSED), counts["deferred"])
        stop(RunState.PAUSED, deferred.cause)
        raise deferred
    final = progress(RunState.DONE)
    run = runs.update(run.id, state=RunState.DONE, done=final.done, invalid=final.invalid)
    on_progress(final)
    kept_invalid = sum(not verdict.valid for verdict in stored.values())
    return RunOutcome(run, final, verdicts, counts["now"], stopwatch.seconds, kept_invalid)


class _FewerCollections:
    """The cyclic garbage collector's scans kept from the runs' hot path: the objects that exist when
    a run starts (the modules, a loaded corpus) are left out of them (frozen objects are not freed,
    so they are handed back at its end), and young objects are collected every `RUN_GC_YOUNG`
    allocations instead of 700. At hundreds of verdicts a second the full collections scanned the
    old objects over and over, and the young ones the calls in flight: together a fifth of a batch
    run's client time. Runs at once (in the app) share this: the last to end restores the collector
    as the first found it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs = 0
        self._found: tuple[int, ...] = gc.get_threshold()

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if not self._runs:
                self._found = gc.get_threshold()
                gc.freeze()
                gc.set_threshold(RUN_GC_YOUNG, *self._found[1:])
            self._runs += 1
        try:
            yield
        finally:
            with self._lock:
                self._runs -= 1
                if not self._runs:
                    gc.set_threshold(*self._found)
                    gc.unfreeze()


_fewer_collections = _FewerCollections()


@asynccontextmanager
async def run_states(
    runs: RunRepository,
    run: BatchRun,
    progress: Callable[[RunState], RunProgress],
    stop: Callable[[RunState, str], None],
    *,
    pausing: tuple[type[Exception], ...] = (BackendError, StoreError),
) -> AsyncIterator[None]:
    """The states of a batch run while the body works, the same for every run (a judging run,
    `argtui index push`): RUNNING with its heartbeat renewed; PAUSED on a `pausing` error (its
    backend failed after its retries, or its database: a full disk, a server gone) or SIGTERM
    (`RunPaused`), and on Ctrl-C or a cancellation
    (raised on); FAILED on anything else (`RunFailed`, the traceback in the log). `stop(state,
    cause)` stores the run's state and progress; `progress` is what `RunPaused` reports. DONE is
    the caller's to store, after what the body made is."""
    runs.update(run.id, state=RunState.RUNNING)
    current = asyncio.current_task()
    terminated: list[bool] = []

    def terminate() -> None:
        terminated.append(True)
        if current is not None:
            current.cancel(TERMINATED)

    restore = _on_sigterm(terminate)
    heartbeat = asyncio.create_task(_heartbeat(runs, run.id))
    try:
        yield
    except pausing as exc:
        stop(RunState.PAUSED, str(exc))
        raise RunPaused(progress(RunState.PAUSED), str(exc)) from exc
    except (asyncio.CancelledError, KeyboardInterrupt) as exc:
        cause = TERMINATED if terminated else _cancel_cause(exc)
        stop(RunState.PAUSED, cause)
        if terminated and current is not None:  # our own signal: end as a paused run, not a cancellation
            current.uncancel()
            raise RunPaused(progress(RunState.PAUSED), cause) from None
        raise
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        log.error("run %s (%s) failed:\n%s", run.id, run.name, traceback.format_exc())
        stop(RunState.FAILED, message)
        raise RunFailed(
            f"run {run.id} failed: {message}. This is a bug in argtui; the traceback is in "
            f"{_log_file()}. Finished items are stored."
        ) from exc
    finally:
        restore()
        heartbeat.cancel()
        await asyncio.gather(heartbeat, return_exceptions=True)


async def _heartbeat(runs: RunRepository, run_id: int) -> None:
    """Renew the run's heartbeat while it runs, so that a listing tells it from a killed one.
    Off the event loop: a renewal that waits for the database's lock holds up no judging."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        try:
            await asyncio.to_thread(runs.beat, run_id)
        except StoreError as exc:  # one missed beat; the lease outlasts several
            log.warning("run %s: heartbeat not written: %s", run_id, exc)


def _log_file() -> str:
    for handler in logging.getLogger("argtui").handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return "the log"


def _cancel_cause(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
    return message or "interrupted (Ctrl-C or cancelled)"


def _on_sigterm(handler: Callable[[], None]) -> Callable[[], None]:
    """Route SIGTERM to `handler` while a run is in flight (main thread only); returns the undo."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGTERM, handler)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
        return lambda: None

    def restore() -> None:
        loop.remove_signal_handler(signal.SIGTERM)

    return restore
