"""The pairwise argument-quality task in the Arena: which argument of a pair is stronger
on one dimension (A / B / Tie), against the expert label of Webis-ArgQuality-20."""

from __future__ import annotations

import random
from typing import NamedTuple

from engines.datasets.webis import DIMENSIONS
from engines.llm.client import LLMClient
from engines.pairwise.fewshot import few_shot_examples
from engines.pairwise.judge import JudgeSettings, judge_pair
from engines.pairwise.prompts import DIM_ADVERB, LABELS, STRATEGIES, STRATEGY_TITLES
from engines.pairwise.run import PairItem, bundled_corpus
from screens.arena_api import ArenaAnswer, ArenaItem

RUNS_SUFFIX = " · 3 runs"


class PairPayload(NamedTuple):
    item: PairItem
    a: str
    b: str


def settings_for(variant: str) -> JudgeSettings:
    """"few-shot" → one logprob call; "few-shot · 3 runs" → three samples at temperature 1."""
    runs = variant.endswith(RUNS_SUFFIX)
    title = variant.removesuffix(RUNS_SUFFIX)
    strategy = next(s for s, t in STRATEGY_TITLES.items() if t == title)
    return JudgeSettings(strategy, "runs" if runs else "logprob")


class PairwiseArenaTask:
    name = "pairwise"
    title = "Pairwise argument quality (Webis-ArgQuality-20)"
    labels = LABELS
    filters = {"dimension": DIMENSIONS}

    def __init__(self, corpus_loader=bundled_corpus):
        self._corpus = corpus_loader

    def variants(self) -> list[str]:
        titles = [STRATEGY_TITLES[s] for s in STRATEGIES]
        return titles + [title + RUNS_SUFFIX for title in titles]

    def draw(self, rng: random.Random, dimension: str | None = None) -> ArenaItem:
        corpus = self._corpus()
        dimension = dimension or rng.choice(DIMENSIONS)
        comparisons = corpus.comparisons[dimension]
        index = rng.randrange(len(comparisons))
        comparison = comparisons[index]
        item = PairItem(dimension, comparison.topic_id, comparison.a, comparison.b, comparison.label)
        a = corpus.argument(item.topic_id, item.a)
        b = corpus.argument(item.topic_id, item.b)
        topic = corpus.topics[item.topic_id]
        body = (
            f"Topic {topic.id}: {topic.long_query}\n"
            f"Which argument is {DIM_ADVERB[dimension]} stronger?\n\n"
            f"Argument A ({a.uid}):\n{a.text}\n\nArgument B ({b.uid}):\n{b.text}"
        )
        scores = f"published {dimension} scores: A {a.scores[dimension]:+.2f}, B {b.scores[dimension]:+.2f}"
        return ArenaItem(
            title=f"Topic {topic.id} · {dimension} · pair {index + 1} of {len(comparisons)}",
            body=body,
            reference=f"{comparison.label} ({scores})",
            payload=PairPayload(item, a.text, b.text),
        )

    async def judge(self, item: ArenaItem, variant: str, client: LLMClient) -> ArenaAnswer:
        payload: PairPayload = item.payload
        settings = settings_for(variant)
        examples = (
            few_shot_examples(self._corpus(), payload.item.topic_id, payload.item.dimension)
            if settings.strategy == "few" else None
        )
        verdict = await judge_pair(client, settings, payload.item.dimension, payload.a, payload.b, examples)
        how = "majority of 3 runs at temperature 1" if settings.mode == "runs" else "argmax of the logprobs"
        runs = " ".join(label or "invalid" for label in verdict.run_labels)
        return ArenaAnswer(
            label=verdict.label,
            distribution=verdict.distribution,
            seconds=verdict.seconds,
            detail=f"{how}; runs: {runs}" if settings.mode == "runs" else how,
            raw="" if verdict.valid else verdict.raw,
        )


ARENA_TASK = PairwiseArenaTask()
