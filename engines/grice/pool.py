"""Labelled example pools for the few-shot and Analyzer strategies.

A pool is a list of example turns, each labelled yes (1) or no (0) for one
or more metrics. The examples a judge sees are drawn at random with a seed
(`ExamplePool.drawn`): one seeded shuffle of the pool, cut after the first
`EXAMPLES_PER_LABEL` yes and no examples of every metric. Strategies take
examples in the drawn order: FSL the first yes and the first no example of
the metric, Analyzer-k the first k of each, so Analyzer1's examples are among
Analyzer3's. Turns of the draw are left out of the turns a batch evaluates.
The built-in pool (written for this product) has five of each per metric,
plus one yes and one no "demo" example per metric that never enters a prompt.
A user's own pool comes from a RAD debates file and its labels file.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engines.datasets.rad import RadDebate, RadUserTurn, TurnLabels
from engines.errors import ArgtuiError
from engines.grice.questions import METRICS
from engines.grice.types import GriceContext

BUILTIN_POOL_FILE = Path(__file__).parent / "data" / "builtin_pool.json"
EXAMPLES_PER_LABEL = 5  # the most any strategy takes of one answer (Analyzer5)
DEFAULT_SEED = 0


class PoolTooSmall(ArgtuiError):
    """The example pool lacks examples a strategy needs."""


@dataclass(frozen=True)
class GriceExample:
    context: GriceContext
    labels: dict[str, int]  # metric -> 1 (yes) / 0 (no); metrics without a label are absent
    demo: bool = False  # shown as an Arena item with a known answer, never put into a prompt
    source: str = ""  # where it came from, e.g. "debate 12, turn 3"


@dataclass(frozen=True)
class ExamplePool:
    name: str
    examples: tuple[GriceExample, ...]
    seed: int | None = None  # the seed of the draw; None: the whole pool in file order

    @property
    def digest(self) -> str:
        """Identifies the content (not the name): Analyzer reasons are cached under it."""
        payload = json.dumps(
            [
                [list(map(list, e.context.dialogue)), e.context.reply, list(e.context.arguments),
                 sorted(e.labels.items()), e.demo]
                for e in self.examples
            ],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def examples_for(self, metric: str, label: int, count: int) -> list[GriceExample]:
        """The first `count` prompt examples with this label for this metric, in pool order."""
        found = [e for e in self.examples if not e.demo and e.labels.get(metric) == label][:count]
        if len(found) < count:
            answer = "yes" if label else "no"
            raise PoolTooSmall(
                f"example pool {self.name!r} has {len(found)} {answer!r} example(s) for {metric}; "
                f"the strategy needs {count}"
            )
        return found

    def drawn(self, seed: int, per_label: int = EXAMPLES_PER_LABEL) -> "ExamplePool":
        """The prompt examples in a seeded random order, up to `per_label` of each answer per
        metric (fewer where the pool has fewer); demos stay out. Its digest differs per seed."""
        order = [e for e in self.examples if not e.demo]
        random.Random(seed).shuffle(order)
        wanted = {(metric, label): per_label for metric in METRICS for label in (0, 1)}
        chosen = []
        for example in order:
            useful = [key for key in example.labels.items() if wanted.get(key, 0) > 0]
            if useful:
                chosen.append(example)
                for key in useful:
                    wanted[key] -= 1
                if not any(wanted.values()):
                    break
        return ExamplePool(self.name, tuple(chosen), seed)

    @property
    def contexts(self) -> frozenset[GriceContext]:
        """The turns of the pool's examples: a batch leaves them out of the turns it evaluates."""
        return frozenset(e.context for e in self.examples)

    def demos(self) -> list[tuple[str, GriceExample]]:
        """(metric, example) for every demo example and each metric it is labelled for."""
        return [(metric, e) for e in self.examples if e.demo for metric in METRICS if metric in e.labels]


@lru_cache(maxsize=8)
def prompt_pool(seed: int = DEFAULT_SEED) -> ExamplePool:
    """The built-in pool's examples drawn with `seed`: what a judge uses when given no pool."""
    return builtin_pool().drawn(seed)


@lru_cache(maxsize=1)
def builtin_pool() -> ExamplePool:
    data = json.loads(BUILTIN_POOL_FILE.read_text(encoding="utf-8"))
    examples = tuple(
        GriceExample(
            GriceContext(tuple(map(tuple, item["dialogue"])), item["reply"], tuple(item["arguments"])),
            {item["metric"]: int(item["label"])},
            demo=bool(item.get("demo", False)),
            source=f"built-in example {number}",
        )
        for number, item in enumerate(data["examples"], start=1)
    )
    return ExamplePool(data["name"], examples)


def context_of_turn(turn: RadUserTurn) -> GriceContext:
    return GriceContext(turn.dialogue, turn.reply, [a.text for a in turn.arguments])


def pool_from_rad(
    name: str, debates: list[RadDebate], labels: dict[tuple[str, int], TurnLabels]
) -> ExamplePool:
    """Every labelled turn of the debates is an example (its null labels left out)."""
    examples = []
    for debate in debates:
        for turn in debate.user_turns():
            turn_labels = {m: v for m, v in labels.get((debate.id, turn.index), {}).items() if v is not None}
            if turn_labels:
                examples.append(
                    GriceExample(
                        context_of_turn(turn),
                        turn_labels,
                        source=f"debate {debate.id}, turn {turn.index + 1}",
                    )
                )
    if not examples:
        raise PoolTooSmall(f"example pool {name!r} has no labelled turn")
    return ExamplePool(name, tuple(examples))
