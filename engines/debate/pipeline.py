"""The SINAI five-step debate bot (CLEF 2025 RAD subtask 1) as a stream of typed events.

Each bot turn: (1) discourse and strategy analysis; (2) up to three search
queries; retrieval of a small argument graph per query with the three SINAI
strategies; (3) per query, the best three of what was retrieved (queries
concurrently); (4) up to three arguments overall; (5) a reply of at most 60
words with the arguments it used, streamed. Every step's JSON is schema
constrained and validated; a step that still fails after its retries ends the
turn with `TurnFailed` — never skipped.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from typing import AsyncIterator, Literal, Sequence, TypeVar

from pydantic import BaseModel

from engines.debate import prompts
from engines.debate.records import EvidenceRow, GraphRecord, ReplyStep, RetrievalStep, TurnSteps
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
from engines.llm.client import LLMClient, json_schema_constraint, parse_structured
from engines.llm.profile import Sampling
from engines.llm.types import Completion, Structured, TextDelta
from engines.retrieval.strategies import ArgumentGraph, retrieve_for_idea
from engines.retrieval.types import Argument, Retriever

Side = Literal["pro", "con"]
WORD_LIMIT = 60
STEPS: tuple[tuple[str, str], ...] = (
    ("strategy", "1 Strategy"),
    ("queries", "2 Queries"),
    ("retrieval", "2.5 Retrieval"),
    ("selection", "3 Selection per query"),
    ("final", "4 Final selection"),
    ("reply", "5 Reply"),
)
STRATEGY_HEADINGS = {"attack": "ATTACK STRATEGY", "support": "SUPPORT STRATEGY", "text": "TEXT STRATEGY"}
ModelT = TypeVar("ModelT", bound=BaseModel)


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


@dataclass(frozen=True)
class ReplyProgress:
    text: str  # the reply as far as it has streamed


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


@dataclass
class BotTurn:
    reply: str
    words: int
    length_action: str | None  # None, "regenerated" or "trimmed"
    strategy: StrategyAnalysis
    queries: list[SearchQuery]
    evidence: list[EvidenceItem]
    steps: TurnSteps
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


PipelineEvent = StepStarted | StepFinished | ReplyProgress | TurnFailed | TurnCompleted


class StepError(Exception):
    def __init__(self, step: str, error: str, raw: str):
        self.step, self.error, self.raw = step, error, raw
        super().__init__(f"step {step}: {error}")


# ---------------------------------------------------------------- helpers


def count_words(text: str) -> int:
    return len(text.split())


def trim_words(text: str, limit: int = WORD_LIMIT) -> str:
    return " ".join(text.split()[:limit])


def render_dialogue(setup: DebateSetup, history: Sequence[DialogueTurn]) -> str:
    user_stance = "in favour of" if setup.user_side == "pro" else "against"
    bot_stance = "against" if setup.user_side == "pro" else "in favour of"
    lines = [
        f"Debate topic: {setup.claim}",
        f"Your opponent argues {user_stance} it; you argue {bot_stance} it.",
    ]
    lines += [f"{'Opponent' if t.role == 'user' else 'You'}: {t.content}" for t in history]
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
    """Arguments grouped under the strategy headings the step-3 prompt names."""
    by_id = {node.argument.id: node.argument for node in graph.nodes}
    groups: dict[str, list[str]] = {heading: [] for heading in STRATEGY_HEADINGS.values()}
    for node in graph.nodes:
        if node.strategy == "chain":
            edge = graph.edges_from(node.argument.id)[0]
            target = by_id.get(edge.target)
            base = graph.node(edge.target)
            heading = STRATEGY_HEADINGS[base.strategy if base else "support"]
            note = f' ({edge.relation} the argument "{target.text}")' if target else ""
            groups[heading].append(f"- {node.argument.text}{note}")
        else:
            groups[STRATEGY_HEADINGS[node.strategy]].append(f"- {node.argument.text}")
    return "\n".join(
        f"{heading}:\n" + ("\n".join(lines) if lines else "- (nothing found)")
        for heading, lines in groups.items()
    )


def _finished(
    step: str, steps: TurnSteps, evidence: list[EvidenceItem], started: float, attempts: int = 1
) -> StepFinished:
    # A copy: the screen keeps the event's steps while the pipeline goes on filling its own.
    return StepFinished(
        step, steps.model_copy(), tuple(EvidenceRow.of(item) for item in evidence),
        time.perf_counter() - started, attempts,
    )


def _evidence_from(graph: ArgumentGraph, query: int) -> list[EvidenceItem]:
    items = []
    for node in graph.nodes:
        edges = graph.edges_from(node.argument.id)
        items.append(
            EvidenceItem(node.argument, node.strategy, query, edges[0].relation if edges else None, node.score)
        )
    return items


# ---------------------------------------------------------------- pipeline


class DebatePipeline:
    """One bot turn at a time; the client and retriever are shared with the rest of the app."""

    def __init__(
        self,
        client: LLMClient,
        retriever: Retriever,
        *,
        temperature: float = 0.7,
        seed: int = 0,
        attempts: int = 2,
        k: int = 2,
    ):
        self.client = client
        self.retriever = retriever
        self.temperature = temperature
        self.seed = seed
        self.attempts = attempts
        self.k = k

    def _sampling(self, attempt: int, max_tokens: int) -> Sampling:
        # A retry is a new sample (new seed), so the cache does not replay the failure.
        return Sampling(temperature=self.temperature, seed=self.seed + attempt, max_tokens=max_tokens)

    async def _step(self, step: str, prompt: str, model_cls: type[ModelT], max_tokens: int) -> tuple[ModelT, int]:
        messages = [{"role": "user", "content": prompt}]
        last = None
        for attempt in range(self.attempts):
            [result] = await self.client.structured(messages, model_cls, self._sampling(attempt, max_tokens))
            if result.valid:
                return result.value, attempt + 1
            last = result
        raise StepError(step, f"invalid output after {self.attempts} attempts: {last.error}", last.raw)

    async def run_turn(self, setup: DebateSetup, history: Sequence[DialogueTurn]) -> AsyncIterator[PipelineEvent]:
        """Events for one bot turn answering the last user message in `history`."""
        started = time.perf_counter()
        requests_before = self.client.accounting.requests
        dialogue = render_dialogue(setup, history)
        steps = TurnSteps()
        evidence: list[EvidenceItem] = []
        step = "strategy"
        try:
            # 1 strategy
            yield StepStarted(step)
            t = time.perf_counter()
            strategy, attempts = await self._step(
                step, prompts.STRATEGY_ANALYSIS.format(debate_dialogue=dialogue), StrategyAnalysis, 700
            )
            steps.strategy = strategy
            yield _finished(step, steps, evidence, t, attempts)

            # 2 queries
            step = "queries"
            yield StepStarted(step)
            t = time.perf_counter()
            plan, attempts = await self._step(
                step,
                prompts.QUERY_GENERATION.format(
                    debate_dialogue=dialogue,
                    approach_strategy=strategy.approach_strategy,
                    approach_description=prompts.APPROACH_DESCRIPTIONS[strategy.approach_strategy],
                    justification_approach=strategy.justification_approach,
                ),
                SearchPlan,
                600,
            )
            queries = plan.queries()
            steps.queries = plan
            yield _finished(step, steps, evidence, t, attempts)

            # 2.5 retrieval, all queries at once
            step = "retrieval"
            yield StepStarted(step)
            t = time.perf_counter()
            graphs = await asyncio.gather(
                *(retrieve_for_idea(self.retriever, q.opponent_idea, q.field_to_look, self.k) for q in queries)
            )
            evidence = [item for i, graph in enumerate(graphs, 1) for item in _evidence_from(graph, i)]
            if not evidence:
                raise StepError(step, "the argument base returned nothing for any query", "")
            steps.retrieval = RetrievalStep(graphs=[GraphRecord.of(graph) for graph in graphs])
            yield _finished(step, steps, evidence, t)

            # 3 per-query selection, queries concurrently
            step = "selection"
            yield StepStarted(step)
            t = time.perf_counter()
            selections = await asyncio.gather(
                *(self._select_for_query(dialogue, strategy, q, g) for q, g in zip(queries, graphs) if g.nodes)
            )
            searched = [(q, g) for q, g in zip(queries, graphs) if g.nodes]
            for (query, graph), (selection, _) in zip(searched, selections):
                chosen = set(selection.arguments)
                query_number = graphs.index(graph) + 1
                for item in evidence:
                    if item.query == query_number and item.argument.text in chosen:
                        item.selected = True
            steps.selection = {f"SEARCH_{graphs.index(g) + 1}": s for (_, g), (s, _) in zip(searched, selections)}
            yield _finished(step, steps, evidence, t, max(a for _, a in selections))

            # 4 final selection
            step = "final"
            yield StepStarted(step)
            t = time.perf_counter()
            final, attempts = await self._final_selection(dialogue, searched, selections, graphs)
            final_texts = {text for _, text, _ in final.selected()}
            for item in evidence:
                item.final = item.argument.text in final_texts
            steps.final = final
            yield _finished(step, steps, evidence, t, attempts)

            # 5 reply, streamed
            step = "reply"
            yield StepStarted(step)
            t = time.perf_counter()
            reply: Reply | None = None
            length_action = None
            attempts, raw = 0, ""
            for attempt in range(self.attempts):
                attempts = attempt + 1
                result = None
                async for event in self._stream_reply(dialogue, strategy, final, attempt):
                    if isinstance(event, ReplyProgress):
                        yield event
                    else:
                        result = event
                raw = result.raw if result else raw
                if result is None or not result.valid:
                    continue
                reply = result.value
                if count_words(reply.response) <= WORD_LIMIT:
                    break
                length_action = "regenerated"
            if reply is None:
                raise StepError(step, f"invalid output after {self.attempts} attempts", raw)
            text = reply.response.strip()
            if count_words(text) > WORD_LIMIT:
                text, length_action = trim_words(text), "trimmed"
                yield ReplyProgress(text)
            used = set(reply.arguments)
            for item in evidence:
                item.used = item.argument.text in used
            steps.reply = ReplyStep(**reply.model_dump(), length_action=length_action)
            yield _finished(step, steps, evidence, t, attempts)
        except StepError as failure:
            yield TurnFailed(failure.step, failure.error, failure.raw)
            return
        yield TurnCompleted(
            BotTurn(
                reply=text,
                words=count_words(text),
                length_action=length_action,
                strategy=strategy,
                queries=queries,
                evidence=evidence,
                steps=steps,
                seconds=time.perf_counter() - started,
                requests=self.client.accounting.requests - requests_before,
            )
        )

    async def _select_for_query(
        self, dialogue: str, strategy: StrategyAnalysis, query: SearchQuery, graph: ArgumentGraph
    ) -> tuple[QuerySelection, int]:
        prompt = prompts.QUERY_SELECTION.format(
            debate_dialogue=dialogue,
            query=json.dumps(query.model_dump(), ensure_ascii=False),
            retrieved_arguments=render_retrieved(graph),
            type_of_arguments=strategy.type_of_arguments,
            justification_type=strategy.justification_type,
        )
        texts = [node.argument.text for node in graph.nodes]
        return await self._step("selection", prompt, query_selection_model(texts), 900)

    async def _final_selection(self, dialogue, searched, selections, graphs) -> tuple[FinalSelection, int]:
        blocks, aspects, texts = [], [], []
        for (query, graph), (selection, _) in zip(searched, selections):
            aspect = f"{query.field_to_look} to {query.opponent_idea}"
            aspects.append(aspect)
            texts.extend(selection.arguments)
            blocks.append(
                f"SEARCH_{graphs.index(graph) + 1}: "
                + json.dumps(
                    {"aspect": aspect, "retrieved_arguments": selection.arguments,
                     "justification": selection.justification},
                    ensure_ascii=False,
                )
            )
        prompt = prompts.FINAL_SELECTION.format(debate_dialogue=dialogue, searches="\n".join(blocks))
        return await self._step("final", prompt, final_selection_model(aspects, texts), 1200)

    async def _stream_reply(
        self, dialogue: str, strategy: StrategyAnalysis, final: FinalSelection, attempt: int
    ) -> AsyncIterator[ReplyProgress | Structured[Reply]]:
        texts = [text for _, text, _ in final.selected()]
        reply_cls = reply_model(texts)
        prompt = prompts.RESPONSE_GENERATION.format(
            debate_dialogue=dialogue,
            tone=strategy.tone,
            justification_tone=strategy.justification_tone,
            style=strategy.style,
            justification_style=strategy.justification_style,
            perspective=strategy.perspective,
            justification_perspective=strategy.justification_perspective,
            selected_arguments=final.model_dump_json(exclude_none=True),
        )
        raw, shown = "", ""
        completion: Completion | None = None
        async for event in self.client.stream(
            [{"role": "user", "content": prompt}],
            self._sampling(attempt, 1000),
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
            yield parse_structured(reply_cls, completion)
