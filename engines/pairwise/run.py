"""A pairwise run: which expert comparisons to judge, and judging them as a resumable batch."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache
from typing import Awaitable, Callable, Iterable, Sequence

from engines.batch import BatchProgress, BatchResult, run_batch
from engines.datasets.webis import DIMENSIONS, ArgumentKey, WebisCorpus, load_webis
from engines.errors import ArgtuiError
from engines.llm.client import LLMClient
from engines.pairwise.fewshot import few_shot_examples
from engines.pairwise.judge import JudgeSettings, PairVerdict, judge_pair
from engines.pairwise.prompts import FewShotExamples

DEFAULT_SAMPLE_SEED = 0


@cache
def bundled_corpus() -> WebisCorpus:
    """The bundled Webis-ArgQuality-20, loaded once per process (screens share it)."""
    return load_webis()


class SelectionError(ArgtuiError):
    """The requested dimensions or topics do not exist."""


@dataclass(frozen=True)
class PairItem:
    """One expert comparison to judge: arguments a and b of a topic, on one dimension."""

    dimension: str
    topic_id: int
    a: ArgumentKey
    b: ArgumentKey
    expert: str  # the expert label: A, B or Tie

    @property
    def a_uid(self) -> str:
        return f"{self.topic_id}/{self.a[0]}/{self.a[1]}"

    @property
    def b_uid(self) -> str:
        return f"{self.topic_id}/{self.b[0]}/{self.b[1]}"

    @property
    def key(self) -> tuple[str, str, str]:
        """(dimension, a uid, b uid): identifies the pair across runs and the store."""
        return (self.dimension, self.a_uid, self.b_uid)


def select_items(
    corpus: WebisCorpus,
    dimensions: Sequence[str] = DIMENSIONS,
    topics: Iterable[int] | None = None,
    limit: int | None = None,
    seed: int = DEFAULT_SAMPLE_SEED,
) -> list[PairItem]:
    """The expert comparisons of the dimensions and topics, in file order.

    With `limit`, a seeded random sample of that many per dimension; a larger
    limit keeps every pair of a smaller one, so runs extend and compare cleanly.
    """
    unknown = [d for d in dimensions if d not in corpus.comparisons]
    if unknown:
        raise SelectionError(f"unknown dimension {unknown[0]!r} (known: {', '.join(corpus.comparisons)})")
    wanted = None if topics is None else set(topics)
    if wanted is not None and wanted - set(corpus.topics):
        missing = sorted(wanted - set(corpus.topics))
        raise SelectionError(f"unknown topic id {missing[0]} (known: 1–{max(corpus.topics)})")
    items: list[PairItem] = []
    for dimension in dimensions:
        pool = [
            PairItem(dimension, c.topic_id, c.a, c.b, c.label)
            for c in corpus.comparisons[dimension]
            if wanted is None or c.topic_id in wanted
        ]
        if limit is not None and limit < len(pool):
            order = list(range(len(pool)))
            random.Random(seed).shuffle(order)
            pool = [pool[i] for i in sorted(order[:limit])]
        items.extend(pool)
    return items


class PairJudge:
    """Judges PairItems of a corpus with one client and settings (few-shot examples cached per topic)."""

    def __init__(self, client: LLMClient, settings: JudgeSettings, corpus: WebisCorpus):
        self.client = client
        self.settings = settings
        self.corpus = corpus
        self._examples: dict[tuple[int, str], FewShotExamples] = {}

    def examples(self, topic_id: int, dimension: str) -> FewShotExamples | None:
        if self.settings.strategy != "few":
            return None
        key = (topic_id, dimension)
        if key not in self._examples:
            self._examples[key] = few_shot_examples(self.corpus, topic_id, dimension)
        return self._examples[key]

    async def __call__(self, item: PairItem) -> PairVerdict:
        return await judge_pair(
            self.client,
            self.settings,
            item.dimension,
            self.corpus.argument(item.topic_id, item.a).text,
            self.corpus.argument(item.topic_id, item.b).text,
            self.examples(item.topic_id, item.dimension),
        )


async def run_pairwise(
    items: Sequence[PairItem],
    judge: Callable[[PairItem], Awaitable[PairVerdict]],
    *,
    concurrency: int,
    is_done: Callable[[PairItem], bool],
    on_result: Callable[[PairItem, PairVerdict], None],
    on_progress: Callable[[BatchProgress], None] = lambda progress: None,
) -> BatchResult[PairItem, PairVerdict]:
    """Judge every item not yet done; `on_result` stores each verdict as it arrives."""
    return await run_batch(
        items,
        judge,
        concurrency=concurrency,
        is_done=is_done,
        on_result=on_result,
        is_invalid=lambda verdict: not verdict.valid,
        on_progress=on_progress,
    )
