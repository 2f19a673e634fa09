"""Asking again after an answer that could not be used: the one way it is done.

An answer constrained to a JSON schema and cut at its `max_tokens` before its JSON ended is
asked again once, by the client itself, with the schema's worst-case cap (`larger_cap`; why
two caps: `engines/llm/budget.py`); where the server refuses that cap (its context does not
hold it), with no cap of argtui's, the server's context being the limit. The cut answer stays
cached under the first cap's key and the new one under the larger cap's, so a rerun replays
both from the cache and no call is given the cut answer as its final one.

Within a call, `structured_until_valid` asks attempt after attempt until an answer validates.
Each attempt has a sampling of its own (another seed or temperature), so the response cache,
which keeps the failed answer under the first attempt's key, does not give it back, and a rerun
replays the same attempts from the cache. Across runs, the runner judges items stored as invalid
again inside `asking_anew()` (`--retry-invalid`): their calls skip the cache, and the answers
they get replace the ones that could not be read.
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Generic, Sequence, TypeVar

from pydantic import BaseModel

from engines.llm.adapters import Constraint, json_schema_format
from engines.llm.budget import schema_tokens, worst_case_tokens
from engines.llm.json_reader import UnreadableJSON, read_json
from engines.llm.profile import Sampling
from engines.llm.types import Completion, Structured, Usage

if TYPE_CHECKING:
    from engines.llm.client import LLMClient, Message

ModelT = TypeVar("ModelT", bound=BaseModel)
RESAMPLING_TEMPERATURE = 0.7  # of every attempt after the first


def attempts(first: Sampling, count: int) -> list[Sampling]:
    """`first`, then `count - 1` samplings like it at `RESAMPLING_TEMPERATURE`, seeds 1, 2, …:
    each attempt another answer, and a cache key of its own."""
    return [first, *(first.model_copy(update={"temperature": RESAMPLING_TEMPERATURE, "seed": seed})
                     for seed in range(1, count))]


def cut_short(completion: Completion) -> bool:
    """Whether the answer stopped at its `max_tokens` before its JSON ended."""
    if completion.finish_reason != "length":
        return False
    try:
        read_json(completion.text)
    except UnreadableJSON:
        return True
    return False


def larger_cap(sampling: Sampling, constraint: Constraint) -> Sampling | None:
    """The sampling to ask a cut answer again with: `sampling` with the worst-case cap of the
    JSON schema `constraint` holds; None when it holds none, or `sampling` asks for no cap, for
    a cap below the schema's own budget (a limit the user chose: the cut is what they asked
    for) or already for the worst case."""
    schema = json_schema_format(constraint).get("schema")
    if not isinstance(schema, dict) or sampling.max_tokens is None or sampling.max_tokens < schema_tokens(schema):
        return None
    worst = worst_case_tokens(schema)
    return sampling.model_copy(update={"max_tokens": worst}) if sampling.max_tokens < worst else None


@dataclass(frozen=True)
class Reasked(Generic[ModelT]):
    """The last attempt's result (the first valid one, if any), how many attempts it took, and
    what they all cost."""

    result: Structured[ModelT]
    attempts: int
    usage: Usage

    @property
    def valid(self) -> bool:
        return self.result.valid


async def structured_until_valid(
    client: LLMClient, messages: Sequence[Message], model_cls: type[ModelT], samplings: Sequence[Sampling]
) -> Reasked[ModelT]:
    """`client.structured` with `samplings[0]`, asked again with the next sampling while the
    output does not validate into `model_cls`, at most `len(samplings)` times."""
    if not samplings:
        raise ValueError("at least one attempt is needed")
    results: list[Structured[ModelT]] = []
    for sampling in samplings:
        [result] = await client.structured(messages, model_cls, sampling)
        results.append(result)
        if result.valid:
            break
    return Reasked(results[-1], len(results), Usage.total(r.usage for r in results))


@dataclass(frozen=True)
class ReaskedText:
    """The last attempt's answer (the first one without a problem, if any), its `problem` (None
    when it has none), how many attempts it took, and what they all cost."""

    completion: Completion
    problem: str | None
    attempts: int
    usage: Usage


async def chat_until_valid(
    client: LLMClient, messages: Sequence[Message], samplings: Sequence[Sampling],
    problem_of: Callable[[str], str | None], problem_so_far: Callable[[str], str | None] | None = None,
) -> ReaskedText:
    """`client.chat` with `samplings[0]`, asked again with the next sampling while `problem_of`
    finds a problem in the answer's text, at most `len(samplings)` times.

    With `problem_so_far` (a check that, once it finds a problem in the text written so far,
    finds it in any text that goes on from there), each answer is streamed and stopped at the
    first problem: the model does not write the rest of an answer that is asked again anyway."""
    if not samplings:
        raise ValueError("at least one attempt is needed")
    completions: list[Completion] = []
    for sampling in samplings:
        if problem_so_far is None:
            completions.append(await client.chat(messages, sampling))
        else:
            def stop_when(text: str) -> bool:
                return problem_so_far(text) is not None

            async with aclosing(client.stream(messages, sampling, stop_when=stop_when)) as events:
                completions.extend([event async for event in events if isinstance(event, Completion)])
        problem = problem_of(completions[-1].text)
        if problem is None:
            break
    return ReaskedText(completions[-1], problem, len(completions), Usage.total(c.usage for c in completions))
