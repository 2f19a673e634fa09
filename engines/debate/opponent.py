"""What every opponent level shares: the dialogue it answers, the typed events of a bot
turn, the turn it fills (`BotTurn`), the steps' time limits (`StepClock`) and `Opponent`,
the base of the levels, with its checked reply (`engines.debate.replies`): a draft that is
too long, repeats the instructions or argues the student's side is retried once with the
reason, then replaced by the best selected argument's text, marked as a fallback; a draft
streams as `DraftWriting` (its text and length) and becomes the reply (`ReplyProgress`) only
once it passes. Level 0's
answer, the best counter-argument from the argument base word for word, is here too: an argument
of the claim's topic on the side of it opposite the student's (`engines.retrieval.stance`), or,
for a claim on no topic of the base, the turn's failure saying so; a level whose model step
fails answers with it, marked as such (`Opponent.fallback_turn`).

The levels themselves: `engines.debate.levels` (0 and 1) and `engines.debate.pipeline` (2).
"""

from __future__ import annotations

import asyncio
import copy
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import AsyncGenerator, AsyncIterator, Awaitable, Callable, Literal, Mapping, Sequence, TypeVar

from engines.debate import prompts, replies
from engines.debate.messages import count_words, likely_english, trim_message
from engines.debate.records import (
    ArgumentRecord,
    EvidenceRow,
    FallbackRecord,
    GraphRecord,
    RejectedDraft,
    ReplyStep,
    RetrievalStep,
    TurnSteps,
)
from engines.debate.replies import WORD_LIMIT, Rejection
from engines.debate.schemas import Reply, SearchQuery, StrategyAnalysis
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.types import Usage, UsageMeter
from engines.errors import ArgtuiError
from engines.retrieval.stance import NoTopicError, claim_topic
from engines.retrieval.strategies import IDEA, ArgumentGraph, GraphEdge, GraphNode, search_side
from engines.retrieval.types import Argument, Hit, Retriever, TopicSide
from engines.timing import Stopwatch

Side = Literal["pro", "con"]
T = TypeVar("T")


@dataclass(frozen=True)
class DialogueTurn:
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class DebateSetup:
    claim: str
    user_side: Side  # the student's side; the bot argues the other


# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class StepStarted:
    step: str


@dataclass(frozen=True)
class StepFinished:
    step: str
    steps: TurnSteps  # every step finished so far
    evidence: tuple[EvidenceRow, ...]  # from retrieval on, with what the steps so far made of it
    seconds: float
    attempts: int = 1
    usage: Usage = Usage()  # of the step's model calls
    requests: int = 0  # HTTP requests the step's model calls sent


@dataclass(frozen=True)
class ReplyProgress:
    text: str  # the reply as far as it has streamed


@dataclass(frozen=True)
class DraftWriting:
    """A reply draft is being written: shown as a draft, it becomes the reply once it passes the checks."""

    words: int  # written so far
    attempt: int  # 1-based
    text: str = ""  # written so far


@dataclass(frozen=True)
class ReplyRejected:
    """A reply draft failed its checks: what streamed so far is not the reply."""

    reason: str
    text: str
    attempt: int


@dataclass(frozen=True)
class StepFailed:
    """A step of the level failed (its output, its time limit, the backend); level 0's answer follows."""

    step: str
    error: str


@dataclass(frozen=True)
class TurnFailed:
    step: str
    error: str
    raw: str


@dataclass
class EvidenceItem:
    argument: Argument
    strategy: str  # text | attack | support | chain
    query: int  # 1-based query number
    relation: str | None  # how it relates to what it was retrieved for
    score: float = 0.0  # the retriever's score
    selected: bool = False  # step 3
    final: bool = False  # step 4
    used: bool = False  # step 5
    context: bool = False  # a hit a chain starts from: shown, never offered to step 3

    def row(self) -> EvidenceRow:
        """As the turn stores it."""
        return EvidenceRow(
            **ArgumentRecord.fields_of(self.argument), strategy=self.strategy, query=self.query,
            relation_found=self.relation, score=self.score, selected=self.selected, final=self.final,
            used=self.used, context=self.context,
        )


