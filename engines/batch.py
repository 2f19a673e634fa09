"""Running many LLM-backed items as one resumable batch.

Resuming is cheap by construction: items whose result is already stored are
skipped (`is_done`), and the response cache answers any call that was made
before an interruption. Progress goes to a plain callback so a CLI progress
bar, a TUI panel and a test can all follow the same run.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Awaitable, Callable, Generic, Iterable, TypeVar

from engines.errors import ArgtuiError
from engines.llm.types import BackendError

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


@dataclass
class BatchProgress:
    total: int
    done: int = 0
    skipped: int = 0
    invalid: int = 0

    @property
    def remaining(self) -> int:
        return self.total - self.done


class BatchInterrupted(ArgtuiError):
    """The backend failed mid-batch; finished items are stored and a rerun resumes."""

    def __init__(self, progress: BatchProgress, cause: BackendError):
        self.progress = progress
        self.cause = cause
        super().__init__(
            f"stopped after {progress.done}/{progress.total} items: {cause}. "
            "Finished items are stored; run the same command again to resume."
        )


@dataclass
class BatchResult(Generic[ItemT, ResultT]):
    progress: BatchProgress
    results: list[tuple[ItemT, ResultT]]


async def run_batch(
    items: Iterable[ItemT],
    work: Callable[[ItemT], Awaitable[ResultT]],
    *,
    concurrency: int,
    is_done: Callable[[ItemT], bool] = lambda item: False,
    on_result: Callable[[ItemT, ResultT], None] = lambda item, result: None,
    is_invalid: Callable[[ResultT], bool] = lambda result: False,
    on_progress: Callable[[BatchProgress], None] = lambda progress: None,
) -> BatchResult[ItemT, ResultT]:
    """Run `work` on every item not already done, at most `concurrency` at a time.

    `on_result` runs as each item finishes (store it there, so an interruption
    loses nothing finished). A BackendError cancels the rest and raises
    BatchInterrupted; other exceptions propagate.
    """
    pending = list(items)
    progress = BatchProgress(total=len(pending))
    todo = []
    for item in pending:
        if is_done(item):
            progress.done += 1
            progress.skipped += 1
        else:
            todo.append(item)
    on_progress(progress)
    results: list[tuple[ItemT, ResultT]] = []
    queue: asyncio.Queue[ItemT] = asyncio.Queue()
    for item in todo:
        queue.put_nowait(item)

    async def worker() -> None:
        while True:
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            result = await work(item)
            on_result(item, result)
            results.append((item, result))
            progress.done += 1
            if is_invalid(result):
                progress.invalid += 1
            on_progress(progress)

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(todo))))]
    try:
        await asyncio.gather(*workers)
    except BackendError as exc:
        raise BatchInterrupted(progress, exc) from exc
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return BatchResult(progress, results)
