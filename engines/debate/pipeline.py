"""The SINAI five-step debate bot (CLEF 2025 RAD subtask 1) as a stream of typed events.

Each bot turn: (1) discourse and strategy analysis; (2) up to three search
queries; retrieval of a small argument graph per query with the three SINAI
strategies; (3) per query, the best three of the six arguments it offers (the
hits the chains start from stay in the evidence as context; queries
concurrently); (4) up to three arguments overall; (5) a reply of at most 60
words with the arguments it used, streamed. Every step's JSON is schema
constrained and validated; a step that still fails after its retries ends the
turn with `TurnFailed` — never skipped. So does a step that runs out of its time.

The reply is checked before it counts (`engines.debate.replies`): a draft that is
too long, repeats the instructions or argues the student's side is retried once
with the reason, then replaced by the best selected argument's text, marked as a
fallback. `Opponent` holds what every opponent level shares (`engines.debate.levels`).

Every text a prompt takes (the dialogue, retrieved arguments, an earlier step's answer)
goes in through `prompts.quoted`, and the argument fields of steps 3–5 are constrained to
the quoted texts the prompt shows; an argument is matched to its quoted text.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncGenerator, AsyncIterator, Awaitable, Callable, Literal, Mapping, Sequence, TypeVar

from pydantic import BaseModel

from engines.debate import prompts, replies
from engines.debate.messages import count_words, trim_message
from engines.debate.records import EvidenceRow, GraphRecord, RejectedDraft, ReplyStep, RetrievalStep, TurnSteps
from engines.debate.replies import WORD_LIMIT, Rejection
from engines.debate.schemas import (
    FinalSelection,
    QuerySelection,
    Reply,
    SearchPlan,
    SearchQuery,
    StrategyAnalysis,
    final_selection_model,
    query_selection_model,
    reply_model,
)
from engines.llm.budget import max_tokens_for
from engines.llm.client import LLMClient, json_schema_constraint, parse_structured
from engines.llm.profile import Sampling
from engines.llm.types import Completion, Structured, TextDelta, Usage, UsageMeter
from engines.retrieval.strategies import ArgumentGraph, retrieve_for_idea
from engines.retrieval.types import Argument, Retriever

Side = Literal["pro", "con"]
STEPS: tuple[tuple[str, str], ...] = (
    ("strategy", "1 Strategy"),
    ("queries", "2 Queries"),
    ("retrieval", "2.5 Retrieval"),
    ("selection", "3 Selection per query"),
    ("final", "4 Final selection"),
    ("reply", "5 Reply"),
)
# Seconds each of the five steps may take, all its attempts included: about three times
# the slowest the embedded model took on two shared cores (selection 41 s, reply 39 s), so
# only a stuck backend reaches them.
STEP_TIMEOUTS: dict[str, float] = {
    "strategy": 60.0, "queries": 60.0, "retrieval": 10.0, "selection": 120.0, "final": 60.0, "reply": 120.0,
}
STRATEGY_HEADINGS = {"attack": "ATTACK STRATEGY", "support": "SUPPORT STRATEGY", "text": "TEXT STRATEGY"}
ModelT = TypeVar("ModelT", bound=BaseModel)
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


@dataclass(frozen=True)
class ReplyProgress:
    text: str  # the reply as far as it has streamed


@dataclass(frozen=True)
class ReplyRejected:
    """A reply draft failed its checks: what streamed so far is not the reply."""

    reason: str
    text: str
    attempt: int


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
    seconds: float = 0.0
    requests: int = 0

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


PipelineEvent = StepStarted | StepFinished | ReplyProgress | ReplyRejected | TurnFailed | TurnCompleted


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


_PARTIAL_RESPONSE = re.compile(r'"response"\s*:\s*"((?:[^"\\]|\\.)*)')


def partial_reply(raw_json: str) -> str:
    """The `response` string of a JSON object that is still streaming in."""
    match = _PARTIAL_RESPONSE.search(raw_json)
    if not match:
        return ""
    body = match.group(1)
    if body.endswith("\\"):
        body = body[:-1]
    try:
        return json.loads(f'"{body}"')
    except json.JSONDecodeError:
        return body.replace('\\"', '"').replace("\\n", "\n")


def render_retrieved(graph: ArgumentGraph) -> str:
    """The arguments step 3 chooses from, grouped under the strategy headings its prompt names.
    A chain goes under the strategy of the hit it starts from (for ATTACK: SUPPORT STRATEGY,
    "arguments that attack some arguments that support the opponent_idea"); that hit is
    context and is not listed."""
    groups: dict[str, list[str]] = {heading: [] for heading in STRATEGY_HEADINGS.values()}
    for node in graph.candidates():
        strategy = node.strategy
        if strategy == "chain":
            base = graph.node(graph.edges_from(node.argument.id)[0].target)
            strategy = base.strategy if base else "support"
        groups[STRATEGY_HEADINGS[strategy]].append(f"- {prompts.quoted(node.argument.text)}")
    return "\n".join(
        f"{heading}:\n" + ("\n".join(lines) if lines else "- (nothing found)")
        for heading, lines in groups.items()
    )


def evidence_from(graph: ArgumentGraph, query: int) -> list[EvidenceItem]:
    items = []
    for node in graph.nodes:
        edges = graph.edges_from(node.argument.id)
        items.append(EvidenceItem(
            node.argument, node.strategy, query, edges[0].relation if edges else None, node.score,
            context=node.context,
        ))
    return items


# ---------------------------------------------------------------- time limits


class StepClock:
    """One step's time limit. What runs within it is cancelled at the deadline and the turn
    fails naming the step. Awaits are bounded one at a time, never across a `yield`, so
    whoever consumes the events is never the one cancelled."""

    def __init__(self, step: str, seconds: float):
        self.step, self.seconds = step, seconds
        self.started = time.perf_counter()
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
        clock.step, turn.steps.model_copy(), tuple(EvidenceRow.of(item) for item in turn.evidence),
        time.perf_counter() - clock.started, attempts, clock.meter.usage,
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
        self.step_timeouts = {**self.default_timeouts, **(step_timeouts or {})}

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

    async def run_turn(self, setup: DebateSetup, history: Sequence[DialogueTurn]) -> AsyncIterator[PipelineEvent]:
        """Events for one bot turn answering the last user message in `history`."""
        started = time.perf_counter()
        requests_before = self._requests()
        turn = BotTurn(
            reply="", words=0, length_action=None, evidence=[], steps=TurnSteps(level=self.level), level=self.level
        )
        try:
            async for event in self._turn(setup, history, turn):
                yield event
        except StepError as failure:
            yield TurnFailed(failure.step, failure.error, failure.raw)
            return
        turn.words = count_words(turn.reply)
        turn.seconds = time.perf_counter() - started
        turn.requests = self._requests() - requests_before
        yield TurnCompleted(turn)

    def _requests(self) -> int:
        return self.client.accounting.requests if self.client is not None else 0

    def _turn(self, setup: DebateSetup, history: Sequence[DialogueTurn], turn: BotTurn) -> AsyncIterator[PipelineEvent]:
        raise NotImplementedError

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
                    yield event
                else:
                    draft = event
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


# ---------------------------------------------------------------- level 2: the five steps


def _quoted(answer: ModelT) -> ModelT:
    """An earlier step's answer as a prompt takes it: every text in it quoted."""
    return answer.model_copy(update={name: prompts.quoted(value) for name, value in answer if isinstance(value, str)})


