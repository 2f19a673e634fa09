"""One async OpenAI-compatible client for every backend (vLLM, llama-server, others).

What it owns (SPEC §3): bounded concurrency, connection reuse, deadlines that
follow each call's token budget (`engines/llm/deadlines.py`), retries with
backoff, the backend's adapter (`engines/llm/adapters.py`, found by the
profile's kind or by asking the server once), label distributions from
logprobs, a schema-constrained answer cut at its cap asked again with a larger one
(`engines/llm/reasking.py`), token/latency accounting, and the persistent response cache keyed by
(model, messages, params, sample index). How requests travel is `engines/llm/transport.py`,
the cache's keys and stored form `engines/llm/cache_codec.py`, reading answers
`engines/llm/parsing.py`.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from contextlib import aclosing, contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, AsyncIterator, Callable, Iterator, NoReturn, Protocol, Sequence, TypeVar

from pydantic import BaseModel

from engines.llm.adapters import ADAPTERS, Choice, Constraint, OpenAIAdapter, parse_label
from engines.llm.cache_codec import ResponseCache, cache_key, completion_from_cache, completion_to_cache
from engines.llm.deadlines import GenerationSpeed
from engines.llm.parsing import (
    SHAPE_ERRORS,
    answer_choices,
    excerpt,
    label_distribution,
    listed,
    parse_structured,
)
from engines.llm.profile import BackendKind, BackendProfile, Sampling
from engines.llm.reasking import cut_short, larger_cap
from engines.llm.transport import BACKOFF_BASE_S, Transport, normalise_base_url
from engines.llm.types import (
    STOPPED,
    Accounting,
    BackendError,
    Completion,
    LabelChoice,
    Ping,
    StreamEvent,
    Structured,
    TextDelta,
    Usage,
)
from engines.secrets import redact, url_credentials
from engines.timing import Stopwatch

Message = dict[str, str]
ModelT = TypeVar("ModelT", bound=BaseModel)

MAX_TOP_LOGPROBS = 20  # vLLM's cap


class RequestRecorder(Protocol):
    """Where cache misses go instead of the server (`engines.llm.batch.RequestLog`)."""

    def record(self, model: str, requests: Sequence[tuple[dict, Sequence[str]]]) -> NoReturn: ...


_asking_anew: ContextVar[bool] = ContextVar("asking_anew", default=False)


@contextmanager
def asking_anew() -> Iterator[None]:
    """Calls made inside (in tasks started inside too) skip the response cache's answers and ask
    the server; the new answers replace the cached ones. For items whose answers were invalid."""
    token = _asking_anew.set(True)
    try:
        yield
    finally:
        _asking_anew.reset(token)


def json_schema_constraint(model_cls: type[BaseModel]) -> dict:
    """Request fields that constrain the output to `model_cls`'s JSON schema."""
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": model_cls.__name__,
                "schema": model_cls.model_json_schema(),
                "strict": True,
            },
        }
    }


