"""One exchange of a debate, orchestrated once: the student's message is stored, its argument
components labelled, the bot answers, its reply is judged on the Grice maxims and the Coach
scores the message. Every step reports typed events (`ExchangeEvent`), which a consumer
receives through a callback (`send`, `again`, `judge`) or iterates (`events`); the Debate
screen and `argtui debate --script` only render them.

What judges a turn is given (`LiveJudges`): the tasks above this layer store each judgment
as a `Verdict` in the judgment store, under the judge a batch run would be, and the turn's
analysis row links to it.

Labelling runs while the bot answers where the backend can afford it
(`DebateSession.label_during_reply`); otherwise it starts once the reply is stored, with the
Grice judgment and the Coach, so the small embedded model writes the reply alone and then
batches the judges' requests on its slots.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import AsyncIterator, Awaitable, Callable, Generic, Iterator, Protocol, Sequence, TypeVar

from engines.debate.opponent import BotTurn, PipelineEvent, StepFailed, StepFinished, StepStarted, TurnFailed
from engines.debate.records import ComponentRecord, GriceRecord, MetricRecord, StoredTurn
from engines.debate.session import DebateSession
from engines.errors import ArgtuiError
from engines.grice.types import GriceContext
from engines.llm.types import Usage, UsageMeter
from engines.timing import Stopwatch
from store import StoreError
from store.debates import TurnState

log = logging.getLogger("argtui.exchange")


# ---------------------------------------------------------------- what judges a turn

# What the Coach makes of a message: the inspire task's `TurnJudgment`, which lives above this
# layer; the exchange and its events carry it as the judges type it.
CoachJudgment = TypeVar("CoachJudgment")


@dataclass(frozen=True)
class StoredJudgment:
    """Where the judgment store keeps a judgment of a turn: the task, the judge's name, the items."""

    task: str
    judge: str
    items: tuple[str, ...]


class LiveJudges(Protocol[CoachJudgment]):
    """The judges of a debate's turns. Each stores its judgment in the judgment store and says where."""

    async def label(
        self, debate_id: int, turn: StoredTurn, method: str, on_component: Callable[[ComponentRecord], None]
    ) -> tuple[StoredJudgment, list[ComponentRecord]]:
        """The argument components of a student message, in text order."""
        ...

    async def prepare(self, strategy: str, component_method: str, coach: bool) -> None:
        """Derive what every reply's Grice judgment under `strategy` shares, and have the server compute
        what every judge's prompts share (labels by `component_method`; the Coach's with `coach`), before
        the first message."""
        ...

    async def grice(
        self, debate_id: int, turn: StoredTurn, context: GriceContext, strategy: str,
        on_maxim: Callable[[MetricRecord], None],
    ) -> tuple[StoredJudgment, GriceRecord]:
        """The Grice maxims of a bot reply; `on_maxim` is told each maxim's judgment as it finishes."""
        ...

    async def coach(
        self, debate_id: int, turn: StoredTurn, on_part: Callable[[int, int], None] | None = None,
    ) -> tuple[CoachJudgment, float | None]:
        """The Coach's judgment of a student message and the debate's overall score since; `on_part`
        is told (parts done, parts in all) as each part of the score finishes."""
        ...


# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class MessageStored:
    turn: StoredTurn


@dataclass(frozen=True)
class ReplyStarted:
    """The bot's turn answering `message` is stored as running (a new one, or one run again)."""

    message: StoredTurn
    turn: StoredTurn
    limit_s: float | None


@dataclass(frozen=True)
class BotProgress:
    """A step of the bot's turn started or finished, the reply streamed on, a draft was rejected."""

    turn: StoredTurn
    event: PipelineEvent


@dataclass(frozen=True)
class ReplyStored:
    """The bot's turn ended and is stored: with its reply (`bot`), or failed (`failure`)."""

    turn: StoredTurn
    bot: BotTurn | None
    failure: TurnFailed | None


@dataclass(frozen=True)
class LabellingStarted:
    turn: StoredTurn
    after_reply: bool  # it waits for the bot's reply


@dataclass(frozen=True)
class ComponentLabelled:
    turn: StoredTurn
    component: ComponentRecord


@dataclass(frozen=True)
class LabelsStored:
    turn: StoredTurn
    judgment: StoredJudgment
    components: tuple[ComponentRecord, ...]


@dataclass(frozen=True)
class LabellingFailed:
    turn: StoredTurn
    error: str


