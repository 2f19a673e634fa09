"""A debate with its history in the store: one student message, one bot turn, and the
judgments around them (Grice maxims of the reply, components of the message).
All of it is stored as the turn's records (`engines.debate.records`); of the Grice
store only the Analyzer stage-1 reason cache is shared.

The screen calls the three steps in separate workers so judging never blocks
typing; the scripted runner awaits `exchange`, which does the same work.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Callable

from engines.components.classifier import label_components
from engines.debate.pipeline import (
    BotTurn,
    DebatePipeline,
    DebateSetup,
    DialogueTurn,
    PipelineEvent,
    TurnCompleted,
    TurnFailed,
)
from engines.debate.records import ComponentRecord, DebateRecords, GriceRecord, MetricRecord, StoredTurn
from engines.grice.judge import judge_turn
from engines.grice.reasons import ReasonCache, ReasonStore
from engines.grice.types import GriceContext
from engines.llm.client import LLMClient
from engines.retrieval.types import Retriever
from store.debates import Debate, DebateRepository

DEFAULT_GRICE_STRATEGY = "BEST"
DEFAULT_COMPONENT_METHOD = "mad"


@dataclass
class ExchangeResult:
    user_turn: StoredTurn
    bot_turn: StoredTurn
    bot: BotTurn | None
    failure: TurnFailed | None
    judgment: GriceRecord | None
    components: list[ComponentRecord]


class DebateSession:
    def __init__(
        self,
        repository: DebateRepository,
        debate: Debate,
        client: LLMClient,
        retriever: Retriever,
        *,
        reason_store: ReasonStore | None = None,
        grice_strategy: str = DEFAULT_GRICE_STRATEGY,
        component_method: str = DEFAULT_COMPONENT_METHOD,
        seed: int = 0,
    ):
        self.repository = repository
        self.records = DebateRecords(repository)
        self.debate = debate
        self.client = client
        self.pipeline = DebatePipeline(client, retriever, seed=seed)
        self.reasons = ReasonCache(reason_store)
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

    def add_user_message(self, text: str) -> StoredTurn:
        text = text.strip()
        if not text:
            raise ValueError("an empty message")
        return self.records.add_message(self.debate.id, text)

    async def bot_turn(
        self, on_event: Callable[[PipelineEvent], None] = lambda event: None
    ) -> tuple[StoredTurn, BotTurn | None, TurnFailed | None]:
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
            stored = self.records.add_reply(self.debate.id, outcome)
        else:
            assert failure is not None
            stored = self.records.add_failure(self.debate.id, failure, time.perf_counter() - started)
        return stored, outcome, failure

    async def judge_reply(
        self, turn: StoredTurn, on_metric: Callable[[MetricRecord], None] | None = None
    ) -> GriceRecord:
        """Grice judgments of a stored bot reply, stored with it."""
        turns = self.repository.turns(self.debate.id)
        dialogue = [(t.role, t.content) for t in turns if t.position < turn.position and t.error is None]
        context = GriceContext(
            dialogue=dialogue,
            reply=turn.content,
            arguments=[row.text for row in turn.used_arguments],
        )
        judgment = await judge_turn(
            self.client, context, self.grice_strategy, reasons=self.reasons,
            on_metric=(lambda metric: on_metric(MetricRecord.of(metric))) if on_metric else None,
        )
        record = GriceRecord.of(judgment)
        self.records.add_grice(turn.id, record, judge=self.client.profile.name)
        return record

    async def label_message(
        self, turn: StoredTurn, on_component: Callable[[int, ComponentRecord], None] | None = None
    ) -> list[ComponentRecord]:
        """Argument components of a stored student message, stored with it."""
        results = await label_components(
            self.client, turn.content, method=self.component_method, seed=self.seed,
            on_component=(lambda index, result: on_component(index, ComponentRecord.of(result)))
            if on_component else None,
        )
        records = [ComponentRecord.of(result) for result in results]
        self.records.add_components(turn.id, self.component_method, records, judge=self.client.profile.name)
        return records

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
