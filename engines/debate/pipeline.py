"""The SINAI five-step debate bot (CLEF 2025 RAD subtask 1) as a stream of typed events.

Each bot turn: (1) discourse and strategy analysis; (2) up to three search
queries; retrieval of a small argument graph per query with the three SINAI
strategies (on a claim of a topic of the base, from the bot's side of that topic);
(3) per query, the best three of the six arguments it offers (the hits the chains
start from stay in the evidence as context; queries concurrently); (4) up to three
arguments overall; (5) a reply of at most 60 words with the arguments it used, streamed.
Every step's JSON is schema constrained and validated; a step that still fails after its retries, or runs out of
its time, ends the level's steps — never skipped: the reply is then level 0's, the best
counter-argument, marked as such (`Opponent.fallback_turn`).

The reply is checked before it counts (`engines.debate.replies`): a draft that is
too long, repeats the instructions or argues the student's side is retried once
with the reason, then replaced by the best selected argument's text, marked as a
fallback; a draft shows only once it passes. `Opponent` (`engines.debate.opponent`) holds what every opponent level shares,
with the events a turn reports.

Every text a prompt takes (the dialogue, retrieved arguments, an earlier step's answer)
goes in through `prompts.quoted`, and the argument fields of steps 3–5 are constrained to
the quoted texts the prompt shows; an argument is matched to its quoted text.
"""

from __future__ import annotations

import json
import re
from typing import AsyncGenerator, AsyncIterator, Sequence, TypeVar

from pydantic import BaseModel

from engines.debate import prompts, replies
from engines.debate.opponent import (
    BotTurn,
    DebateSetup,
    DialogueTurn,
    Draft,
    Opponent,
    PipelineEvent,
    ReplyProgress,
    StepError,
    StepStarted,
    bot_side,
    evidence_from,
    gathered,
    render_dialogue,
    step_finished,
)
from engines.debate.records import GraphRecord, RetrievalStep
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
from engines.llm.client import json_schema_constraint, parse_structured
from engines.llm.reasking import structured_until_valid
from engines.llm.types import Completion, Structured, TextDelta
from engines.retrieval.strategies import ArgumentGraph, retrieve_for_idea

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
        samplings = [self._sampling(attempt, max_tokens_for(model_cls)) for attempt in range(self.attempts)]
        asked = await structured_until_valid(self.client, [{"role": "user", "content": prompt}], model_cls, samplings)
        if asked.valid:
            return asked.result.value, asked.attempts
        raise StepError(step, f"invalid output after {asked.attempts} attempts: {asked.result.error}", asked.result.raw)

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

        # 2.5 retrieval, all queries at once; on the claim's topic, only the bot's side of it is offered
        clock = self._clock("retrieval")
        yield StepStarted(clock.step)
        side = await clock.run(bot_side(setup))
        graphs = await clock.run(gathered(
            *(retrieve_for_idea(self.retriever, q.opponent_idea, q.field_to_look, self.k, side=side) for q in queries)
        ))
        if side is not None and not any(graph.candidates() for graph in graphs):
            # An argument base without the topic's labelled arguments (another index): every side is offered.
            side = None
            graphs = await clock.run(gathered(
                *(retrieve_for_idea(self.retriever, q.opponent_idea, q.field_to_look, self.k) for q in queries)
            ))
        # A query whose words find nothing (a small model's may be no words at all) searches with
        # the student's message, the idea it was meant to attack or support.
        empty = [number for number, graph in enumerate(graphs, 1) if not graph.candidates()]
        if empty:
            message = next(t.content for t in reversed(history) if t.role == "user")
            found = await clock.run(gathered(
                *(retrieve_for_idea(self.retriever, message, queries[n - 1].field_to_look, self.k, side=side)
                  for n in empty)
            ))
            for number, graph in zip(empty, found):
                graphs[number - 1] = graph
                queries[number - 1] = queries[number - 1].model_copy(update={"opponent_idea": message})
        turn.evidence = [item for i, graph in enumerate(graphs, 1) for item in evidence_from(graph, i)]
        if not any(graph.candidates() for graph in graphs):
            raise StepError(clock.step, "the argument base returned nothing for any query", "")
        steps.retrieval = RetrievalStep(
            graphs=[GraphRecord.of(graph) for graph in graphs],
            message_queries=[n for n in empty if graphs[n - 1].candidates()],
        )
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
