"""Which expert comparisons to judge, and judging one of them."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Iterable, Sequence

from engines.datasets.webis import DIMENSIONS, ArgumentKey, WebisCorpus, load_webis
from engines.errors import ArgtuiError
from engines.judging.verdict import Verdict
from engines.llm.client import LLMClient
from engines.pairwise.fewshot import FewShotRule, few_shot_examples
from engines.pairwise.judge import JudgeSettings, judge_pair
from engines.pairwise.prompts import FewShotExamples

TASK_NAME = "pairwise"  # the task judging these comparisons, as the judgment store names it
DEFAULT_SAMPLE_SEED = 0


def load_corpus(data: Path | None = None) -> WebisCorpus:
    """Webis-ArgQuality-20 (the bundled copy, or a release folder), loaded once per process:
    a batch run, its report, the Arena and the Leaderboard share it. A dimension's comparisons
    are read when first used (a batch run reads them, and so checks them, before any call)."""
    return _loaded(data)  # one cache key for load_corpus() and load_corpus(None)


@cache
def _loaded(data: Path | None) -> WebisCorpus:
    return load_webis(data, lazy=True)


class SelectionError(ArgtuiError):
    """The requested dimensions or topics do not exist."""


@dataclass(frozen=True, slots=True)  # slots: a batch run makes thousands
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
    def key(self) -> str:
        """"logical/3/12/4~3/12/9" (dimension/a uid~b uid): the pair's item key in the judgment store."""
        return f"{self.dimension}/{self.a_uid}~{self.b_uid}"

    @classmethod
    def from_key(cls, key: str, expert: str) -> "PairItem":
        """The inverse of `key`, with the expert label kept beside it."""
        dimension, _, pair = key.partition("/")
        a, _, b = pair.partition("~")
        topic_id, a_key = parse_uid(a)
        _, b_key = parse_uid(b)
        return cls(dimension, topic_id, a_key, b_key, expert)


def parse_uid(uid: str) -> tuple[int, ArgumentKey]:
    """"topic/discussion/argument" back to (topic id, argument key)."""
    topic, discussion, argument = (int(part) for part in uid.split("/"))
    return topic, (discussion, argument)


def select_items(
    corpus: WebisCorpus,
    dimensions: Sequence[str] = DIMENSIONS,
    topics: Iterable[int] | None = None,
    limit: int | None = None,
    seed: int = DEFAULT_SAMPLE_SEED,
) -> list[PairItem]:
    """The expert comparisons of the dimensions and topics: per dimension, topic after topic
    (in the order the topics first appear in the file), each topic's pairs in file order.

    Pairs of one topic and dimension share their system prompt (the few-shot block
    above all), so sending them one after another keeps it in the server's prefix
    cache. With `limit`, a seeded random sample of that many per dimension; a larger
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
        comparisons = corpus.comparisons[dimension]
        if wanted is not None:
            comparisons = [c for c in comparisons if c.topic_id in wanted]
        if limit is not None and limit < len(comparisons):
            order = list(range(len(comparisons)))
            random.Random(seed).shuffle(order)
            comparisons = [comparisons[i] for i in sorted(order[:limit])]
        pool = [PairItem(dimension, c.topic_id, c.a, c.b, c.label) for c in comparisons]
        topic_rank: dict[int, int] = {}
        for pair in pool:
            topic_rank.setdefault(pair.topic_id, len(topic_rank))
        items.extend(sorted(pool, key=lambda pair: topic_rank[pair.topic_id]))  # stable: file order within a topic
    return items


@cache
def _examples(data: Path | None, topic_id: int, dimension: str, rule: FewShotRule) -> FewShotExamples:
    # Once per topic and dimension: the rule scans every comparison of the dimension.
    return few_shot_examples(load_corpus(data), topic_id, dimension, rule)


async def judge_item(
    client: LLMClient, settings: JudgeSettings, item: PairItem, data: Path | None = None,
    fewshot_rule: FewShotRule = "labelled",
) -> Verdict:
    """Judge one expert comparison of the corpus at `data` (None: the bundled copy); few-shot
    prompts take their examples by `fewshot_rule` (see engines/pairwise/fewshot.py)."""
    corpus = load_corpus(data)
    return await judge_pair(
        client,
        settings,
        item.dimension,
        corpus.argument(item.topic_id, item.a).text,
        corpus.argument(item.topic_id, item.b).text,
        _examples(data, item.topic_id, item.dimension, fewshot_rule) if settings.strategy == "few" else None,
    )
