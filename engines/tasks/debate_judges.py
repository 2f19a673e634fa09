"""The judges of a live debate, as the tasks define them (`engines.debate.exchange.LiveJudges`).

A reply's Grice maxims are judged by the grice task's own `judge` with the options a batch
run has with no flags, and stored under the judge `argtui eval grice --strategy S` would be
on the same backend; a message's components by `label_text`, under the components judge of
the options given here (short answers, so labels come while the student reads); the Coach
by the inspire task, as `argtui eval inspire --debate ID` scores a stored turn. Every
judgment is a `Verdict` in the judgment store, so the Leaderboard and exports see it.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING, Any, Callable

from engines.components.classifier import LIVE_SETTINGS
from engines.components.records import text_key
from engines.debate.exchange import StoredJudgment
from engines.debate.records import ComponentRecord, GriceRecord, MetricRecord, StoredTurn
from engines.grice import METRICS
from engines.grice.prompts import SEED_LAYOUT
from engines.grice.types import GriceContext
from engines.inspire.score import inspire_scores_by_debate, stored_turn_key
from engines.judging.judge_one import judge_one
from engines.judging.task import TaskContext, TaskItem, default_options
from engines.llm.client import LLMClient
from engines.tasks.components import TASK as COMPONENTS, label_text
from engines.tasks.grice import TASK as GRICE, GriceItem
from engines.tasks.inspire_turns import TurnJudgment

if TYPE_CHECKING:
    from engines.tasks.inspire import InspireTask

# The seed's: the shared layout computes a first reply's Grice prompts in a third fewer tokens, but
# the embedded model writes its rationales twice as long there and llama-server asks the maxims one
# after another, so later replies are judged slower (docs/performance.md, "A turn's token budget").
LIVE_GRICE_LAYOUT = SEED_LAYOUT


def live_component_options() -> Any:
    """The components options of a live debate: the live classifier's short answers, which name
    the judge as `argtui eval components --turn-tokens 96 --judge-tokens 96 --reasoning-tokens 128` would."""
    return default_options(
        COMPONENTS, turn_tokens=LIVE_SETTINGS.debater_max_tokens, judge_tokens=LIVE_SETTINGS.judge_max_tokens,
        reasoning_tokens=LIVE_SETTINGS.reasoning_max_tokens,
    )


def grice_item(debate_id: int, turn: StoredTurn, context: GriceContext) -> TaskItem:
    """A stored bot reply as an item of the grice task, keyed like every stored debate turn."""
    return TaskItem(
        key=stored_turn_key(debate_id, turn.position),
        title=f"debate {debate_id} · turn {turn.position + 1}",
        body=context.reply,
        payload=GriceItem(context, METRICS, {}),
    )


async def _inspire_task() -> InspireTask:
    """The inspire task, imported in a thread when the Coach first needs it: it loads numpy and the
    retriever's checks, which would hold the screen's event loop."""
    module = await asyncio.to_thread(importlib.import_module, "engines.tasks.inspire")
    return module.TASK


class TaskJudges:
    """A debate's judges on `client`, storing through the application's context."""

    def __init__(self, ctx: TaskContext, client: LLMClient, grice_layout: str = LIVE_GRICE_LAYOUT):
        self.ctx = ctx
        self.client = client
        # a batch run's Grice options with no flags, in `grice_layout` (another layout than the live
        # one: to compare, as benchmarks/bench_turn_budget.py --grice-layout does)
        self.grice_options = default_options(GRICE, layout=grice_layout)

    async def label(
        self, debate_id: int, turn: StoredTurn, method: str, on_component: Callable[[ComponentRecord], None]
    ) -> tuple[StoredJudgment, list[ComponentRecord]]:
        judge, results = await label_text(
            self.ctx, self.client, turn.content, method, live_component_options(),
            on_component=lambda _index, result: on_component(ComponentRecord.of(result)),
        )
        stored = StoredJudgment(COMPONENTS.name, judge.name, tuple(text_key(turn.content, r.span) for r in results))
        return stored, [ComponentRecord.of(result) for result in results]

    async def prepare(self, strategy: str, component_method: str, coach: bool) -> None:
        # the cheapest first: each is of use as soon as it is done
        await COMPONENTS.prepare(self.ctx, component_method, self.client, live_component_options())
        if coach:
            inspire = await _inspire_task()
            [variant] = inspire.variants()
            await inspire.prepare(self.ctx, variant, self.client, inspire.Options())
        await GRICE.prepare(self.ctx, strategy, self.client, self.grice_options)

    async def grice(
        self, debate_id: int, turn: StoredTurn, context: GriceContext, strategy: str,
        on_maxim: Callable[[MetricRecord], None],
    ) -> tuple[StoredJudgment, GriceRecord]:
        judged = await judge_one(
            self.ctx, GRICE, self.client, strategy, self.grice_options, grice_item(debate_id, turn, context),
            on_part=lambda judgment: on_maxim(MetricRecord.of(judgment)),
        )
        return (StoredJudgment(GRICE.name, judged.judge.name, (judged.item.key,)),
                GriceRecord.of_verdict(judged.verdict))

    async def coach(
        self, debate_id: int, turn: StoredTurn, on_part: Callable[[int, int], None] | None = None,
    ) -> tuple[TurnJudgment, float | None]:
        judgment = await (await _inspire_task()).score_stored_turn(
            self.ctx, self.client, debate_id, turn.position,
            on_part=None if on_part is None else lambda part: on_part(part.done, part.total),
        )
        overall = await asyncio.to_thread(inspire_scores_by_debate, self.ctx.db)
        return judgment, overall.get(debate_id)