@dataclass
class BotTurn:
    reply: str
    words: int
    length_action: str | None  # None, "regenerated" or "trimmed"
    evidence: list[EvidenceItem]
    steps: TurnSteps
    strategy: StrategyAnalysis | None = None  # level 2 only
    queries: list[SearchQuery] = field(default_factory=list)  # level 2 only
    level: int = 2
    fallback: bool = False  # every draft was rejected: the reply is the best selected argument's text
    # The level's own steps failed: the reply is level 0's answer to the message (`Opponent.fallback_turn`).
    fallback_from: FallbackRecord | None = None
    seconds: float = 0.0
    requests: int = 0

    def evidence_rows(self) -> list[EvidenceRow]:
        return [item.row() for item in self.evidence]

    @property
    def used_arguments(self) -> list[Argument]:
        seen: dict[str, Argument] = {}
        for item in self.evidence:
            if item.used:
                seen.setdefault(item.argument.id, item.argument)
        return list(seen.values())


@dataclass(frozen=True)
class TurnCompleted:
    turn: BotTurn


PipelineEvent = (
    StepStarted | StepFinished | StepFailed | DraftWriting | ReplyProgress | ReplyRejected | TurnFailed
    | TurnCompleted
)


class StepError(Exception):
    def __init__(self, step: str, error: str, raw: str):
        self.step, self.error, self.raw = step, error, raw
        super().__init__(f"step {step}: {error}")


# ---------------------------------------------------------------- helpers


def render_dialogue(setup: DebateSetup, history: Sequence[DialogueTurn]) -> str:
    user_stance = "in favour of" if setup.user_side == "pro" else "against"
    bot_stance = "against" if setup.user_side == "pro" else "in favour of"
    lines = [
        f"Debate topic: {prompts.quoted(setup.claim)}",
        f"Your opponent argues {user_stance} it; you argue {bot_stance} it.",
    ]
    lines += [f"{'Opponent' if t.role == 'user' else 'You'}: {prompts.quoted(t.content)}" for t in history]
    return "\n".join(lines)


def evidence_from(graph: ArgumentGraph, query: int) -> list[EvidenceItem]:
    items = []
    for node in graph.nodes:
        edges = graph.edges_from(node.argument.id)
        items.append(EvidenceItem(
            node.argument, node.strategy, query, edges[0].relation if edges else None, node.score,
            context=node.context,
        ))
    return items


# ---------------------------------------------------------------- level 0's answer: the best counter-argument

# The step a level with model steps answers with when one of them fails: level 0's answer.
FALLBACK_STEP = ("fallback", "Best counter-argument (fallback)")
FALLBACK_TIMEOUT_S = 10.0  # level 0's retrieval: milliseconds on the embedded base
CANDIDATES = 3  # counter-arguments retrieved: the evidence levels 0 and 1 show


async def bot_side(setup: DebateSetup) -> TopicSide | None:
    """The bot's side of the labelled topic the debate's claim is on (the topic's own wording
    or its negation, `engines.retrieval.stance`); None when the claim is on no topic of the base."""
    matched = await asyncio.to_thread(claim_topic, setup.claim)  # the first call reads the bundled corpus
    return matched.bot(setup.user_side) if matched else None


async def counter_arguments(retriever: Retriever, setup: DebateSetup, message: str, k: int = CANDIDATES) -> list[Hit]:
    """The arguments that best answer the student's message, best first: arguments of the
    claim's topic on the bot's side of it (the corpus's stance labels) whose text matches the
    message. A claim on no topic of the base has none: `NoTopicError` says so, rather than
    answering with arguments on some other topic."""
    side = await bot_side(setup)
    if side is None:
        raise NoTopicError()
    return await search_side(retriever, message, side, k)


def best_unsaid(items: list[EvidenceItem], history: Sequence[DialogueTurn]) -> EvidenceItem:
    """The best-ranked argument the bot has not said yet, within the word limit if one is."""
    said = {turn.content.strip() for turn in history if turn.role == "assistant"}
    fresh = [item for item in items if item.argument.text.strip() not in said] or items
    return next((item for item in fresh if count_words(item.argument.text) <= WORD_LIMIT), fresh[0])