@dataclass(frozen=True)
class GriceStarted:
    turn: StoredTurn
    strategy: str


@dataclass(frozen=True)
class MaximJudged:
    """One maxim of the reply is judged; the others may still run (`GriceStored` follows with them all)."""

    turn: StoredTurn
    metric: MetricRecord


@dataclass(frozen=True)
class GriceStored:
    turn: StoredTurn
    judgment: StoredJudgment
    result: GriceRecord


@dataclass(frozen=True)
class GriceFailed:
    turn: StoredTurn
    error: str


@dataclass(frozen=True)
class CoachStarted:
    turn: StoredTurn


@dataclass(frozen=True)
class CoachProgress:
    """A part of the Coach's score of the message finished: `done` of `total` are."""

    turn: StoredTurn
    done: int
    total: int


@dataclass(frozen=True)
class CoachScored(Generic[CoachJudgment]):
    turn: StoredTurn
    judgment: CoachJudgment
    debate_overall: float | None


@dataclass(frozen=True)
class CoachFailed:
    turn: StoredTurn
    error: str  # one line


@dataclass(frozen=True)
class StepTiming:
    """When one piece of an exchange ran, counted from the message's sending, and what its
    model calls cost."""

    name: str  # a step of the bot's level, "components", "grice" or "coach"
    start_s: float
    end_s: float
    usage: Usage  # none counted for a failed step of the bot's: its level reports only why
    failure: str | None = None  # why it failed (a time limit, the backend, its output); None: it finished


@dataclass
class ExchangeResult(Generic[CoachJudgment]):
    """What an exchange stored, once it is over."""

    user_turn: StoredTurn
    bot_turn: StoredTurn | None = None
    bot: BotTurn | None = None
    failure: TurnFailed | None = None
    judgment: GriceRecord | None = None
    components: list[ComponentRecord] = field(default_factory=list)
    coach: CoachJudgment | None = None  # the Coach's judgment of the message
    timings: list[StepTiming] = field(default_factory=list)  # in the order they ended


@dataclass(frozen=True)
class ExchangeDone(Generic[CoachJudgment]):
    result: ExchangeResult[CoachJudgment]


ExchangeEvent = (
    MessageStored | ReplyStarted | BotProgress | ReplyStored | LabellingStarted | ComponentLabelled | LabelsStored
    | LabellingFailed | GriceStarted | MaximJudged | GriceStored | GriceFailed | CoachStarted | CoachProgress
    | CoachScored[CoachJudgment] | CoachFailed | ExchangeDone[CoachJudgment]
)  # generic: ExchangeEvent[TurnJudgment] is an event of an exchange whose Coach gives TurnJudgment
Emit = Callable[[ExchangeEvent[CoachJudgment]], None]


def _ignore(event: ExchangeEvent[CoachJudgment]) -> None:
    pass


def reply_context(turns: Sequence[StoredTurn], reply: StoredTurn) -> GriceContext:
    """What the Grice judge sees of a stored bot reply: the dialogue before it, the reply and the
    arguments it used."""
    return GriceContext(
        dialogue=[(t.role, t.content) for t in turns if t.in_dialogue and t.position < reply.position],
        reply=reply.content,
        arguments=[row.text for row in reply.used_arguments],
    )


def one_line(error: BaseException | str) -> str:
    return " ".join(str(error).split())


# ---------------------------------------------------------------- the orchestrator


