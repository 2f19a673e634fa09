"""How the client's requests travel (`Transport`): base URLs in turn, request slots over
connection pools, deadlines, retries with backoff, server-sent event streams, and the aiohttp
alternative for plain requests.

Whichever library sends (httpx, or aiohttp for profiles that choose it), an answer is an
`httpx.Response` and a failure an httpx error, so status checks, retries and messages in
`engines/llm/client.py` are the same.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import re
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, NoReturn

import httpx
import orjson
from httpx_sse import SSEError, aconnect_sse
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

from engines.llm.adapters import ADAPTERS, OpenAIAdapter, json_schema_format
from engines.llm.deadlines import GenerationSpeed
from engines.llm.json_reader import UnreadableJSON, read_json
from engines.llm.parsing import SHAPE_ERRORS, error_text, stream_event
from engines.llm.profile import BackendProfile
from engines.llm.types import Accounting, BackendError, Completion, StreamEvent, TextDelta, Usage
from engines.timing import Stopwatch

JSON_CONTENT = {"Content-Type": "application/json"}
CONNECTIONS_PER_POOL = 16
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 20.0
PROGRESS_TIMEOUT = httpx.Timeout(5.0)  # a server's count of tokens generated is answered at once, or not used


def normalise_base_url(url: str) -> str:
    """A base URL without a trailing slash; a bare host gets the API's `/v1`."""
    url = url.rstrip("/")
    scheme_and_host = url.split("://", 1)[-1]
    return url if "/" in scheme_and_host else url + "/v1"


def tls_context(base_urls: list[str]) -> Any:
    """Loading CA certificates is slow: once per client, and only when a server is reached by
    https (every request goes to a base URL's host, so plain http ones never use TLS)."""
    return httpx.create_ssl_context() if any(u.startswith("https:") for u in base_urls) else False


class ConnectionPools:
    """Enough httpx pools of `CONNECTIONS_PER_POOL` connections for the profile's concurrency.

    httpx's pool scans every connection on each state change, which costs O(connections) per
    request; several small pools keep that flat at 256 in flight. They are made on first use:
    with the aiohttp transport only streams and progress reads take them, and making them
    (httpcore's import) costs about 0.05 s of a batch run's start.
    """

    def __init__(self, profile: BackendProfile, headers: dict[str, str], tls: Any):
        self.count = math.ceil(profile.max_concurrency / CONNECTIONS_PER_POOL)
        self._profile, self._headers, self._tls = profile, headers, tls
        self._pools: list[httpx.AsyncClient] = []

    def __getitem__(self, index: int) -> httpx.AsyncClient:
        if not self._pools:
            timeout_s = self._profile.timeout_s
            self._pools = [
                httpx.AsyncClient(
                    verify=self._tls,
                    headers=self._headers,
                    timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
                    limits=httpx.Limits(
                        max_connections=CONNECTIONS_PER_POOL, max_keepalive_connections=CONNECTIONS_PER_POOL
                    ),
                )
                for _ in range(self.count)
            ]
        return self._pools[index]

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


class AiohttpTransport:
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


class RetryableStatus(BackendError):
    """An error status the adapter retries; `retry_after_s` is the server's Retry-After,
    `detail` what the server said."""

    def __init__(self, profile: str, url: str, message: str, status: int, retry_after_s: float | None):
        super().__init__(profile, url, message, status)
        self.detail = message
        self.retry_after_s = retry_after_s


# What vLLM answers while, and after, its engine process dies (its 500s' text and its log's error).
ENGINE_DIED = re.compile(r"EngineDeadError|EngineCore encountered|engine (?:core )?(?:is )?dead", re.IGNORECASE)


RETRIED = (httpx.TransportError, RetryableStatus)  # what is worth another attempt


def retry_after_s(response: httpx.Response) -> float | None:
    """Retry-After in seconds; the HTTP-date form is left to the backoff."""
    try:
        return max(0.0, float(response.headers["retry-after"]))
    except (KeyError, ValueError):
        return None


REFUSED_REQUEST_STATUSES = frozenset({400, 422})  # the request itself is wrong: asking again cannot help


