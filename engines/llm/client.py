"""One async OpenAI-compatible client for every backend (vLLM, llama-server, others).

What it owns (SPEC §3): bounded concurrency, connection reuse, deadlines that
follow each call's token budget (`engines/llm/deadlines.py`), retries with
backoff, the backend's adapter (`engines/llm/adapters.py`, found by the
profile's kind or by asking the server once), label distributions from
logprobs, token/latency accounting, and the persistent response cache keyed by
(model, messages, params, sample index).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import math
import time
from collections import Counter
from contextlib import aclosing, asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterator, NoReturn, Protocol, Sequence, TypeVar

import httpx
import orjson
from httpx_sse import SSEError, aconnect_sse
from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

from engines.llm.adapters import ADAPTERS, Choice, Constraint, OpenAIAdapter, parse_label
from engines.llm.deadlines import GenerationSpeed
from engines.llm.json_reader import UnreadableJSON, read_json
from engines.llm.profile import BackendKind, BackendProfile, Sampling
from engines.llm.types import (
    Accounting,
    BackendError,
    Completion,
    LabelChoice,
    Ping,
    StreamEvent,
    Structured,
    TextDelta,
    TokenLogprob,
    Usage,
)
from engines.secrets import redact, url_credentials

if TYPE_CHECKING:
    from engines.llm.batch import RequestLog

Message = dict[str, str]
ModelT = TypeVar("ModelT", bound=BaseModel)

MAX_TOP_LOGPROBS = 20  # vLLM's cap
JSON_CONTENT = {"Content-Type": "application/json"}
CONNECTIONS_PER_POOL = 16
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 20.0
PROGRESS_TIMEOUT = httpx.Timeout(5.0)  # a server's count of tokens generated is answered at once, or not used


class ResponseCache(Protocol):
    def get(self, key: str) -> dict | None: ...
    def put(self, key: str, model: str, response: dict) -> None: ...
    def flush(self) -> None: ...


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


def cache_key(
    endpoint: str, model: str, messages: Sequence[Message], params: dict, sample_index: int
) -> str:
    """One answer's key: who serves it (`endpoint`, the client's identity), what, and which sample."""
    payload = json.dumps(
        {"endpoint": endpoint, "model": model, "messages": list(messages), "params": params, "sample": sample_index},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def label_distribution(
    labels: Sequence[str], completion: Completion, label_offset: int = 0
) -> dict[str, float]:
    """P(label) from the top logprobs of the token where the label starts.

    A candidate token counts for a label when it is a non-empty prefix of that
    label and of no other; the mass is renormalised over the labels (what the
    constraint allows). Empty when the server sent no usable logprobs.
    """
    position, consumed = 0, 0
    for position, entry in enumerate(completion.logprobs):
        if consumed + len(entry.token) > label_offset:
            break
        consumed += len(entry.token)
    else:
        return {}
    entry = completion.logprobs[position]
    candidates = entry.top or ((entry.token, entry.logprob),)
    mass: dict[str, float] = {label: 0.0 for label in labels}
    seen: set[str] = set()
    for token, logprob in candidates:
        piece = token.strip()
        if not piece or piece in seen:
            continue
        seen.add(piece)
        matching = [label for label in labels if label.startswith(piece)]
        if len(matching) == 1:
            mass[matching[0]] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return {}
    return {label: value / total for label, value in mass.items()}


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


def parse_structured(model_cls: type[ModelT], completion: Completion) -> Structured[ModelT]:
    """Validate a completion's text into `model_cls`; failures keep the raw text and why."""
    try:
        value = model_cls.model_validate_json(completion.text)
        return Structured(value, completion.text, None, completion.usage)
    except ValidationError as exc:
        error = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'output'}: {e['msg']}" for e in exc.errors()
        )
        return Structured(None, completion.text, error, completion.usage)


def _normalise_base_url(url: str) -> str:
    url = url.rstrip("/")
    scheme_and_host = url.split("://", 1)[-1]
    return url if "/" in scheme_and_host else url + "/v1"


def _completion_to_cache(c: Completion) -> dict:
    return {
        "text": c.text,
        "finish_reason": c.finish_reason,
        "prompt_tokens": c.usage.prompt_tokens,
        "completion_tokens": c.usage.completion_tokens,
        "logprobs": [[t.token, t.logprob, [list(p) for p in t.top]] for t in c.logprobs],
    }


