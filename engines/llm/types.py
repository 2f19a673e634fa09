"""Typed results of LLM calls. Invalid model output is a value, not an exception."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Generic, Iterable, Iterator, Literal, Sequence, TypeVar

from engines.errors import ArgtuiError
from engines.secrets import redact

T = TypeVar("T")


@dataclass(frozen=True)
class Usage:
    """What LLM answers cost. Adds up with `+` and `Usage.total(...)`, so every judge,
    task and run totals its calls the same way.

    `calls` counts answers (one per sample), `cached_calls` those the response
    cache gave; `latency_s` adds up the time spent waiting for answers.
    `reused_prompt_tokens` are prompt tokens the server took from its prompt cache
    instead of computing them; `cached_prompt_tokens` those of the answers the response
    cache gave, which no server computed this time.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_prompt_tokens: int = 0
    latency_s: float = 0.0
    ttft_s: float | None = None
    calls: int = 0
    cached_calls: int = 0
    cached_prompt_tokens: int = 0

    @property
    def cached(self) -> bool:
        """Every answer came from the cache (no server time was spent)."""
        return self.calls > 0 and self.cached_calls == self.calls

    @property
    def cache_share(self) -> str:
        """`cached` when every answer came from the response cache, `1 of 3 cached` when some did, else ''."""
        if self.cached:
            return "cached"
        return f"{self.cached_calls} of {self.calls} cached" if self.cached_calls else ""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def computed_prompt_tokens(self) -> int:
        """The prompt tokens a server computed for these answers."""
        return self.prompt_tokens - self.reused_prompt_tokens - self.cached_prompt_tokens

    def __add__(self, other: "Usage") -> "Usage":
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            reused_prompt_tokens=self.reused_prompt_tokens + other.reused_prompt_tokens,
            latency_s=self.latency_s + other.latency_s,
            ttft_s=self.ttft_s if self.ttft_s is not None else other.ttft_s,
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
        )

    def __radd__(self, other):
        return self if other == 0 else NotImplemented

    @staticmethod
    def total(usages: Iterable["Usage"]) -> "Usage":
        """The sum of `usages` (no usage for none)."""
        return sum(usages, Usage())

    def as_dict(self) -> dict:
        return {
            "calls": self.calls, "cached_calls": self.cached_calls, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "latency_s": self.latency_s,
        }


@dataclass(frozen=True)
class Ping:
    """One probe request: its round trip, and whether its usage said how many prompt tokens the
    server took from its cache (servers that do not tell leave `prompt_tokens_details` out)."""

    latency_s: float
    reports_cached_tokens: bool


@dataclass(frozen=True)
class TokenLogprob:
    """One emitted token: its text, logprob and top alternatives. `token_bytes` are its bytes as the
    server sent them, where they differ from the text's: a token may hold part of a character,
    which its text leaves out."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()
    token_bytes: bytes | None = None

    @property
    def spelled(self) -> bytes:
        """What the token wrote."""
        return self.token.encode() if self.token_bytes is None else self.token_bytes


STOPPED = "stopped"  # the finish reason of a streamed answer argtui stopped (`LLMClient.stream`'s stop_when)


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
    votes, or only the emitted text (a point mass); `unread` says why logprobs
    asked for gave no distribution (see `LabelReading`).
    """

    label: str | None
    distribution: dict[str, float]
    source: Literal["logprobs", "votes", "text"]
    raw: str
    usage: Usage
    unread: str | None = None

    @property
    def valid(self) -> bool:
        return self.label is not None


@dataclass(frozen=True)
class LabelReading:
    """P(label) read from the logprobs of the token that emitted a label, or, with an empty
    `distribution`, why it could not be read (`unread`): then only the emitted label is known."""

    distribution: dict[str, float]
    unread: str | None = None


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
class UsageMeter:
    """A running count of LLM answers (their `Usage`) and of the HTTP requests sent for them.

    While `counting()`, it counts what any client records: in tasks started inside too, not in
    concurrent work started before it. It is the one running count: a client's `Accounting`,
    a step's, a turn's and a judgment's cost are all meters.
    """

    usage: Usage = field(default_factory=Usage)
    requests: int = 0

    @contextmanager
    def counting(self) -> Iterator["UsageMeter"]:
        token = _meters.set((*_meters.get(), self))
        try:
            yield self
        finally:
            _meters.reset(token)


_meters: ContextVar[tuple[UsageMeter, ...]] = ContextVar("usage_meters", default=())


@dataclass
class Accounting(UsageMeter):
    """Running totals for one client: HTTP requests and retries, and the `Usage` of every
    answer it returned (fresh or cached). What it records, the meters counting then count too."""

    retries: int = 0

    def record(self, usage: Usage) -> None:
        for meter in (self, *_meters.get()):
            meter.usage = meter.usage + usage

    def count_request(self) -> None:
        for meter in (self, *_meters.get()):
            meter.requests += 1

    @property
    def cache_hits(self) -> int:
        return self.usage.cached_calls

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens


class BackendError(ArgtuiError):
    """The backend could not answer (after retries, where retrying made sense)."""

    def __init__(
        self, profile: str, url: str, message: str, status: int | None = None, *, secrets: Sequence[str | None] = ()
    ):
        self.profile = profile
        self.url = redact(url, secrets)
        self.status = status
        super().__init__(redact(f"backend {profile!r} at {url}: {message}", secrets))