class Transport:
    """Requests to one profile's servers: `max_concurrency` request slots over the connection
    pools, base URLs in turn, a deadline that follows each call's token budget, and retries with
    backoff (after a timeout, a connection error or a status the backend's adapter names).

    The client's `Accounting` and `GenerationSpeed` are shared; `error` makes its BackendErrors
    (secrets redacted) and `adapter` says the backend's adapter once the client knows it.
    """

    def __init__(
        self,
        profile: BackendProfile,
        api_key: str | None,
        *,
        accounting: Accounting,
        speed: GenerationSpeed,
        error: Callable[..., BackendError],
        adapter: Callable[[], OpenAIAdapter | None],
        backoff_base_s: float = BACKOFF_BASE_S,
    ):
        self.profile, self.accounting, self.speed = profile, accounting, speed
        self._error, self._adapter = error, adapter
        self.base_urls = [normalise_base_url(url) for url in profile.base_urls]
        self.next_url = itertools.cycle(self.base_urls).__next__
        self._backoff = wait_random_exponential(multiplier=backoff_base_s, max=BACKOFF_MAX_S)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        tls = tls_context(self.base_urls)
        self._pools = ConnectionPools(profile, headers, tls)
        # A whole answer is bounded by its deadline (`self.speed`), not by a read timeout; a
        # stream by the pools' read timeout between events.
        self._answer_timeout = httpx.Timeout(None, connect=min(10.0, profile.timeout_s))
        self._slots: asyncio.Queue[int] = asyncio.Queue()
        # Each pool gets as many slots as it has connections; the slot queue (FIFO) spreads
        # requests across pools and bounds concurrency.
        for index in range(profile.max_concurrency):
            self._slots.put_nowait(index % self._pools.count)
        self._aiohttp = AiohttpTransport(profile, headers, tls) if profile.transport == "aiohttp" else None

    async def aclose(self) -> None:
        if self._aiohttp is not None:
            await self._aiohttp.aclose()
        await self._pools.aclose()

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[int]:
        """One of `max_concurrency` request slots: the index of the connection pool it belongs to."""
        pool = await self._slots.get()
        try:
            yield pool
        finally:
            self._slots.put_nowait(pool)

    def _retrying(self, url: str) -> AsyncRetrying:
        """Up to `profile.retries` more attempts after a timeout, a connection error or a
        status the adapter names, waiting as Retry-After says or with jittered backoff."""
        server_errors: list[RetryableStatus] = []  # this call's, to name a server that then went away

        def before_sleep(state: RetryCallState) -> None:
            self.accounting.retries += 1
            error = state.outcome.exception()
            if isinstance(error, RetryableStatus) and error.status is not None and error.status >= 500:
                server_errors.append(error)

        return AsyncRetrying(
            stop=stop_after_attempt(self.profile.retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(RETRIED),
            before_sleep=before_sleep,
            retry_error_callback=lambda state: self._give_up(url, state, server_errors),
        )

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception()
        if isinstance(error, RetryableStatus) and error.retry_after_s is not None:
            return min(BACKOFF_MAX_S, error.retry_after_s)
        return self._backoff(state)

    def _give_up(self, url: str, state: RetryCallState, server_errors: list[RetryableStatus]) -> NoReturn:
        error = state.outcome.exception()
        last = error if isinstance(error, RetryableStatus) else server_errors[-1] if server_errors else None
        if last is not None and (isinstance(error, httpx.ConnectError) or ENGINE_DIED.search(str(last))):
            # A server error, then no server listening (or its own word that its engine is dead): it died.
            what = "the vLLM engine died" if ENGINE_DIED.search(str(last)) else "the server died"
            raise self._error(
                url, f"{what}: HTTP {last.status} {last.detail}"
                + (f", then {type(error).__name__}: {str(error) or 'no detail'}" if error is not last else "")
                + "; see the server's log", last.status,
            ) from error
        if isinstance(error, BackendError):
            raise error
        raise self._error(
            url,
            f"{type(error).__name__} after {state.attempt_number} attempts: {str(error) or 'no detail'}",
        ) from error

    def _check_status(self, response: httpx.Response, url: str, body: dict | None) -> None:
        """Raise for an error status; one worth retrying carries the server's Retry-After. A
        request refused with its answer's schema is named by the schema's name."""
        if response.status_code < 400:
            return
        # While the kind is being detected, statuses are judged as for any OpenAI-compatible server.
        adapter = self._adapter() or ADAPTERS["openai"]
        if response.status_code in adapter.retry_statuses:
            raise RetryableStatus(
                self.profile.name, url, error_text(response), response.status_code, retry_after_s(response)
            )
        schema = json_schema_format(body).get("name")
        if isinstance(schema, str) and response.status_code in REFUSED_REQUEST_STATUSES:
            raise self._error(
                url, f"refused the answer schema {schema!r} (its grammar engine cannot compile it): "
                f"{error_text(response)}", response.status_code,
            )
        raise self._error(url, error_text(response), response.status_code)

    def _sent(self, body: dict) -> dict:
        """The request as it goes out: without its seed where the profile sends none (the seed
        still tells apart the response cache's keys, made from the request before this)."""
        if self.profile.send_seed or "seed" not in body:
            return body
        return {name: value for name, value in body.items() if name != "seed"}

    async def request(self, method: str, url: str, body: dict | None) -> tuple[dict, float]:
        """One HTTP call (with retries) answered by a JSON object, and the seconds it took."""
        # The first attempt goes without the retry loop, whose bookkeeping cost a batch run as
        # much client time as the request; one that failed is handed to the loop as its first.
        try:
            return await self._request_once(method, url, body)
        except RETRIED as failure:
            first: BaseException | None = failure

        async def attempt() -> tuple[dict, float]:
            nonlocal first
            if first is not None:
                failure, first = first, None
                raise failure
            return await self._request_once(method, url, body)

        return await self._retrying(url)(attempt)

    async def _request_once(self, method: str, url: str, body: dict | None) -> tuple[dict, float]:
        async with self._slot() as pool:
            stopwatch = Stopwatch()
            self.accounting.count_request()
            budget = None if body is None else body.get("max_tokens")
            try:
                async with self.speed.deadline(budget, lambda: self._generated_per_call(url)) as deadline:
                    content = None if body is None else orjson.dumps(self._sent(body))
                    if self._aiohttp is not None:
                        response = await self._aiohttp.request(method, url, content)
                    else:
                        response = await self._pools[pool].request(
                            method, url, content=content, headers=None if body is None else JSON_CONTENT,
                            timeout=self._answer_timeout,
                        )
            except TimeoutError:
                # Not re-sent: the server has the request and may still be working on it. An answer
                # being computed may come with more time; a listing or an identity does not.
                longer = "" if body is None else (
                    f"; to wait longer, raise timeout_s in [backends.{self.profile.name}] of the config file "
                    "(argtui config path prints where it is)"
                )
                raise self._error(
                    url, f"no answer within {deadline}; "
                    f"the request was not sent again, since the server may still be computing it{longer}",
                ) from None
        self._check_status(response, url, body)
        try:
            data = read_json(response.content)
        except UnreadableJSON as exc:
            raise self._error(url, f"answered with {exc}: {response.text[:200]!r}") from None
        if not isinstance(data, dict):
            raise self._error(url, f"answered with an unexpected shape: {response.text[:200]}")
        return data, stopwatch.seconds

    async def _generated_per_call(self, url: str) -> float | None:
        """Tokens the server at `url` has generated so far per call of ours in flight, where it says
        (the adapter's `progress_path`); None elsewhere or when it does not answer at once."""
        adapter = self._adapter()
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

    async def stream(self, body: dict) -> AsyncIterator[StreamEvent]:
        """Server-sent deltas, then the Completion. Only an attempt that has yielded nothing is
        retried: after the first delta a retry would show the consumer the text twice."""
        url = f"{self.next_url()}/chat/completions"
        stopwatch = Stopwatch()
        parts: list[str] = []
        async for attempt in self._retrying(url):
            with attempt:
                ttft: float | None = None
                finish_reason = None
                counts = (0, 0, 0)  # prompt, completion and prompt-cache tokens, from the usage event
                self.accounting.count_request()
                async with self._slot() as pool, aconnect_sse(
                    self._pools[pool], "POST", url, json=self._sent(body)
                ) as source:
                    if source.response.status_code >= 400:
                        await source.response.aread()
                        self._check_status(source.response, url, body)
                    try:
                        async for event in source.aiter_sse():
                            if event.data == "[DONE]":
                                break
                            try:
                                deltas, reason, usage = stream_event(event.data)
                            except UnreadableJSON as exc:
                                raise self._error(url, f"sent an event of {exc}: {event.data[:200]!r}") from None
                            except SHAPE_ERRORS:
                                raise self._error(
                                    url, f"sent an event of an unexpected shape: {event.data[:200]!r}"
                                ) from None
                            counts = usage or counts
                            finish_reason = reason or finish_reason
                            for delta in deltas:
                                if ttft is None:
                                    ttft = stopwatch.seconds
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
        latency = stopwatch.seconds
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