class LLMClient:
    """Talks to one backend profile. Create one per event loop; close with `aclose()`."""

    def __init__(
        self,
        profile: BackendProfile,
        cache: ResponseCache | None = None,
        *,
        backoff_base_s: float = BACKOFF_BASE_S,
    ):
        if not profile.base_urls:
            raise BackendError(profile.name, "-", "the profile has no base URL")
        self.profile = profile
        key = profile.api_key()
        # Redacted from every error text: a server may echo the request, a URL carry credentials.
        self._secrets = [key, *(part for url in profile.base_urls for part in url_credentials(url))]
        # Answers are cached per serving endpoint: another server's answers are not this one's.
        # A server argtui starts moves to a free port on every start, so it is known by its profile.
        self.endpoint = profile.name if profile.managed else " ".join(
            sorted(redact(normalise_base_url(url), self._secrets) for url in profile.base_urls)
        )
        self.cache = cache
        self.accounting = Accounting()
        # What answers take here, so that a call's deadline follows its token budget.
        self.speed = GenerationSpeed(profile.timeout_s, profile.tokens_per_s)
        # Set by `engines.llm.batch.deferring`: cache misses go to a batch file, not to the server.
        self.defer: RequestRecorder | None = None
        self._model: str | None = profile.model or None
        self._adapter: OpenAIAdapter | None = ADAPTERS[profile.kind] if profile.kind else None
        self._detecting = asyncio.Lock()
        self._transport = Transport(
            profile, key, accounting=self.accounting, speed=self.speed, error=self._error,
            adapter=lambda: self._adapter, backoff_base_s=backoff_base_s,
        )
        self.base_urls = self._transport.base_urls

    async def __aenter__(self) -> "LLMClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        try:
            if self.cache:
                self.cache.flush()
        finally:  # a cache that cannot be written (a full disk, its server gone) still closes the connections
            await self._transport.aclose()

    # ------------------------------------------------------------------ model info

    async def models(self) -> list[str]:
        """Model ids the server serves (GET /models)."""
        url = self._transport.next_url()
        data, _ = await self._transport.request("GET", f"{url}/models", None)
        return [item.get("id", "") for item in listed(data)]

    async def kind(self) -> BackendKind:
        """The backend's kind: the profile's, else asked of the server once and kept."""
        return (await self._backend()).kind

    async def _backend(self) -> OpenAIAdapter:
        if self._adapter is None:
            async with self._detecting:
                if self._adapter is None:
                    self._adapter = ADAPTERS[await self._detect()]
        return self._adapter

    async def _detect(self) -> BackendKind:
        """vLLM owns the models it lists and answers /version; llama-server answers /props;
        Ollama answers /api/version (and lists its own models as `owned_by: library`); LM
        Studio lists its models at /api/v0/models. Anything else is treated as a plain
        OpenAI-compatible server."""
        url = self.base_urls[0]
        root = url.removesuffix("/v1")  # the identity endpoints live beside the API, not under it
        listing, _ = await self._transport.request("GET", f"{url}/models", None)
        served = listed(listing)
        if self._model is None and served:  # the same listing `model()` would ask for
            self._model = served[0].get("id", "") or None
        owners = {item.get("owned_by") for item in served}
        if "vllm" in owners and "version" in await self._json_if_served(f"{root}/version"):
            return "vllm"
        if "default_generation_settings" in await self._json_if_served(f"{root}/props"):
            return "llamacpp"
        if "version" in await self._json_if_served(f"{root}/api/version"):
            return "ollama"
        if isinstance((await self._json_if_served(f"{root}/api/v0/models")).get("data"), list):
            return "lmstudio"
        return "openai"

    async def _json_if_served(self, url: str) -> dict:
        """The JSON object at url, or {} when the server has no such endpoint."""
        try:
            data = (await self._transport.request("GET", url, None))[0]
        except BackendError:
            return {}
        return data if isinstance(data, dict) else {}

    async def model(self) -> str:
        """The model requests go to: the profile's, else the first one served."""
        if self._model is None:
            served = await self.models()
            if not served:
                raise self._error(self.base_urls[0], "serves no model")
            self._model = served[0]
        return self._model

    async def ping(self, prompt: str = "Say OK.") -> Ping:
        """One uncached one-token completion of `prompt`: the seconds of the round trip a user waits,
        and whether the answer's usage had `prompt_tokens_details` (the tokens taken from the prompt cache)."""
        body = await self._one_token_body([{"role": "user", "content": prompt}])
        data, latency = await self._transport.request("POST", f"{self._transport.next_url()}/chat/completions", body)
        usage = data.get("usage")
        return Ping(latency, isinstance(usage, dict) and isinstance(usage.get("prompt_tokens_details"), dict))

    async def prime(self, messages: Sequence[Message]) -> Usage:
        """Have the server compute `messages` into its prompt cache ahead of the requests that begin
        the same way (one token answered, never taken from the response cache, which would leave the
        server cold): what a judge's prompts share, sent while nothing waits for it. Its usage is
        counted as any request's."""
        [completion] = await self._post_completions(await self._one_token_body(messages), [0])
        return completion.usage

    async def _one_token_body(self, messages: Sequence[Message]) -> dict:
        """A request for one greedy token after `messages`: the server's work is the prompt."""
        return {"model": await self.model(), "messages": list(messages), "max_tokens": 1, "temperature": 0}

    # ------------------------------------------------------------------ public calls

    async def chat(
        self, messages: Sequence[Message], sampling: Sampling | None = None, *, top_logprobs: int = 0
    ) -> Completion:
        return (await self.samples(messages, 1, sampling, top_logprobs=top_logprobs))[0]

    async def samples(
        self,
        messages: Sequence[Message],
        n: int,
        sampling: Sampling | None = None,
        *,
        top_logprobs: int = 0,
        constraint: Constraint | None = None,
    ) -> list[Completion]:
        """n completions of one prompt; sample i is cached under index i."""
        return await self._complete(
            messages, n, self.profile.sampling.merged(sampling), top_logprobs, constraint or {}
        )

    async def choose(
        self,
        messages: Sequence[Message],
        labels: Sequence[str],
        sampling: Sampling | None = None,
        *,
        votes: int = 1,
    ) -> LabelChoice:
        """Constrained choice of one label with a distribution over all labels.

        With votes == 1 the distribution comes from logprobs; with votes > 1 it is
        the share of sampled votes (the label is the most frequent one).
        """
        constraint = self.choice_constraint(labels)
        merged = self.profile.sampling.merged(sampling).merged(Sampling(max_tokens=32))
        completions = await self._complete(
            messages, votes, merged, MAX_TOP_LOGPROBS if votes == 1 else 0, constraint
        )
        if votes == 1:
            return read_choice(completions[0], labels, greedy=merged.temperature == 0)
        usage = Usage.total(c.usage for c in completions)
        raw = "\n".join(c.text for c in completions)
        counts = Counter(label for c in completions if (label := parse_label(c.text, labels)) is not None)
        if not counts:
            return LabelChoice(None, {}, "votes", raw, usage)
        distribution = {label: counts.get(label, 0) / votes for label in labels}
        return LabelChoice(counts.most_common(1)[0][0], distribution, "votes", raw, usage)

    async def structured(
        self,
        messages: Sequence[Message],
        model_cls: type[ModelT],
        sampling: Sampling | None = None,
        *,
        n: int = 1,
    ) -> list[Structured[ModelT]]:
        """JSON-schema constrained output, validated into `model_cls` (one result per sample)."""
        completions = await self._complete(
            messages, n, self.profile.sampling.merged(sampling), 0, json_schema_constraint(model_cls)
        )
        return [parse_structured(model_cls, completion) for completion in completions]

    async def stream(
        self,
        messages: Sequence[Message],
        sampling: Sampling | None = None,
        *,
        constraint: Constraint | None = None,
        stop_when: Callable[[str], bool] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Text deltas as they arrive, then the whole Completion (from the cache: one delta).

        `constraint` is `choice_constraint(labels)` or any request field set such as
        `json_schema_constraint(Model)`. Once `stop_when` holds of the text so far, the answer is
        stopped there (the server stops writing when the connection closes): the Completion is
        that text, finish reason `STOPPED`, and it is not cached, so a rerun asks again.
        """
        sampling = self.profile.sampling.merged(sampling)
        body, [key] = await self._body_and_keys(messages, sampling, 0, constraint or {}, (0,))
        cached = self.cache.get(key) if self.cache and not _asking_anew.get() else None
        if cached is not None:
            completion = completion_from_cache(cached, 0)
            self.accounting.record(completion.usage)
            yield TextDelta(completion.text)
            yield completion
            return
        if self.defer is not None:  # raises RequestDeferred
            self.defer.record(body["model"], [(body, [key])])
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        completion = None
        written, pieces = "", 0
        stopwatch = Stopwatch()
        try:
            # aclosing: a consumer that stops early frees the connection now, not when collected.
            async with aclosing(self._transport.stream(body)) as events:
                async for event in events:
                    if isinstance(event, Completion):
                        completion = event
                        continue
                    written, pieces = written + event.text, pieces + 1
                    yield event
                    if stop_when is not None and stop_when(written):
                        break
        finally:
            if completion is None and pieces:
                # Stopped before the server's usage came: each streamed delta is one token on
                # vLLM and llama-server; the prompt's count is unknown.
                so_far = Usage(completion_tokens=pieces, latency_s=stopwatch.seconds, calls=1)
                self.accounting.record(so_far)
        if completion is None:  # stopped by `stop_when`
            yield Completion(written, STOPPED, so_far)
            return
        self.accounting.record(completion.usage)
        if self.cache:
            self.cache.put(key, body["model"], completion_to_cache(completion))
        yield completion

    # ------------------------------------------------------------------ capability adapter

    def choice_constraint(self, labels: Sequence[str]) -> Choice:
        """A constraint to one of the labels, for `samples`; the backend's adapter turns it
        into request fields once the backend's kind is known."""
        return Choice(tuple(labels))

    # ------------------------------------------------------------------ core

    async def _body_and_keys(
        self,
        messages: Sequence[Message],
        sampling: Sampling,
        top_logprobs: int,
        constraint: Constraint,
        sample_indices: Sequence[int],
    ) -> tuple[dict, list[str]]:
        """The request body and the cache keys of the samples `sample_indices`."""
        model = await self.model()
        adapter = await self._backend()
        params: dict[str, Any] = {**sampling.as_request(), **adapter.request_fields(constraint)}
        if top_logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = min(top_logprobs, MAX_TOP_LOGPROBS)
        keys = [cache_key(self.endpoint, model, messages, params, i) for i in sample_indices]
        return {"model": model, "messages": list(messages), **params}, keys

    async def _complete(
        self,
        messages: Sequence[Message],
        n: int,
        sampling: Sampling,
        top_logprobs: int,
        constraint: Constraint,
    ) -> list[Completion]:
        """n answers of one prompt; those cut at their cap before their JSON ended asked again
        once with a larger one (`engines/llm/reasking.py`)."""
        if n < 1:
            raise ValueError("n must be at least 1")
        completions = await self._answers(messages, range(n), sampling, top_logprobs, constraint)
        larger = larger_cap(sampling, constraint)
        cut = [c.sample_index for c in completions if cut_short(c)]
        if larger is None or not cut:
            return completions
        try:
            again = await self._answers(messages, cut, larger, top_logprobs, constraint)
        except BackendError as error:
            if error.status != 400:
                raise
            # The first request differed only in its cap: the server's context does not hold this one.
            again = await self._answers(messages, cut, larger.model_copy(update={"max_tokens": None}),
                                        top_logprobs, constraint)
        by_index = {completion.sample_index: completion for completion in completions}
        for completion in again:  # what both calls cost goes with the answer
            by_index[completion.sample_index] = replace(
                completion, usage=by_index[completion.sample_index].usage + completion.usage
            )
        return list(by_index.values())

    async def _answers(
        self,
        messages: Sequence[Message],
        sample_indices: Sequence[int],
        sampling: Sampling,
        top_logprobs: int,
        constraint: Constraint,
    ) -> list[Completion]:
        """The samples `sample_indices` of one prompt, from the cache or the server, in their order."""
        body, keys = await self._body_and_keys(messages, sampling, top_logprobs, constraint, sample_indices)
        model = body["model"]
        key_of = dict(zip(sample_indices, keys))
        results: dict[int, Completion] = {}
        if self.cache and not _asking_anew.get():
            for i, key in key_of.items():
                cached = self.cache.get(key)
                if cached is not None:
                    results[i] = completion_from_cache(cached, i)
                    self.accounting.record(results[i].usage)
        missing = [i for i in sample_indices if i not in results]
        if missing:
            # Samples go in requests with n, so the prompt is prefilled once per request.
            size = (await self._backend()).max_n or len(missing)
            chunks = [missing[i : i + size] for i in range(0, len(missing), size)]
            requests = [(_chunk_request(body, chunk), chunk) for chunk in chunks]
            if self.defer is not None:  # raises RequestDeferred
                self.defer.record(model, [(request, [key_of[i] for i in chunk]) for request, chunk in requests])
            batches = await asyncio.gather(*(self._post_completions(request, chunk) for request, chunk in requests))
            for completion in (completion for batch in batches for completion in batch):
                results[completion.sample_index] = completion
                if self.cache:
                    self.cache.put(key_of[completion.sample_index], model, completion_to_cache(completion))
        return [results[i] for i in sample_indices if i in results]

    async def _post_completions(self, body: dict, sample_indices: list[int]) -> list[Completion]:
        url = self._transport.next_url()
        data, latency = await self._transport.request("POST", f"{url}/chat/completions", body)
        try:
            answers, (prompt_tokens, completion_tokens, reused_tokens) = answer_choices(data)
        except SHAPE_ERRORS:
            raise self._error(url, f"answered with an unexpected shape: {excerpt(data)}") from None
        if len(answers) < len(sample_indices):
            raise self._error(
                url,
                f"asked for {len(sample_indices)} choices, got {len(answers)}",
            )
        self.speed.record(completion_tokens / len(answers), latency)
        completions = []
        for position, ((text, finish_reason, logprobs), index) in enumerate(zip(answers, sample_indices)):
            # The prompt is prefilled once per request: charge it to the first sample.
            first = position == 0
            share = Usage(
                prompt_tokens=prompt_tokens if first else 0,
                completion_tokens=completion_tokens // len(sample_indices),
                reused_prompt_tokens=reused_tokens if first else 0,
                latency_s=latency,
                calls=1,
            )
            self.accounting.record(share)
            completions.append(Completion(text, finish_reason, share, logprobs, index))
        return completions

    # ------------------------------------------------------------------ secrets

    def redact(self, text: str) -> str:
        """`text` without this profile's key or URL credentials."""
        return redact(text, self._secrets)

    @property
    def shown_urls(self) -> list[str]:
        """The base URLs as they may be shown: without credentials."""
        return [self.redact(url) for url in self.base_urls]

    def _error(self, url: str, message: str, status: int | None = None) -> BackendError:
        """A BackendError of this profile, its secrets redacted."""
        return BackendError(self.profile.name, url, message, status, secrets=self._secrets)


def read_choice(completion: Completion, labels: Sequence[str], *, greedy: bool) -> LabelChoice:
    """One answer's label and P(label) from its logprobs (`label_distribution`), or the emitted label
    alone as a point mass where none could be read: `choose`'s reading, and `argtui runs verify`'s."""
    label = parse_label(completion.text, labels)
    if label is None:
        return LabelChoice(None, {}, "text", completion.text, completion.usage)
    reading = label_distribution(labels, completion, label, completion.text.find(label), greedy=greedy)
    if reading.distribution:
        return LabelChoice(label, reading.distribution, "logprobs", completion.text, completion.usage)
    return LabelChoice(label, {x: float(x == label) for x in labels}, "text", completion.text, completion.usage,
                       reading.unread)


def _chunk_request(body: dict, sample_indices: list[int]) -> dict:
    """The request for some samples of one prompt: `n` of them in one request, and a seeded
    request's seed moved by the first sample's index, so that requests split where a server
    takes fewer samples at once (or one) do not all draw the same ones."""
    request = {**body, "n": len(sample_indices)} if len(sample_indices) > 1 else dict(body)
    if sample_indices[0] and request.get("seed") is not None:
        request["seed"] = request["seed"] + sample_indices[0]
    return request
