"""Asking again after an answer that could not be used: the one way it is done.

Within a call, `structured_until_valid` asks attempt after attempt until an answer validates.
Each attempt has a sampling of its own (another seed or temperature), so the response cache,
which keeps the failed answer under the first attempt's key, does not give it back, and a rerun
replays the same attempts from the cache. Across runs, the runner judges items stored as invalid
again inside `asking_anew()` (`--retry-invalid`): their calls skip the cache, and the answers
they get replace the ones that could not be read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Sequence, TypeVar

from pydantic import BaseModel

from engines.llm.profile import Sampling
from engines.llm.types import Structured, Usage

if TYPE_CHECKING:
    from engines.llm.client import LLMClient, Message

ModelT = TypeVar("ModelT", bound=BaseModel)


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
