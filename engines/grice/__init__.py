"""Grice-maxim judges for debate replies (Touché RAD Sub-Task 2, seed 001).

Live use (the debate pipeline):

    judgment = await judge_turn(client, GriceContext(dialogue, reply, arguments), "BEST",
                                on_metric=show)

The task of `argtui eval grice` and the Arena is `engines/tasks/grice.py`, with
the readers of `engines.datasets.rad` and the shapes of `engines.grice.evaluation`.
"""

from engines.grice.judge import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    Method,
    UnknownStrategy,
    check_pool,
    judge_messages,
    judge_metric,
    judge_turn,
    methods_for,
    parse_method,
)
from engines.grice.pool import (
    ExamplePool,
    GriceExample,
    PoolTooSmall,
    builtin_pool,
    context_of_turn,
    pool_from_rad,
    prompt_pool,
)
from engines.grice.questions import METRICS, QUESTIONS, GriceQuestion
from engines.grice.reasons import ReasonCache, ReasonStore
from engines.grice.types import GriceContext, GriceJudgment, MetricJudgment

__all__ = [
    "DEFAULT_STRATEGY", "STRATEGIES", "METRICS", "QUESTIONS",
    "ExamplePool", "GriceContext", "GriceExample", "GriceJudgment", "GriceQuestion", "Method",
    "MetricJudgment", "PoolTooSmall", "ReasonCache", "ReasonStore", "UnknownStrategy",
    "builtin_pool", "check_pool", "context_of_turn", "judge_messages", "judge_metric", "judge_turn", "methods_for", "parse_method",
    "pool_from_rad", "prompt_pool",
]
