"""A debate with its history in the store: one student message, one bot turn, and the
judgments around them (Grice maxims of the reply, components of the message).
All of it is stored as the turn's records (`engines.debate.records`); of the Grice
store only the Analyzer stage-1 reason cache is shared.

The screen calls the three steps in separate workers so judging never blocks
typing; the scripted runner awaits `exchange`, which does the same work.

With no model (the backend cannot start) a level-0 debate still goes on: the bot answers
from the argument base, and the judging, which needs a model, is off (`judging_off`).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, TypeVar

from engines.components.classifier import label_components
from engines.debate.levels import labels_during_reply, opponent
from engines.debate.pipeline import (
    BotTurn,
    DebateSetup,
    DialogueTurn,
    Opponent,
    PipelineEvent,
    StepFinished,
    StepStarted,
    TurnCompleted,
    TurnFailed,
)
from engines.debate.records import ComponentRecord, DebateRecords, GriceRecord, MetricRecord, StoredTurn
from engines.errors import ArgtuiError
from engines.grice.judge import judge_turn
from engines.grice.reasons import ReasonCache, ReasonStore
from engines.grice.types import GriceContext
from engines.llm.client import LLMClient
from engines.llm.types import Usage, UsageMeter
from engines.retrieval.types import Retriever
from store.debates import Debate, DebateRepository

DEFAULT_GRICE_STRATEGY = "BEST"
DEFAULT_COMPONENT_METHOD = "mad"
T = TypeVar("T")


class JudgingOff(ArgtuiError):
    """Grice judging or component labelling was asked of a session that has no model."""


@dataclass(frozen=True)
class StepTiming:
    """When one piece of an exchange ran, counted from the message's sending, and what its
    model calls cost."""

    name: str  # a step of the bot's level, "components" or "grice"
    start_s: float
    end_s: float
    usage: Usage


@dataclass
class ExchangeResult:
    user_turn: StoredTurn
    bot_turn: StoredTurn
    bot: BotTurn | None
    failure: TurnFailed | None
    judgment: GriceRecord | None
    components: list[ComponentRecord]
    timings: list[StepTiming]  # in the order they ended


class DebateSession:
    def __init__(
        self,
        repository: DebateRepository,
        debate: Debate,
        client: LLMClient | None,
        retriever: Retriever,
        *,
        no_model_reason: str = "no model answers",
        reason_store: ReasonStore | None = None,
        grice_strategy: str = DEFAULT_GRICE_STRATEGY,
        component_method: str = DEFAULT_COMPONENT_METHOD,
        seed: int = 0,
        label_during_reply: bool | None = None,
    ):
        """`client` None: no model answers (`no_model_reason` says why); only a level-0 debate
        opens then (else ArgtuiError), and it is not judged."""
        self.repository = repository
        self.records = DebateRecords(repository)
        self.debate = debate
        self.client = client
        self.pipeline = opponent(debate.level, client, retriever, seed=seed)  # the bot of the debate's level
        # Why Grice judging, component labels and the Coach cannot run; None when a model answers.
        self.judging_off: str | None = None if client is not None else no_model_reason
        self._new_samples: set[int] = set()  # failed turns about to run again
        # None: as the backend can afford (`labels_during_reply`)
        if label_during_reply is None:
            label_during_reply = client is not None and labels_during_reply(client.profile)
        self.label_during_reply = label_during_reply
        self._reply_pending = asyncio.Event()  # clear from a student's message (or a reply started) until the turn ends
        self._reply_pending.set()
        self.reasons = ReasonCache(reason_store)
        self.grice_strategy = grice_strategy
        self.component_method = component_method
        self.seed = seed

    @property
    def setup(self) -> DebateSetup:
        return DebateSetup(self.debate.claim, self.debate.user_side)  # type: ignore[arg-type]

    def history(self, before: int | None = None) -> list[DialogueTurn]:
        """The dialogue so far, or before the turn at position `before`; failed, cancelled and
        running bot turns are not part of it."""
        return [
            DialogueTurn(turn.role, turn.content)  # type: ignore[arg-type]
            for turn in self.records.turns(self.debate.id)
            if turn.in_dialogue and (before is None or turn.position < before)
        ]

    def add_user_message(self, text: str) -> StoredTurn:
        text = text.strip()
        if not text:
            raise ValueError("an empty message")
        self._reply_pending.clear()
        return self.records.add_message(self.debate.id, text)

    def start_reply(self, again: StoredTurn | None = None) -> StoredTurn:
        """The bot's next turn stored as running, so an interrupted one is never lost; or `again`,
        a failed or cancelled turn, running again in its place. A failed one draws new samples;
        a cancelled one may reuse the answers its steps already had."""
        self._reply_pending.clear()
        if again is None:
            return self.records.start_reply(self.debate.id)
        if again.state == "failed":
            self._new_samples.add(again.id)
        return self.records.restart(again.id)

    async def bot_turn(
        self,
        on_event: Callable[[PipelineEvent], None] = lambda event: None,
        *,
        turn: StoredTurn | None = None,
        deadline_s: float | None = None,
    ) -> tuple[StoredTurn, BotTurn | None, TurnFailed | None]:
        """Run the pipeline on the dialogue before the running `turn` (a new one by default) and
        store its outcome in it: the reply or the error; cancelled, it is stored as cancelled."""
        turn = turn or self.start_reply()
        started = time.perf_counter()
        bot = self.pipeline
        if turn.id in self._new_samples:
            self._new_samples.discard(turn.id)
            bot = bot.with_seed(random.randrange(2**31))
        try:
            outcome, failure = await self._bounded_turn(bot, turn, on_event, deadline_s)
        except asyncio.CancelledError:
            self.records.cancel_reply(turn.id, time.perf_counter() - started)
            raise
        finally:
            self._reply_pending.set()
        if outcome is not None:
            stored = self.records.finish_reply(turn.id, outcome)
        else:
            stored = self.records.finish_failure(turn.id, failure, time.perf_counter() - started)
        return stored, outcome, failure

    async def _bounded_turn(
        self, bot: Opponent, turn: StoredTurn, on_event: Callable[[PipelineEvent], None], deadline_s: float | None
    ) -> tuple[BotTurn | None, TurnFailed | None]:
        """The bot's outcome; a backend error or the deadline fails the step that was running."""
        outcome, failure, step = None, None, bot.steps[0][0]  # until a step reports itself
        try:
            async with asyncio.timeout(deadline_s):
                async for event in bot.run_turn(self.setup, self.history(turn.position)):
                    on_event(event)
                    if isinstance(event, StepStarted):
                        step = event.step
                    elif isinstance(event, TurnCompleted):
                        outcome = event.turn
                    elif isinstance(event, TurnFailed):
                        failure = event
        except TimeoutError:
            failure = TurnFailed(step, f"no reply within {deadline_s:g} s, the turn's time limit", "")
            on_event(failure)
        except ArgtuiError as exc:
            failure = TurnFailed(step, str(exc), "")
            on_event(failure)
        return outcome, failure

    def _judging_client(self) -> LLMClient:
        """The model that judges; JudgingOff without one."""
        if self.client is None:
            raise JudgingOff(f"judging is off: {self.judging_off}")
        return self.client

    async def judge_reply(
        self, turn: StoredTurn, on_metric: Callable[[MetricRecord], None] | None = None
    ) -> GriceRecord:
        """Grice judgments of a stored bot reply, stored with it."""
        client = self._judging_client()
        context = GriceContext(
            dialogue=[(t.role, t.content) for t in self.history(turn.position)],
            reply=turn.content,
            arguments=[row.text for row in turn.used_arguments],
        )
        judgment = await judge_turn(
            client, context, self.grice_strategy, reasons=self.reasons,
            on_metric=(lambda metric: on_metric(MetricRecord.of(metric))) if on_metric else None,
        )
        record = GriceRecord.of(judgment)
        self.records.add_grice(turn.id, record, judge=client.profile.name)
        return record

    async def label_message(
        self, turn: StoredTurn, on_component: Callable[[int, ComponentRecord], None] | None = None
    ) -> list[ComponentRecord]:
        """Argument components of a stored student message, stored with it. The message's state
        follows the labelling, so a relaunch knows one that was cancelled or failed. Unless
        `label_during_reply`, it starts once the bot's turn answering the message has ended."""
        client = self._judging_client()
        self.records.set_labelling(turn.id, "running")
        try:
            if not self.label_during_reply:
                await self._reply_pending.wait()
            results = await label_components(
                client, turn.content, method=self.component_method, seed=self.seed,
                on_component=(lambda index, result: on_component(index, ComponentRecord.of(result)))
                if on_component else None,
            )
        except asyncio.CancelledError:
            self.records.set_labelling(turn.id, "cancelled")
            raise
        except ArgtuiError:
            self.records.set_labelling(turn.id, "failed")
            raise
        records = [ComponentRecord.of(result) for result in results]
        self.records.add_components(turn.id, self.component_method, records, judge=client.profile.name)
        self.records.set_labelling(turn.id, "done")
        return records

    async def exchange(
        self, text: str, on_event: Callable[[PipelineEvent], None] = lambda event: None, *, concurrent: bool = True
    ) -> ExchangeResult:
        """A whole exchange: the message is labelled (while the bot answers where the backend can
        afford it) and the reply judged when it is stored. Not `concurrent`: one after the
        other (bot, judging, labelling), to compare. With `judging_off`, the reply alone."""
        sent = time.perf_counter()
        timings: list[StepTiming] = []
        step_started: dict[str, float] = {}

        def follow(event: PipelineEvent) -> None:
            if isinstance(event, StepStarted):
                step_started[event.step] = time.perf_counter() - sent
            elif isinstance(event, StepFinished):
                timings.append(StepTiming(
                    event.step, step_started.get(event.step, 0.0), time.perf_counter() - sent, event.usage
                ))
            on_event(event)

        async def timed(name: str, work: Awaitable[T]) -> T:
            start = time.perf_counter() - sent
            with UsageMeter().counting() as meter:
                result = await work
            timings.append(StepTiming(name, start, time.perf_counter() - sent, meter.usage))
            return result

        user_turn = self.add_user_message(text)
        if self.judging_off is not None:
            bot_turn, outcome, failure = await self.bot_turn(follow)
            return ExchangeResult(user_turn, bot_turn, outcome, failure, None, [], timings)
        labelling = asyncio.ensure_future(timed("components", self.label_message(user_turn))) if concurrent else None
        try:
            bot_turn, outcome, failure = await self.bot_turn(follow)
            judgment = await timed("grice", self.judge_reply(bot_turn)) if outcome is not None else None
            components = await (labelling or timed("components", self.label_message(user_turn)))
        finally:
            if labelling is not None:
                labelling.cancel()
        return ExchangeResult(user_turn, bot_turn, outcome, failure, judgment, components, timings)
