"""Opponents by level: how much work the bot puts into one reply.

* **0 Retrieval**: the best counter-argument from the argument base for the student's
  last message, word for word, with its source (the organisers' baseline; no model call);
* **1 Quick**: that argument adapted to the dialogue in one streamed model call,
  checked like every reply (`engines.debate.replies`); on a claim of no topic of the base,
  the argument nearest the message;
* **2 Full**: the five SINAI steps (`engines.debate.pipeline`).

Every level reports the same events and fills the same `BotTurn` (with its level), so
the session stores and the screen shows them alike. A debate keeps its level. A level whose
model step fails answers with level 0's reply, marked as such (`Opponent.fallback_turn`).
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass
from typing import AsyncGenerator, AsyncIterator, Sequence

from engines.debate import prompts, replies
from engines.debate.opponent import (
    BotTurn,
    DebateSetup,
    DialogueTurn,
    Draft,
    Opponent,
    PipelineEvent,
    ReplyProgress,
    StepStarted,
    render_dialogue,
    step_finished,
)
from engines.debate.pipeline import DebatePipeline
from engines.debate.schemas import Reply
from engines.errors import ArgtuiError
from engines.llm.client import LLMClient
from engines.llm.embedded import EMBEDDED_MODEL_NAME
from engines.llm.profile import BackendProfile
from engines.llm.types import TextDelta
from engines.retrieval.types import Retriever

QUICK_MAX_TOKENS = 120  # some 90 words: a draft still going there is too long anyway
QUICK_DIALOGUE_TURNS = 4  # level 1 sees the last turns only, so its prompt stays short and starts fast
# The embedded model's default (benchmarks/bench_debate_levels.py, two cores): level 0
# answers in milliseconds, level 1 starts its text within half a second and ends in about 2 s,
# level 2 takes half a minute or more. Level 1 is fast enough, but the tiny model's drafts that
# pass the checks still mostly argue the student's side or are no reply at all; level 0
# always gives a written argument on the bot's side.
EMBEDDED_LEVEL = 0
FULL_LEVEL = 2  # the five steps: what every debate before levels was


def quick_reply_prompt(setup: DebateSetup, history: Sequence[DialogueTurn], argument: str) -> str:
    """Level 1's prompt: the last turns of the dialogue and the argument to adapt."""
    return prompts.QUICK_REPLY.format(
        debate_dialogue=render_dialogue(setup, history[-QUICK_DIALOGUE_TURNS:]), argument=prompts.quoted(argument)
    )


class RetrievalOpponent(Opponent):
    """Level 0: the best counter-argument, word for word."""

    level = 0
    steps = (("retrieval", "Retrieval"),)
    default_timeouts = {"retrieval": 10.0}
    needs_model = False

    def _turn(self, setup: DebateSetup, history: Sequence[DialogueTurn], turn: BotTurn) -> AsyncIterator[PipelineEvent]:
        return self._retrieval_reply("retrieval", setup, history, turn)


class QuickOpponent(RetrievalOpponent):
    """Level 1: the best counter-argument adapted to the dialogue in one model call."""

    level = 1
    needs_model = True
    steps = (("retrieval", "Retrieval"), ("reply", "Reply"))
    # Two short drafts and their stance checks took at most 9 s on the embedded model.
    default_timeouts = {"retrieval": 10.0, "reply": 30.0}

    async def _turn(
        self, setup: DebateSetup, history: Sequence[DialogueTurn], turn: BotTurn
    ) -> AsyncIterator[PipelineEvent]:
        clock = self._clock("retrieval")
        yield StepStarted(clock.step)
        best = await self._counter(clock, setup, history, turn, on_topic=False)
        yield step_finished(clock, turn)

        clock = self._clock("reply")
        yield StepStarted(clock.step)
        argument = best.argument.text
        prompt = quick_reply_prompt(setup, history, argument)
        async for event in self._checked_reply(
            clock, setup, turn,
            lambda attempt, rejection: self._stream_text(replies.with_reason(prompt, rejection), argument, attempt),
            (prompts.QUICK_REPLY, prompts.RETRY_NOTE),
            fallback=argument,
        ):
            yield event
        yield step_finished(clock, turn, turn.steps.reply.drafts)

    async def _stream_text(self, prompt: str, argument: str, attempt: int) -> AsyncGenerator[ReplyProgress | Draft, None]:
        """A plain-text draft. It ends at its first blank line: what a small model writes after
        one is another speaker's turn or a second answer, not more of this one."""
        text = ""
        complete = False
        async with aclosing(self.client.stream(
            [{"role": "user", "content": prompt}], self._sampling(attempt, QUICK_MAX_TOKENS)
        )) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    text += event.text
                    head, blank, _ = text.strip().partition("\n\n")
                    yield ReplyProgress(head)
                    if blank:
                        text, complete = head, True
                        break
                else:
                    complete = event.finish_reason != "length"
        reply = text.strip()
        yield Draft(Reply(response=reply, justification="", arguments=[argument]), text, complete=complete)


