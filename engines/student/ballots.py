"""Ending a debate: it is marked ended, judged for its ballot, and the student's rating moves."""

from __future__ import annotations

import asyncio
from typing import Callable

from engines.errors import ArgtuiError
from engines.judging.runner import RunProgress
from engines.judging.task import TaskContext
from engines.llm.client import LLMClient
from engines.student.ratings import RatingChange, record_result
from engines.tasks.ballot import Ballot, make_ballot
from store.debates import DebateRepository


async def end_debate(
    ctx: TaskContext, client: LLMClient, debate_id: int, on_progress: Callable[[RunProgress], None] | None = None,
) -> tuple[Ballot, RatingChange | None]:
    """End the debate, make its ballot (stored: a second call gives the same ballot without a model
    call) and record the result against the level played; the change is None when no student
    was named. Calling it again never counts the debate twice."""
    repository = DebateRepository(ctx.db)
    # Writes may wait for the database lock: off the event loop, which a screen shares.
    if await asyncio.to_thread(repository.get, debate_id) is None:
        raise ArgtuiError(f"no debate with id {debate_id} (argtui debate --list shows them)")
    await asyncio.to_thread(repository.end, debate_id)
    ballot = await make_ballot(ctx, client, debate_id, on_progress)
    change = await asyncio.to_thread(record_result, ctx.db, debate_id, ballot.winner == "student")
    return ballot, change