class DebateExchange(Generic[CoachJudgment]):
    """Runs a debate's exchanges on its session. `judges` None: nothing is judged (the session has
    no model, or the caller wants the reply alone); `coach` False: the Coach does not score."""

    def __init__(
        self, session: DebateSession, judges: LiveJudges[CoachJudgment] | None = None, *, coach: bool = True,
        turn_timeout_s: float | None = None, concurrent: bool = True,
    ):
        self.session = session
        self.judges = judges if session.judging_off is None else None
        self.coach = coach
        self.turn_timeout_s = turn_timeout_s
        self.concurrent = concurrent  # False: bot, Grice, labels one after the other, to compare

    async def send(self, text: str, emit: Emit[CoachJudgment] = _ignore) -> ExchangeResult[CoachJudgment]:
        """A new message and everything that follows it."""
        user_turn = self.session.add_user_message(text)
        emit(MessageStored(user_turn))
        return await self._run(user_turn, emit, label=True, answer=True, reply=None, coach=self.coach)

    async def again(
        self, message: StoredTurn, reply: StoredTurn | None, *, label: bool, answer: bool,
        emit: Emit[CoachJudgment] = _ignore,
    ) -> ExchangeResult[CoachJudgment]:
        """A turn run again: the message labelled again (`label`), the bot answering it again
        (`answer`: in the place of `reply`, failed or cancelled, or anew where there is none)."""
        return await self._run(message, emit, label=label, answer=answer, reply=reply, coach=False)

    async def prepare(self) -> None:
        """What the judges share between turns, derived ahead of the first message (the Debate screen
        runs it while the student writes): the first reply's Grice judgment then waits for less."""
        if self.judges is not None:
            choice = self.session.choice
            await self.judges.prepare(choice.grice_strategy, choice.component_method, self.coach)

    async def judge(self, replies: Sequence[StoredTurn], emit: Emit[CoachJudgment] = _ignore) -> None:
        """The Grice judgments an earlier session left undone."""
        for reply in replies:
            await self._grice(reply, emit, _Clock())

    def events(
        self, run: Callable[[Emit[CoachJudgment]], Awaitable[object]]
    ) -> AsyncIterator[ExchangeEvent[CoachJudgment]]:
        """The events of `run` (e.g. `lambda emit: exchange.send(text, emit)`) as an async iterator;
        closing it early cancels the work."""
        return _iterate(run)

    async def _run(
        self, message: StoredTurn, emit: Emit[CoachJudgment], *, label: bool, answer: bool, reply: StoredTurn | None,
        coach: bool,
    ) -> ExchangeResult[CoachJudgment]:
        clock = _Clock()
        result = ExchangeResult(message, timings=clock.timings)
        judging = self.judges is not None
        # What waits for the reply where the backend is too small to answer it beside other work; then
        # the judges start together (their requests batched on the server's slots); not `concurrent`:
        # everything in turn, to compare.
        wait = not (self.session.label_during_reply and self.concurrent)
        try:
            async with asyncio.TaskGroup() as group:
                replying = group.create_task(self._reply(message, reply, emit, clock, result)) if answer else None
                after_reply = [replying] if replying is not None else []
                judged = None
                if judging and replying is not None:
                    judged = group.create_task(self._grice_reply(result, emit, clock, replying))
                labelling = None
                if label and judging:
                    before = after_reply + ([judged] if judged is not None and not self.concurrent else [])
                    labelling = group.create_task(self._label(message, emit, clock, result, before if wait else []))
                if coach and judging:
                    before = after_reply + ([labelling] if labelling is not None and not self.concurrent else [])
                    group.create_task(self._coach(message, emit, clock, result, before if wait else []))
        except BaseExceptionGroup as failures:  # a bug or a store failure: raised as itself
            raise failures.exceptions[0] from None
        emit(ExchangeDone(result))
        return result

    async def _reply(
        self, message: StoredTurn, again: StoredTurn | None, emit: Emit[CoachJudgment], clock: _Clock,
        result: ExchangeResult[CoachJudgment],
    ) -> None:
        turn = self.session.start_reply(again=again)
        emit(ReplyStarted(message, turn, self.turn_timeout_s))

        def follow(event: PipelineEvent) -> None:
            clock.follow(event)
            emit(BotProgress(turn, event))

        stored, bot, failure = await self.session.bot_turn(follow, turn=turn, deadline_s=self.turn_timeout_s)
        result.bot_turn, result.bot, result.failure = stored, bot, failure
        emit(ReplyStored(stored, bot, failure))

    async def _grice_reply(
        self, result: ExchangeResult[CoachJudgment], emit: Emit[CoachJudgment], clock: _Clock, replying: asyncio.Task
    ) -> None:
        """The reply's Grice judgment, once it is stored."""
        await asyncio.wait([replying])
        if result.bot is not None:
            result.judgment = await self._grice(result.bot_turn, emit, clock)

    async def _grice(self, turn: StoredTurn, emit: Emit[CoachJudgment], clock: _Clock) -> GriceRecord | None:
        if self.judges is None:
            return None
        strategy = self.session.choice.grice_strategy
        context = reply_context(self.session.records.turns(self.session.debate.id), turn)
        emit(GriceStarted(turn, strategy))
        try:
            with clock.timed("grice"):
                stored, record = await self.judges.grice(
                    self.session.debate.id, turn, context, strategy, lambda metric: emit(MaximJudged(turn, metric))
                )
        except (ArgtuiError, StoreError) as exc:
            emit(GriceFailed(turn, one_line(exc)))
            return None
        self.session.records.link_judgment(turn.id, "grice", strategy, stored.judge, stored.task, stored.items)
        emit(GriceStored(turn, stored, record))
        return record

    async def _label(
        self, turn: StoredTurn, emit: Emit[CoachJudgment], clock: _Clock, result: ExchangeResult[CoachJudgment],
        after: Sequence[asyncio.Task],
    ) -> None:
        """The message's state follows the labelling, so a relaunch knows one that was cancelled or failed."""
        records = self.session.records
        method = self.session.choice.component_method
        records.set_labelling(turn.id, TurnState.RUNNING)
        emit(LabellingStarted(turn, after_reply=bool(after)))
        try:
            if after:
                await asyncio.wait(after)
            with clock.timed("components"):
                stored, components = await self.judges.label(
                    self.session.debate.id, turn, method, lambda component: emit(ComponentLabelled(turn, component))
                )
        except asyncio.CancelledError:
            records.set_labelling(turn.id, TurnState.CANCELLED)
            raise
        except (ArgtuiError, StoreError) as exc:
            records.set_labelling(turn.id, TurnState.FAILED)
            emit(LabellingFailed(turn, one_line(exc)))
            return
        records.link_judgment(turn.id, "components", method, stored.judge, stored.task, stored.items)
        records.set_labelling(turn.id, TurnState.DONE)
        result.components = components
        emit(LabelsStored(turn, stored, tuple(components)))

    async def _coach(
        self, turn: StoredTurn, emit: Emit[CoachJudgment], clock: _Clock, result: ExchangeResult[CoachJudgment],
        after: Sequence[asyncio.Task],
    ) -> None:
        emit(CoachStarted(turn))
        if after:
            await asyncio.wait(after)
        try:
            with clock.timed("coach"):
                judgment, overall = await self.judges.coach(
                    self.session.debate.id, turn, lambda done, total: emit(CoachProgress(turn, done, total)))
        except (ArgtuiError, StoreError) as exc:
            emit(CoachFailed(turn, one_line(exc)))
            return
        except Exception as exc:  # a bug: the log has the traceback, the consumer one line
            log.exception("scoring turn %s of debate %s", turn.position, self.session.debate.id)
            emit(CoachFailed(turn, f"{type(exc).__name__} (details in logs/argtui.log)"))
            return
        result.coach = judgment
        emit(CoachScored(turn, judgment, overall))