# ---------------------------------------------------------------- the levels


@dataclass(frozen=True)
class OpponentLevel:
    number: int
    name: str
    description: str  # one line, for the New-debate dialog and the header
    bot: type[Opponent]

    @property
    def steps(self) -> tuple[tuple[str, str], ...]:
        """(name, title) of the steps it runs, in order."""
        return self.bot.steps

    @property
    def needs_model(self) -> bool:
        """False: it debates from the argument base alone, with no backend."""
        return self.bot.needs_model


LEVELS: tuple[OpponentLevel, ...] = (
    OpponentLevel(0, "Retrieval", "answers with the best counter-argument from the argument base, word for word",
                  RetrievalOpponent),
    OpponentLevel(1, "Quick", "adapts the best counter-argument to your message in one model call", QuickOpponent),
    OpponentLevel(2, "Full", "plans a strategy, searches the base, picks its best arguments, then writes a reply citing them",
                  DebatePipeline),
)


def get_level(number: int) -> OpponentLevel:
    for level in LEVELS:
        if level.number == number:
            return level
    raise ArgtuiError(f"no opponent level {number}: the levels are {', '.join(str(known.number) for known in LEVELS)}")


def tiny_model(profile: BackendProfile) -> bool:
    """The embedded model, started by argtui or served elsewhere: two shared CPU cores' worth."""
    return profile.embedded or profile.model == EMBEDDED_MODEL_NAME


def default_level(profile: BackendProfile) -> int:
    """The tiny embedded model gets the level a student can use at interactive speed; any
    other backend (vLLM, a configured server) the five steps."""
    return EMBEDDED_LEVEL if tiny_model(profile) else FULL_LEVEL


def default_component_method(profile: BackendProfile) -> str:
    """How a student's messages are labelled unless the student picks a method: on the tiny
    embedded model one call per component (MAD-ACC's debate took two to three minutes per
    message there), elsewhere MAD-ACC."""
    return "vanilla" if tiny_model(profile) else "mad"


def labels_during_reply(profile: BackendProfile, level: OpponentLevel) -> bool:
    """Whether a student's message is labelled (and coached) while the bot of `level` answers it.
    The embedded model shares two CPU cores with everything: labelling alongside made each of the
    bot's steps several times slower (benchmarks/bench_debate_levels.py), so there a reply the
    model writes goes first and the labels follow with the Grice judging; a bot that answers from
    the argument base alone leaves the model idle meanwhile. A GPU server batches them at little cost."""
    return not (tiny_model(profile) and level.needs_model)


def opponent(number: int, client: LLMClient | None, retriever: Retriever, **options) -> Opponent:
    """The bot of that level; `options` go to `Opponent` (seed, attempts, step_timeouts…).
    `client` None: no model answers, which only level 0 does without."""
    level = get_level(number)
    if client is None and level.needs_model:
        raise ArgtuiError(f"level {level.number} ({level.name}) needs a model, and none answers; "
                          "level 0 (Retrieval) debates without one")
    return level.bot(client, retriever, **options)