def _completion_from_cache(data: dict, sample_index: int) -> Completion:
    return Completion(
        text=data["text"],
        finish_reason=data.get("finish_reason"),
        usage=Usage(
            prompt_tokens=data.get("prompt_tokens", 0),
            completion_tokens=data.get("completion_tokens", 0),
            calls=1,
            cached_calls=1,
        ),
        logprobs=tuple(
            TokenLogprob(token, logprob, tuple((t, lp) for t, lp in top))
            for token, logprob, top in data.get("logprobs", [])
        ),
        sample_index=sample_index,
    )


def _parse_logprobs(choice: dict) -> tuple[TokenLogprob, ...]:
    content = (choice.get("logprobs") or {}).get("content") or []
    return tuple(
        TokenLogprob(
            token=str(item.get("token", "")),
            logprob=float(item.get("logprob", -math.inf)),
            top=tuple(
                (str(alt.get("token", "")), float(alt.get("logprob", -math.inf)))
                for alt in item.get("top_logprobs") or []
            ),
        )
        for item in content
    )


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
            sorted(redact(_normalise_base_url(url), self._secrets) for url in profile.base_urls)
        )
        self.cache = cache
        self.accounting = Accounting()
        # What answers take here, so that a call's deadline follows its token budget.
        self.speed = GenerationSpeed(profile.timeout_s)
        # Set by `engines.llm.batch.deferring`: cache misses go to a batch file, not to the server.
        self.defer: RequestLog | None = None
        self.base_urls = [_normalise_base_url(url) for url in profile.base_urls]
        self._next_url = itertools.cycle(self.base_urls).__next__
        self._backoff = wait_random_exponential(multiplier=backoff_base_s, max=BACKOFF_MAX_S)
        self._model: str | None = profile.model or None
        self._adapter: OpenAIAdapter | None = ADAPTERS[profile.kind] if profile.kind else None
        self._detecting = asyncio.Lock()
        headers = {}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # httpx's pool scans every connection on each state change, which costs
        # O(connections) per request; several small pools keep that flat at 256
        # in flight. Each pool gets as many slots as it has connections, and the
        # slot queue (FIFO) spreads requests across pools and bounds concurrency.
        shard_count = math.ceil(profile.max_concurrency / CONNECTIONS_PER_POOL)
        # Loading CA certificates is slow: once per client, and only when a server is reached by
        # https (every request goes to a base URL's host, so plain http ones never use TLS).
        tls: Any = httpx.create_ssl_context() if any(u.startswith("https:") for u in self.base_urls) else False
        self._pools = [
            httpx.AsyncClient(
                verify=tls,
                headers=headers,
                timeout=httpx.Timeout(profile.timeout_s, connect=min(10.0, profile.timeout_s)),
                limits=httpx.Limits(
                    max_connections=CONNECTIONS_PER_POOL, max_keepalive_connections=CONNECTIONS_PER_POOL
                ),
            )
            for _ in range(shard_count)
        ]
        # A whole answer is bounded by its deadline (`self.speed`), not by a read timeout; a
        # stream by the pools' read timeout between events.
        self._answer_timeout = httpx.Timeout(None, connect=min(10.0, profile.timeout_s))
        self._slots: asyncio.Queue[httpx.AsyncClient] = asyncio.Queue()
        for index in range(profile.max_concurrency):
            self._slots.put_nowait(self._pools[index % shard_count])
        self._aiohttp = _AiohttpTransport(profile, headers, tls) if profile.transport == "aiohttp" else None

    async def __aenter__(self) -> "LLMClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self.cache:
            self.cache.flush()
        if self._aiohttp is not None:
            await self._aiohttp.aclose()
        for pool in self._pools:
            await pool.aclose()

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[httpx.AsyncClient]:
        """One of `max_concurrency` request slots, with the connection pool it belongs to."""
        http = await self._slots.get()
        try:
            yield http
        finally:
            self._slots.put_nowait(http)

    # ------------------------------------------------------------------ model info

    async def models(self) -> list[str]:
        """Model ids the server serves (GET /models)."""
        url = self._next_url()
        data, _ = await self._request("GET", f"{url}/models", None)
        return [item.get("id", "") for item in _listed(data)]

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
        listing, _ = await self._request("GET", f"{url}/models", None)
        served = _listed(listing)
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
            data = (await self._request("GET", url, None))[0]
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
        body = {
            "model": await self.model(),
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": 1,
            "temperature": 0,
        }
        data, latency = await self._request("POST", f"{self._next_url()}/chat/completions", body)
        usage = data.get("usage")
        return Ping(latency, isinstance(usage, dict) and isinstance(usage.get("prompt_tokens_details"), dict))

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
        usage = sum((c.usage for c in completions), Usage())
        picked = [parse_label(c.text, labels) for c in completions]
        raw = "\n".join(c.text for c in completions)
        if votes > 1:
            counts = Counter(label for label in picked if label is not None)
            if not counts:
                return LabelChoice(None, {}, "votes", raw, usage)
            distribution = {label: counts.get(label, 0) / votes for label in labels}
            return LabelChoice(counts.most_common(1)[0][0], distribution, "votes", raw, usage)
        label, completion = picked[0], completions[0]
        if label is None:
            return LabelChoice(None, {}, "text", raw, usage)
        distribution = label_distribution(labels, completion, completion.text.find(label))
        if distribution:
            return LabelChoice(label, distribution, "logprobs", raw, usage)
        return LabelChoice(label, {x: float(x == label) for x in labels}, "text", raw, usage)

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
    ) -> AsyncIterator[StreamEvent]:
        """Text deltas as they arrive, then the whole Completion (from the cache: one delta).

        `constraint` is `choice_constraint(labels)` or any request field set such as
        `json_schema_constraint(Model)`.
        """
        sampling = self.profile.sampling.merged(sampling)
        body, [key] = await self._body_and_keys(messages, sampling, 0, constraint or {}, 1)
        cached = self.cache.get(key) if self.cache and not _asking_anew.get() else None
        if cached is not None:
            completion = _completion_from_cache(cached, 0)
            self.accounting.record(completion.usage)
            yield TextDelta(completion.text)
            yield completion
            return
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        completion = None
        deltas = 0
        started = time.perf_counter()
        try:
            # aclosing: a consumer that stops early frees the connection now, not when collected.
            async with aclosing(self._stream_request(body)) as events:
                async for event in events:
                    if isinstance(event, Completion):
                        completion = event
                    else:
                        deltas += 1
                    yield event
        finally:
            if completion is None and deltas:
                # Stopped before the server's usage came: each streamed delta is one token on
                # vLLM and llama-server; the prompt's count is unknown.
                self.accounting.record(Usage(completion_tokens=deltas, latency_s=time.perf_counter() - started,
                                             calls=1))
        if completion is not None:
            self.accounting.record(completion.usage)
            if self.cache:
                self.cache.put(key, body["model"], _completion_to_cache(completion))

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
        samples: int,
    ) -> tuple[dict, list[str]]:
        """The request body and the cache keys of samples 0 … samples - 1."""
        model = await self.model()
        adapter = await self._backend()
        params: dict[str, Any] = {**sampling.as_request(), **adapter.request_fields(constraint)}
        if top_logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = min(top_logprobs, MAX_TOP_LOGPROBS)
        keys = [cache_key(self.endpoint, model, messages, params, i) for i in range(samples)]
        return {"model": model, "messages": list(messages), **params}, keys

    async def _complete(
        self,
        messages: Sequence[Message],
        n: int,
        sampling: Sampling,
        top_logprobs: int,
        constraint: Constraint,
    ) -> list[Completion]:
        if n < 1:
            raise ValueError("n must be at least 1")
        body, keys = await self._body_and_keys(messages, sampling, top_logprobs, constraint, n)
        model = body["model"]
        results: list[Completion | None] = [None] * n
        if self.cache and not _asking_anew.get():
            for i, key in enumerate(keys):
                cached = self.cache.get(key)
                if cached is not None:
                    results[i] = _completion_from_cache(cached, i)
                    self.accounting.record(results[i].usage)
        missing = [i for i, result in enumerate(results) if result is None]
        if missing:
            # Samples go in requests with n, so the prompt is prefilled once per request.
            size = (await self._backend()).max_n or len(missing)
            chunks = [missing[i : i + size] for i in range(0, len(missing), size)]
            requests = [(_chunk_request(body, chunk), chunk) for chunk in chunks]
            if self.defer is not None:  # raises RequestDeferred
                self.defer.record(model, [(request, [keys[i] for i in chunk]) for request, chunk in requests])
            batches = await asyncio.gather(*(self._post_completions(request, chunk) for request, chunk in requests))
            fresh = [completion for batch in batches for completion in batch]
            for completion in fresh:
                results[completion.sample_index] = completion
                if self.cache:
                    self.cache.put(keys[completion.sample_index], model, _completion_to_cache(completion))
        return [r for r in results if r is not None]

    async def _post_completions(self, body: dict, sample_indices: list[int]) -> list[Completion]:
        url = self._next_url()
        data, latency = await self._request("POST", f"{url}/chat/completions", body)
        try:
            choices = sorted(data.get("choices") or [], key=lambda c: c.get("index", 0))
            answers = [
                (str((choice.get("message") or {}).get("content") or ""), _finish_reason(choice),
                 _parse_logprobs(choice))
                for choice in choices
            ]
            prompt_tokens, completion_tokens, reused_tokens = _token_counts(data.get("usage") or {})
        except _SHAPE_ERRORS:
            raise self._error(url, f"answered with an unexpected shape: {_excerpt(data)}") from None
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

    # ------------------------------------------------------------------ HTTP

    def _retrying(self, url: str) -> AsyncRetrying:
        """Up to `profile.retries` more attempts after a timeout, a connection error or a
        status the adapter names, waiting as Retry-After says or with jittered backoff."""
        return AsyncRetrying(
            stop=stop_after_attempt(self.profile.retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(_RETRIED),
            before_sleep=self._count_retry,
            retry_error_callback=lambda state: self._give_up(url, state),
        )

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception()
        if isinstance(error, _RetryableStatus) and error.retry_after_s is not None:
            return min(BACKOFF_MAX_S, error.retry_after_s)
        return self._backoff(state)

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

    def _count_retry(self, state: RetryCallState) -> None:
        self.accounting.retries += 1

    def _give_up(self, url: str, state: RetryCallState) -> NoReturn:
        error = state.outcome.exception()
        if isinstance(error, BackendError):
            raise error
        raise self._error(
            url,
            f"{type(error).__name__} after {state.attempt_number} attempts: {str(error) or 'no detail'}",
        ) from error

    def _check_status(self, response: httpx.Response, url: str) -> None:
        """Raise for an error status; one worth retrying carries the server's Retry-After."""
        if response.status_code < 400:
            return
        # While the kind is being detected, statuses are judged as for any OpenAI-compatible server.
        adapter = self._adapter or ADAPTERS["openai"]
        if response.status_code in adapter.retry_statuses:
            raise _RetryableStatus(
                self.profile.name, url, _error_text(response), response.status_code, _retry_after_s(response)
            )
        raise self._error(url, _error_text(response), response.status_code)

    async def _request(self, method: str, url: str, body: dict | None) -> tuple[dict, float]:
        """One HTTP call (with retries) answered by a JSON object, and the seconds it took."""
        # The first attempt goes without the retry loop, whose bookkeeping cost a batch run as
        # much client time as the request; one that failed is handed to the loop as its first.
        try:
            return await self._request_once(method, url, body)
        except _RETRIED as failure:
            first: BaseException | None = failure

        async def attempt() -> tuple[dict, float]:
            nonlocal first
            if first is not None:
                failure, first = first, None
                raise failure
            return await self._request_once(method, url, body)

        return await self._retrying(url)(attempt)

    async def _request_once(self, method: str, url: str, body: dict | None) -> tuple[dict, float]:
        async with self._slot() as http:
            started = time.perf_counter()
            self.accounting.requests += 1
            budget = None if body is None else body.get("max_tokens")
            try:
                async with self.speed.deadline(budget, lambda: self._generated_per_call(url)) as deadline:
                    content = None if body is None else orjson.dumps(body)
                    if self._aiohttp is not None:
                        response = await self._aiohttp.request(method, url, content)
                    else:
                        response = await http.request(
                            method, url, content=content, headers=None if body is None else JSON_CONTENT,
                            timeout=self._answer_timeout,
                        )
            except TimeoutError:
                # Not re-sent: the server has the request and may still be working on it.
                raise self._error(
                    url, f"no answer within {deadline}; "
                    "the request was not sent again, since the server may still be computing it",
                ) from None
        self._check_status(response, url)
        try:
            data = read_json(response.content)
        except UnreadableJSON as exc:
            raise self._error(url, f"answered with {exc}: {response.text[:200]!r}") from None
        if not isinstance(data, dict):
            raise self._error(url, f"answered with an unexpected shape: {response.text[:200]}")
        return data, time.perf_counter() - started

    async def _generated_per_call(self, url: str) -> float | None:
        """Tokens the server at `url` has generated so far per call of ours in flight, where it says
        (the adapter's `progress_path`); None elsewhere or when it does not answer at once."""
        adapter = self._adapter
        if adapter is None or adapter.progress_path is None:
            return None
        root = url.removesuffix("/chat/completions").removesuffix("/v1")
        try:  # past the request slots, which the calls waiting hold
            response = await self._pools[0].get(root + adapter.progress_path, timeout=PROGRESS_TIMEOUT)
            tokens = adapter.generated_tokens(read_json(response.content)) if response.status_code == 200 else None
        except (httpx.HTTPError, UnreadableJSON):
            return None
        in_flight = self.profile.max_concurrency - self._slots.qsize()
        return tokens / max(1, in_flight) if tokens else None

    async def _stream_request(self, body: dict) -> AsyncIterator[StreamEvent]:
        """Server-sent deltas, then the Completion. Only an attempt that has yielded nothing is
        retried: after the first delta a retry would show the consumer the text twice."""
        url = f"{self._next_url()}/chat/completions"
        started = time.perf_counter()
        parts: list[str] = []
        async for attempt in self._retrying(url):
            with attempt:
                ttft: float | None = None
                finish_reason = None
                counts = (0, 0, 0)  # prompt, completion and prompt-cache tokens, from the usage event
                self.accounting.requests += 1
                async with self._slot() as http, aconnect_sse(http, "POST", url, json=body) as source:
                    if source.response.status_code >= 400:
                        await source.response.aread()
                        self._check_status(source.response, url)
                    try:
                        async for event in source.aiter_sse():
                            if event.data == "[DONE]":
                                break
                            try:
                                deltas, reason, usage = _stream_event(event.data)
                            except UnreadableJSON as exc:
                                raise self._error(url, f"sent an event of {exc}: {event.data[:200]!r}") from None
                            except _SHAPE_ERRORS:
                                raise self._error(
                                    url, f"sent an event of an unexpected shape: {event.data[:200]!r}"
                                ) from None
                            counts = usage or counts
                            finish_reason = reason or finish_reason
                            for delta in deltas:
                                if ttft is None:
                                    ttft = time.perf_counter() - started
                                parts.append(delta)
                                yield TextDelta(delta)
                    except SSEError as exc:  # an httpx.TransportError, but retrying cannot help
                        raise self._error(url, f"did not answer with an event stream: {exc}") from None
                    except httpx.TransportError as exc:
                        if not parts:
                            raise
                        raise self._error(
                            url,
                            f"the stream broke after {sum(map(len, parts))} characters: "
                            f"{type(exc).__name__}: {str(exc) or 'no detail'}",
                        ) from exc
                break
        prompt_tokens, completion_tokens, reused_tokens = counts
        latency = time.perf_counter() - started
        self.speed.record(completion_tokens, latency)
        yield Completion(
            text="".join(parts),
            finish_reason=finish_reason,
            usage=Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                reused_prompt_tokens=reused_tokens,
                latency_s=latency,
                ttft_s=ttft,
                calls=1,
            ),
        )


