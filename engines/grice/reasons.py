"""Analyzer stage 1: general reasons for yes and for no, derived once and reused.

Reasons depend on the metric, the number of examples k, the judge model and
the example pool, and on nothing about the turn under judgment, so they are
derived once per (metric, k, model, pool) and cached: in memory for the
process, and in a persistent store (SQLite through `store.grice`) when one is
given. Concurrent judgments that need the same reasons wait for one call.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, Field

from engines.grice.pool import ExamplePool
from engines.judging.digest import digest
from engines.grice.prompts import analyzer_stage1_messages
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.reasking import attempts, structured_until_valid
from engines.llm.types import Usage

STAGE1_MAX_TOKENS = 400
REASON_MAX_CHARS = 500
# A stage-1 output that fails validation is asked for once more, sampled instead of greedy.
STAGE1_ATTEMPTS = attempts(Sampling(temperature=0.0, max_tokens=STAGE1_MAX_TOKENS), 2)


class AnalyzerReasons(BaseModel):
    """Stage-1 output: clauses that complete "Respond with yes if ..." and "... no if ..."."""

    yes: str = Field(min_length=1, max_length=REASON_MAX_CHARS)
    no: str = Field(min_length=1, max_length=REASON_MAX_CHARS)


class ReasonStore(Protocol):
    """Persistent storage of stage-1 reasons (implemented by `store.grice.GriceRepository`)."""

    def get_reasons(self, metric: str, k: int, judge_model: str, asked_digest: str) -> tuple[str, str] | None: ...

    def put_reasons(
        self, metric: str, k: int, judge_model: str, asked_digest: str, reasons_yes: str, reasons_no: str, raw: str
    ) -> None: ...


@dataclass(frozen=True)
class ReasonsResult:
    reasons: AnalyzerReasons | None  # None when stage 1 stayed invalid
    raw: str
    error: str | None
    usage: Usage = Usage()  # of the stage-1 calls this request made (none when the reasons were cached)


ReasonKey = tuple[str, int, str, str]  # metric, k, judge model, what stage 1 asks (`asked_digest`)


def asked_digest(messages: list[dict[str, str]]) -> str:
    """What stage 1 asks, as a digest: its prompt (the pool's examples in it), its samplings and its
    answer's schema, so reasons derived by an edited stage 1 are never reused for another."""
    return digest([messages, STAGE1_ATTEMPTS, AnalyzerReasons.model_json_schema()])


class ReasonCache:
    def __init__(self, store: ReasonStore | None = None):
        self.store = store
        self._memory: dict[ReasonKey, AnalyzerReasons] = {}
        # Stage-1 failures are remembered for the process only (a new process tries again),
        # so a run does not repeat a failing stage 1 for every turn.
        self._failed: dict[ReasonKey, ReasonsResult] = {}
        self._pending: dict[ReasonKey, asyncio.Task[ReasonsResult]] = {}
        self.stage1_calls = 0  # over the cache's lifetime

    async def reasons(self, client: LLMClient, metric: str, k: int, pool: ExamplePool) -> ReasonsResult:
        messages = analyzer_stage1_messages(metric, pool.examples_for(metric, 1, k), pool.examples_for(metric, 0, k))
        key: ReasonKey = (metric, k, await client.model(), asked_digest(messages))
        cached = self._lookup(key)
        if cached is not None:
            return ReasonsResult(cached, "", None)
        if key in self._failed:
            failed = self._failed[key]
            return ReasonsResult(None, failed.raw, failed.error)
        task = self._pending.get(key)
        if task is not None:
            shared = await asyncio.shield(task)
            return ReasonsResult(shared.reasons, shared.raw, shared.error)
        task = asyncio.ensure_future(self._derive(client, key, messages))
        self._pending[key] = task
        task.add_done_callback(lambda _: self._pending.pop(key, None))
        return await asyncio.shield(task)

    def _lookup(self, key: ReasonKey) -> AnalyzerReasons | None:
        if key in self._memory:
            return self._memory[key]
        stored = self.store.get_reasons(*key) if self.store else None
        if stored is not None:
            self._memory[key] = AnalyzerReasons(yes=stored[0], no=stored[1])
        return self._memory.get(key)

    async def _derive(self, client: LLMClient, key: ReasonKey, messages: list[dict[str, str]]) -> ReasonsResult:
        asked = await structured_until_valid(client, messages, AnalyzerReasons, STAGE1_ATTEMPTS)
        self.stage1_calls += asked.attempts
        result, usage = asked.result, asked.usage
        if result.valid:
            self._memory[key] = result.value
            if self.store:
                self.store.put_reasons(*key, result.value.yes, result.value.no, result.raw)
            return ReasonsResult(result.value, result.raw, None, usage)
        failed = ReasonsResult(None, result.raw, f"Analyzer stage 1 gave no valid reasons: {result.error}", usage)
        self._failed[key] = failed
        return failed