def queries_prompt(dialogue: str, strategy: StrategyAnalysis) -> str:
    """Step 2's prompt."""
    return prompts.QUERY_GENERATION.format(
        debate_dialogue=dialogue,
        approach_strategy=strategy.approach_strategy,
        approach_description=prompts.APPROACH_DESCRIPTIONS[strategy.approach_strategy],
        justification_approach=prompts.quoted(strategy.justification_approach),
    )


def selection_prompt(dialogue: str, strategy: StrategyAnalysis, query: SearchQuery, graph: ArgumentGraph) -> str:
    """Step 3's prompt for one query."""
    return prompts.QUERY_SELECTION.format(
        debate_dialogue=dialogue,
        query=json.dumps(_quoted(query).model_dump(), ensure_ascii=False),
        retrieved_arguments=render_retrieved(graph),
        type_of_arguments=strategy.type_of_arguments,
        justification_type=prompts.quoted(strategy.justification_type),
    )


def final_selection_prompt(
    dialogue: str, selections: Sequence[tuple[int, SearchQuery, QuerySelection]]
) -> tuple[str, list[str], list[str]]:
    """Step 4's prompt on (query number, query, its step-3 selection), and the aspects and the
    argument texts it shows: what its answer must be one of."""
    blocks, aspects, texts = [], [], []
    for number, query, selection in selections:
        aspect = prompts.quoted(f"{query.field_to_look} to {query.opponent_idea}")
        arguments = [prompts.quoted(text) for text in selection.arguments]
        aspects.append(aspect)
        texts.extend(arguments)
        blocks.append(
            f"SEARCH_{number}: "
            + json.dumps(
                {"aspect": aspect, "retrieved_arguments": arguments,
                 "justification": prompts.quoted(selection.justification)},
                ensure_ascii=False,
            )
        )
    return prompts.FINAL_SELECTION.format(debate_dialogue=dialogue, searches="\n".join(blocks)), aspects, texts


