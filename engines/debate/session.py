"""A debate with its history in the store: one student message, one bot turn, and the
judgments around them (Grice maxims of the reply, components of the message).

The screen calls the three steps in separate workers so judging never blocks
typing; the scripted runner awaits `exchange`, which does the same work.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass
from typing import Callable

from engines.components.classifier import label_components
from engines.components.types import ComponentResult
from engines.debate.pipeline import (
    BotTurn,
    DebatePipeline,
    DebateSetup,
    DialogueTurn,
    PipelineEvent,
    TurnCompleted,
    TurnFailed,
)
from engines.grice.judge import judge_turn
from engines.grice.reasons import ReasonCache
from engines.grice.types import GriceContext, GriceJudgment, MetricJudgment
from engines.llm.client import LLMClient
from engines.retrieval.types import Retriever
from store.debates import Debate, DebateRepository, DebateTurn
from store.grice import GriceRepository

DEFAULT_GRICE_STRATEGY = "BEST"
DEFAULT_COMPONENT_METHOD = "mad"


@dataclass
class ExchangeResult:
    user_turn: DebateTurn
    bot_turn: DebateTurn
    bot: BotTurn | None
    failure: TurnFailed | None
    judgment: GriceJudgment | None
    components: list[ComponentResult]


def evidence_rows(turn: BotTurn) -> list[dict]:
    return [
        {
            **item.argument.as_dict(),
            "strategy": item.strategy,
            "query": item.query,
            "relation_found": item.relation,
            "score": item.score,
            "selected": item.selected,
            "final": item.final,
            "used": item.used,
        }
        for item in turn.evidence
    ]


class DebateSession:
    def __init__(
        self,
        repository: DebateRepository,
        debate: Debate,
        client: LLMClient,
        retriever: Retriever,
        *,
        grice_repository: GriceRepository | None = None,
        grice_strategy: str = DEFAULT_GRICE_STRATEGY,
        component_method: str = DEFAULT_COMPONENT_METHOD,
        seed: int = 0,
    ):
        self.repository = repository
        self.debate = debate
        self.client = client
        self.pipeline = DebatePipeline(client, retriever, seed=seed)
        self.reasons = ReasonCache(grice_repository)
        self.grice_strategy = grice_strategy
        self.component_method = component_method
        self.seed = seed

    @property
    def setup(self) -> DebateSetup:
        return DebateSetup(self.debate.claim, self.debate.user_side)  # type: ignore[arg-type]

    def history(self) -> list[DialogueTurn]:
        """The dialogue so far; failed bot turns are not part of it."""
        return [
            DialogueTurn(turn.role, turn.content)  # type: ignore[arg-type]
            for turn in self.repository.turns(self.debate.id)
            if turn.error is None
        ]

    def add_user_message(self, text: str) -> DebateTurn:
        text = text.strip()
        if not text:
            raise ValueError("an empty message")
        return self.repository.add_turn(self.debate.id, "user", text)

    async def bot_turn(self, on_event: Callable[[PipelineEvent], None] = lambda event: None) -> tuple[DebateTurn, BotTurn | None, TurnFailed | None]:
        """Run the pipeline on the history, store the outcome (reply or error) as a turn."""
        started = time.perf_counter()
        outcome: BotTurn | None = None
        failure: TurnFailed | None = None
        async for event in self.pipeline.run_turn(self.setup, self.history()):
            on_event(event)
            if isinstance(event, TurnCompleted):
                outcome = event.turn
            elif isinstance(event, TurnFailed):
                failure = event
        if outcome is not None:
            stored = self.repository.add_turn(
                self.debate.id, "assistant", outcome.reply,
                steps=outcome.steps, evidence=evidence_rows(outcome),
                length_action=outcome.length_action, seconds=outcome.seconds,
            )
        else:
            assert failure is not None
            stored = self.repository.add_turn(
                self.debate.id, "assistant", "",
                error=f"step {failure.step}: {failure.error}",
                steps={"failed_step": failure.step, "raw": failure.raw},
                seconds=time.perf_counter() - started,
            )
        return stored, outcome, failure

    async def judge_reply(
        self, turn: DebateTurn, on_metric: Callable[[MetricJudgment], None] | None = None
    ) -> GriceJudgment:
        """Grice judgments of a stored bot reply, stored with it."""
        turns = self.repository.turns(self.debate.id)
        dialogue = [(t.role, t.content) for t in turns if t.position < turn.position and t.error is None]
        context = GriceContext(
            dialogue=dialogue,
            reply=turn.content,
            arguments=[row["text"] for row in turn.evidence if row.get("used")],
        )
        judgment = await judge_turn(
            self.client, context, self.grice_strategy, on_metric=on_metric, reasons=self.reasons
        )
        self.repository.add_analysis(
            turn.id, "grice", self.grice_strategy, asdict(judgment), judge=self.client.profile.name
        )
        return judgment

    async def label_message(
        self, turn: DebateTurn, on_component: Callable[[int, ComponentResult], None] | None = None
    ) -> list[ComponentResult]:
        """Argument components of a stored student message, stored with it."""
        results = await label_components(
            self.client, turn.content, method=self.component_method, seed=self.seed, on_component=on_component
        )
        self.repository.add_analysis(
            turn.id, "components", self.component_method,
            {"components": [asdict(result) for result in results]}, judge=self.client.profile.name,
        )
        return results

    async def exchange(
        self, text: str, on_event: Callable[[PipelineEvent], None] = lambda event: None
    ) -> ExchangeResult:
        """A whole exchange: the message is labelled while the bot answers; then the reply is judged."""
        user_turn = self.add_user_message(text)
        labelling = asyncio.ensure_future(self.label_message(user_turn))
        try:
            bot_turn, outcome, failure = await self.bot_turn(on_event)
            judgment = await self.judge_reply(bot_turn) if outcome is not None else None
            components = await labelling
        finally:
            labelling.cancel()
        return ExchangeResult(user_turn, bot_turn, outcome, failure, judgment, components)