class _Clock:
    """When each piece of an exchange ran, from its start, and how it ended."""

    def __init__(self) -> None:
        self.stopwatch = Stopwatch()  # from the exchange's start
        self.timings: list[StepTiming] = []
        self._step_started: dict[str, float] = {}  # the bot's steps that have not ended

    def now(self) -> float:
        return self.stopwatch.seconds

    def follow(self, event: PipelineEvent) -> None:
        if isinstance(event, StepStarted):
            self._step_started[event.step] = self.now()
        elif isinstance(event, StepFinished):
            started = self._step_started.pop(event.step, 0.0)
            self.timings.append(StepTiming(event.step, started, self.now(), event.usage))
        elif isinstance(event, StepFailed):
            self._failed(event.step, event.error)
        elif isinstance(event, TurnFailed):  # the step running, or level 0's answer after it, failed
            for step in list(self._step_started):
                self._failed(step, event.error)

    def _failed(self, step: str, error: str) -> None:
        started = self._step_started.pop(step, 0.0)
        self.timings.append(StepTiming(step, started, self.now(), Usage(), failure=error))

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """A piece of the exchange, timed with what its model calls cost, or why it failed."""
        start = self.now()
        with UsageMeter().counting() as meter:
            try:
                yield
            except (ArgtuiError, StoreError) as exc:
                self.timings.append(StepTiming(name, start, self.now(), meter.usage, failure=one_line(exc)))
                raise
        self.timings.append(StepTiming(name, start, self.now(), meter.usage))


async def _iterate(
    run: Callable[[Emit[CoachJudgment]], Awaitable[object]]
) -> AsyncIterator[ExchangeEvent[CoachJudgment]]:
    queue: asyncio.Queue[ExchangeEvent[CoachJudgment] | None] = asyncio.Queue()

    async def work() -> None:
        try:
            await run(queue.put_nowait)
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(work())
    try:
        while (event := await queue.get()) is not None:
            yield event
        task.result()  # what the work raised
    finally:
        if not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