def reply_prompt(dialogue: str, strategy: StrategyAnalysis, final: FinalSelection) -> str:
    """Step 5's prompt."""
    strategy = _quoted(strategy)
    return prompts.RESPONSE_GENERATION.format(
        debate_dialogue=dialogue,
        tone=strategy.tone,
        justification_tone=strategy.justification_tone,
        style=strategy.style,
        justification_style=strategy.justification_style,
        perspective=strategy.perspective,
        justification_perspective=strategy.justification_perspective,
        selected_arguments=_quoted(final).model_dump_json(exclude_none=True),
    )


def _selected_texts(final: FinalSelection) -> list[str]:
    """The texts of step 4's arguments as the reply prompt shows them (what step 5 may name)."""
    return [prompts.quoted(text) for _, text, _ in final.selected()]


class DebatePipeline(Opponent):
    """Level 2: the five SINAI steps."""

    level = 2
    steps = STEPS
    default_timeouts = STEP_TIMEOUTS

    async def _structured(self, step: str, prompt: str, model_cls: type[ModelT]) -> tuple[ModelT, int]:
        messages = [{"role": "user", "content": prompt}]
        last = None
        for attempt in range(self.attempts):
            [result] = await self.client.structured(
                messages, model_cls, self._sampling(attempt, max_tokens_for(model_cls))
            )
            if result.valid:
                return result.value, attempt + 1
            last = result
        raise StepError(step, f"invalid output after {self.attempts} attempts: {last.error}", last.raw)

    async def _turn(
        self, setup: DebateSetup, history: Sequence[DialogueTurn], turn: BotTurn
    ) -> AsyncIterator[PipelineEvent]:
        dialogue = render_dialogue(setup, history)
        steps = turn.steps

        # 1 strategy
        clock = self._clock("strategy")
        yield StepStarted(clock.step)
        strategy, attempts = await clock.run(self._structured(
            clock.step, prompts.STRATEGY_ANALYSIS.format(debate_dialogue=dialogue), StrategyAnalysis
        ))
        steps.strategy = turn.strategy = strategy
        yield step_finished(clock, turn, attempts)

        # 2 queries
        clock = self._clock("queries")
        yield StepStarted(clock.step)
        plan, attempts = await clock.run(self._structured(clock.step, queries_prompt(dialogue, strategy), SearchPlan))
        queries = turn.queries = plan.queries()
        steps.queries = plan
        yield step_finished(clock, turn, attempts)

        # 2.5 retrieval, all queries at once
        clock = self._clock("retrieval")
        yield StepStarted(clock.step)
        graphs = await clock.run(gathered(
            *(retrieve_for_idea(self.retriever, q.opponent_idea, q.field_to_look, self.k) for q in queries)
        ))
        turn.evidence = [item for i, graph in enumerate(graphs, 1) for item in evidence_from(graph, i)]
        if not any(graph.candidates() for graph in graphs):
            raise StepError(clock.step, "the argument base returned nothing for any query", "")
        steps.retrieval = RetrievalStep(graphs=[GraphRecord.of(graph) for graph in graphs])
        yield step_finished(clock, turn)

        # 3 per-query selection, queries concurrently
        clock = self._clock("selection")
        yield StepStarted(clock.step)
        # (query number, query, graph) by position: two queries may retrieve equal graphs
        searched = [(n, q, g) for n, (q, g) in enumerate(zip(queries, graphs), 1) if g.candidates()]
        selections = await clock.run(gathered(
            *(self._select_for_query(dialogue, strategy, q, g) for _, q, g in searched)
        ))
        for (query_number, _, _), (selection, _) in zip(searched, selections):
            chosen = set(selection.arguments)
            for item in turn.evidence:
                if item.query == query_number and not item.context and prompts.quoted(item.argument.text) in chosen:
                    item.selected = True
        steps.selection = {f"SEARCH_{n}": s for (n, _, _), (s, _) in zip(searched, selections)}
        yield step_finished(clock, turn, max(a for _, a in selections))

        # 4 final selection
        clock = self._clock("final")
        yield StepStarted(clock.step)
        final, attempts = await clock.run(self._final_selection(dialogue, searched, selections))
        final_texts = set(_selected_texts(final))
        for item in turn.evidence:
            item.final = prompts.quoted(item.argument.text) in final_texts
        steps.final = final
        yield step_finished(clock, turn, attempts)

        # 5 reply, streamed and checked
        clock = self._clock("reply")
        yield StepStarted(clock.step)
        texts = _selected_texts(final)
        reply_cls = reply_model(texts)
        prompt = reply_prompt(dialogue, strategy, final)
        # When every draft is rejected the reply is the first selected argument as written.
        fallback = next(
            (item.argument.text for item in turn.evidence if prompts.quoted(item.argument.text) == texts[0]), texts[0]
        )
        async for event in self._checked_reply(
            clock, setup, turn,
            lambda attempt, rejection: self._stream_json(replies.with_reason(prompt, rejection), reply_cls, attempt),
            (prompts.RESPONSE_GENERATION, prompts.RETRY_NOTE),
            fallback=fallback,
        ):
            yield event
        yield step_finished(clock, turn, steps.reply.drafts)

    async def reply_candidates(
        self, setup: DebateSetup, history: Sequence[DialogueTurn], strategy: StrategyAnalysis,
        final: FinalSelection, n: int,
    ) -> list[Structured[Reply]]:
        """`n` alternative replies of step 5 for a turn whose steps 1–4 are known, in one
        request (the prompt prefilled once); unchecked, and invalid ones kept as such."""
        reply_cls = reply_model(_selected_texts(final))
        return await self.client.structured(
            [{"role": "user", "content": reply_prompt(render_dialogue(setup, history), strategy, final)}],
            reply_cls, self._sampling(0, max_tokens_for(reply_cls)), n=n,
        )

    async def _select_for_query(
        self, dialogue: str, strategy: StrategyAnalysis, query: SearchQuery, graph: ArgumentGraph
    ) -> tuple[QuerySelection, int]:
        texts = [prompts.quoted(node.argument.text) for node in graph.candidates()]
        return await self._structured(
            "selection", selection_prompt(dialogue, strategy, query, graph), query_selection_model(texts)
        )

    async def _final_selection(self, dialogue, searched, selections) -> tuple[FinalSelection, int]:
        prompt, aspects, texts = final_selection_prompt(
            dialogue, [(number, query, selection) for (number, query, _), (selection, _) in zip(searched, selections)]
        )
        return await self._structured("final", prompt, final_selection_model(aspects, texts))

    async def _stream_json(
        self, prompt: str, reply_cls: type[Reply], attempt: int
    ) -> AsyncGenerator[ReplyProgress | Draft, None]:
        raw, shown = "", ""
        completion: Completion | None = None
        async for event in self.client.stream(
            [{"role": "user", "content": prompt}],
            self._sampling(attempt, max_tokens_for(reply_cls)),
            constraint=json_schema_constraint(reply_cls),
        ):
            if isinstance(event, TextDelta):
                raw += event.text
                visible = partial_reply(raw)
                if visible != shown:
                    shown = visible
                    yield ReplyProgress(visible)
            else:
                completion = event
        if completion is not None:
            result = parse_structured(reply_cls, completion)
            yield Draft(result.value, result.raw, result.error)
