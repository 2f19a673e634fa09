"""Grice judges: the four yes/no questions on one bot turn, with P(yes) and a rationale.

Per metric the judge makes one constrained yes/no call (`client.choose`: P(yes)
from the logprobs of the answer token, or from the share of votes when
`votes > 1`; the answer is yes when P(yes) >= 0.5, the official threshold),
then, if the answer is valid, one short call that asks for the rationale in
the same conversation (so it shares the prompt's prefix). A rationale the model
did not mean (`engines.judging.shown_text.unmeant`: a chatbot's disclaimer, a
loop) is asked once more, sampled; still so, it reads `NO_USABLE_ANSWER`. The
rationale is streamed and stopped as soon as what it says so far is such text,
so the model does not write the rest of an answer that is not shown.
The prompt `layout` (engines/grice/prompts.py) is the seed's order or `shared`,
which starts the four metric prompts of a turn with the same debate block.
Without a pool, the examples are the built-in pool's, drawn with the default seed.
Analyzer strategies first need their stage-1 reasons, which are derived once
and cached (`ReasonCache`). The four metrics of a turn run concurrently, except with
the shared layout on llama-server: there they run one after the other, so that
each finds the debate block in the slot the previous one left it in.

Strategies (seed 001): ZSL; FSL1 (one yes example, then one no example) and
FSL2 (no first); Analyzer-k for k = 1, 3, 5; BEST = ZSL for relation,
Analyzer5 for quality, Analyzer1 for manner and quantity.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

from engines.errors import ArgtuiError
from engines.grice.pool import ExamplePool, prompt_pool
from engines.grice.prompts import (
    DEFAULT_LAYOUT,
    RATIONALE_REQUEST,
    Message,
    analyzer_messages,
    fsl_messages,
    rationale_messages,
    zsl_messages,
)
from engines.grice.questions import METRICS
from engines.grice.reasons import AnalyzerReasons, ReasonCache
from engines.grice.types import YES_THRESHOLD, GriceContext, GriceJudgment, MetricJudgment
from engines.judging.shown_text import NO_USABLE_ANSWER, unmeant, unmeant_so_far
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.reasking import attempts, chat_until_valid
from engines.llm.types import Usage
from engines.timing import Stopwatch

# Both spellings are allowed answers: a chat model starts its reply with "Yes"/"No", and the
# server's top logprobs (taken before the constraint) often lack the lower-case forms, so
# P(yes) sums the mass of "Yes" and "yes" (without "Yes" it would often be a bare point mass).
YES_FORMS = ("Yes", "yes")
CHOICE_LABELS = ("Yes", "No", "yes", "no")
RATIONALE_MAX_TOKENS = 80
# A rationale the model did not mean (a chatbot's disclaimer, a loop) is asked once more, sampled.
RATIONALE_ATTEMPTS = attempts(Sampling(temperature=0.0, max_tokens=RATIONALE_MAX_TOKENS), 2)
VOTE_TEMPERATURE = 1.0  # votes need sampling; a single call is greedy and reads the logprobs

STRATEGIES = ("ZSL", "FSL1", "FSL2", "Analyzer1", "Analyzer3", "Analyzer5", "BEST")
DEFAULT_STRATEGY = "BEST"


class UnknownStrategy(ArgtuiError):
    def __init__(self, name: str):
        super().__init__(f"unknown Grice strategy {name!r}; choose one of {', '.join(STRATEGIES)}")


@dataclass(frozen=True)
class Method:
    """How one metric is judged."""

    kind: Literal["ZSL", "FSL", "Analyzer"]
    k: int = 0  # Analyzer: examples per answer
    positive_first: bool = True  # FSL: FSL1 shows the yes example first, FSL2 the no example

    @property
    def name(self) -> str:
        if self.kind == "FSL":
            return "FSL1" if self.positive_first else "FSL2"
        if self.kind == "Analyzer":
            return f"Analyzer{self.k}"
        return self.kind


def parse_method(name: str) -> Method:
    if name == "ZSL":
        return Method("ZSL")
    if name in ("FSL1", "FSL2"):
        return Method("FSL", positive_first=name == "FSL1")
    match = re.fullmatch(r"Analy(?:zer|sis)(\d+)", name)
    if match and int(match.group(1)) >= 1:
        return Method("Analyzer", k=int(match.group(1)))
    raise UnknownStrategy(name)


BEST = {
    "relation": parse_method("ZSL"),
    "quality": parse_method("Analyzer5"),
    "manner": parse_method("Analyzer1"),
    "quantity": parse_method("Analyzer1"),
}


def methods_for(strategy: str) -> dict[str, Method]:
    """The method of each metric under a strategy (BEST mixes them)."""
    if strategy == "BEST":
        return {metric: BEST[metric] for metric in METRICS}
    method = parse_method(strategy)
    return {metric: method for metric in METRICS}


def check_pool(strategy: str, pool: ExamplePool) -> None:
    """Raises PoolTooSmall before any call when the pool lacks examples the strategy needs."""
    for metric, method in methods_for(strategy).items():
        needed = {"ZSL": 0, "FSL": 1, "Analyzer": method.k}[method.kind]
        for label in (1, 0):
            pool.examples_for(metric, label, needed)


def judge_messages(
    metric: str, method: Method, context: GriceContext, pool: ExamplePool,
    reasons: AnalyzerReasons | None = None, layout: str = DEFAULT_LAYOUT,
) -> list[Message]:
    """The yes/no prompt of a metric under a method (Analyzer: with its stage-1 reasons)."""
    if method.kind == "ZSL":
        return zsl_messages(metric, context, layout)
    if method.kind == "FSL":
        [yes], [no] = pool.examples_for(metric, 1, 1), pool.examples_for(metric, 0, 1)
        return fsl_messages(metric, context, [yes, no] if method.positive_first else [no, yes], layout)
    if reasons is None:
        raise ValueError(f"{method.name} needs its stage-1 reasons")
    return analyzer_messages(metric, context, reasons.yes, reasons.no, layout)


DEFAULT_REASONS = ReasonCache()  # in memory for the process; pass a cache with a store to persist


async def judge_metric(
    client: LLMClient,
    context: GriceContext,
    metric: str,
    method: Method,
    pool: ExamplePool | None = None,
    *,
    reasons: ReasonCache | None = None,
    votes: int = 1,
    rationale: bool = True,
    layout: str = DEFAULT_LAYOUT,
) -> MetricJudgment:
    """One Grice question on one turn."""
    stopwatch = Stopwatch()
    pool = pool or prompt_pool()
    usage = Usage()

    def finished(**values) -> MetricJudgment:
        return MetricJudgment(
            metric=metric, method=method.name, seconds=stopwatch.seconds, usage=usage, **values,
        )

    analyzer_reasons = None
    if method.kind == "Analyzer":
        stage1 = await (reasons or DEFAULT_REASONS).reasons(client, metric, method.k, pool)
        usage += stage1.usage
        if stage1.reasons is None:
            return finished(answer=None, p_yes=None, rationale="", raw=stage1.raw, error=stage1.error)
        analyzer_reasons = stage1.reasons
    messages = judge_messages(metric, method, context, pool, analyzer_reasons, layout)

    sampling = Sampling(temperature=0.0 if votes == 1 else VOTE_TEMPERATURE)
    choice = await client.choose(messages, CHOICE_LABELS, sampling, votes=votes)
    usage += choice.usage
    if not choice.valid:
        return finished(
            answer=None, p_yes=None, rationale="", raw=choice.raw, source=choice.source,
            error="the judge answered neither yes nor no",
        )
    p_yes = sum(choice.distribution.get(form, 0.0) for form in YES_FORMS)
    # The answer follows the score at the official threshold, so the two never disagree.
    answer = "yes" if p_yes >= YES_THRESHOLD else "no"
    explanation, unusable = "", ""
    if rationale:
        asked = await chat_until_valid(
            client, rationale_messages(messages, answer.capitalize()), RATIONALE_ATTEMPTS,
            lambda text: unmeant(text, RATIONALE_REQUEST), lambda text: unmeant_so_far(text, RATIONALE_REQUEST),
        )
        usage += asked.usage
        explanation = " ".join(asked.completion.text.split())
        if asked.problem is not None:
            explanation, unusable = NO_USABLE_ANSWER, explanation
    return finished(
        answer=answer, p_yes=p_yes, rationale=explanation, rationale_raw=unusable,
        raw=choice.raw, source=choice.source,
    )


async def judge_turn(
    client: LLMClient,
    context: GriceContext,
    strategy: str = DEFAULT_STRATEGY,
    pool: ExamplePool | None = None,
    on_metric: Callable[[MetricJudgment], None] | None = None,
    *,
    reasons: ReasonCache | None = None,
    votes: int = 1,
    rationale: bool = True,
    metrics: Sequence[str] = METRICS,
    layout: str = DEFAULT_LAYOUT,
) -> GriceJudgment:
    """The Grice questions (all four unless `metrics` says which) on one bot turn;
    `on_metric` is called as each metric finishes."""
    stopwatch = Stopwatch()
    methods = methods_for(strategy)

    async def one(metric: str) -> MetricJudgment:
        judgment = await judge_metric(
            client, context, metric, methods[metric], pool,
            reasons=reasons, votes=votes, rationale=rationale, layout=layout,
        )
        if on_metric is not None:
            on_metric(judgment)
        return judgment

    if layout == "shared" and len(metrics) > 1 and await client.kind() == "llamacpp":
        # A llama-server slot reuses only its own cache: metrics started together land on
        # different slots and each computes the debate block (benchmarks/bench_judgment_tokens.py).
        # vLLM shares cached blocks across requests, so there they start together.
        judgments = [await one(metric) for metric in metrics]
    else:
        judgments = await asyncio.gather(*(one(metric) for metric in metrics))
    return GriceJudgment(
        strategy=strategy,
        metrics={j.metric: j for j in judgments},
        seconds=stopwatch.seconds,
    )
