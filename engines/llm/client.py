"""One async OpenAI-compatible client for every backend (vLLM, llama-server, others).

What it owns (SPEC §3): bounded concurrency, connection reuse, timeouts,
retries with backoff, the capability adapter for constrained choice, label
distributions from logprobs, token/latency accounting, and the persistent
response cache keyed by (model, messages, params, sample index).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import math
import random
import time
from collections import Counter
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Protocol, Sequence, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from engines.llm.profile import BackendProfile, Sampling
from engines.llm.types import (
    Accounting,
    BackendError,
    Completion,
    LabelChoice,
    StreamEvent,
    Structured,
    TextDelta,
    TokenLogprob,
    Usage,
)

Message = dict[str, str]
ModelT = TypeVar("ModelT", bound=BaseModel)

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
MAX_TOP_LOGPROBS = 20  # vLLM's cap
MAX_N_PER_REQUEST = {"llamacpp": 4}  # llama-server refuses n > 4
CONNECTIONS_PER_POOL = 16
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 20.0


class ResponseCache(Protocol):
    def get(self, key: str) -> dict | None: ...
    def put(self, key: str, model: str, response: dict) -> None: ...


def cache_key(model: str, messages: Sequence[Message], params: dict, sample_index: int) -> str:
    payload = json.dumps(
        {"model": model, "messages": list(messages), "params": params, "sample": sample_index},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def gbnf_choice(labels: Sequence[str]) -> str:
    """A llama.cpp grammar that admits exactly one of the labels."""
    return "root ::= " + " | ".join(json.dumps(label) for label in labels)


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
            cached=True,
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
            token=item.get("token", ""),
            logprob=float(item.get("logprob", -math.inf)),
            top=tuple(
                (alt.get("token", ""), float(alt.get("logprob", -math.inf)))
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
        transport: httpx.AsyncBaseTransport | None = None,
        backoff_base_s: float = BACKOFF_BASE_S,
    ):
        if not profile.base_urls:
            raise BackendError(profile.name, "-", "the profile has no base URL")
        self.profile = profile
        self.cache = cache
        self.accounting = Accounting()
        self.base_urls = [_normalise_base_url(url) for url in profile.base_urls]
        self._next_url = itertools.cycle(self.base_urls).__next__
        self._backoff_base_s = backoff_base_s
        self._model: str | None = profile.model or None
        headers = {}
        key = profile.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # httpx's pool scans every connection on each state change, which costs
        # O(connections) per request; several small pools keep that flat at 256
        # in flight. Each pool gets as many slots as it has connections, and the
        # slot queue (FIFO) spreads requests across pools and bounds concurrency.
        shard_count = math.ceil(profile.max_concurrency / CONNECTIONS_PER_POOL)
        tls = httpx.create_ssl_context()  # loading CA certificates is slow: once per client
        self._pools = [
            httpx.AsyncClient(
                transport=transport,
                verify=tls,
                headers=headers,
                timeout=httpx.Timeout(profile.timeout_s, connect=min(10.0, profile.timeout_s)),
                limits=httpx.Limits(
                    max_connections=CONNECTIONS_PER_POOL, max_keepalive_connections=CONNECTIONS_PER_POOL
                ),
            )
            for _ in range(shard_count)
        ]
        self._slots: asyncio.Queue[httpx.AsyncClient] = asyncio.Queue()
        for index in range(profile.max_concurrency):
            self._slots.put_nowait(self._pools[index % shard_count])

    async def __aenter__(self) -> "LLMClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
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
        return [item.get("id", "") for item in data.get("data", [])]

    async def model(self) -> str:
        """The model requests go to: the profile's, else the first one served."""
        if self._model is None:
            served = await self.models()
            if not served:
                raise BackendError(self.profile.name, self.base_urls[0], "serves no model")
            self._model = served[0]
        return self._model

    async def ping(self) -> float:
        """Seconds for one uncached one-token completion: the round trip a user waits."""
        body = {
            "model": await self.model(),
            "messages": [{"role": "user", "content": "Say OK."}],
            "max_tokens": 1,
            "temperature": 0,
        }
        _, latency = await self._request("POST", f"{self._next_url()}/chat/completions", body)
        return latency

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
        constraint: dict | None = None,
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
        usage = _sum_usage(completions)
        picked = [self._label_from_text(c.text, labels) for c in completions]
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
        constraint: dict | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Text deltas as they arrive, then the whole Completion (from the cache: one delta).

        `constraint` is any request field set such as `json_schema_constraint(Model)`.
        """
        sampling = self.profile.sampling.merged(sampling)
        body, key = await self._body_and_key(messages, sampling, 0, constraint or {}, 0)
        cached = self.cache.get(key) if self.cache else None
        if cached is not None:
            completion = _completion_from_cache(cached, 0)
            self.accounting.cache_hits += 1
            yield TextDelta(completion.text)
            yield completion
            return
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        completion = None
        async for event in self._stream_request(body):
            if isinstance(event, Completion):
                completion = event
            yield event
        if completion is not None:
            self.accounting.record(completion.usage)
            if self.cache:
                self.cache.put(key, body["model"], _completion_to_cache(completion))

    # ------------------------------------------------------------------ capability adapter

    def choice_constraint(self, labels: Sequence[str]) -> dict:
        if self.profile.kind == "vllm":
            return {"structured_outputs": {"choice": list(labels)}}
        if self.profile.kind == "llamacpp":
            return {"grammar": gbnf_choice(labels)}
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "choice",
                    "strict": True,
                    "schema": {
                        "type": "object",
                        "properties": {"label": {"type": "string", "enum": list(labels)}},
                        "required": ["label"],
                        "additionalProperties": False,
                    },
                },
            }
        }

    def _label_from_text(self, text: str, labels: Sequence[str]) -> str | None:
        candidate = text.strip()
        if self.profile.kind == "openai":
            try:
                candidate = str(json.loads(candidate).get("label", ""))
            except (json.JSONDecodeError, AttributeError):
                return None
        return candidate if candidate in labels else None

    # ------------------------------------------------------------------ core

    async def _body_and_key(
        self,
        messages: Sequence[Message],
        sampling: Sampling,
        top_logprobs: int,
        constraint: dict,
        sample_index: int,
    ) -> tuple[dict, str]:
        model = await self.model()
        params: dict[str, Any] = {**sampling.as_request(), **constraint}
        if top_logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = min(top_logprobs, MAX_TOP_LOGPROBS)
        key = cache_key(model, messages, params, sample_index)
        return {"model": model, "messages": list(messages), **params}, key

    async def _complete(
        self,
        messages: Sequence[Message],
        n: int,
        sampling: Sampling,
        top_logprobs: int,
        constraint: dict,
    ) -> list[Completion]:
        if n < 1:
            raise ValueError("n must be at least 1")
        body, _ = await self._body_and_key(messages, sampling, top_logprobs, constraint, 0)
        model = body["model"]
        params = {k: v for k, v in body.items() if k not in ("model", "messages")}
        keys = [cache_key(model, messages, params, i) for i in range(n)]
        results: list[Completion | None] = [None] * n
        if self.cache:
            for i, key in enumerate(keys):
                cached = self.cache.get(key)
                if cached is not None:
                    results[i] = _completion_from_cache(cached, i)
                    self.accounting.cache_hits += 1
        missing = [i for i, result in enumerate(results) if result is None]
        if missing:
            # Samples go in requests with n, so the prompt is prefilled once per request.
            size = MAX_N_PER_REQUEST.get(self.profile.kind, len(missing))
            chunks = [missing[i : i + size] for i in range(0, len(missing), size)]
            batches = await asyncio.gather(
                *(self._post_completions({**body, "n": len(chunk)} if len(chunk) > 1 else body, chunk)
                  for chunk in chunks)
            )
            fresh = [completion for batch in batches for completion in batch]
            for completion in fresh:
                results[completion.sample_index] = completion
                if self.cache:
                    self.cache.put(keys[completion.sample_index], model, _completion_to_cache(completion))
        return [r for r in results if r is not None]

    async def _post_completions(self, body: dict, sample_indices: list[int]) -> list[Completion]:
        url = self._next_url()
        data, latency = await self._request("POST", f"{url}/chat/completions", body)
        choices = sorted(data.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) < len(sample_indices):
            raise BackendError(
                self.profile.name, url,
                f"asked for {len(sample_indices)} choices, got {len(choices)}",
            )
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        completions = []
        for position, (choice, index) in enumerate(zip(choices, sample_indices)):
            # The prompt is prefilled once per request: charge it to the first sample.
            share = Usage(
                prompt_tokens=prompt_tokens if position == 0 else 0,
                completion_tokens=completion_tokens // len(sample_indices),
                latency_s=latency,
            )
            self.accounting.record(share)
            completions.append(
                Completion(
                    text=(choice.get("message") or {}).get("content") or "",
                    finish_reason=choice.get("finish_reason"),
                    usage=share,
                    logprobs=_parse_logprobs(choice),
                    sample_index=index,
                )
            )
        return completions

    async def _request(self, method: str, url: str, body: dict | None) -> tuple[dict, float]:
        """One HTTP call with retries on timeouts, connection errors, 429 and 5xx."""
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                self.accounting.requests += 1
                async with self._slot() as http:
                    response = await http.request(method, url, json=body)
                if response.status_code in RETRY_STATUS and attempt < self.profile.retries:
                    await self._backoff(attempt, response.headers.get("retry-after"))
                    attempt += 1
                    continue
                if response.status_code >= 400:
                    raise BackendError(
                        self.profile.name, url, _error_text(response), response.status_code
                    )
                try:
                    data = response.json()
                except json.JSONDecodeError:
                    raise BackendError(
                        self.profile.name, url, f"answered with non-JSON: {response.text[:200]!r}"
                    ) from None
                return data, time.perf_counter() - started
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                await self._after_transport_error(attempt, url, exc)
                attempt += 1

    async def _after_transport_error(self, attempt: int, url: str, exc: Exception) -> None:
        """Back off before the next attempt, or give up with the cause named."""
        if attempt >= self.profile.retries:
            raise BackendError(
                self.profile.name, url,
                f"{type(exc).__name__} after {attempt + 1} attempts: {str(exc) or 'no detail'}",
            ) from exc
        await self._backoff(attempt, None)

    async def _backoff(self, attempt: int, retry_after: str | None) -> None:
        self.accounting.retries += 1
        delay = min(BACKOFF_MAX_S, self._backoff_base_s * 2**attempt)
        if retry_after:
            try:
                delay = min(BACKOFF_MAX_S, float(retry_after))
            except ValueError:
                pass
        await asyncio.sleep(delay * (0.5 + random.random() / 2))

    async def _stream_request(self, body: dict) -> AsyncIterator[StreamEvent]:
        url = f"{self._next_url()}/chat/completions"
        started = time.perf_counter()
        attempt = 0
        while True:
            try:
                self.accounting.requests += 1
                async with self._slot() as http, http.stream("POST", url, json=body) as response:
                    if response.status_code in RETRY_STATUS and attempt < self.profile.retries:
                        await response.aread()
                        await self._backoff(attempt, response.headers.get("retry-after"))
                        attempt += 1
                        continue
                    if response.status_code >= 400:
                        await response.aread()
                        raise BackendError(
                            self.profile.name, url, _error_text(response), response.status_code
                        )
                    parts: list[str] = []
                    ttft: float | None = None
                    finish_reason = None
                    usage: dict = {}
                    async for line in response.aiter_lines():
                        if not line.startswith("data:"):
                            continue
                        payload = line[5:].strip()
                        if payload == "[DONE]":
                            break
                        chunk = json.loads(payload)
                        usage = chunk.get("usage") or usage
                        for choice in chunk.get("choices") or []:
                            delta = (choice.get("delta") or {}).get("content")
                            if delta:
                                if ttft is None:
                                    ttft = time.perf_counter() - started
                                parts.append(delta)
                                yield TextDelta(delta)
                            finish_reason = choice.get("finish_reason") or finish_reason
                    yield Completion(
                        text="".join(parts),
                        finish_reason=finish_reason,
                        usage=Usage(
                            prompt_tokens=int(usage.get("prompt_tokens") or 0),
                            completion_tokens=int(usage.get("completion_tokens") or 0),
                            latency_s=time.perf_counter() - started,
                            ttft_s=ttft,
                        ),
                    )
                    return
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                await self._after_transport_error(attempt, url, exc)
                attempt += 1


def _error_text(response: httpx.Response) -> str:
    try:
        detail = response.json()
        if isinstance(detail, dict):
            error = detail.get("error", detail)
            if isinstance(error, dict):
                detail = error.get("message", error)
            else:
                detail = error
    except (json.JSONDecodeError, UnicodeDecodeError):
        detail = response.text[:300]
    return f"HTTP {response.status_code}: {detail}"


def _sum_usage(completions: Sequence[Completion]) -> Usage:
    return Usage(
        prompt_tokens=sum(c.usage.prompt_tokens for c in completions),
        completion_tokens=sum(c.usage.completion_tokens for c in completions),
        latency_s=max((c.usage.latency_s for c in completions), default=0.0),
        cached=all(c.usage.cached for c in completions),
    )
