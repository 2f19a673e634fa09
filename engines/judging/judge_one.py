"""Judging one item outside a batch run, the one path every front end takes (the Arena, a live
debate's Grice maxims and Coach, the drills, `label_text`), and the piece a batch run judges each
of its items with.

The options are settled by the context (`task.settled_options`) and the judge's identity taken
from them (`judge_id`) once (`settle`), so an item judged here is stored under the judge that
`argtui eval TASK` with the same options names; the judgment is timed by the one clock of
`engines.timing`, and stored off the event loop, which a screen shares (a write may wait for the
database lock).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable, TypeVar

from engines.judging.identity import judge_id
from engines.judging.store import JudgmentStore
from engines.judging.task import PartHook, Task, TaskContext, TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.timing import timed
from store.db import Database

T = TypeVar("T")


@dataclass(frozen=True)
class JudgedItem:
    """One item's judgment: who judged, the item as stored (under `store_as`'s key), the verdict
    with the seconds its judgment took."""

    judge: JudgeId
    item: TaskItem
    verdict: Verdict


@dataclass(frozen=True)
class SettledJudge:
    """A task's judge on a client with its options settled and its identity taken from them: what a
    batch run settles once and judges every item with."""

    task: Task
    client: LLMClient
    variant: str
    options: Any
    judge: JudgeId

    async def ask(self, ctx: TaskContext, item: TaskItem, on_part: PartHook | None = None) -> Verdict:
        """The task's verdict on `item`, neither timed nor stored (a run does both for its items)."""
        if on_part is None:
            return await self.task.judge(ctx, item, self.variant, self.client, self.options)
        return await self.task.judge_in_parts(ctx, item, self.variant, self.client, self.options, on_part)

    async def store(self, db: Database, save: Callable[[Database, JudgeId, T], None], judgment: T) -> None:
        """`save` a judgment of this judge under its identity, off the event loop."""
        await asyncio.to_thread(save, db, self.judge, judgment)


async def settle(ctx: TaskContext, task: Task, client: LLMClient, variant: str, options: Any) -> SettledJudge:
    """The judge of `task` with `variant` on `client`, its options settled by the context."""
    settled = await task.settled_options(ctx, options)
    return SettledJudge(task, client, variant, settled, await judge_id(task, client, variant, settled))


async def judge_one(
    ctx: TaskContext,
    task: Task,
    client: LLMClient,
    variant: str,
    options: Any,
    item: TaskItem,
    *,
    store_as: str | None = None,
    on_part: PartHook | None = None,
    on_answer: Callable[[JudgedItem], Awaitable[None]] | None = None,
) -> JudgedItem:
    """Judge `item` and store the verdict under the judge a batch run with `options` would be, keyed
    `store_as` (the Arena's `arena_key`) or the item's key. `on_part` hears each part of the verdict
    as it finishes (`Task.judge_in_parts`); `on_answer` is awaited with the judgment before it is
    stored (the Arena shows it at once)."""
    judge = await settle(ctx, task, client, variant, options)
    verdict, seconds = await timed(judge.ask(ctx, item, on_part))
    judged = JudgedItem(judge.judge, item if store_as is None else replace(item, key=store_as),
                        verdict.model_copy(update={"seconds": seconds}))
    if on_answer is not None:
        await on_answer(judged)

    def save(db: Database, judge: JudgeId, judged: JudgedItem) -> None:
        JudgmentStore(db, task.name).save(judge, [(judged.item, judged.verdict)])

    await judge.store(ctx.db, save, judged)
    return judged
