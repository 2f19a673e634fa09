"""A debate with its history in the store: the student's messages and the bot's turns.
Every turn is stored as records (`engines.debate.records`); the judgments around them (Grice
maxims of a reply, components of a message, the Coach) are run by the exchange
(`engines.debate.exchange`), which drives this session.

With no model (the backend cannot start) a level-0 debate still goes on: the bot answers
from the argument base, and the judging, which needs a model, is off (`judging_off`).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Callable

from engines.debate.levels import default_component_method, get_level, labels_during_reply, opponent
from engines.debate.opponent import (
    BotTurn,
    DebateSetup,
    DialogueTurn,
    Opponent,
    PipelineEvent,
    StepStarted,
    TurnCompleted,
    TurnFailed,
)
from engines.debate.records import DebateRecords, StoredTurn
from engines.errors import ArgtuiError
from engines.llm.client import LLMClient
from engines.retrieval.types import Retriever
from engines.timing import Stopwatch
from store.debates import Debate, DebateRepository, TurnState

DEFAULT_GRICE_STRATEGY = "BEST"
DEFAULT_COMPONENT_METHOD = "mad"  # with no model to ask which suits it


@dataclass
class JudgingChoice:
    """How the debate's next turns are judged; the student may change it as the debate goes on."""

    grice_strategy: str = DEFAULT_GRICE_STRATEGY
    component_method: str | None = None  # None: the backend's default (`default_component_method`)


class DebateSession:
    def __init__(
        self,
        repository: DebateRepository,
        debate: Debate,
        client: LLMClient | None,
        retriever: Retriever,
        *,
        no_model_reason: str = "no model answers",
        choice: JudgingChoice | None = None,
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
        # None: as the backend can afford beside the bot (`labels_during_reply`)
        if label_during_reply is None:
            label_during_reply = client is not None and labels_during_reply(client.profile, get_level(debate.level))
        self.label_during_reply = label_during_reply
        self.choice = choice or JudgingChoice()  # the one copy: the screen changes it, the exchange reads it
        if self.choice.component_method is None:
            self.choice.component_method = (
                default_component_method(client.profile) if client is not None else DEFAULT_COMPONENT_METHOD
            )
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
        return self.records.add_message(self.debate.id, text)

    def start_reply(self, again: StoredTurn | None = None) -> StoredTurn:
        """The bot's next turn stored as running, so an interrupted one is never lost; or `again`,
        a failed or cancelled turn, running again in its place. A failed one draws new samples;
        a cancelled one may reuse the answers its steps already had."""
        if again is None:
            return self.records.start_reply(self.debate.id)
        if again.state == TurnState.FAILED:
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
        stopwatch = Stopwatch()
        bot = self.pipeline
        if turn.id in self._new_samples:
            self._new_samples.discard(turn.id)
            bot = bot.with_seed(random.randrange(2**31))
        try:
            outcome, failure = await self._bounded_turn(bot, turn, on_event, deadline_s)
        except asyncio.CancelledError:
            self.records.cancel_reply(turn.id, stopwatch.seconds)
            raise
        if outcome is not None:
            stored = self.records.finish_reply(turn.id, outcome)
        else:
            stored = self.records.finish_failure(turn.id, failure, stopwatch.seconds)
        return stored, outcome, failure

    async def _bounded_turn(
        self, bot: Opponent, turn: StoredTurn, on_event: Callable[[PipelineEvent], None], deadline_s: float | None
    ) -> tuple[BotTurn | None, TurnFailed | None]:
        """The bot's outcome; a backend error or the deadline fails the step that was running, and a
        level with model steps then answers with level 0's reply (`Opponent.fallback_turn`)."""
        outcome: BotTurn | None = None
        failure: TurnFailed | None = None
        step = bot.steps[0][0]  # until a step reports itself
        history = self.history(turn.position)

        def follow(event: PipelineEvent) -> None:
            nonlocal outcome, failure, step
            on_event(event)
            if isinstance(event, StepStarted):
                step = event.step
            elif isinstance(event, TurnCompleted):
                outcome = event.turn
            elif isinstance(event, TurnFailed):
                failure = event

        try:
            async with asyncio.timeout(deadline_s):
                async for event in bot.run_turn(self.setup, history):
                    follow(event)
        except TimeoutError:
            failure = TurnFailed(step, f"no reply within {deadline_s:g} s, the turn's time limit", "")
        except ArgtuiError as exc:
            failure = TurnFailed(step, str(exc), "")
        else:
            return outcome, failure
        failed, failure = failure, None
        async for event in bot.fallback_turn(self.setup, history, failed):
            follow(event)
        return outcome, failure