# ---------------------------------------------------------------- time limits


class StepClock:
    """One step's time limit. What runs within it is cancelled at the deadline and the turn
    fails naming the step. Awaits are bounded one at a time, never across a `yield`, so
    whoever consumes the events is never the one cancelled."""

    def __init__(self, step: str, seconds: float):
        self.step, self.seconds = step, seconds
        self.stopwatch = Stopwatch()
        self.meter = UsageMeter()  # what the step's model calls cost
        self._deadline = asyncio.get_running_loop().time() + seconds

    @asynccontextmanager
    async def _bounded(self) -> AsyncIterator[None]:
        try:
            with self.meter.counting():
                async with asyncio.timeout_at(self._deadline):
                    yield
        except TimeoutError:
            raise StepError(self.step, f"timed out after {self.seconds:g} s", "") from None

    async def run(self, awaitable: Awaitable[T]) -> T:
        async with self._bounded():
            return await awaitable

    async def events(self, events: AsyncGenerator[T, None]) -> AsyncIterator[T]:
        try:
            while True:
                async with self._bounded():
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        return
                yield event
        finally:
            await events.aclose()


async def gathered(*awaitables: Awaitable[T]) -> list[T]:
    """`asyncio.gather` whose tasks start when it is awaited, so they run inside the step's
    clock (its deadline and its usage meter), not in the context they were written in."""
    return await asyncio.gather(*awaitables)


def step_finished(clock: StepClock, turn: BotTurn, attempts: int = 1) -> StepFinished:
    # A copy: the screen keeps the event's steps while the turn goes on filling its own.
    return StepFinished(
        clock.step, turn.steps.model_copy(), tuple(turn.evidence_rows()),
        clock.stopwatch.seconds, attempts, clock.meter.usage, clock.meter.requests,
    )


def _mark_used(evidence: list[EvidenceItem], texts: Sequence[str]) -> None:
    """Used are the finally selected arguments the reply names, by id: the same text found
    for another query is the same argument, an unselected one with that text is not."""
    named = {prompts.quoted(text) for text in texts}
    ids = {item.argument.id for item in evidence if item.final and prompts.quoted(item.argument.text) in named}
    for item in evidence:
        item.used = item.argument.id in ids


# ---------------------------------------------------------------- what every level shares


@dataclass(frozen=True)
class Draft:
    """What one reply attempt wrote."""

    reply: Reply | None  # None: the output did not parse (`error` says why)
    raw: str
    error: str | None = None
    complete: bool = True  # False: the model was still writing at its token limit


# (attempt, why the previous draft was rejected) -> the draft's progress, then the Draft
WriteDraft = Callable[[int, Rejection | None], AsyncGenerator[ReplyProgress | Draft, None]]