class _AiohttpTransport:
    """Non-streamed requests through aiohttp, answered as httpx responses with httpx's
    errors, so status checks, retries and messages are the same whichever library sends."""

    def __init__(self, profile: BackendProfile, headers: dict[str, str], tls: Any):
        self._limit, self._headers, self._tls = profile.max_concurrency, headers, tls
        self._connect_s = min(10.0, profile.timeout_s)
        self._session: Any = None  # opened inside the event loop, on first use

    async def request(self, method: str, url: str, content: bytes | None) -> httpx.Response:
        import aiohttp  # only profiles that choose it pay its import

        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limit, ssl=self._tls),
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=None, connect=self._connect_s),
                skip_auto_headers=("User-Agent",),
            )
        try:
            async with self._session.request(
                method, url, data=content, headers=None if content is None else JSON_CONTENT
            ) as answer:
                body = await answer.read()
                return httpx.Response(answer.status, headers=answer.raw_headers, content=body)
        except aiohttp.ConnectionTimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "connect timed out") from exc
        except aiohttp.ClientSSLError as exc:  # TLS failed: aiohttp's text names how
            raise httpx.ConnectError(str(exc)) from exc
        except aiohttp.ClientConnectorError as exc:
            raise self._connect_error(exc) from exc
        except aiohttp.ClientError as exc:
            raise httpx.RemoteProtocolError(f"{type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _connect_error(exc: Any) -> httpx.ConnectError:
        """What failed, at the address asked: aiohttp's own text names the connector's TLS
        setting ("ssl:default"), for a plain http:// address too."""
        import os
        import socket

        error = exc.os_error
        if isinstance(error, socket.gaierror) or not error.errno:  # a name lookup, or several addresses
            reason = error.strerror or str(error)
        else:  # asyncio's text is "Connect call failed (address)": the errno says what happened
            reason = os.strerror(error.errno)
        return httpx.ConnectError(f"cannot connect to {exc.host}:{exc.port}: {reason}")

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class _RetryableStatus(BackendError):
    """An error status the adapter retries; `retry_after_s` is the server's Retry-After."""

    def __init__(self, profile: str, url: str, message: str, status: int, retry_after_s: float | None):
        super().__init__(profile, url, message, status)
        self.retry_after_s = retry_after_s


_RETRIED = (httpx.TransportError, _RetryableStatus)  # what is worth another attempt


def _chunk_request(body: dict, sample_indices: list[int]) -> dict:
    """The request for some samples of one prompt: `n` of them in one request, and a seeded
    request's seed moved by the first sample's index, so that requests split where a server
    takes fewer samples at once (or one) do not all draw the same ones."""
    request = {**body, "n": len(sample_indices)} if len(sample_indices) > 1 else dict(body)
    if sample_indices[0] and request.get("seed") is not None:
        request["seed"] = request["seed"] + sample_indices[0]
    return request


# What reading an answer of a shape other than the API's raises (a number where a list should
# be, infinity as a token count, a list nested too deeply to print).
_SHAPE_ERRORS = (AttributeError, TypeError, ValueError, OverflowError, RecursionError)


def _stream_event(data: str) -> tuple[list[str], str | None, tuple[int, int, int] | None]:
    """The text deltas, finish reason and token counts (None: no usage) of one stream event.
    Raises UnreadableJSON, or one of `_SHAPE_ERRORS` for JSON of another shape than a chunk's."""
    chunk = read_json(data)
    if not isinstance(chunk, dict):
        raise TypeError(f"a {type(chunk).__name__}, not an object")
    choices = chunk.get("choices") or []
    if not isinstance(choices, list):
        raise TypeError("choices is not a list")
    deltas, reason = [], None
    for choice in choices:
        delta = (choice.get("delta") or {}).get("content")
        if delta:
            deltas.append(str(delta))
        reason = _finish_reason(choice) or reason
    usage = chunk.get("usage")
    return deltas, reason, _token_counts(usage) if usage else None


def _finish_reason(choice: dict) -> str | None:
    reason = choice.get("finish_reason")
    return reason if isinstance(reason, str) else None


def _excerpt(data: Any) -> str:
    """The start of a JSON answer, for a message."""
    try:
        return json.dumps(data)[:200]
    except RecursionError:
        return f"a {type(data).__name__} nested too deeply to show"


def _retry_after_s(response: httpx.Response) -> float | None:
    """Retry-After in seconds; the HTTP-date form is left to the backoff."""
    try:
        return max(0.0, float(response.headers["retry-after"]))
    except (KeyError, ValueError):
        return None


def _token_counts(usage: dict) -> tuple[int, int, int]:
    """Prompt, completion and prompt-cache tokens of an answer's `usage` (servers that do not
    report the cache leave `prompt_tokens_details` out)."""
    details = usage.get("prompt_tokens_details") or {}
    return (
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        int(details.get("cached_tokens") or 0),
    )


def _listed(data: dict) -> list[dict]:
    """The items of a `GET /models` answer."""
    items = data.get("data")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _error_text(response: httpx.Response) -> str:
    try:
        detail = read_json(response.content)
        if isinstance(detail, dict):
            error = detail.get("error", detail)
            if isinstance(error, dict):
                detail = error.get("message", error)
            else:
                detail = error
        shown = detail if isinstance(detail, str) else _excerpt(detail)
    except UnreadableJSON:
        shown = response.text[:300]
    return f"HTTP {response.status_code}: {shown}"
