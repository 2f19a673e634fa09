"""Typed results of LLM calls. Invalid model output is a value, not an exception."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from engines.errors import ArgtuiError

T = TypeVar("T")


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    ttft_s: float | None = None
    cached: bool = False


@dataclass(frozen=True)
class TokenLogprob:
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None
    usage: Usage
    logprobs: tuple[TokenLogprob, ...] = ()
    sample_index: int = 0


@dataclass(frozen=True)
class TextDelta:
    """A piece of a streamed reply."""

    text: str


StreamEvent = TextDelta | Completion


@dataclass(frozen=True)
class LabelChoice:
    """A constrained choice among labels, with a distribution over them.

    `label` is None when the output was not one of the labels (`raw` keeps it).
    `source` says where the distribution came from: token logprobs, sampled
    votes, or only the emitted text (a point mass).
    """

    label: str | None
    distribution: dict[str, float]
    source: Literal["logprobs", "votes", "text"]
    raw: str
    usage: Usage

    @property
    def valid(self) -> bool:
        return self.label is not None


@dataclass(frozen=True)
class Structured(Generic[T]):
    """A JSON-schema output parsed into a pydantic model, or the raw text and why it failed."""

    value: T | None
    raw: str
    error: str | None
    usage: Usage

    @property
    def valid(self) -> bool:
        return self.value is not None


@dataclass
class Accounting:
    """Running totals for one client: what was asked of the server and what the cache saved."""

    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latencies_s: list[float] = field(default_factory=list)

    def record(self, usage: Usage) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.latencies_s.append(usage.latency_s)


class BackendError(ArgtuiError):
    """The backend could not answer (after retries, where retrying made sense)."""

    def __init__(self, profile: str, url: str, message: str, status: int | None = None):
        self.profile = profile
        self.url = url
        self.status = status
        super().__init__(f"backend {profile!r} at {url}: {message}")