class Opponent:
    """A bot that answers one turn at a time: the backend and argument base (shared with the
    rest of the app), sampling, the steps' time limits and the checked reply. A level
    defines `_turn`, which fills the `BotTurn` that `run_turn` reports."""

    level: int
    steps: tuple[tuple[str, str], ...]  # (name, title) of the steps it runs, in order
    default_timeouts: Mapping[str, float]  # seconds per step, unless `step_timeouts` says otherwise
    needs_model = True  # False: it answers from the argument base alone, and `client` may be None

    def __init__(
        self,
        client: LLMClient | None,
        retriever: Retriever,
        *,
        temperature: float = 0.7,
        seed: int = 0,
        attempts: int = 2,
        k: int = 2,
        step_timeouts: Mapping[str, float] | None = None,
    ):
        self.client = client
        self.retriever = retriever
        self.temperature = temperature
        self.seed = seed
        self.attempts = attempts
        self.k = k
        self.step_timeouts = {FALLBACK_STEP[0]: FALLBACK_TIMEOUT_S, **self.default_timeouts, **(step_timeouts or {})}

    def with_seed(self, seed: int) -> "Opponent":
        """The same bot drawing other samples: a failed turn run again must not get the
        response cache's copy of the answers that failed."""
        other = copy.copy(self)
        other.seed = seed
        return other

    def _sampling(self, attempt: int, max_tokens: int) -> Sampling:
        # A retry is a new sample (new seed), so the cache does not replay the failure.
        return Sampling(temperature=self.temperature, seed=self.seed + attempt, max_tokens=max_tokens)

    def _clock(self, step: str) -> StepClock:
        return StepClock(step, self.step_timeouts[step])

    def _new_turn(self) -> BotTurn:
        return BotTurn(
            reply="", words=0, length_action=None, evidence=[], steps=TurnSteps(level=self.level), level=self.level
        )

    async def run_turn(self, setup: DebateSetup, history: Sequence[DialogueTurn]) -> AsyncIterator[PipelineEvent]:
        """Events for one bot turn answering the last user message in `history`. A level with
        model steps whose step fails (its output, its time limit, the backend) answers with
        level 0's reply instead (`fallback_turn`)."""
        stopwatch = Stopwatch()
        turn = self._new_turn()
        step = self.steps[0][0]
        try:
            async for event in self._turn(setup, history, turn):
                turn.requests += event.requests if isinstance(event, StepFinished) else 0
                step = event.step if isinstance(event, StepStarted) else step
                yield event
        except (StepError, ArgtuiError) as error:
            failure = (TurnFailed(error.step, error.error, error.raw) if isinstance(error, StepError)
                       else TurnFailed(step, str(error), ""))
            async for event in self.fallback_turn(setup, history, failure, stopwatch):
                yield event
            return
        yield self._completed(turn, stopwatch)

    @staticmethod
    def _completed(turn: BotTurn, stopwatch: Stopwatch) -> TurnCompleted:
        turn.words = count_words(turn.reply)
        turn.seconds = stopwatch.seconds
        return TurnCompleted(turn)

    async def fallback_turn(
        self, setup: DebateSetup, history: Sequence[DialogueTurn], failure: TurnFailed,
        stopwatch: Stopwatch | None = None,
    ) -> AsyncIterator[PipelineEvent]:
        """After `failure` of one of this level's model steps: level 0's answer to the message,
        marked as such (`BotTurn.fallback_from`), so the student still gets a reply on the bot's
        side. Level 0 itself, or a fallback that finds nothing, fails the turn with `failure`."""
        if not self.needs_model:
            yield failure
            return
        yield StepFailed(failure.step, failure.error)
        stopwatch = stopwatch or Stopwatch()
        turn = self._new_turn()
        turn.fallback_from = turn.steps.fallback_from = FallbackRecord(
            step=failure.step, error=failure.error, raw=failure.raw
        )
        try:
            async for event in self._retrieval_reply(FALLBACK_STEP[0], setup, history, turn):
                yield event
        except StepError as error:
            yield TurnFailed(failure.step, f"{failure.error}; no level-0 answer either: {error.error}", failure.raw)
            return
        yield self._completed(turn, stopwatch)

    def _turn(self, setup: DebateSetup, history: Sequence[DialogueTurn], turn: BotTurn) -> AsyncIterator[PipelineEvent]:
        raise NotImplementedError

    async def _counter(
        self, clock: StepClock, setup: DebateSetup, history: Sequence[DialogueTurn], turn: BotTurn,
        on_topic: bool = True,
    ) -> EvidenceItem:
        """Retrieve the counter-arguments into the turn; the best one is selected. `on_topic`
        False: a claim on no topic of the base gets the arguments nearest the message instead
        (for a model to adapt), not the step's failure."""
        message = next(t.content for t in reversed(history) if t.role == "user")
        try:
            hits = await clock.run(counter_arguments(self.retriever, setup, message))
        except NoTopicError as error:
            if on_topic:
                raise StepError(clock.step, str(error), "") from None
            hits = await clock.run(self.retriever.search(message, k=CANDIDATES))
        if not hits:
            hint = "" if likely_english(message) else " (the argument base is in English: write in English)"
            raise StepError(clock.step, f"the argument base has no argument against this message{hint}", "")
        graph = ArgumentGraph(
            idea=message, goal="ATTACK",
            nodes=[GraphNode(hit.argument, "attack", hit.score) for hit in hits],
            edges=[GraphEdge(hit.argument.id, IDEA, "attacks") for hit in hits],
        )
        turn.evidence = evidence_from(graph, 1)
        turn.steps.retrieval = RetrievalStep(graphs=[GraphRecord.of(graph)])
        best = best_unsaid(turn.evidence, history)
        best.selected = best.final = True
        return best

    async def _retrieval_reply(
        self, step: str, setup: DebateSetup, history: Sequence[DialogueTurn], turn: BotTurn
    ) -> AsyncIterator[PipelineEvent]:
        """Level 0's answer, as the step `step`: the best counter-argument, word for word."""
        clock = self._clock(step)
        yield StepStarted(clock.step)
        best = await self._counter(clock, setup, history, turn)
        best.used = True
        text = best.argument.text.strip()
        if count_words(text) > WORD_LIMIT:
            text, turn.length_action = trim_message(text, WORD_LIMIT), "trimmed"
        turn.reply = text
        yield ReplyProgress(text)
        yield step_finished(clock, turn)

    async def _checked_reply(
        self, clock: StepClock, setup: DebateSetup, turn: BotTurn, write: WriteDraft, templates: Sequence[str],
        fallback: str,
    ) -> AsyncIterator[PipelineEvent]:
        """Drafts (`self.attempts` at most, each retry told why the last one was rejected) until
        one passes the checks; it becomes the turn's reply. When none does, the reply is
        `fallback` (the best selected argument's text), marked as such."""
        rejected: list[RejectedDraft] = []
        rejection: Rejection | None = None
        accepted: Reply | None = None
        for attempt in range(self.attempts):
            draft = Draft(None, "", "no output came")
            async for event in clock.events(write(attempt, rejection)):
                if isinstance(event, ReplyProgress):
                    # A draft may still be rejected: it streams as a draft, the reply once it passes.
                    yield DraftWriting(count_words(event.text), attempt + 1, event.text)
                else:
                    draft = event
            if draft.reply is not None:  # "My response: …": the label is the model's, not the reply's
                response = replies.unlabelled(draft.reply.response, templates)
                draft = replace(draft, reply=draft.reply.model_copy(update={"response": response}))
            rejection = await self._rejection(clock, setup, draft, templates)
            if rejection is None:
                accepted = draft.reply
                break
            text = draft.reply.response if draft.reply else draft.raw
            rejected.append(RejectedDraft(kind=rejection.kind, reason=rejection.reason, text=text))
            yield ReplyRejected(rejection.reason, text, attempt + 1)
        if accepted is None:
            trimmed = count_words(fallback) > WORD_LIMIT
            step = ReplyStep(
                response=trim_message(fallback, WORD_LIMIT) if trimmed else fallback, justification="", arguments=[fallback],
                length_action="trimmed" if trimmed else None, rejected=rejected, fallback=True,
            )
            yield ReplyProgress(step.response)
        else:
            regenerated = any(earlier.kind == "length" for earlier in rejected)
            step = ReplyStep(
                **accepted.model_dump(), length_action="regenerated" if regenerated else None, rejected=rejected
            )
            yield ReplyProgress(step.response)
        turn.steps.reply = step
        turn.reply, turn.length_action, turn.fallback = step.response.strip(), step.length_action, step.fallback
        _mark_used(turn.evidence, step.arguments)

    async def _rejection(
        self, clock: StepClock, setup: DebateSetup, draft: Draft, templates: Sequence[str]
    ) -> Rejection | None:
        if draft.reply is None:
            return Rejection("invalid", f"the output was not usable: {draft.error}")
        text = draft.reply.response
        return replies.check_text(text, templates, complete=draft.complete) or await clock.run(
            replies.check_stance(self.client, setup.claim, setup.user_side, text)
        )
