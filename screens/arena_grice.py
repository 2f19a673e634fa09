"""The Grice task in the Arena: one bot reply, one of the four Grice questions
(quantity, quality, relation, manner), answered yes / no by every chosen judge
and strategy side by side, each with P(yes) and its rationale.

Items come from the built-in demo examples (written for this product, with a
known answer and never used in a prompt), or, when the environment variable
ARGTUI_RAD_DEBATES names a Touché RAD debates file, from its bot turns (no
reference answer: the RAD labels are not public).
"""

from __future__ import annotations

import os
import random
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from engines.datasets.rad import read_rad_debates
from engines.grice import (
    DEFAULT_STRATEGY,
    METRICS,
    QUESTIONS,
    STRATEGIES,
    ExamplePool,
    GriceContext,
    ReasonCache,
    builtin_pool,
    context_of_turn,
    judge_metric,
    methods_for,
)
from engines.llm.client import LLMClient
from screens.arena_api import ArenaAnswer, ArenaItem

DEBATES_ENV = "ARGTUI_RAD_DEBATES"
LABELS = ("yes", "no")
SHOWN_HISTORY = 4  # messages before the user's last one shown in the item body


class GricePayload(NamedTuple):
    context: GriceContext
    metric: str


class GriceTurn(NamedTuple):
    title: str
    context: GriceContext
    labels: dict[str, int]  # known answers per metric (empty for RAD turns)


def builtin_turns(pool: ExamplePool) -> list[GriceTurn]:
    return [GriceTurn(e.source.capitalize(), e.context, e.labels) for e in pool.examples if e.demo]


@lru_cache(maxsize=4)
def rad_turns(path: Path) -> list[GriceTurn]:
    return [
        GriceTurn(f"{debate.id} · turn {turn.index + 1}", context_of_turn(turn), {})
        for debate in read_rad_debates(path)
        for turn in debate.user_turns()
    ]


def _turn_text(context: GriceContext) -> str:
    history = context.dialogue[-(SHOWN_HISTORY + 1):]
    omitted = len(context.dialogue) - len(history)
    lines = [f"({omitted} earlier messages)"] if omitted else []
    lines += [f"{'User' if role == 'user' else 'Bot'}: {text}" for role, text in history]
    lines += ["", f"» Bot reply under judgment: {context.reply}", "", "Retrieved arguments:"]
    lines += [f"  [{n}] {text}" for n, text in enumerate(context.arguments, start=1)] or ["  (none)"]
    return "\n".join(lines)


class GriceArenaTask:
    name = "grice"
    title = "Grice maxims of a bot reply (Touché RAD)"
    labels = LABELS
    filters = {"metric": METRICS}

    def __init__(self, pool: ExamplePool | None = None, debates: Path | None = None):
        self.pool = pool or builtin_pool()
        self.debates = debates
        self.reasons = ReasonCache()  # Analyzer reasons, derived once per judge model in this session

    def _turns(self) -> list[GriceTurn]:
        path = self.debates or (Path(os.environ[DEBATES_ENV]) if os.environ.get(DEBATES_ENV) else None)
        return rad_turns(path) if path else builtin_turns(self.pool)

    def variants(self) -> list[str]:
        return [DEFAULT_STRATEGY] + [s for s in STRATEGIES if s != DEFAULT_STRATEGY]

    def draw(self, rng: random.Random, metric: str | None = None) -> ArenaItem:
        turns = self._turns()
        if metric is None:
            turn = rng.choice(turns)
            metric = rng.choice([m for m in METRICS if m in turn.labels] or list(METRICS))
        else:
            turn = rng.choice([t for t in turns if metric in t.labels] or turns)
        question = QUESTIONS[metric]
        known = turn.labels.get(metric)
        return ArenaItem(
            title=f"{turn.title} · {question.dimension}",
            body=f"{question.dimension} ({question.maxim}): {question.question}\n\n{_turn_text(turn.context)}",
            reference=None if known is None else LABELS[0] if known else LABELS[1],
            payload=GricePayload(turn.context, metric),
        )

    async def judge(self, item: ArenaItem, variant: str, client: LLMClient) -> ArenaAnswer:
        payload: GricePayload = item.payload
        method = methods_for(variant)[payload.metric]
        judgment = await judge_metric(client, payload.context, payload.metric, method, self.pool, reasons=self.reasons)
        return ArenaAnswer(
            label=judgment.answer,
            distribution={"yes": judgment.p_yes, "no": 1 - judgment.p_yes} if judgment.p_yes is not None else {},
            seconds=judgment.seconds,
            detail=f"{method.name}: {judgment.rationale}" if judgment.valid else f"{method.name}: {judgment.error}",
            raw="" if judgment.valid else judgment.raw,
        )


ARENA_TASK = GriceArenaTask()
