"""The tracked runner: judging many items as one resumable batch run.

It owns every state change of a run, so no copy of this logic lives in a
command or a screen:

* RUNNING while it works;
* PAUSED when the backend fails after its retries, on Ctrl-C, on SIGTERM or
  when the caller cancels it, with the cause saved;
* FAILED when the judge raises anything else (a bug): the traceback goes to
  the log, the user gets one line;
* DONE when every item has a stored verdict.

Each verdict is stored the moment it arrives (invalid ones too), so a rerun
of the same command judges only what is missing, and the response cache
answers any call that was in flight at the interruption.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
import traceback
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Sequence

from engines.errors import ArgtuiError
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.types import BackendError, Usage
from store.db import Database
from store.runs import BatchRun, RunRepository, RunState

log = logging.getLogger("argtui.runs")
SAVE_INTERVAL_S = 1.0
TERMINATED = "terminated (SIGTERM)"  # how often progress is written for the Runs screen to follow


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


class RunFailed(ArgtuiError):
    """A judge raised an unexpected error: the run is FAILED, the traceback is in the log."""


@dataclass(frozen=True)
class RunSpec:
    """What identifies a run: the same spec resumes the same run."""

    task: str
    judge: JudgeId
    selection: dict  # which items: dataset, limits, seed …
    concurrency: int = 1

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
) -> RunOutcome:
    """Judge every item without a stored verdict of `spec.judge`, at most `spec.concurrency` at once."""
    runs = RunRepository(db)
    store = JudgmentStore(db, spec.task)
    keys = [item.key for item in items]
    if len(set(keys)) != len(keys):
        raise ValueError(f"task {spec.task!r}: item keys are not unique")
    run = runs.open(
        f"eval-{spec.task}", spec.name, {"judge": spec.judge.model_dump(), **spec.selection}, len(items),
        task=spec.task, judge=spec.judge.name,
    )
    stored = store.load(spec.judge, keys)
    todo = [item for item in items if item.key not in stored]
    verdicts: dict[str, Verdict] = dict(stored)
    counts = {"invalid": sum(1 for v in stored.values() if not v.valid), "now": 0}
    usage = Usage()
    started = time.perf_counter()
    saved_at = 0.0

    def progress(state: RunState = RunState.RUNNING) -> RunProgress:
        return RunProgress(
            run.id, spec.task, spec.judge.name, len(items), len(verdicts), len(stored),
            counts["invalid"], usage, state,
        )

    def report(force: bool = False) -> None:
        nonlocal saved_at
        current = progress()
        if force or time.monotonic() - saved_at > SAVE_INTERVAL_S:
            runs.update(run.id, done=current.done, invalid=current.invalid)
            saved_at = time.monotonic()
        on_progress(current)

    queue: asyncio.Queue[TaskItem] = asyncio.Queue()
    for entry in todo:
        queue.put_nowait(entry)

    async def worker() -> None:
        nonlocal usage
        while True:
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            verdict = await judge(item)
            store.save(spec.judge, [(item.key, verdict, item.reference)], run.id)
            verdicts[item.key] = verdict
            counts["now"] += 1
            counts["invalid"] += not verdict.valid
            usage = usage + verdict.usage
            report()

    runs.update(run.id, state=RunState.RUNNING)
    report(force=True)
    current = asyncio.current_task()
    terminated = []

    def terminate() -> None:
        terminated.append(True)
        if current is not None:
            current.cancel(TERMINATED)

    restore = _on_sigterm(terminate)
    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(spec.concurrency, len(todo))))]
    try:
        await asyncio.gather(*workers)
    except BackendError as exc:
        _stop(runs, run, progress(), RunState.PAUSED, str(exc))
        raise RunPaused(progress(RunState.PAUSED), str(exc)) from exc
    except (asyncio.CancelledError, KeyboardInterrupt) as exc:
        cause = TERMINATED if terminated else _cancel_cause(exc)
        _stop(runs, run, progress(), RunState.PAUSED, cause)
        if terminated and current is not None:  # our own signal: end as a paused run, not a cancellation
            current.uncancel()
            raise RunPaused(progress(RunState.PAUSED), cause) from None
        raise
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        log.error("run %s (%s) failed:\n%s", run.id, spec.name, traceback.format_exc())
        _stop(runs, run, progress(), RunState.FAILED, message)
        raise RunFailed(
            f"run {run.id} failed: {message}. This is a bug in argtui; the traceback is in "
            f"{_log_file()}. Finished items are stored."
        ) from exc
    finally:
        restore()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    final = progress(RunState.DONE)
    run = runs.update(run.id, state=RunState.DONE, done=final.done, invalid=final.invalid)
    on_progress(final)
    return RunOutcome(run, final, verdicts, counts["now"], time.perf_counter() - started)


def _log_file() -> str:
    for handler in logging.getLogger("argtui").handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return "the log"


def _stop(runs: RunRepository, run: BatchRun, progress: RunProgress, state: RunState, cause: str) -> None:
    runs.update(run.id, state=state, done=progress.done, invalid=progress.invalid, error=cause)


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
